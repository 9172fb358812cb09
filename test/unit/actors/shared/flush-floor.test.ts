// The flush floor (FLUSHDB/FLUSHALL, issue 27; actors/shared/flush-floor.ts) on real pool files: the
// index refuses and drops entries below it, a FLUSH that reached one surviving backup only is gathered
// and scattered at a failover so the promoted backup and the remaining one both hold it (no flushed key
// comes back on either), and a cold start of each pool rebuilds the floor from the FLUSH entry, whatever
// order its scans meet the entries in.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monotonicClock } from '../../../../config/base/clock.js';
import { blogOwner } from '../../../../config/base/ids.js';
import { planCluster, type ClusterConfig } from '../../../../config/cluster.js';
import { defaultLimits } from '../../../../config/limits.js';
import { Cleaner } from '../../../../actors/clean/gc.js';
import { BlockApplier } from '../../../../actors/shared/apply.js';
import { applyFlush } from '../../../../actors/shared/flush-floor.js';
import { gatherForPrepare } from '../../../../actors/shared/gather-scatter.js';
import { promoteShards } from '../../../../actors/node/promote.js';
import { rebuildIndexes, RECOVERY_LOG_OWNER } from '../../../../actors/node/recovery.js';
import { attachKvShared, createKvShared, indexEntry, type KvShared } from '../../../../actors/shared/node-shared.js';
import { planScatter } from '../../../../actors/manager/gather.js';
import { planFailover } from '../../../../actors/manager/plan.js';
import { scanBlogBlocks } from '../../../../runtime/rowan/blog-scan.js';
import { PoolEntryReader } from '../../../../shm/entry-reader.js';
import { hash64Into } from '../../../../shm/hash.js';
import { encodeBlocks, EntryType, readEntryAt, type EntryInput } from '../../../../shm/log.js';
import { OwnerRole, Pool, SegmentState } from '../../../../shm/pool.js';
import { TLog } from '../../../../shm/tlog.js';

const SEG = 64 * 1024;
const limits = defaultLimits;

interface Node {
  id: number;
  pool: Pool;
  shared: KvShared;
  blog: number;
  tail: number;
}

function open(id: number, path: string, cluster: ClusterConfig, create: boolean): Node {
  const pool = create ? Pool.create(path, { segmentCount: 16, segmentBytes: SEG, mode: 'pagecache' }) : Pool.open(path, { mode: 'pagecache' });
  const shared = attachKvShared(createKvShared(cluster, id, 1024, pool), pool.region);
  const blog = create ? pool.allocate(OwnerRole.Control, blogOwner(0)) : -1;
  return { id, pool, shared, blog, tail: blog >= 0 ? pool.segmentOffset(blog) : 0 };
}

function land(n: Node, e: EntryInput): void {
  for (const b of encodeBlocks(e, limits)) {
    n.pool.region.bytes.set(b, n.tail);
    n.pool.region.persist(n.tail, b.length);
    n.tail += Math.ceil(b.length / limits.entryAlignBytes) * limits.entryAlignBytes;
  }
}

/** What a digest actor does with the b-log so far: every block applied to the node's indexes. */
function digest(n: Node): void {
  const applier = new BlockApplier(n.pool.region, n.shared, () => true, TLog.recover(n.pool, RECOVERY_LOG_OWNER, limits, OwnerRole.Digest), limits);
  const start = n.pool.segmentOffset(n.blog);
  for (const b of scanBlogBlocks(n.pool.region.bytes, start, start + SEG, limits)) applier.apply(b);
}

function get(n: Node, shard: number, key: string): string | null {
  const reader = new PoolEntryReader(n.pool.region, limits);
  const k = Buffer.from(key);
  const addr = n.shared.indexes[shard]!.get(k, hash64Into(k, { hi: 0, lo: 0 }), reader);
  if (addr === 0) return null;
  const e = readEntryAt(n.pool.region.bytes, addr, limits)!;
  return e.type === EntryType.Del ? null : Buffer.from(e.value).toString();
}

const put = (shard: number, version: number, key: string, value: string): EntryInput => ({ type: EntryType.Put, shard, version, key: Buffer.from(key), value: Buffer.from(value) });

