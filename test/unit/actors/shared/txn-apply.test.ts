// A transaction's entries in a b-log are applied all or none (DESIGN §7, issue 27): a backup whose
// primary died mid-replication holds only some of a transaction's entries, and neither its digest
// (BlockApplier, live) nor its cold start (prepareNodeKv) nor a promotion's catch-up (the same
// BlockApplier) may index any of them; a whole transaction is indexed, single- and multi-block entries.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '../../../../config/base/log.js';
import { planCluster, type ClusterConfig } from '../../../../config/cluster.js';
import { defaultLimits } from '../../../../config/limits.js';
import { shardOfKey } from '../../../../config/slots.js';
import { prepareNodeKv } from '../../../../actors/node/node-application.js';
import { attachKvShared, createKvShared, type KvShared } from '../../../../actors/shared/node-shared.js';
import { BlockApplier } from '../../../../actors/shared/apply.js';
import { scanBlogBlocks } from '../../../../runtime/rowan/blog-scan.js';
import { PoolEntryReader } from '../../../../shm/entry-reader.js';
import { hash64 } from '../../../../shm/hash.js';
import { EntryType, encodeBlocks, readEntryAt, type EntryInput } from '../../../../shm/log.js';
import { txnWord } from '../../../../shm/log-layout.js';
import { OwnerRole, Pool } from '../../../../shm/pool.js';
import { TLog } from '../../../../shm/tlog.js';

const log = createLogger('silent');
const SHARDS = 4;
const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array) => new TextDecoder().decode(b);

