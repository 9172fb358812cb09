// Commit points (actors/shared/commit-points.ts): a flush saves each shard's CommitVer as computed from
// the counters and the inflight table -- below a worker's unfinished claim, whether or not the shard
// has backups -- publishes what it saved in the shared words, and writes nothing while nothing moved.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CommitPoints } from '../../../../actors/shared/commit-points.js';
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
