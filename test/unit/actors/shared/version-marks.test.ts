// Version high-water marks (actors/shared/version-marks.ts; issue 24, hazard 1): every version a node
// claims, every CommitVer it sends and every promoted counter is under a mark persisted before it is
// used; a cold start resumes each counter at or above its mark, even when nothing on PM remembers the
// versions handed out; the file is written once per half a stride, not per version.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monotonicClock } from '../../../../config/base/clock.js';
import { planCluster } from '../../../../config/cluster.js';
import { defaultLimits } from '../../../../config/limits.js';
import { CommitTracker } from '../../../../actors/shared/commit.js';
import { createGcShared } from '../../../../actors/shared/gc-state.js';
import { rebuildIndexes } from '../../../../actors/node/recovery.js';
import { attachKvShared, createKvShared } from '../../../../actors/shared/node-shared.js';
import { FileShardVersionStore, MemoryShardVersionStore, type ShardVersionStore } from '../../../../actors/shared/shard-versions-file.js';
import { FileMarkStore, MARK_STRIDE, VersionMarks } from '../../../../actors/shared/version-marks.js';
import { Pool } from '../../../../shm/pool.js';

const geometry = { dataOffset: 4096, segmentBytes: 65536, segmentCount: 8 };

test('a claim is covered by a persisted mark before it is returned, with one write per half a stride', () => {
  const g = createGcShared(geometry, 2);
  const store = new MemoryShardVersionStore();
  const marks = new VersionMarks(g.marks, store);
  const versions = new BigInt64Array(2);
  const w = new CommitTracker(g, versions, 2, 0, 1, marks);
  for (let i = 0; i < 1000; i++) {
    const v = w.claim(1);
    assert.ok(store.load().get(1)! >= v, `version ${v} is under the persisted mark`);
    w.finish(1, v);
  }
  assert.equal(store.saves, 1, 'one write covers the first half stride');
  versions[1] = BigInt(MARK_STRIDE / 2 + 1); // the next claim passes the low-water line (mark - stride / 2)
  const v = w.claim(1);
  assert.equal(store.saves, 2);
  assert.equal(store.load().get(1), v + MARK_STRIDE);
  assert.equal(marks.mark(1), v + MARK_STRIDE, 'the shared mark is what was persisted');
  assert.equal(store.load().has(0), false, 'an untouched shard has no mark');
});

test('a claim whose mark cannot be persisted fails and does not hold CommitVer back', () => {
  const g = createGcShared(geometry, 1);
  const broken: ShardVersionStore = { load: () => new Map(), save: () => { throw new Error('disk full'); } };
  const versions = new BigInt64Array(1);
  const w = new CommitTracker(g, versions, 1, 0, 1, new VersionMarks(g.marks, broken));
  assert.throws(() => w.claim(0), /disk full/);
  assert.equal(w.commitVer(0), 1, 'the consumed version is finished, not in flight');
});

test('CommitVer is covered before it is sent: a promoted counter raised past every mark', async () => {
  const g = createGcShared(geometry, 1);
  const store = new MemoryShardVersionStore();
  const marks = new VersionMarks(g.marks, store);
  const versions = new BigInt64Array(1);
  versions[0] = 5_000_000n; // raised by a promotion whose caller did not cover it
  const w = new CommitTracker(g, versions, 1, 0, 1, marks);
  const sent: number[] = [];
  await w.disseminate([{ shard: 0, backups: [1] }], async () => ({ write: async () => (sent.push(store.load().get(0) ?? 0), 1) }), defaultLimits);
  assert.equal(sent.length, 1);
  assert.ok(sent[0]! >= 5_000_000, `the mark (${sent[0]}) covered the CommitVer when it was written`);
});

test('two threads extending marks of different shards keep both in the file (one lock, whole snapshots)', () => {
  const g = createGcShared(geometry, 3);
  const store = new MemoryShardVersionStore();
  const a = new VersionMarks(g.marks, store);
  const b = new VersionMarks(g.marks, store);
  a.cover(0, 10);
  b.cover(2, 20);
  a.cover(1, 30);
  assert.deepEqual([...store.load()].sort((x, y) => x[0] - y[0]), [[0, 10 + MARK_STRIDE], [1, 30 + MARK_STRIDE], [2, 20 + MARK_STRIDE]]);
});

test('the mark file belongs to its pool, and the floors file keeps its format', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-marks-'));
  try {
    const path = join(dir, 'version-marks.json');
    new FileMarkStore(path, 'pool-a').save(new Map([[3, 42]]));
    assert.deepEqual([...new FileMarkStore(path, 'pool-a').load()], [[3, 42]]);
    assert.equal(new FileMarkStore(path, 'pool-b').load().size, 0, "another pool's marks are not this one's");
    const floors = join(dir, 'tombstone-floors.json');
    new FileShardVersionStore(floors, 'p', 'floors').save(new Map([[1, 7]]));
    assert.deepEqual(JSON.parse(readFileSync(floors, 'utf8')), { format: 1, poolId: 'p', floors: { 1: 7 } });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('cold start resumes every counter at or above its persisted mark and floor, though nothing on PM holds those versions', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-marks-cold-'));
  try {
    const c = planCluster({ nodes: [{ id: 0, host: '127.0.0.1', dataDir: dir, workerPorts: [1], fabric: { kind: 'shm', host: '127.0.0.1', port: 2 } }], shardCount: 4, replicationFactor: 1, replication: 'rowan' });
    const pool = Pool.create(join(dir, 'pool.pm'), { segmentCount: 16, segmentBytes: 64 * 1024 });
    const store = new MemoryShardVersionStore();
    // First incarnation: a promotion-like jump covered, nothing written.
    const first = attachKvShared(createKvShared(c, 0, 64, pool), pool.region, store);
    first.versions[2] = 67_108_864n;
    first.marks!.cover(2, 67_108_864);
    // Second incarnation: the pool holds no entry of shard 2.
    const again = attachKvShared(createKvShared(c, 0, 64, pool), pool.region, store);
    rebuildIndexes(pool, again, defaultLimits, monotonicClock, undefined, undefined, { marks: store.load(), floors: new Map([[3, 500]]) });
    assert.ok(Number(again.versions[2]) >= 67_108_864, `shard 2 resumes at ${again.versions[2]}`);
    assert.equal(again.marks!.mark(2), store.load().get(2), 'the shared marks start at the persisted ones');
    assert.equal(again.versions[1], 0n, 'a shard without a mark resumes from its logs');
    assert.equal(again.versions[3], 500n, "a backup's counter resumes at its persisted floor (a CommitVer it saw)");
    pool.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
