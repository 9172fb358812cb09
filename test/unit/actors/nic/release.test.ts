// Segments are released when the peer goes away for good (issue 12): once the configuration no longer
// names a node at all -- the cold start's rule (actors/shared/trust.ts remoteOwnersOf) -- the running NIC
// hands that node's regions to garbage collection before its next verb: no WRITE or READ of the node
// reaches them, and a clean actor frees them, moving an entry an index still points at first. A node
// that failed over (listed dead, still named) keeps its regions. Today no configuration change drops a
// node from `nodes`, so the change is made here by hand, the way a removal would look.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Cleaner } from '../../../../actors/clean/gc.js';
import { configView } from '../../../../actors/nic/membership.js';
import { NicServer } from '../../../../actors/nic/nic-server.js';
import { NicMemory, newNicPeer, type NicPeer } from '../../../../actors/nic/nic-verbs.js';
import { planFailover } from '../../../../actors/manager/plan.js';
import { rebuildIndexes } from '../../../../actors/node/recovery.js';
import { attachKvShared, createKvShared } from '../../../../actors/shared/node-shared.js';
import { monotonicClock } from '../../../../config/base/clock.js';
import { planCluster, validateCluster, type ClusterConfig } from '../../../../config/cluster.js';
import { defaultLimits } from '../../../../config/limits.js';
import { PoolEntryReader } from '../../../../shm/entry-reader.js';
import { hash64 } from '../../../../shm/hash.js';
import { EntryType, encodeBlocks, readEntryAt } from '../../../../shm/log.js';
import { OwnerRole, Pool, SegmentState } from '../../../../shm/pool.js';
import { shardOfKey } from '../../../../config/slots.js';
import { TcpConnection } from '../../../../runtime/fabric/tcp.js';
import { eventually } from '../../../fixtures/eventually.js';

const enc = (s: string) => new TextEncoder().encode(s);
const SHARDS = 3;

