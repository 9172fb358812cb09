// The ROWAN-KV state a node's actors share (§4.1, §5.3), created by the node's main thread and handed
// to every worker and digest actor in its start message:
//   versions  one 64-bit shard version per shard (§4.2.2), bumped with Atomics.add by the primary's
//             workers; the next PUT/DEL of shard s gets versions[s] + 1.
//   indexes   one SAB-resident bucket hash table per shard this node holds (primary or backup).
//   gc        commit tracking and garbage collection state (./gc-state.ts), when the node has a pool.
//   keyLocks  the key locks of the node's RESP read-modify-write commands (./key-locks.ts).
//   expiry    one Int32: PUTs with an expiry deadline this node wrote as a primary, so every worker's
//             expiry sweep (actors/worker/resp/expiry-sweep.ts) wakes when any worker wrote one.
// Nothing here is persistent: a cold start rebuilds it from the logs (actors/node/recovery.ts), and
// raises each counter to the shard's persisted version mark (./version-marks.ts).
import type { TlsMaterial } from '../../runtime/net/tls.js';
import { setChecksumSeed } from '../../shm/log-checksum.js';
import type { ClusterConfig } from '../../config/cluster.js';
import { defaultLimits } from '../../config/limits.js';
import type { KeyHash } from '../../shm/hash.js';
import { ShardIndex, type EntryReader, type UpsertResult } from '../../shm/index.js';
import { createGcShared, LiveBytes, ReadEpochs, type GcSharedBuffers } from './gc-state.js';
import { createKeyLocks } from './key-locks.js';
import { createLoadCounters } from './shard-load.js';
import type { ShardVersionStore } from './shard-versions-file.js';
import { VersionMarks } from './version-marks.js';

export interface KvSharedBuffers {
  nodeId: number;
  versions: SharedArrayBuffer;
  /** By shard id; null for shards this node does not hold. */
  indexes: (SharedArrayBuffer | null)[];
  gc?: GcSharedBuffers;
  /** Requests and writes per (worker, shard), for resharding (./shard-load.ts). */
  load?: SharedArrayBuffer;
  /** Key locks every worker takes for RESP writes (./key-locks.ts). */
  keyLocks?: SharedArrayBuffer;
  /** Int32 count of PUTs with a deadline written here as primary (see the header). */
  expiry?: SharedArrayBuffer;
}

/** What a worker or digest actor of a ROWAN-KV node gets in its start message. */
export interface KvStart {
  /** The configuration at start; the current one is in `cell`. */
  cluster: ClusterConfig;
  /** The node's configuration cell (./config-cell.ts): the configuration now, the lease, the blocks. */
  cell: SharedArrayBuffer;
  nodeId: number;
  shared: KvSharedBuffers;
  /** The migration actor's shard copies (actors/migration/copy.ts): where it publishes them
   *  (./copy-reports.ts), the shards the cold start kept (shard, highest version held), and TLS to the
   *  primaries' client ports. Absent: the node copies nothing (no configuration manager). */
  copies?: { reports: SharedArrayBuffer; kept: [number, number][]; tls: TlsMaterial | null };
  /** share replication mode: this node's shared remote-log state per backup node id (SharedLog
   *  buffers), made once per node so all its workers take addresses from one counter per backup. */
  shareLogs?: Record<number, SharedArrayBuffer>;
  /** Request latency histograms, one slot per worker (shm/histogram.ts, actors/shared/node-metrics.ts). */
  metrics?: SharedArrayBuffer;
}

/** The ROWAN-KV payload of an actor's start message (the runtime carries it as `app`), or undefined
 *  when the node serves no cluster. Every KV role takes it at init, before its first log block, so it
 *  also keys this thread's block checksums with the cluster's seed (shm/log-checksum.ts). */
export function kvOf(ctx: { app: unknown }): KvStart | undefined {
  const kv = ctx.app as KvStart | undefined;
  if (kv) setChecksumSeed(kv.cluster.checksumSeed ?? 0);
  return kv;
}

/** Where a worker lands replication writes for one backup node (a Rowan connection or a baseline). */
export interface ReplicaChannel {
  write(bytes: Uint8Array): Promise<number>;
  /** Several blocks of one operation as one write (asymnvm: one op-log record); absent: block by block. */
  writeMany?(blocks: readonly Uint8Array[]): Promise<number>;
}

export interface KvShared {
  nodeId: number;
  versions: BigInt64Array;
  indexes: (ShardIndex | null)[];
  /** Present when the buffers carry GC state and the attacher passed its pool mapping. */
  gc: KvGc | null;
  /** The load counters' buffer (./shard-load.ts), when the node counts load. */
  load: SharedArrayBuffer | null;
  /** The persisted version high-water marks (./version-marks.ts), when the node keeps GC state; they
   *  persist only where the attacher passed a store. */
  marks: VersionMarks | null;
  /** The node's shared key locks (./key-locks.ts), when the buffers carry them. */
  keyLocks: SharedArrayBuffer | null;
  /** [0]: PUTs with a deadline written here as primary (Atomics.add by the writer, loaded by the
   *  expiry sweeps), when the buffers carry it. */
  expiryWrites: Int32Array | null;
}