/** A 2-node cluster, this node 0: backup of shards 1 and 3. */
function setup() {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-txn-apply-'));
  const node = (id: number) => ({ id, host: '127.0.0.1', dataDir: id === 0 ? dir : join(dir, 'other'), workerPorts: [1], fabric: { kind: 'tcp' as const, host: '127.0.0.1', port: 2 } });
  const cluster: ClusterConfig = planCluster({ nodes: [node(0), node(1)], shardCount: SHARDS, replicationFactor: 2, replication: 'rowan' });
  assert.deepEqual(cluster.shards[1]!.backups, [0]);
  const pool = Pool.create(join(dir, 'pool.pm'), { segmentCount: 64, segmentBytes: 64 * 1024 });
  let blogAt = -1;
  return {
    cluster, pool,
    /** Land an entry's blocks in the b-log as the primary's Rowan writes would. */
    land(e: EntryInput): void {
      if (blogAt < 0) blogAt = pool.segmentOffset(pool.allocate(OwnerRole.Control, 0));
      for (const b of encodeBlocks(e, defaultLimits)) {
        pool.region.bytes.set(b, blogAt);
        pool.region.persist(blogAt, b.length);
        blogAt += b.length;
      }
    },
    /** Land one encoded block (a multi-block entry's first, say). */
    landRaw(b: Uint8Array): void {
      if (blogAt < 0) blogAt = pool.segmentOffset(pool.allocate(OwnerRole.Control, 0));
      pool.region.bytes.set(b, blogAt);
      pool.region.persist(blogAt, b.length);
      blogAt += b.length;
    },
    blocks() {
      const seg = pool.segments({ role: OwnerRole.Control })[0]!;
      const start = pool.segmentOffset(seg);
      return scanBlogBlocks(pool.region.bytes, start, start + pool.segmentBytes, defaultLimits);
    },
    coldStart: () => prepareNodeKv({ clusterFile: '(test)', cluster, nodeId: 0, keysPerShard: 1024, coldStartThreads: 1 }, dir, pool, log),
    done: () => {
      pool.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function keyOfShard(shard: number, tag: string): string {
  for (let i = 0; ; i++) if (shardOfKey(enc(`${tag}${i}`), SHARDS) === shard) return `${tag}${i}`;
}

function valueOf(pool: Pool, shared: KvShared, key: string): string | null {
  const k = enc(key);
  const addr = shared.indexes[shardOfKey(k, SHARDS)]!.get(k, hash64(k), new PoolEntryReader(pool.region, defaultLimits));
  if (addr === 0) return null;
  const e = readEntryAt(pool.region.bytes, addr, defaultLimits)!;
  return e.type === EntryType.Del ? null : dec(e.value);
}

/** A transaction of shard 1 at versions base.. writing `values` to keys tag0.., entries `landed` only. */
function txn(base: number, tag: string, values: string[]): EntryInput[] {
  return values.map((v, i) => ({ type: EntryType.Put, shard: 1, version: base + i, key: enc(keyOfShard(1, `${tag}${i}-`)), value: enc(v), txn: txnWord(values.length, i) }));
}

const big = 'B'.repeat(5000); // more than one MTU: a multi-block entry

test('digest: a torn transaction (2 of 3 entries landed) indexes none of them; a whole one indexes all; a covering CommitVer drops the torn one', () => {
  const t = setup();
  try {
    const shared = attachKvShared(createKvShared(t.cluster, 0, 1024, t.pool), t.pool.region);
    const applier = new BlockApplier(t.pool.region, shared, () => true, TLog.recover(t.pool, 0, defaultLimits, OwnerRole.Digest), defaultLimits);
    applier.tornByCommitVer = true; // as a digest's
    const torn = txn(10, 'torn', ['a', big, 'c']);
    t.land(torn[0]!);
    t.land(torn[2]!); // entry 1 never came: its primary died while replicating it
    const whole = txn(20, 'whole', ['x', big]);
    t.land(whole[1]!); // out of order: entries land as their writes do
    t.land(whole[0]!);
    for (const b of t.blocks()) applier.apply(b);
    for (const e of torn) assert.equal(valueOf(t.pool, shared, dec(e.key!)), null, 'no entry of the torn transaction is indexed');
    assert.equal(valueOf(t.pool, shared, dec(whole[0]!.key!)), 'x');
    assert.equal(valueOf(t.pool, shared, dec(whole[1]!.key!)), big);
    assert.equal(applier.pendingTxns, 1);
    // The torn transaction's blocks hold their segment out of Committed (a promotion scans it then).
    const blockOffsets = [...t.blocks()].filter((b) => b.txn !== 0 && b.version >= 10 && b.version <= 12).map((b) => b.offset);
    assert.deepEqual(applier.pendingBlockOffsets().sort((x, y) => x - y), blockOffsets);
    t.land({ type: EntryType.CommitVer, shard: 1, version: 25 });
    t.land(torn[1]!); // a late block of the torn transaction, after its primary (or its successor) finished it
    const fresh = new BlockApplier(t.pool.region, shared, () => true, TLog.recover(t.pool, 0, defaultLimits, OwnerRole.Digest), defaultLimits);
    fresh.tornByCommitVer = true;
    for (const b of t.blocks()) fresh.apply(b);
    assert.equal(fresh.stats.txnTorn, 2, 'the open group dropped by the CommitVer that covers it, its late block refused');
    assert.deepEqual(fresh.pendingBlockOffsets(), [], 'nothing holds the segment any more');
    for (const e of torn) assert.equal(valueOf(t.pool, shared, dec(e.key!)), null, 'a block after the covering CommitVer does not complete it');
  } finally {
    t.done();
  }
});

test('digest: a multi-block entry whose sender died after its first block is dropped by the CommitVer that covers it (sim seed 163: it held its segment Used)', () => {
  const t = setup();
  try {
    const shared = attachKvShared(createKvShared(t.cluster, 0, 1024, t.pool), t.pool.region);
    const applier = new BlockApplier(t.pool.region, shared, () => true, TLog.recover(t.pool, 0, defaultLimits, OwnerRole.Digest), defaultLimits);
    applier.tornByCommitVer = true; // as a digest's
    const k = keyOfShard(1, 'partial');
    const blocks = encodeBlocks({ type: EntryType.Put, shard: 1, version: 7, key: enc(k), value: enc(big) }, defaultLimits);
    assert.ok(blocks.length > 1);
    t.landRaw(blocks[0]!); // the rest never came: the primary died while replicating it
    t.land({ type: EntryType.Put, shard: 3, version: 2, key: enc(keyOfShard(3, 'other')), value: enc('o') });
    for (const b of t.blocks()) applier.apply(b);
    assert.equal(applier.pendingBlockOffsets().length, 1, 'the partial entry holds its segment out of Committed');
    // Its shard's (new) primary finished every version up to 50: version 7 failed, its other blocks
    // are not coming -- and an acknowledged entry's blocks all land before a CommitVer covering it.
    t.land({ type: EntryType.CommitVer, shard: 1, version: 50 });
    const fresh = new BlockApplier(t.pool.region, shared, () => true, TLog.recover(t.pool, 0, defaultLimits, OwnerRole.Digest), defaultLimits);
    fresh.tornByCommitVer = true;
    for (const b of t.blocks()) fresh.apply(b);
    assert.deepEqual(fresh.pendingBlockOffsets(), [], 'nothing holds the segment any more');
    assert.equal(fresh.stats.partialsTorn, 1);
    assert.equal(valueOf(t.pool, shared, k), null);
  } finally {
    t.done();
  }
});

test('cold start after a crash mid-replication: none of the torn transaction, all of the whole one', async () => {
  const t = setup();
  try {
    await t.coldStart(); // the node's first start: backup of shards 1 and 3
    const torn = txn(30, 'ctorn', ['a', 'b', big]);
    const whole = txn(40, 'cwhole', [big, 'y', 'z']);
    for (const e of whole) t.land(e);
    t.land(torn[0]!);
    t.land(torn[1]!);
    const start = await t.coldStart();
    const shared = attachKvShared(start.shared, t.pool.region);
    for (const e of torn) assert.equal(valueOf(t.pool, shared, dec(e.key!)), null);
    assert.deepEqual(whole.map((e) => valueOf(t.pool, shared, dec(e.key!))), [big, 'y', 'z']);
    // And again (the copies in the recovery log are plain entries now; the b-log still holds the blocks).
    const again = attachKvShared((await t.coldStart()).shared, t.pool.region);
    for (const e of torn) assert.equal(valueOf(t.pool, again, dec(e.key!)), null);
    assert.deepEqual(whole.map((e) => valueOf(t.pool, again, dec(e.key!))), [big, 'y', 'z']);
  } finally {
    t.done();
  }
});
