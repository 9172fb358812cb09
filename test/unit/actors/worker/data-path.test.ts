// ROWAN-KV's data path in one process: three nodes (pool + receive queue + receiver each), a KvWorker on
// node 0 replicating over shm to nodes 1 and 2, backups digesting their Used b-log segments into their
// indexes, then a cold start of every node from its pool alone.
import { monotonicClock } from '../../../../config/base/clock.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { planCluster, type ClusterConfig } from '../../../../config/cluster.js';
import { shardOfKey } from '../../../../config/slots.js';
import { defaultLimits } from '../../../../config/limits.js';
import { KvWorker } from '../../../../actors/worker/kv.js';
import { ShmConnection, shmPaths } from '../../../../runtime/fabric/shm.js';
import { BlockApplier } from '../../../../actors/shared/apply.js';
import { rebuildIndexes } from '../../../../actors/node/recovery.js';
import { attachKvShared, createKvShared, type KvShared } from '../../../../actors/shared/node-shared.js';
import { scanBlogBlocks } from '../../../../runtime/rowan/blog-scan.js';
import { RowanReceiver } from '../../../../runtime/rowan/receiver.js';
import { SharedReceiveQueue } from '../../../../runtime/rowan/srq.js';
import { OwnerRole, Pool } from '../../../../shm/pool.js';
import { TLog } from '../../../../shm/tlog.js';

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array | null) => (b === null ? null : new TextDecoder().decode(b));

interface TestNode {
  id: number;
  dir: string;
  pool: Pool;
  srq: SharedReceiveQueue;
  rx: RowanReceiver;
  shared: KvShared;
  used: number[];
}

function makeNode(id: number, dir: string, cluster: ClusterConfig): TestNode {
  const p = shmPaths(dir);
  const pool = Pool.create(p.pool, { segmentCount: 64, segmentBytes: 256 * 1024 });
  const srq = SharedReceiveQueue.create(p.srq, { postCap: 16, cqCap: 64 });
  const used: number[] = [];
  const rx = new RowanReceiver({ pool, srq, ownerId: 0, preallocate: 4, batch: 2, graceMs: 0, onUsed: (s) => used.push(...s) });
  rx.start();
  return { id, dir, pool, srq, rx, shared: attachKvShared(createKvShared(cluster, id, 4096)), used };
}

/** Digest everything a backup has received so far, including the segment still being filled. */
function digestAll(n: TestNode): void {
  const applier = new BlockApplier(n.pool.region, n.shared, () => true, new TLog(n.pool, 0, defaultLimits, OwnerRole.Digest), defaultLimits);
  for (const seg of [...n.used, ...n.rx.pendingSegments()]) {
    const start = n.pool.segmentOffset(seg);
    for (const b of scanBlogBlocks(n.pool.region.bytes, start, start + n.pool.segmentBytes, defaultLimits)) applier.apply(b);
  }
}