test('the index below its flush floor: removed in one pass, a lower version refused after it, a lower floor ignored', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-flush-index-'));
  try {
    const cluster = planCluster({ nodes: [{ id: 0, host: '127.0.0.1', dataDir: dir, workerPorts: [7000], fabric: { kind: 'shm' as const, host: '127.0.0.1', port: 0 } }], shardCount: 1, replicationFactor: 1 });
    const n = open(0, join(dir, 'n0.pm'), cluster, true);
    const log = TLog.recover(n.pool, RECOVERY_LOG_OWNER, limits, OwnerRole.Digest);
    const reader = new PoolEntryReader(n.pool.region, limits);
    const index = n.shared.indexes[0]!;
    const write = (version: number, key: string): void => {
      const k = Buffer.from(key);
      indexEntry(n.shared, 0, k, hash64Into(k, { hi: 0, lo: 0 }), log.append(put(0, version, key, 'v')), version, reader);
    };
    for (let i = 1; i <= 50; i++) write(i, `k${i}`);
    assert.equal(index.items(), 50);
    const at = log.append({ type: EntryType.Flush, shard: 0, version: 40 });
    assert.equal(applyFlush(n.shared, 0, 40, at, reader), 39, 'versions 1..39 removed, 40..50 kept');
    assert.equal(index.items(), 11);
    assert.equal(index.floor(), 40);
    assert.equal(index.floorAddr(), at);
    assert.equal(get(n, 0, 'k39'), null);
    assert.equal(get(n, 0, 'k41'), 'v');
    write(30, 'late'); // a write that claimed its version before the flush, indexed after it
    assert.equal(get(n, 0, 'late'), null, 'refused below the floor');
    assert.equal(applyFlush(n.shared, 0, 35, at, reader), -1, 'a lower floor changes nothing');
    assert.equal(index.items(), 11);
    n.pool.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a FLUSH on one surviving backup only is gathered and scattered: no flushed key comes back on either, nor after a cold start', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-flush-gather-'));
  try {
    const cluster = planCluster({
      nodes: [0, 1, 2].map((id) => ({ id, host: '127.0.0.1', dataDir: join(dir, `n${id}`), workerPorts: [7000 + id], fabric: { kind: 'shm' as const, host: '127.0.0.1', port: 0 } })),
      shardCount: 3,
      replicationFactor: 3,
    });
    const shard = 0; // primary node 0, backups 1 and 2
    const [n1, n2] = [1, 2].map((id) => open(id, join(dir, `n${id}.pm`), cluster, true)) as [Node, Node];
    // Acknowledged and digested on both backups: two keys and a CommitVer covering them.
    for (const n of [n1, n2]) {
      land(n, put(shard, 1, 'a', 'A'));
      land(n, put(shard, 2, 'b', 'B'));
      land(n, { type: EntryType.CommitVer, shard, version: 2 });
      digest(n);
      assert.equal(get(n, shard, 'a'), 'A');
    }
    // The old primary died while replicating FLUSH (version 3) and a PUT after it (version 4): both
    // reached node 1 only.
    land(n1, { type: EntryType.Flush, shard, version: 3 });
    land(n1, put(shard, 4, 'c', 'C'));

    const reports = new Map<number, Awaited<ReturnType<typeof gatherForPrepare>>>();
    for (const n of [n1, n2]) reports.set(n.id, await gatherForPrepare(n.pool, n.shared, [shard], limits));
    assert.deepEqual(reports.get(1)!.entries.map((e) => [e.v, e.t]).sort(), [[3, EntryType.Flush], [4, EntryType.Put]]);
    assert.deepEqual(reports.get(2)!.entries, []);
    const plan = planFailover(cluster, 0, new Set([1, 2]));
    assert.deepEqual(plan.moved, [{ shard, from: 0, to: 1 }]);
    const scatter = planScatter(plan.next, [shard], reports, new Set([1, 2]));
    assert.deepEqual(scatter.perMember.get(2)!.map((e) => e.v).sort(), [3, 4]);
    const floors = { [shard]: 4 };
    await promoteShards(n1.pool, n1.shared, [shard], floors, limits, scatter.perMember.get(1));
    const p2 = await promoteShards(n2.pool, n2.shared, [], floors, limits, scatter.perMember.get(2));
    assert.equal(p2.scattered.absorbed, 2);
    for (const n of [n1, n2]) {
      assert.deepEqual([get(n, shard, 'a'), get(n, shard, 'b'), get(n, shard, 'c')], [null, null, 'C'], `node ${n.id} after the promotion`);
      assert.equal(n.shared.indexes[shard]!.floor(), 3);
    }

    for (const n of [n1, n2]) n.pool.close();
    for (const id of [1, 2]) {
      const n = open(id, join(dir, `n${id}.pm`), plan.next, false);
      rebuildIndexes(n.pool, n.shared, limits, monotonicClock);
      assert.deepEqual([get(n, shard, 'a'), get(n, shard, 'b'), get(n, shard, 'c')], [null, null, 'C'], `node ${id} after a cold start`);
      assert.equal(n.shared.indexes[shard]!.floor(), 3, `node ${id}: the floor rebuilt from its FLUSH entry`);
      n.pool.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('GC keeps the FLUSH entry that is its shard\'s floor (relocated with its segment), so a cold start still drops older entries GC has not reached', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-flush-gc-'));
  try {
    const cluster = planCluster({ nodes: [{ id: 0, host: '127.0.0.1', dataDir: dir, workerPorts: [7000], fabric: { kind: 'shm' as const, host: '127.0.0.1', port: 0 } }], shardCount: 1, replicationFactor: 1 });
    const path = join(dir, 'n0.pm');
    const pool = Pool.create(path, { segmentCount: 24, segmentBytes: 16 * 1024, mode: 'pagecache' });
    const shared = attachKvShared(createKvShared(cluster, 0, 4096, pool), pool.region);
    const reader = new PoolEntryReader(pool.region, limits);
    const [older, flushing] = [new TLog(pool, 1, limits), new TLog(pool, 2, limits)];
    let v = 0;
    const write = (log: TLog, key: string, value: string): void => {
      const k = Buffer.from(key);
      v++;
      indexEntry(shared, 0, k, hash64Into(k, { hi: 0, lo: 0 }), log.append(put(0, v, key, value)), v, reader);
    };
    // Old keys in a t-log whose current segment stays Using (GC never cleans it), then, in another
    // t-log, more old keys, the FLUSH, and new keys filling segments GC will clean.
    for (let i = 0; i < 20; i++) write(older, `old${i}`, 'x'.repeat(100));
    for (let i = 0; i < 60; i++) write(flushing, `pre${i}`, 'y'.repeat(200));
    v++;
    const at = flushing.append({ type: EntryType.Flush, shard: 0, version: v });
    applyFlush(shared, 0, v, at, reader);
    for (let i = 0; i < 300; i++) write(flushing, `new${i % 10}`, `n${i}`.padEnd(200, 'z'));
    const cleaner = new Cleaner({ pool, shared, limits, id: 0, count: 1, liveThresholdPercent: 75 });
    for (let i = 0; i < 50; i++) cleaner.pass();
    assert.ok(cleaner.stats.segments > 0, 'GC freed segments');
    const index = shared.indexes[0]!;
    assert.notEqual(index.floorAddr(), at, 'the FLUSH entry was relocated out of its cleaned segment');
    assert.equal(readEntryAt(pool.region.bytes, index.floorAddr(), limits)?.type, EntryType.Flush);
    assert.equal(pool.meta(pool.segmentOf(at)).state, SegmentState.Free, 'its old segment is free');
    pool.close();

    const again = Pool.open(path, { mode: 'pagecache' });
    const n: Node = { id: 0, pool: again, shared: attachKvShared(createKvShared(cluster, 0, 4096, again), again.region), blog: -1, tail: 0 };
    rebuildIndexes(again, n.shared, limits, monotonicClock);
    assert.equal(get(n, 0, 'old3'), null, 'an older entry GC had not reached stays flushed after a cold start');
    assert.equal(get(n, 0, 'pre5'), null);
    assert.equal(get(n, 0, 'new9'), 'n299'.padEnd(200, 'z'));
    assert.equal(n.shared.indexes[0]!.floor(), v - 300);
    again.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