/** Nodes 0, 1, 2, every shard on all three; this node is 0. */
function setup() {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-nic-release-'));
  const node = (id: number) => ({ id, host: '127.0.0.1', dataDir: join(dir, `n${id}`), workerPorts: [1], fabric: { kind: 'tcp' as const, host: '127.0.0.1', port: 2 } });
  const pool = Pool.create(join(dir, 'pool.pm'), { segmentCount: 32, segmentBytes: 64 * 1024 });
  const t = {
    dir,
    pool,
    cfg: planCluster({ nodes: [node(0), node(1), node(2)], shardCount: SHARDS, replicationFactor: 3, replication: 'rwrite' }) as ClusterConfig,
    view: null as unknown as ReturnType<typeof configView>,
    mem: null as unknown as NicMemory,
    done(): void {
      t.mem.close();
      pool.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  t.view = configView(() => t.cfg, 0);
  t.mem = new NicMemory({ dataDir: dir, pool: () => pool, frameBytesMax: 1 << 16, now: () => 0, reserveSegments: 3, ...t.view });
  return t;
}

const peer = (nodeId: number): NicPeer => ({ ...newNicPeer(), nodeId });

/** `c` without node `gone` (a failover first moves its shards away and lists it dead; then it goes). */
function removed(c: ClusterConfig, gone: number): ClusterConfig {
  const failed = c.dead?.includes(gone) ? c : planFailover(c, gone).next;
  const nodes = failed.nodes.filter((n) => n.id !== gone);
  return validateCluster({ ...failed, term: failed.term + 1, nodes, replicationFactor: Math.min(failed.replicationFactor, nodes.length), dead: (failed.dead ?? []).filter((d) => d !== gone) });
}

test('a removed node\'s regions are released before its next verb; a dead node that is still named keeps its own', () => {
  const t = setup();
  try {
    const [p1, p2] = [peer(1), peer(2)];
    const r1 = t.mem.alloc(p1, 1);
    const r2 = t.mem.alloc(p2, 2);
    t.mem.write(p2, r2.offset, new Uint8Array(64).fill(2));

    t.cfg = planFailover(t.cfg, 2).next; // node 2 failed over: dead, still named
    assert.throws(() => t.mem.alloc(p2, 2), { code: 'ROWAN_ERR_NOT_GRANTED', message: /not a live member/ });
    assert.equal(t.pool.meta(r2.segment).state, SegmentState.Using, 'a dead node\'s region may hold the only copy of what it replicated');
    assert.deepEqual([...t.mem.read(p2, r2.offset, 1)], [2]);

    t.cfg = removed(t.cfg, 2); // now the configuration no longer names node 2
    assert.ok(!t.cfg.nodes.some((n) => n.id === 2));
    // Its very next WRITE finds the region released: nothing written, nothing of the pool named.
    assert.throws(() => t.mem.write(p2, r2.offset, new Uint8Array(64).fill(9)), (e: Error & { code?: string }) => e.code === 'ROWAN_ERR_NOT_GRANTED' && !/\[\d+, \d+\)/.test(e.message));
    assert.equal(t.pool.region.bytes[r2.offset], 2);
    assert.throws(() => t.mem.read(p2, r2.offset, 1), { code: 'ROWAN_ERR_NOT_GRANTED' });
    assert.throws(() => t.mem.alloc(p2, 2), { code: 'ROWAN_ERR_NOT_GRANTED' });
    assert.deepEqual([t.pool.meta(r2.segment).state, t.pool.meta(r2.segment).ownerId], [SegmentState.Committed, 2], 'handed to GC');
    // Node 1 keeps its region and its rights; nothing more is released for the same configuration.
    assert.equal(t.pool.meta(r1.segment).state, SegmentState.Using);
    t.mem.write(p1, r1.offset, new Uint8Array(64).fill(1));
    assert.equal(t.mem.releaseRemoved(), 0);
  } finally {
    t.done();
  }
});

test('a released region is freed by the clean actor, and an entry an index pointed into it survives', () => {
  const t = setup();
  try {
    const shared = attachKvShared(createKvShared(t.cfg, 0, 1024, t.pool), t.pool.region);
    const key = enc('kept-by-gc');
    const shard = shardOfKey(key, SHARDS);
    const p1 = peer(1);
    const r1 = t.mem.alloc(p1, 1);
    // Node 1 replicated one entry into its region one-sidedly; a cold start indexed it from there.
    const [block] = encodeBlocks({ type: EntryType.Put, shard, version: 7, key, value: enc('replicated by node 1') }, defaultLimits);
    t.mem.write(p1, r1.offset, block!);
    rebuildIndexes(t.pool, shared, defaultLimits, monotonicClock);
    const reader = new PoolEntryReader(t.pool.region, defaultLimits);
    const at = () => shared.indexes[shard]!.get(key, hash64(key), reader);
    assert.equal(t.pool.segmentOf(at()), r1.segment);

    t.cfg = removed(t.cfg, 1);
    assert.equal(t.mem.releaseRemoved(), 1);
    const cleaner = new Cleaner({ pool: t.pool, shared, limits: defaultLimits, id: 0, count: 1, liveThresholdPercent: 75 });
    for (let i = 0; i < 100 && t.pool.meta(r1.segment).state !== SegmentState.Free; i++) cleaner.pass();
    assert.equal(t.pool.meta(r1.segment).state, SegmentState.Free, 'the clean actor freed the released region');
    assert.notEqual(t.pool.segmentOf(at()), r1.segment, 'the entry moved out first');
    const e = readEntryAt(t.pool.region.bytes, at(), defaultLimits)!;
    assert.equal(new TextDecoder().decode(e.value), 'replicated by node 1');
    assert.equal(t.pool.segments({ role: OwnerRole.Remote }).length, 0);
  } finally {
    t.done();
  }
});

test('an idle nic releases a removed node\'s regions on its own', async () => {
  const t = setup();
  const secret = new Uint8Array(32).fill(7);
  const nic = await NicServer.listen({ dataDir: t.dir, pool: () => t.pool, clock: monotonicClock, host: '127.0.0.1', port: 0, secret, ...t.view });
  try {
    const conn = await TcpConnection.connect({ host: '127.0.0.1', port: nic.endpoint.port, secret, senderId: 2 });
    const r2 = await conn.allocateRegion(2);
    await conn.close();
    t.cfg = removed(t.cfg, 2); // no verb follows: the nic's timer notices the new configuration
    await eventually(() => assert.equal(t.pool.meta(r2.segment).state, SegmentState.Committed), 5_000, 10);
  } finally {
    await nic.close();
    t.done();
  }
});
