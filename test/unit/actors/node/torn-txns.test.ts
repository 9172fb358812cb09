// A transaction's entries reach the primary's t-log one append after another (actors/worker/txn-write.ts
// ①), each persisted on its own, so a crash between two of them leaves a prefix of the transaction in a
// Using t-log segment. The cold start must index none of it (all or none, DESIGN §7): the torn group's
// entries join the failed writes that indexing and the restart tail skip, and the keys keep the values
// they had before the transaction.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ManualClock } from '../../../../config/base/clock.js';
import { planCluster, type ClusterConfig } from '../../../../config/cluster.js';
import { defaultLimits } from '../../../../config/limits.js';
import { attachKvShared, createKvShared } from '../../../../actors/shared/node-shared.js';
import { rebuildIndexes } from '../../../../actors/node/recovery.js';
import { withTornTransactions } from '../../../../actors/node/torn-txns.js';
import { PoolEntryReader } from '../../../../shm/entry-reader.js';
import { hash64Into } from '../../../../shm/hash.js';
import { EntryType, readEntryAt } from '../../../../shm/log.js';
import { txnWord } from '../../../../shm/log-layout.js';
import { Pool } from '../../../../shm/pool.js';
import { TLog } from '../../../../shm/tlog.js';

/** A node 0 of two with a fresh pool and `s`, a shard it is primary of. */
function setup(): { dir: string; c: ClusterConfig; pool: Pool; s: number } {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-torn-txn-'));
  const c = planCluster({
    nodes: [0, 1].map((id) => ({ id, host: '127.0.0.1', dataDir: join(dir, `n${id}`), workerPorts: [7000 + id], fabric: { kind: 'shm' as const, host: '127.0.0.1', port: 0 } })),
    shardCount: 2,
    replicationFactor: 2,
  });
  const pool = Pool.create(join(dir, 'pool.pm'), { segmentCount: 16, segmentBytes: 64 * 1024, mode: 'pagecache' });
  return { dir, c, pool, s: c.shards.find((x) => x.primary === 0)!.id };
}

test('cold start: a transaction torn in the t-log (2 of its 3 entries appended) is not indexed; a whole one is', () => {
  const { dir, c, pool, s } = setup();
  try {
    const put = (key: string, value: string, version: number, txn = 0) => ({ type: EntryType.Put, shard: s, version, key: Buffer.from(key), value: Buffer.from(value), ...(txn ? { txn } : {}) });
    const log = TLog.recover(pool, 0, defaultLimits);
    log.append(put('a', 'a-before', 1));
    log.append(put('b', 'b-before', 2));
    // A whole transaction (versions 3..4), then one torn after 2 of its 3 appends (versions 5..7).
    log.append(put('a', 'a-whole', 3, txnWord(2, 0)));
    log.append(put('c', 'c-whole', 4, txnWord(2, 1)));
    log.append(put('a', 'a-torn', 5, txnWord(3, 0)));
    log.append(put('b', 'b-torn', 6, txnWord(3, 1)));
    // (the crash: version 7 was never appended; the segment stays Using)

    const failed = withTornTransactions(pool, defaultLimits, new Map());
    assert.equal(failed.size, 2, 'the torn transaction\'s two entries');
    const shared = attachKvShared(createKvShared(c, 0, 1024), pool.region);
    rebuildIndexes(pool, shared, defaultLimits, new ManualClock(0), undefined, undefined, { failed });
    const reader = new PoolEntryReader(pool.region, defaultLimits);
    const value = (k: string) => {
      const key = Buffer.from(k);
      const at = shared.indexes[s]!.get(key, hash64Into(key, { hi: 0, lo: 0 }), reader);
      return at === 0 ? null : Buffer.from(readEntryAt(pool.region.bytes, at, defaultLimits)!.value).toString();
    };
    assert.equal(value('a'), 'a-whole', 'the whole transaction is indexed, the torn one is not');
    assert.equal(value('b'), 'b-before');
    assert.equal(value('c'), 'c-whole');
    pool.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('cold start: a finished transaction at the end of the t-log is kept whole even when an older member is gone (GC reclaimed it after another write superseded it)', () => {
  const { dir, pool, s } = setup();
  try {
    const log = TLog.recover(pool, 0, defaultLimits);
    // Members 1 and 2 of a 3-entry transaction (versions 10..12); member 0 is not in this chain.
    log.append({ type: EntryType.Put, shard: s, version: 11, key: Buffer.from('y'), value: Buffer.from('y1'), txn: txnWord(3, 1) });
    log.append({ type: EntryType.Put, shard: s, version: 12, key: Buffer.from('z'), value: Buffer.from('z1'), txn: txnWord(3, 2) });
    assert.equal(withTornTransactions(pool, defaultLimits, new Map()).size, 0, 'its last entry is there: it finished');
    pool.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
