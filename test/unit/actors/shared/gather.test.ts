// Gather/scatter at promotion (§4.5 phase 2), a node's side, on real pool files: the old primary of a
// shard died while replicating, so an entry reached one backup's b-log and not the other's. The two
// survivors run the prepare path (gatherForPrepare), the manager's plan (planScatter) and the commit
// path (promoteShards: the new primary promotes, the remaining backup absorbs); both indexes then return
// both entries, and so does a cold start (rebuildIndexes) of each pool.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monotonicClock } from '../../../../config/base/clock.js';
import { blogOwner } from '../../../../config/base/ids.js';
import { planCluster, type ClusterConfig } from '../../../../config/cluster.js';
import { defaultLimits } from '../../../../config/limits.js';
import { gatherForPrepare } from '../../../../actors/shared/gather-scatter.js';
import { promoteShards } from '../../../../actors/node/promote.js';
import { rebuildIndexes } from '../../../../actors/node/recovery.js';
import { attachKvShared, createKvShared, type KvShared } from '../../../../actors/shared/node-shared.js';
import { planScatter } from '../../../../actors/manager/gather.js';
import { planFailover } from '../../../../actors/manager/plan.js';
import { PoolEntryReader } from '../../../../shm/entry-reader.js';
import { hash64Into } from '../../../../shm/hash.js';
import { encodeBlocks, EntryType, readEntryAt, type EntryInput } from '../../../../shm/log.js';
import { OwnerRole, Pool } from '../../../../shm/pool.js';
import { txnWord } from '../../../../shm/log-layout.js';

const SEG = 64 * 1024;
const limits = defaultLimits;

interface Node {
  id: number;
  path: string;
  pool: Pool;
  shared: KvShared;
  /** The b-log segment the Rowan receiver is filling, and where the next block lands. */
  blog: number;
  tail: number;
}

function open(id: number, path: string, cluster: ClusterConfig, create: boolean): Node {
  const pool = create ? Pool.create(path, { segmentCount: 16, segmentBytes: SEG, mode: 'pagecache' }) : Pool.open(path, { mode: 'pagecache' });
  const shared = attachKvShared(createKvShared(cluster, id, 1024, pool), pool.region);
  const blog = create ? pool.allocate(OwnerRole.Control, blogOwner(0)) : -1; // posted: Using
  return { id, path, pool, shared, blog, tail: blog >= 0 ? pool.segmentOffset(blog) : 0 };
}

/** Land an entry's blocks in the node's b-log as the receiver-side NIC does: each block at the next
 *  stride-aligned offset, persisted. */
function land(n: Node, e: EntryInput): void {
  for (const b of encodeBlocks(e, limits)) {
    n.pool.region.bytes.set(b, n.tail);
    n.pool.region.persist(n.tail, b.length);
    n.tail += Math.ceil(b.length / limits.entryAlignBytes) * limits.entryAlignBytes;
  }
}

function get(n: Node, shard: number, key: string): string | null {
  const reader = new PoolEntryReader(n.pool.region, limits);
  const k = Buffer.from(key);
  const addr = n.shared.indexes[shard]!.get(k, hash64Into(k, { hi: 0, lo: 0 }), reader);
  if (addr === 0) return null;
  const e = readEntryAt(n.pool.region.bytes, addr, limits)!;
  return e.type === EntryType.Del ? null : Buffer.from(e.value).toString();
}

