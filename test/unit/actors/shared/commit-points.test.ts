// Commit points (actors/shared/commit-points.ts): a flush saves each shard's CommitVer as computed from
// the counters and the inflight table -- below a worker's unfinished claim, whether or not the shard
// has backups -- publishes what it saved in the shared words, and writes nothing while nothing moved.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CommitPoints, FileCommitPointStore } from '../../../../actors/shared/commit-points.js';
import { createGcShared } from '../../../../actors/shared/gc-state.js';
import { MemoryShardVersionStore } from '../../../../actors/shared/shard-versions-file.js';

test('commit points: saved below unfinished claims, published, and not written again while idle', () => {
  const shards = 2;
  const gc = createGcShared({ dataOffset: 0, segmentBytes: 65536, segmentCount: 4 }, shards);
  const versions = new SharedArrayBuffer(8 * shards);
  const v = new BigInt64Array(versions);
  const inflight = new BigInt64Array(gc.inflight);
  const store = new MemoryShardVersionStore();
  const points = new CommitPoints(versions, gc, store);
  assert.equal(points.flush(), false, 'nothing moved: nothing written');
  v[0] = 10n; // shard 0: versions 1..10 claimed, 8 still unfinished on worker 3
  inflight[3 * shards + 0] = 8n;
  v[1] = 5n; // shard 1: all finished
  assert.equal(points.flush(), true);
  assert.deepEqual([...points.points()], [[0, 7], [1, 5]]);
  const published = new BigInt64Array(gc.points);
  assert.deepEqual([published[0], published[1]], [7n, 5n], 'what was saved is published');
  assert.equal(store.saves, 1);
  inflight[3 * shards + 0] = 0n; // the claim finished
  assert.equal(points.flush(), true);
  assert.equal(points.points().get(0), 10);
  assert.equal(points.flush(), false, 'idle: no write');
  assert.equal(store.saves, 2);
  assert.deepEqual([...new CommitPoints(versions, gc, store).points()], [[0, 10], [1, 5]], 'a restart reads what was saved');
});

test('the file store saves off the event loop: the loop turns meanwhile, and the points count only once durable', async () => {
  // The node's main thread saves these every 200 ms and renews its lease on the same event loop: a
  // synchronous fsync there blocked it up to 251 ms under a write load, long enough to lose a lease.
  const dir = mkdtempSync(join(tmpdir(), 'rowan-points-'));
  try {
    const path = join(dir, 'commit-points.json');
    const gc = createGcShared({ dataOffset: 0, segmentBytes: 65536, segmentCount: 4 }, 1);
    const versions = new SharedArrayBuffer(8);
    const points = new CommitPoints(versions, gc, new FileCommitPointStore(path, 'pool-a'));
    const published = new BigInt64Array(gc.points);
    new BigInt64Array(versions)[0] = 4n;
    let turned = false;
    setImmediate(() => (turned = true));
    const r = points.flush();
    assert.ok(r instanceof Promise, 'the save is under way when flush returns, not done');
    assert.equal(published[0], 0n, 'nothing is published before it is durable');
    assert.equal(points.flush(), false, 'one save at a time');
    assert.equal(await r, true);
    assert.ok(turned, 'the event loop ran while the file was written and synced');
    assert.equal(published[0], 4n);
    assert.deepEqual([...new FileCommitPointStore(path, 'pool-a').load()], [[0, 4]], 'a cold start reads it');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
