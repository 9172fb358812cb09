// Cold start's live-byte accounting (actors/node/recovery.ts) follows every index change as it is made;
// it must end equal to a recount from the rebuilt indexes (each live entry's stored size, per segment),
// with overwrites across segments, DELs, multi-block entries and stale duplicates in the logs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monotonicClock } from '../../../../config/base/clock.js';
import { tlogOwner } from '../../../../config/base/ids.js';
import { planCluster } from '../../../../config/cluster.js';
import { defaultLimits } from '../../../../config/limits.js';
import { shardOfKey } from '../../../../config/slots.js';
import { rebuildIndexes, rebuildIndexesParallel } from '../../../../actors/node/recovery.js';
import { attachKvShared, createKvShared } from '../../../../actors/shared/node-shared.js';
import { EntryType, storedSizeAt } from '../../../../shm/log.js';
import { Pool } from '../../../../shm/pool.js';
import { TLog } from '../../../../shm/tlog.js';

test('cold start counts live bytes per segment as a recount from the rebuilt indexes does; with 3 threads it builds the same indexes', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-recovery-live-'));
  try {
    const c = planCluster({ nodes: [{ id: 0, host: '127.0.0.1', dataDir: dir, workerPorts: [1], fabric: { kind: 'shm', host: '127.0.0.1', port: 2 } }], shardCount: 4, replicationFactor: 1, replication: 'rowan' });
    const path = join(dir, 'pool.pm');
    const pool = Pool.create(path, { segmentCount: 160, segmentBytes: 64 * 1024 });
    const logs = [TLog.recover(pool, tlogOwner(0), defaultLimits), TLog.recover(pool, tlogOwner(1), defaultLimits)];
    const versions = [0, 0, 0, 0];
    let seed = 7;
    const rnd = (n: number) => ((seed = (seed * 1103515245 + 12345) >>> 0) % n);
    for (let i = 0; i < 6000; i++) {
      const key = new TextEncoder().encode(`k${rnd(700)}`);
      const shard = shardOfKey(key, 4);
      const version = ++versions[shard]!;
      const big = rnd(50) === 0; // some entries span several blocks
      const log = logs[rnd(2)]!;
      if (rnd(10) === 0) log.append({ type: EntryType.Del, shard, version, key });
      else log.append({ type: EntryType.Put, shard, version, key, value: new Uint8Array(big ? 9000 + rnd(3000) : 10 + rnd(200)).fill(65) });
      if (rnd(40) === 0) log.append({ type: EntryType.Put, shard, version: Math.max(1, version - 3), key, value: new Uint8Array(30) }); // a stale one
    }
    const shared = attachKvShared(createKvShared(c, 0, 4096, pool), pool.region);
    const rep = rebuildIndexes(pool, shared, defaultLimits, monotonicClock);
    assert.ok(rep.indexed > 700 && rep.stale > 0, `indexed ${rep.indexed}, stale ${rep.stale}`);
    const recount = new Int32Array(pool.segmentCount);
    for (const index of shared.indexes)
      index?.forEach((addr) => {
        recount[shared.gc!.live.segmentOf(addr)]! += storedSizeAt(pool.region.bytes, addr, defaultLimits);
      });
    assert.deepEqual([...shared.gc!.live.counts], [...recount]);
    assert.ok(recount.some((n) => n > 0));

    // The same pool rebuilt by 3 helper threads: the same items, versions and live bytes.
    const items = (sh: typeof shared) => sh.indexes.map((ix) => { const a: number[] = []; ix?.forEach((addr) => a.push(addr)); return a.sort((x, y) => x - y); });
    const buffers = createKvShared(c, 0, 4096, pool);
    const rep3 = await rebuildIndexesParallel(pool, buffers, defaultLimits, monotonicClock, 3);
    const shared3 = attachKvShared(buffers, pool.region);
    assert.equal(rep3.indexed + rep3.stale, rep.indexed + rep.stale);
    assert.ok(rep3.logSegments >= 6, `${rep3.logSegments} log segments: enough for 3 threads`);
    assert.deepEqual(items(shared3), items(shared));
    assert.deepEqual([...shared3.versions], [...shared.versions]);
    assert.deepEqual([...shared3.gc!.live.counts], [...recount]);
    pool.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
