// Writes that failed after their t-log append (actors/shared/failed-writes.ts): the file keeps what
// was recorded (a torn last line and another pool's lines are ignored), and a cold start
// (actors/node/recovery.ts) does not index a recorded entry -- the key keeps its older version -- while
// an entry at the same offset with another shard or version (a reused segment) is indexed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ManualClock } from '../../../../config/base/clock.js';
import { planCluster } from '../../../../config/cluster.js';
import { defaultLimits } from '../../../../config/limits.js';
import { FailedWriteFile, failedKey } from '../../../../actors/shared/failed-writes.js';
import { rebuildIndexes } from '../../../../actors/node/recovery.js';
import { attachKvShared, createKvShared } from '../../../../actors/shared/node-shared.js';
import { PoolEntryReader } from '../../../../shm/entry-reader.js';
import { hash64Into } from '../../../../shm/hash.js';
import { EntryType, readEntryAt } from '../../../../shm/log.js';
import { Pool } from '../../../../shm/pool.js';
import { TLog } from '../../../../shm/tlog.js';

test('failed writes: the file keeps whole lines of its pool', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-failed-'));
  try {
    const path = join(dir, 'failed-writes.log');
    const f = new FailedWriteFile(path, 'pool-a');
    f.record(3, 17, 4096);
    f.record(1, 9, 8192);
    f.close();
    new FailedWriteFile(path, 'pool-b').record(3, 18, 4160);
    appendFileSync(path, 'pool-a 2 5'); // torn by a crash mid-append
    assert.deepEqual([...FailedWriteFile.load(path, 'pool-a')], [[4096, failedKey(3, 17)], [8192, failedKey(1, 9)]]);
    assert.deepEqual(FailedWriteFile.load(join(dir, 'none'), 'pool-a').size, 0);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('failed writes: a cold start does not index a recorded entry; the key keeps its older version', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-failed-'));
  try {
    const c = planCluster({ nodes: [{ id: 0, host: '127.0.0.1', dataDir: dir, workerPorts: [7000], fabric: { kind: 'shm', host: '127.0.0.1', port: 0 } }], shardCount: 1, replicationFactor: 1 });
    const pool = Pool.create(join(dir, 'pool.pm'), { segmentCount: 8, segmentBytes: 64 * 1024, mode: 'pagecache' });
    const log = TLog.recover(pool, 0, defaultLimits);
    log.append({ type: EntryType.Put, shard: 0, version: 1, key: Buffer.from('k'), value: Buffer.from('acknowledged') });
    const failedAt = log.append({ type: EntryType.Del, shard: 0, version: 2, key: Buffer.from('k') });
    const otherAt = log.append({ type: EntryType.Put, shard: 0, version: 3, key: Buffer.from('j'), value: Buffer.from('kept') });
    const lookup = (failed: Map<number, string>): string | null => {
      const shared = attachKvShared(createKvShared(c, 0, 1024, pool), pool.region);
      const r = rebuildIndexes(pool, shared, defaultLimits, new ManualClock(0), undefined, undefined, { failed });
      const reader = new PoolEntryReader(pool.region, defaultLimits);
      const addr = shared.indexes[0]!.get(Buffer.from('k'), hash64Into(Buffer.from('k'), { hi: 0, lo: 0 }), reader);
      assert.ok(shared.indexes[0]!.get(Buffer.from('j'), hash64Into(Buffer.from('j'), { hi: 0, lo: 0 }), reader) !== 0, 'the other key is indexed');
      if (failed.size > 0 && failed.get(failedAt) === failedKey(0, 2)) assert.equal(r.failed, 1);
      if (addr === 0) return null;
      const e = readEntryAt(pool.region.bytes, addr, defaultLimits)!;
      return e.type === EntryType.Del ? null : Buffer.from(e.value).toString();
    };
    assert.equal(lookup(new Map()), null, 'without the record the failed DEL wins');
    assert.equal(lookup(new Map([[failedAt, failedKey(0, 2)]])), 'acknowledged', 'recorded: the DEL is not indexed');
    assert.equal(lookup(new Map([[failedAt, failedKey(0, 7)], [otherAt, failedKey(1, 3)]])), null, 'a record of another version or shard at that offset matches nothing');
    pool.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