test('gather/scatter: an entry on one surviving backup only ends up persisted and indexed on both, and survives a cold start', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-gather-'));
  try {
    const cluster = planCluster({
      nodes: [0, 1, 2].map((id) => ({ id, host: '127.0.0.1', dataDir: join(dir, `n${id}`), workerPorts: [7000 + id], fabric: { kind: 'shm' as const, host: '127.0.0.1', port: 0 } })),
      shardCount: 3,
      replicationFactor: 3,
    });
    const shard = 0; // primary node 0, backups 1 and 2
    assert.deepEqual([cluster.shards[shard]!.primary, ...cluster.shards[shard]!.backups], [0, 1, 2]);
    const [n1, n2] = [1, 2].map((id) => open(id, join(dir, `n${id}.pm`), cluster, true)) as [Node, Node];

    // Both backups received version 3 (acknowledged) and a CommitVer of 2; version 1, at or below the
    // CommitVer, is on node 1 only (finished on the old primary: not gathered).
    const put = (version: number, key: string, value: string): EntryInput => ({ type: EntryType.Put, shard, version, key: Buffer.from(key), value: Buffer.from(value) });
    land(n1, put(1, 'old', 'finished'));
    for (const n of [n1, n2]) {
      land(n, put(3, 'both', 'v3'));
      land(n, { type: EntryType.CommitVer, shard, version: 2, key: new Uint8Array(0), value: new Uint8Array(0) });
    }
    // The old primary died replicating versions 4 and 5: 4 reached node 1 only, 5 (three blocks) node 2
    // only; version 6 (two blocks) reached node 1 with one block missing -- never acknowledged.
    land(n1, put(4, 'k-one', 'only on node 1'));
    const big = 'x'.repeat(2 * limits.mtuBytes + 100);
    land(n2, put(5, 'k-two', big));
    const torn = encodeBlocks(put(6, 'k-torn', 'y'.repeat(limits.mtuBytes + 10)), limits);
    n1.pool.region.bytes.set(torn[0]!, n1.tail);
    n1.tail += torn[0]!.length;

    // prepare: each survivor lists what it holds above the CommitVer
    const reports = new Map<number, Awaited<ReturnType<typeof gatherForPrepare>>>();
    for (const n of [n1, n2]) reports.set(n.id, await gatherForPrepare(n.pool, n.shared, [shard], limits));
    assert.deepEqual(reports.get(1)!.entries.map((e) => e.v).sort(), [3, 4]);
    assert.deepEqual(reports.get(2)!.entries.map((e) => e.v).sort(), [3, 5]);
    assert.equal(reports.get(1)!.committed, 1);
    assert.equal(reports.get(1)!.versions[shard], 6, 'the floor counts every block, even of an incomplete entry');
    for (const r of reports.values()) assert.equal(r.truncated, false);

    // the manager's plan and scatter
    const plan = planFailover(cluster, 0, new Set([1, 2]));
    assert.deepEqual(plan.moved, [{ shard, from: 0, to: 1 }]);
    const scatter = planScatter(plan.next, [shard], reports, new Set([1, 2]));
    assert.deepEqual(scatter.perMember.get(1)!.map((e) => e.v), [5]);
    assert.deepEqual(scatter.perMember.get(2)!.map((e) => e.v), [4]);
    const floors = { [shard]: Math.max(...[...reports.values()].map((r) => r.versions[shard]!)) };

    // commit: node 1 promotes (its own b-log + what it lacked), node 2 absorbs what it lacked
    const p1 = await promoteShards(n1.pool, n1.shared, [shard], floors, limits, scatter.perMember.get(1));
    const p2 = await promoteShards(n2.pool, n2.shared, [], floors, limits, scatter.perMember.get(2));
    assert.equal(p1.scattered.absorbed, 1);
    assert.equal(p2.scattered.absorbed, 1);
    assert.ok(p1.versions[shard]! >= 6, `new primary continues after ${p1.versions[shard]}`);
    assert.equal(get(n1, shard, 'k-one'), 'only on node 1');
    assert.equal(get(n1, shard, 'k-two'), big);
    assert.equal(get(n1, shard, 'k-torn'), null, 'an incomplete entry is neither indexed nor scattered');
    assert.equal(get(n2, shard, 'k-one'), 'only on node 1', 'the remaining backup absorbed the entry it lacked');
    // (node 2's own version 5 is in its b-log: its digest actor indexes it; the cold start below does too)

    // Scattering again writes nothing: both already hold it.
    const again = await promoteShards(n2.pool, n2.shared, [], floors, limits, scatter.perMember.get(2));
    assert.deepEqual(again.scattered, { absorbed: 0, held: 1, skipped: 0, late: 0 });

    // Cold start of both: the entries are in their pools, found by rebuildIndexes.
    for (const n of [n1, n2]) n.pool.close();
    for (const id of [1, 2]) {
      const n = open(id, join(dir, `n${id}.pm`), plan.next, false);
      rebuildIndexes(n.pool, n.shared, limits, monotonicClock);
      assert.equal(get(n, shard, 'k-one'), 'only on node 1', `node ${id} after a cold start`);
      assert.equal(get(n, shard, 'k-two'), big, `node ${id} after a cold start`);
      assert.equal(get(n, shard, 'both'), 'v3');
      assert.ok(Number(Atomics.load(n.shared.versions, shard)) >= 5);
      n.pool.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a transaction torn by its primary crash (some of its entries on some backups) is visible nowhere: not gathered, not scattered, not promoted, not after a cold start', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-gather-txn-'));
  try {
    const cluster = planCluster({
      nodes: [0, 1, 2].map((id) => ({ id, host: '127.0.0.1', dataDir: join(dir, `n${id}`), workerPorts: [7000 + id], fabric: { kind: 'shm' as const, host: '127.0.0.1', port: 0 } })),
      shardCount: 3,
      replicationFactor: 3,
    });
    const shard = 0; // primary node 0, backups 1 and 2
    const [n1, n2] = [1, 2].map((id) => open(id, join(dir, `n${id}.pm`), cluster, true)) as [Node, Node];
    const txn = (base: number, writes: [string, string][]): EntryInput[] =>
      writes.map(([k, v], i) => ({ type: EntryType.Put, shard, version: base + i, key: Buffer.from(k), value: Buffer.from(v), txn: txnWord(writes.length, i) }));
    const big = 'z'.repeat(2 * limits.mtuBytes + 7);
    // Torn: entries 0 and 1 of 3 on node 1, entry 0 on node 2; the primary died sending the rest.
    const torn = txn(10, [['t-a', '1'], ['t-b', big], ['t-c', '1']]);
    land(n1, torn[0]!);
    land(n1, torn[1]!);
    land(n2, torn[0]!);
    // Whole on node 1, entry 0 only on node 2 (never acknowledged either, but whole on one replica).
    const whole = txn(20, [['w-a', '2'], ['w-b', '2']]);
    land(n1, whole[0]!);
    land(n1, whole[1]!);
    land(n2, whole[0]!);

    const reports = new Map<number, Awaited<ReturnType<typeof gatherForPrepare>>>();
    for (const n of [n1, n2]) reports.set(n.id, await gatherForPrepare(n.pool, n.shared, [shard], limits));
    assert.deepEqual(reports.get(1)!.entries.map((e) => e.v).sort(), [20, 21], 'node 1 lists the whole transaction only');
    assert.deepEqual(reports.get(2)!.entries, [], 'node 2 holds no whole transaction');
    const plan = planFailover(cluster, 0, new Set([1, 2]));
    const scatter = planScatter(plan.next, [shard], reports, new Set([1, 2]));
    const floors = { [shard]: Math.max(...[...reports.values()].map((r) => r.versions[shard]!)) };
    await promoteShards(n1.pool, n1.shared, [shard], floors, limits, scatter.perMember.get(1));
    await promoteShards(n2.pool, n2.shared, [], floors, limits, scatter.perMember.get(2));
    for (const k of ['t-a', 't-b', 't-c']) assert.equal(get(n1, shard, k), null, `the new primary serves none of the torn transaction (${k})`);
    assert.deepEqual([get(n1, shard, 'w-a'), get(n1, shard, 'w-b')], ['2', '2']);
    assert.deepEqual([get(n2, shard, 'w-a'), get(n2, shard, 'w-b')], ['2', '2'], 'the remaining backup absorbed the whole transaction');

    for (const n of [n1, n2]) n.pool.close();
    for (const id of [1, 2]) {
      const n = open(id, join(dir, `n${id}.pm`), plan.next, false);
      rebuildIndexes(n.pool, n.shared, limits, monotonicClock);
      for (const k of ['t-a', 't-b', 't-c']) assert.equal(get(n, shard, k), null, `node ${id} after a cold start: ${k}`);
      assert.deepEqual([get(n, shard, 'w-a'), get(n, shard, 'w-b')], ['2', '2'], `node ${id} after a cold start`);
      n.pool.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
