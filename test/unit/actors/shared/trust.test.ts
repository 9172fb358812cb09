// Cold start trusts only what it should (issue 12; actors/shared/trust.ts): a forged block planted in the
// b-log of a shard this node is primary of, or one carrying version 2^48-1, is not applied, and the node
// comes up serving its own acknowledged value with the shard's versions intact. A shard promoted here
// keeps its pre-promotion b-log data (the TRAP of §4.5), and a pool older than the replica record keeps
// the old behaviour. Regions of owner ids no other node holds are freed at the restart.
// Each case runs prepareNodeKv, the function `rowan start` runs before any actor.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '../../../../config/base/log.js';
import { tlogOwner } from '../../../../config/base/ids.js';
import { planCluster, type ClusterConfig } from '../../../../config/cluster.js';
import { defaultLimits } from '../../../../config/limits.js';
import { shardOfKey } from '../../../../config/slots.js';
import { prepareNodeKv } from '../../../../actors/node/node-application.js';
import { attachKvShared, createKvShared } from '../../../../actors/shared/node-shared.js';
import { BlockApplier } from '../../../../actors/shared/apply.js';
import { rebuildIndexesParallel } from '../../../../actors/node/recovery.js';
import { monotonicClock } from '../../../../config/base/clock.js';
import { VERSION_TRUST_MAX } from '../../../../actors/shared/trust.js';
import { scanBlogBlocks } from '../../../../runtime/rowan/blog-scan.js';
import { PROMOTION_VERSION_GAP } from '../../../../actors/node/promote.js';
import { PoolEntryReader } from '../../../../shm/entry-reader.js';
import { hash64 } from '../../../../shm/hash.js';
import { EntryType, encodeBlocks, readEntryAt } from '../../../../shm/log.js';
import { VERSION_MAX } from '../../../../shm/log-layout.js';
import { OwnerRole, Pool, SegmentState } from '../../../../shm/pool.js';
import { TLog } from '../../../../shm/tlog.js';
import { setChecksumSeed } from '../../../../shm/log-checksum.js';
import { craftedInnerBlock, tornCarrier } from '../../../fixtures/smuggled-block.js';

const log = createLogger('silent');
const SHARDS = 4;
const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array) => new TextDecoder().decode(b);