test('PUT/GET/DEL on the primary, replicated to both backups, and rebuilt by a cold start', async () => {
  const root = mkdtempSync(join(tmpdir(), 'rowan-kv-'));
  const dirs = [0, 1, 2].map((i) => join(root, `node-${i}`));
  for (const d of dirs) (await import('node:fs')).mkdirSync(d);
  const cluster = planCluster({
    nodes: dirs.map((dataDir, id) => ({ id, host: '127.0.0.1', dataDir, workerPorts: [7000 + id], fabric: { kind: 'shm' as const, host: '127.0.0.1', port: 0 } })),
    shardCount: 12,
    replicationFactor: 3,
  });
  const nodes = dirs.map((d, i) => makeNode(i, d, cluster));
  const conns = new Map<number, ShmConnection>();
  const worker = new KvWorker({
    nodeId: 0,
    config: () => cluster,
    region: nodes[0]!.pool.region,
    tlog: new TLog(nodes[0]!.pool, 0, defaultLimits),
    shared: nodes[0]!.shared,
    replica: async (id) => {
      let c = conns.get(id);
      if (!c) conns.set(id, (c = ShmConnection.connect(dirs[id]!)));
      return c;
    },
    limits: defaultLimits,
  });
  try {
    // Keys whose shard node 0 is primary for.
    const keys: string[] = [];
    for (let i = 0; keys.length < 300; i++) {
      const k = `key-${i}`;
      if (cluster.shards[shardOfKey(enc(k), cluster.shardCount)]!.primary === 0) keys.push(k);
    }
    await Promise.all(keys.map((k) => worker.put(enc(k), enc(`v1-${k}`), 1)));
    await Promise.all(keys.slice(0, 100).map((k) => worker.put(enc(k), enc(`v2-${k}`), 1))); // overwrites
    await Promise.all(keys.slice(100, 150).map((k) => worker.del(enc(k), 1)));
    const big = enc('x'.repeat(10_000)); // a 3-block entry
    await worker.put(enc(keys[299]!), big, 1);

    const expect = (k: string, i: number) => (i === 299 ? 'x'.repeat(10_000) : i < 100 ? `v2-${k}` : i < 150 ? null : `v1-${k}`);
    for (const [i, k] of keys.entries()) assert.equal(dec(await worker.get(enc(k), 1)), expect(k, i), `primary ${k}`);

    await assert.rejects(worker.put(enc(keys[0]!), enc('v'), 0), { code: 'ROWAN_ERR_STALE_TERM' });
    const foreign = Array.from({ length: 100 }, (_, i) => `f-${i}`).find((k) => cluster.shards[shardOfKey(enc(k), 12)]!.primary !== 0)!;
    await assert.rejects(worker.put(enc(foreign), enc('v'), 1), { code: 'ROWAN_ERR_WRONG_SHARD' });
    await assert.rejects(worker.put(enc('k'.repeat(2000)), enc('v'), 1), { code: 'ROWAN_ERR_KEY_TOO_LARGE' });

    // Backups: every acknowledged write is in their b-log; once digested, in their index.
    for (const b of [1, 2]) {
      digestAll(nodes[b]!);
      const peer = new KvWorker({ nodeId: b, config: () => cluster, region: nodes[b]!.pool.region, tlog: new TLog(nodes[b]!.pool, 0, defaultLimits), shared: nodes[b]!.shared, replica: async () => { throw new Error('unused'); }, limits: defaultLimits });
      for (const [i, k] of keys.entries()) assert.equal(dec(await peer.getReplica(enc(k))), expect(k, i), `backup ${b} ${k}`);
    }

    // Cold start: fresh indexes from each pool alone give the same answers, and versions continue.
    for (const n of nodes) {
      const fresh = attachKvShared(createKvShared(cluster, n.id, 4096));
      const rep = rebuildIndexes(n.pool, fresh, defaultLimits, monotonicClock);
      assert.ok(rep.indexed > 0, `node ${n.id} rebuilt nothing`);
      const w = new KvWorker({ nodeId: n.id, config: () => cluster, region: n.pool.region, tlog: new TLog(n.pool, 9, defaultLimits), shared: fresh, replica: async () => { throw new Error('unused'); }, limits: defaultLimits });
      for (const [i, k] of keys.entries()) assert.equal(dec(await w.getReplica(enc(k))), expect(k, i), `cold start node ${n.id} ${k}`);
      for (let s = 0; s < cluster.shardCount; s++) {
        if (n.id === 0 && cluster.shards[s]!.primary === 0) assert.equal(fresh.versions[s], nodes[0]!.shared.versions[s], `shard ${s} version`);
      }
    }
  } finally {
    for (const c of conns.values()) await c.close();
    for (const n of nodes) {
      n.srq.close();
      n.pool.close();
    }
    rmSync(root, { recursive: true, force: true });
  }
});

test('a cold start does not copy multi-block b-log entries again once they are in the digest log', async () => {
  const root = mkdtempSync(join(tmpdir(), 'rowan-kv-restart-'));
  const dir = join(root, 'node-1');
  (await import('node:fs')).mkdirSync(dir);
  const cluster = planCluster({
    nodes: [0, 1].map((id) => ({ id, host: '127.0.0.1', dataDir: id === 1 ? dir : join(root, 'node-0'), workerPorts: [7000 + id], fabric: { kind: 'shm' as const, host: '127.0.0.1', port: 0 } })),
    shardCount: 4,
    replicationFactor: 2,
  });
  const n = makeNode(1, dir, cluster);
  const conn = ShmConnection.connect(dir);
  try {
    // Land three 3-block entries in node 1's b-log as a primary would.
    const { encodeBlocks, EntryType } = await import('../../../../shm/log.js');
    for (let i = 0; i < 3; i++) {
      const key = enc(`big-${i}`);
      const shard = shardOfKey(key, cluster.shardCount);
      for (const b of encodeBlocks({ type: EntryType.Put, shard, version: i + 1, key, value: enc('y'.repeat(10_000)) }, defaultLimits)) await conn.write(b);
    }
    const digestSegments = () => n.pool.segments({ role: OwnerRole.Digest }).length;
    const tails: number[] = [];
    for (let restart = 0; restart < 3; restart++) {
      const fresh = attachKvShared(createKvShared(cluster, 1, 1024));
      rebuildIndexes(n.pool, fresh, defaultLimits, monotonicClock);
      const log = new TLog(n.pool, 1023, defaultLimits, OwnerRole.Digest);
      tails.push(digestSegments());
      const w = new KvWorker({ nodeId: 1, config: () => cluster, region: n.pool.region, tlog: log, shared: fresh, replica: async () => { throw new Error('unused'); }, limits: defaultLimits });
      for (let i = 0; i < 3; i++) assert.equal(dec(await w.getReplica(enc(`big-${i}`))), 'y'.repeat(10_000));
    }
    // The recovery log's bytes are written once, by the first cold start; later ones find them indexed.
    const { scanEntries } = await import('../../../../shm/log.js');
    let copies = 0;
    for (const seg of n.pool.segments({ role: OwnerRole.Digest })) {
      const start = n.pool.segmentOffset(seg);
      for (const _ of scanEntries(n.pool.region.bytes, start, start + n.pool.segmentBytes, defaultLimits)) copies++;
    }
    assert.equal(copies, 3, `digest log holds ${copies} copies of 3 entries after 3 cold starts`);
  } finally {
    await conn.close();
    n.srq.close();
    n.pool.close();
    rmSync(root, { recursive: true, force: true });
  }
});
