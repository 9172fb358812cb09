// INFO keyspace and DBSIZE (actors/worker/resp/keyspace.ts) count a shard's keys with one walk of its
// index and give that count again while it still holds. ioredis asks INFO on every connection it opens
// (its ready check): 50 ioredis Cluster clients opened 150 connections, each walking every index of a
// node from scratch, and a node served 87 GETs/s at 1.5 cores (`npm run bench -- redis`). Checked here:
// a second count of an unchanged index does not walk it, and every change a count depends on -- a new
// key, an overwrite that deletes or gives a deadline, a removal, a flush, a deadline passing -- is in
// the next count.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { planCluster } from '../../../../../config/cluster.js';
import { defaultLimits } from '../../../../../config/limits.js';
import { applyFlush } from '../../../../../actors/shared/flush-floor.js';
import { RECOVERY_LOG_OWNER } from '../../../../../actors/node/recovery.js';
import { attachKvShared, createKvShared, indexEntry } from '../../../../../actors/shared/node-shared.js';
import { Keyspace } from '../../../../../actors/worker/resp/keyspace.js';
import { PoolEntryReader } from '../../../../../shm/entry-reader.js';
import { hash64Into } from '../../../../../shm/hash.js';
import { ShardIndex } from '../../../../../shm/index.js';
import { EntryType, type EntryInput } from '../../../../../shm/log.js';
import { OwnerRole, Pool } from '../../../../../shm/pool.js';
import { TLog } from '../../../../../shm/tlog.js';

const limits = defaultLimits;

test('a count is walked once and given again until the index changes or a counted deadline passes', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-keyspace-'));
  try {
    const cluster = planCluster({ nodes: [{ id: 0, host: '127.0.0.1', dataDir: dir, workerPorts: [7000], fabric: { kind: 'shm' as const, host: '127.0.0.1', port: 0 } }], shardCount: 2, replicationFactor: 1 });
    const pool = Pool.create(join(dir, 'n0.pm'), { segmentCount: 16, segmentBytes: 64 * 1024, mode: 'pagecache' });
    const shared = attachKvShared(createKvShared(cluster, 0, 1024, pool), pool.region);
    const log = TLog.recover(pool, RECOVERY_LOG_OWNER, limits, OwnerRole.Digest);
    const reader = new PoolEntryReader(pool.region, limits);
    let version = 0;
    const write = (shard: number, key: string, e: Partial<EntryInput> = {}): number => {
      const k = Buffer.from(key);
      const v = ++version;
      const addr = log.append({ type: EntryType.Put, shard, version: v, key: k, value: Buffer.from('v'), ...e });
      indexEntry(shared, shard, k, hash64Into(k, { hi: 0, lo: 0 }), addr, v, reader);
      return addr;
    };
    let now = 1_000_000;
    const ks = new Keyspace(shared, pool.region, limits, 0, () => now);
    // Count the walks: every one passes through forEachInBuckets of the shard's index.
    let walks = 0;
    const walked = ShardIndex.prototype.forEachInBuckets;
    ShardIndex.prototype.forEachInBuckets = function (this: ShardIndex, ...a: Parameters<typeof walked>) {
      if (a[0] === 0) walks++;
      return walked.apply(this, a);
    };
    try {
      const count = (expect: { keys: number; expires: number; avgTtlMs: number }, walksNow: number, why: string) => {
        assert.deepEqual(ks.tally([0, 1]), expect, why);
        assert.equal(walks, walksNow, `${why}: walks`);
      };
      for (let i = 0; i < 10; i++) write(i % 2, `k${i}`);
      count({ keys: 10, expires: 0, avgTtlMs: 0 }, 2, 'first count: both shards walked');
      count({ keys: 10, expires: 0, avgTtlMs: 0 }, 2, 'nothing changed: no walk');
      assert.equal(ks.count([0]), 5);
      assert.equal(walks, 2, 'DBSIZE uses the same count');

      write(0, 'new');
      count({ keys: 11, expires: 0, avgTtlMs: 0 }, 3, 'a new key in shard 0: shard 0 walked again, shard 1 not');
      write(1, 'k1', { type: EntryType.Del, value: undefined });
      count({ keys: 10, expires: 0, avgTtlMs: 0 }, 4, 'an overwrite by a DEL');
      write(0, 'k0', { expiresAt: now + 5_000 });
      write(1, 'k3', { expiresAt: now + 1_000 });
      count({ keys: 10, expires: 2, avgTtlMs: 3_000 }, 6, 'overwrites giving deadlines');
      now += 500;
      count({ keys: 10, expires: 2, avgTtlMs: 2_500 }, 6, 'time passes, no deadline reached: the mean TTL follows the clock without a walk');
      now += 600;
      count({ keys: 9, expires: 1, avgTtlMs: 3_900 }, 7, "k3's deadline passed: shard 1 walked again");

      const k = Buffer.from('new');
      const at = shared.indexes[0]!.get(k, hash64Into(k, { hi: 0, lo: 0 }), reader);
      assert.ok(shared.indexes[0]!.remove(k, hash64Into(k, { hi: 0, lo: 0 }), at));
      count({ keys: 8, expires: 1, avgTtlMs: 3_900 }, 8, 'a removal');

      const flushAt = log.append({ type: EntryType.Flush, shard: 0, version: ++version });
      applyFlush(shared, 0, version, flushAt, reader, false); // the floor raised, its pass over the index not run
      count({ keys: 3, expires: 0, avgTtlMs: 0 }, 9, 'a flush floor raised over every key of shard 0');

      now -= 50;
      count({ keys: 3, expires: 0, avgTtlMs: 0 }, 11, 'the clock went back: both shards counted again');
    } finally {
      ShardIndex.prototype.forEachInBuckets = walked;
      pool.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