/** A 2-node cluster, this node 0: primary of shards 0 and 2, backup of 1 and 3 (planCluster). */
function setup(checksumSeed?: number) {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-trust-'));
  const node = (id: number) => ({ id, host: '127.0.0.1', dataDir: id === 0 ? dir : join(dir, 'other'), workerPorts: [1], fabric: { kind: 'tcp' as const, host: '127.0.0.1', port: 2 } });
  const cluster: ClusterConfig = planCluster({ nodes: [node(0), node(1)], shardCount: SHARDS, replicationFactor: 2, replication: 'rowan', ...(checksumSeed ? { checksumSeed } : {}) });
  assert.equal(cluster.shards[0]!.primary, 0);
  assert.deepEqual(cluster.shards[1]!.backups, [0]);
  const pool = Pool.create(join(dir, 'pool.pm'), { segmentCount: 64, segmentBytes: 64 * 1024 });
  let blogAt = -1; // a b-log segment is taken at the first plant (after the node's first start)
  return {
    dir, cluster, pool,
    /** Land raw bytes in the b-log as a peer's SEND would. */
    land(bytes: Uint8Array): void {
      if (blogAt < 0) blogAt = pool.segmentOffset(pool.allocate(OwnerRole.Control, 0));
      pool.region.bytes.set(bytes, blogAt);
      pool.region.persist(blogAt, bytes.length);
      blogAt += bytes.length;
    },
    /** Land an entry in the b-log as a peer's SEND would. */
    plant(shard: number, version: number, key: string, value: string): void {
      if (blogAt < 0) blogAt = pool.segmentOffset(pool.allocate(OwnerRole.Control, 0));
      for (const b of encodeBlocks({ type: EntryType.Put, shard, version, key: enc(key), value: enc(value) }, defaultLimits)) {
        pool.region.bytes.set(b, blogAt);
        pool.region.persist(blogAt, b.length);
        blogAt += b.length;
      }
    },
    /** Shard `shard` (backed up by this node) is promoted here, continuing after `version`: the
     *  record notes it as the promotion hook would, and the configuration makes this node its primary. */
    promote(shard: number, version: number): void {
      const path = join(dir, 'replicas.json');
      const rec = JSON.parse(readFileSync(path, 'utf8')) as { promoted: Record<string, number> };
      rec.promoted[String(shard)] = version;
      writeFileSync(path, JSON.stringify(rec));
      cluster.term++;
      cluster.shards[shard] = { id: shard, primary: 0, backups: [1] };
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

/** What the rebuilt index serves for `key`: its value, or null. */
function served(pool: Pool, start: Awaited<ReturnType<typeof prepareNodeKv>>, key: string): { value: string; version: number } | null {
  const shared = attachKvShared(start.shared, pool.region);
  const k = enc(key);
  const addr = shared.indexes[shardOfKey(k, SHARDS)]!.get(k, hash64(k), new PoolEntryReader(pool.region, defaultLimits));
  if (addr === 0) return null;
  const e = readEntryAt(pool.region.bytes, addr, defaultLimits)!;
  return { value: dec(e.value), version: e.version };
}

const shardVersion = (pool: Pool, start: Awaited<ReturnType<typeof prepareNodeKv>>, s: number) => Number(attachKvShared(start.shared, pool.region).versions[s]);

test('a forged b-log block of a shard this node is primary of, and one with version 2^48-1, are not applied at cold start', async () => {
  const t = setup();
  try {
    await t.coldStart(); // the node's first start: an empty pool, its replica record is created
    const mine = keyOfShard(0, 'own'); // shard 0: this node is its primary
    const backed = keyOfShard(1, 'rep'); // shard 1: this node is a backup
    const tlog = TLog.recover(t.pool, tlogOwner(0), defaultLimits);
    tlog.append({ type: EntryType.Put, shard: 0, version: 5, key: enc(mine), value: enc('acknowledged') });
    t.plant(1, 3, backed, 'replicated'); // a legitimate replicated write
    // The forgeries: a higher version of the primary's own key, and a version that would brick shard 1.
    t.plant(0, 1000, mine, 'forged');
    t.plant(1, VERSION_MAX, backed, 'forged-max');
    t.plant(1, VERSION_MAX, keyOfShard(1, 'new'), 'forged-new');

    const start = await t.coldStart();
    assert.deepEqual(served(t.pool, start, mine), { value: 'acknowledged', version: 5 });
    assert.deepEqual(served(t.pool, start, backed), { value: 'replicated', version: 3 });
    assert.equal(served(t.pool, start, keyOfShard(1, 'new')), null);
    assert.equal(shardVersion(t.pool, start, 0), 5, 'the primary continues after its own writes');
    assert.equal(shardVersion(t.pool, start, 1), 3, 'no forged version raised shard 1: its next PUT gets version 4');
  } finally {
    t.done();
  }
});

test('a shard promoted to this node keeps its pre-promotion b-log data; blocks at or above the promotion version are not applied', async () => {
  const t = setup();
  try {
    await t.coldStart(); // records: backup of shards 1 and 3
    const k = keyOfShard(1, 'pre');
    t.plant(1, 7, k, 'before-promotion'); // received while a backup of shard 1
    // Shard 1 fails over to this node (§4.5): the record gets the version the promotion continued after.
    const promotedAt = 7 + PROMOTION_VERSION_GAP;
    t.promote(1, promotedAt);
    const late = keyOfShard(1, 'late');
    t.plant(1, promotedAt + 1, late, 'after-promotion'); // landed after the promotion: never acknowledged

    const start = await t.coldStart();
    assert.deepEqual(served(t.pool, start, k), { value: 'before-promotion', version: 7 }, 'the pre-promotion write survives');
    assert.equal(served(t.pool, start, late), null);
  } finally {
    t.done();
  }
});

test('regression (sim seed 32): a shard moved here by a planned move keeps the old primary\'s last write, at the very version the promotion continued after', async () => {
  const t = setup();
  try {
    await t.coldStart(); // records: backup of shards 1 and 3
    const k = keyOfShard(1, 'last');
    t.plant(1, 7, k, 'last-before-move'); // the source's last acknowledged write of shard 1
    // A planned move (§4.6): the drained source's counter (7) is the floor, and the target continues
    // right after it -- no gap -- so the record says 7.
    t.promote(1, 7);
    const late = keyOfShard(1, 'late');
    t.plant(1, 8, late, 'after-move'); // above it: landed after the promotion, never acknowledged

    const start = await t.coldStart();
    assert.deepEqual(served(t.pool, start, k), { value: 'last-before-move', version: 7 }, 'the acknowledged write at the promotion version survives a full restart');
    assert.equal(served(t.pool, start, late), null);
  } finally {
    t.done();
  }
});

test('regression (nemesis seed 345667674): a shard failed over to this node a second time, whose promotion a full restart cut short, keeps every write its primary made since this node was last its primary', async () => {
  const t = setup();
  try {
    await t.coldStart(); // records: backup of shards 1 and 3
    const k = keyOfShard(1, 'hot');
    t.plant(1, 7, k, 'old'); // received while a backup of shard 1
    // Shard 1 fails over to this node: the promotion continued after 7 + the gap.
    const promotedAt = 7 + PROMOTION_VERSION_GAP;
    t.promote(1, promotedAt);
    await t.coldStart();
    // Later node 1 is primary of shard 1 again (a failover back), and this node its backup: node 1's
    // acknowledged writes, above this node's old promotion version, land in this b-log.
    t.cluster.term++;
    t.cluster.shards[1] = { id: 1, primary: 1, backups: [0] };
    await t.coldStart();
    const acknowledged = promotedAt + PROMOTION_VERSION_GAP + 5;
    t.plant(1, acknowledged, k, 'acknowledged');
    // Node 1 fails; the failover to this node is stored (this node acknowledged its prepare as a
    // backup), and every node loses power before the promotion runs here: the cold start finds this
    // node primary of shard 1 in the stored configuration with no promotion of this tenure recorded.
    t.cluster.term++;
    t.cluster.shards[1] = { id: 1, primary: 0, backups: [1] };
    const start = await t.coldStart();
    assert.deepEqual(served(t.pool, start, k), { value: 'acknowledged', version: acknowledged }, 'the write acknowledged by both replicas since the old promotion survives the restart');
  } finally {
    t.done();
  }
});

test('a pool older than the replica record keeps applying its b-log to every shard it holds', async () => {
  const t = setup();
  try {
    const k = keyOfShard(0, 'old'); // shard 0: primary here; this pool may have been promoted before records
    t.plant(0, 9, k, 'from-an-old-promotion');
    const start = await t.coldStart(); // no replicas.json, and the pool holds data
    assert.deepEqual(served(t.pool, start, k), { value: 'from-an-old-promotion', version: 9 });
  } finally {
    t.done();
  }
});

test('regions of owner ids no other node holds are freed at cold start; a member\'s region is kept', async () => {
  const t = setup();
  try {
    await t.coldStart();
    const foreign = [t.pool.allocate(OwnerRole.Remote, 300), t.pool.allocate(OwnerRole.Remote, 0)]; // 0: this node itself
    const member = t.pool.allocate(OwnerRole.Remote, 1);
    await t.coldStart();
    for (const s of foreign) assert.equal(t.pool.meta(s).state, SegmentState.Free);
    assert.equal(t.pool.meta(member).state, SegmentState.Using);
  } finally {
    t.done();
  }
});

for (const seed of [0, 0x5eed1234]) {
  test(`a torn PUT whose value smuggles a block, cold start with checksum seed ${seed}: ${seed === 0 ? 'the unkeyed hazard -- the block is applied' : 'not applied, the node serves the right value'}`, async () => {
    const t = setup(seed);
    try {
      await t.coldStart(); // the first start keys this thread's checksums with the cluster's seed
      const victim = keyOfShard(1, 'victim'); // shard 1: this node is a backup, so b-log data is applied
      t.plant(1, 4, victim, 'acknowledged');
      t.land(tornCarrier(1, craftedInnerBlock(1, 99, victim, 'smuggled')));
      t.plant(1, 6, keyOfShard(1, 'after'), 'landed-after-the-torn-write');
      const start = await t.coldStart();
      assert.deepEqual(served(t.pool, start, keyOfShard(1, 'after')), { value: 'landed-after-the-torn-write', version: 6 }, 'the scan went on past the torn write');
      if (seed === 0) assert.deepEqual(served(t.pool, start, victim), { value: 'smuggled', version: 99 });
      else assert.deepEqual(served(t.pool, start, victim), { value: 'acknowledged', version: 4 });
    } finally {
      t.done();
      setChecksumSeed(0);
    }
  });
}

test('a node refuses a configuration whose checksum seed is not the one its pool was written with', async () => {
  const t = setup(0x5eed1234);
  try {
    await t.coldStart();
    t.plant(1, 4, keyOfShard(1, 'x'), 'v');
    t.cluster.checksumSeed = 0x5eed1235;
    await assert.rejects(t.coldStart(), { code: 'ROWAN_ERR_BAD_CONFIG', message: /another checksum seed/ });
    delete t.cluster.checksumSeed;
    await assert.rejects(t.coldStart(), { code: 'ROWAN_ERR_BAD_CONFIG', message: /another checksum seed/ });
  } finally {
    t.done();
    setChecksumSeed(0);
  }
});

test('digest (BlockApplier, live) never applies nor raises a shard version to a version beyond the plausible range', () => {
  const t = setup();
  try {
    const shared = attachKvShared(createKvShared(t.cluster, 0, 1024, t.pool), t.pool.region);
    const applier = new BlockApplier(t.pool.region, shared, () => true, TLog.recover(t.pool, 0, defaultLimits, OwnerRole.Digest), defaultLimits);
    const k = keyOfShard(1, 'live');
    t.plant(1, 3, k, 'replicated');
    t.plant(1, VERSION_MAX, k, 'forged-max');
    t.plant(1, VERSION_TRUST_MAX + 1, keyOfShard(1, 'other'), 'forged-above-the-bound');
    t.plant(1, VERSION_TRUST_MAX, keyOfShard(1, 'edge'), 'the-bound-itself');
    const seg = t.pool.segments({ role: OwnerRole.Control })[0]!;
    const start = t.pool.segmentOffset(seg);
    for (const b of scanBlogBlocks(t.pool.region.bytes, start, start + t.pool.segmentBytes, defaultLimits)) applier.apply(b);
    assert.equal(applier.stats.untrusted, 2);
    assert.equal(Number(shared.versions[1]), VERSION_TRUST_MAX, 'raised to the bound at most: 2^47 versions left for the shard');
    const reader = new PoolEntryReader(t.pool.region, defaultLimits);
    const addr = shared.indexes[1]!.get(enc(k), hash64(enc(k)), reader);
    assert.equal(dec(readEntryAt(t.pool.region.bytes, addr, defaultLimits)!.value), 'replicated');
    assert.equal(shared.indexes[1]!.get(enc(keyOfShard(1, 'other')), hash64(enc(keyOfShard(1, 'other'))), reader), 0);
  } finally {
    t.done();
  }
});

test('cold-start helper threads key their scans with the cluster seed (the parallel rebuild finds every entry)', async () => {
  const t = setup(0x5eed1234);
  try {
    await t.coldStart(); // keys this thread with the seed
    const logs = [TLog.recover(t.pool, tlogOwner(0), defaultLimits), TLog.recover(t.pool, tlogOwner(1), defaultLimits)];
    for (let i = 0; i < 600; i++) logs[i % 2]!.append({ type: EntryType.Put, shard: 0, version: i + 1, key: enc(`p${i}`), value: new Uint8Array(1000).fill(7) });
    const buffers = createKvShared(t.cluster, 0, 1024, t.pool);
    const rep = await rebuildIndexesParallel(t.pool, buffers, defaultLimits, monotonicClock, 3);
    assert.ok(rep.logSegments >= 6, `${rep.logSegments} log segments: enough for 3 helper threads`);
    assert.equal(rep.indexed, 600);
  } finally {
    t.done();
    setChecksumSeed(0);
  }
});