export interface KvGc {
  buffers: GcSharedBuffers;
  live: LiveBytes;
  epochs: ReadEpochs;
}

/** Shards this node holds, as primary or backup. */
export function heldShards(c: ClusterConfig, nodeId: number): number[] {
  return c.shards.filter((s) => s.primary === nodeId || s.backups.includes(nodeId)).map((s) => s.id);
}

export function createKvShared(
  c: ClusterConfig,
  nodeId: number,
  keysPerShard: number,
  pool?: { dataOffset: number; segmentBytes: number; segmentCount: number },
  keysPerShardMax = Math.max(keysPerShard, defaultLimits.indexKeysPerShardMax),
  /** An index for every shard, not only those held now (a node that may become a new backup). */
  allShards = false,
): KvSharedBuffers {
  const held = new Set(allShards ? c.shards.map((s) => s.id) : heldShards(c, nodeId));
  // Sized for keysPerShard, growing on demand up to keysPerShardMax (shm/index.ts "Growth").
  const opts = ShardIndex.optionsFor(keysPerShard, undefined, undefined, keysPerShardMax);
  return {
    nodeId,
    versions: new SharedArrayBuffer(8 * c.shardCount),
    indexes: c.shards.map((s) => (held.has(s.id) ? ShardIndex.create(opts).buffer : null)),
    ...(pool ? { gc: createGcShared(pool, c.shardCount) } : {}),
    load: createLoadCounters(c.shardCount),
    keyLocks: createKeyLocks(),
    expiry: new SharedArrayBuffer(4),
  };
}

/**
 * Point `key` of `shard` at the entry at `addr` unless the index holds that key at a version >= `version`
 * (ShardIndex.upsert), and move the live bytes accordingly (gc-state.ts). Every index update of a node
 * that keeps GC state goes through here (PUT/DEL, digest, RPC-KV backups).
 */
export function indexEntry(s: KvShared, shard: number, key: Uint8Array, hash: KeyHash, addr: number, version: number, reader: EntryReader): UpsertResult {
  const index = s.indexes[shard]!;
  const r = index.upsert(key, hash, addr, version, reader);
  s.gc?.live.upserted(r, index.replaced, addr);
  // A flush raised the shard's floor over `version` while we indexed, and its walk may have passed our
  // slot already (shm/index.ts "the flush floor"): the entry is dead, take it out again.
  if (r !== 'stale' && version < index.floor() && index.remove(key, hash, addr)) s.gc?.live.removed(addr);
  return r;
}

/** Attach in this thread; pass this thread's pool mapping to get the GC state too, and the store of
 *  the node's version marks where this thread hands out or tells versions (workers, promotion). */
export function attachKvShared(b: KvSharedBuffers, region?: { bytes: Uint8Array }, markStore?: ShardVersionStore): KvShared {
  return {
    nodeId: b.nodeId,
    versions: new BigInt64Array(b.versions),
    indexes: b.indexes.map((sab) => (sab ? ShardIndex.attach(sab) : null)),
    gc: b.gc && region ? { buffers: b.gc, live: new LiveBytes(b.gc, region.bytes, defaultLimits), epochs: new ReadEpochs(b.gc.epochs) } : null,
    load: b.load ?? null,
    marks: b.gc ? new VersionMarks(b.gc.marks, markStore ?? null) : null,
    keyLocks: b.keyLocks ?? null,
    expiryWrites: b.expiry ? new Int32Array(b.expiry) : null,
  };
}

/** The next version of shard s (48-bit), taken atomically by any worker of the primary. */
export function nextVersion(versions: BigInt64Array, shard: number): number {
  return Number(Atomics.add(versions, shard, 1n)) + 1; // publishes the claim: no other PUT gets this version
}

/** Claim `n` consecutive versions of the shard (a transaction's writes): returns the first. */
export function nextVersions(versions: BigInt64Array, shard: number, n: number): number {
  return Number(Atomics.add(versions, shard, BigInt(n))) + 1; // publishes the claim of all n at once
}

/** Raise shard s's version to at least v (cold start: above every version in the logs). */
export function raiseVersion(versions: BigInt64Array, shard: number, v: number): void {
  for (;;) {
    const cur = Atomics.load(versions, shard); // the version the CAS below replaces
    if (cur >= BigInt(v)) return;
    if (Atomics.compareExchange(versions, shard, cur, BigInt(v)) === cur) return; // publishes the raise
  }
}
