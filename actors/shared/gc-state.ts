// The shared state behind commit tracking and garbage collection (§4.4), created once per node next to
// the shard versions and indexes (./node-shared.ts) and attached by every worker, digest and clean actor:
//
//   live      live bytes per segment: the bytes of entries some index points at. Whoever changes an
//             index item moves the entry's bytes from the old item's segment to the new one's (PUT/DEL
//             on the primary, digest on backups, clean when it relocates). Clean picks Committed
//             segments whose live share fell below the threshold.
//   shardLive the same bytes per shard, in SHARD_UNIT_BYTES units (each entry's size rounded up, the
//             same on the way in and out; 256 GiB per shard before the Int32 wraps): what the node
//             reports to the manager as each shard's size (issue 28: balancing by bytes).
//   votes     per b-log segment, how many digest actors found it committed for their shards; the
//             last one moves it Used -> Committed (each digest owns a share of the shards, §4.4).
//   epochs    read epochs for safe reclamation: a segment is only freed once no actor can still be
//             reading an address it took from the index before the entries moved (ReadEpochs below).
//   inflight  per (worker, shard) the lowest version that worker has claimed and not finished; the
//             primary's CommitVer of a shard is below every such version (actors/shared/commit.ts).
//   sent      per shard, the highest CommitVer already written to the backups.
//   floors    per shard, the tombstone floors of a backup (./floors.ts): raw, effective, persisted.
//   marks     per shard, the persisted version high-water mark (./version-marks.ts).
//   points    per shard, the commit point last saved durably (./commit-points.ts): a primary's
//             tombstone sweep drops nothing above it.
//   dels      how many times an index item was made to point at a DEL entry (LiveBytes counts them):
//             the tombstone sweep skips its PM scan while none came since a scan that found no DEL.
import { ACTORS_PER_ROLE_MAX } from '../../config/base/ids.js';
import type { Limits } from '../../config/limits.js';
import { EntryType, storedSizeAt } from '../../shm/log.js';
import { SHARD_OFF, TYPE_OFF } from '../../shm/log-layout.js';
import { createFloorBuffer } from './floors.js';
import { createMarkBuffer } from './version-marks.js';

/** Worker actors per node the inflight table has room for: every worker a node may run. */
export const INFLIGHT_WORKERS_MAX = ACTORS_PER_ROLE_MAX;

/** Read-epoch slots: one per worker, digest and clean actor (each role up to 64). */
const EPOCH_ROLE_SLOTS = 64;
const EPOCH_ROLES = { worker: 0, digest: 1, clean: 2 } as const;
export type EpochRole = keyof typeof EPOCH_ROLES;

export interface GcSharedBuffers {
  dataOffset: number;
  segmentBytes: number;
  segmentCount: number;
  live: SharedArrayBuffer;
  shardLive: SharedArrayBuffer;
  votes: SharedArrayBuffer;
  epochs: SharedArrayBuffer;
  inflight: SharedArrayBuffer;
  sent: SharedArrayBuffer;
  floors: SharedArrayBuffer;
  marks: SharedArrayBuffer;
  points: SharedArrayBuffer;
  dels: SharedArrayBuffer;
}

export function createGcShared(pool: { dataOffset: number; segmentBytes: number; segmentCount: number }, shardCount: number): GcSharedBuffers {
  const epochs = new SharedArrayBuffer(4 * (1 + EPOCH_ROLE_SLOTS * Object.keys(EPOCH_ROLES).length));
  new Int32Array(epochs)[0] = 1; // epochs start at 1: a slot value of 0 means "not reading"
  return {
    dataOffset: pool.dataOffset,
    segmentBytes: pool.segmentBytes,
    segmentCount: pool.segmentCount,
    live: new SharedArrayBuffer(4 * pool.segmentCount),
    shardLive: new SharedArrayBuffer(4 * shardCount),
    votes: new SharedArrayBuffer(4 * pool.segmentCount),
    epochs,
    inflight: new SharedArrayBuffer(8 * INFLIGHT_WORKERS_MAX * shardCount),
    sent: new SharedArrayBuffer(8 * shardCount),
    floors: createFloorBuffer(shardCount),
    marks: createMarkBuffer(shardCount),
    points: new SharedArrayBuffer(8 * shardCount),
    dels: new SharedArrayBuffer(4),
  };
}

/** Live-byte accounting per segment (see the header). */
/** The unit of the per-shard live bytes (shardLive). */
export const SHARD_UNIT_BYTES = 64;

export class LiveBytes {
  readonly counts: Int32Array;
  private readonly shards: Int32Array;
  private readonly dels: Int32Array;

  constructor(
    private readonly g: GcSharedBuffers,
    private readonly bytes: Uint8Array,
    private readonly limits: Limits,
  ) {
    this.counts = new Int32Array(g.live);
    this.shards = new Int32Array(g.shardLive);
    this.dels = new Int32Array(g.dels);
  }

  /** Add `sign` x the entry at `addr` (of `size` stored bytes) to its segment's and its shard's counts. */
  private count(addr: number, size: number, sign: 1 | -1): void {
    // Statistics shared by every actor of the node; only the sums matter, no ordering with other data.
    Atomics.add(this.counts, this.segmentOf(addr), sign * size);
    const shard = this.bytes[addr + SHARD_OFF]! | (this.bytes[addr + SHARD_OFF + 1]! << 8); // the header's Uint16 LE
    if (shard < this.shards.length) Atomics.add(this.shards, shard, sign * Math.ceil(size / SHARD_UNIT_BYTES));
  }

  /** Live bytes of `shard`'s entries on this node (some recent value; each entry rounded up to SHARD_UNIT_BYTES). */
  shardBytes(shard: number): number {
    return Math.max(0, Atomics.load(this.shards, shard)) * SHARD_UNIT_BYTES;
  }

  /** Index items made to point at a DEL entry so far (a tombstone indexed, or relocated by GC). */
  tombstonesIndexed(): number {
    return Atomics.load(this.dels, 0); // a count that only grows: any recent value will do
  }

  private countDel(addr: number): void {
    // Read by the tombstone sweep before it decides to skip a scan; wrapping is harmless (compared for change).
    if (this.bytes[addr + TYPE_OFF] === EntryType.Del) Atomics.add(this.dels, 0, 1);
  }

  segmentOf(addr: number): number {
    return Math.floor((addr - this.g.dataOffset) / this.g.segmentBytes);
  }

  /** An index item now points at `addr` (inserted). */
  added(addr: number): void {
    this.count(addr, storedSizeAt(this.bytes, addr, this.limits), 1);
    this.countDel(addr);
  }

  /** As upserted(), for a caller that knows the new entry's stored size (a log scan): no read of it. */
  upsertedSized(result: 'inserted' | 'updated' | 'stale', replaced: number, addr: number, size: number): void {
    if (result === 'stale') return;
    if (result === 'updated') this.count(replaced, storedSizeAt(this.bytes, replaced, this.limits), -1);
    this.count(addr, size, 1);
    this.countDel(addr);
  }

  /** An index item moved from `oldAddr` to `newAddr` (updated, or relocated by GC). */
  moved(oldAddr: number, newAddr: number): void {
    // As in added(): the bytes of the entry the index no longer points at stop counting as live.
    this.count(oldAddr, storedSizeAt(this.bytes, oldAddr, this.limits), -1);
    this.added(newAddr);
  }

  /** The index item pointing at `addr` was removed (a dropped tombstone, actors/clean/tombstones.ts). */
  removed(addr: number): void {
    this.count(addr, storedSizeAt(this.bytes, addr, this.limits), -1);
  }

  /** Account for an upsert's result (see ShardIndex.upsert / replaced). */
  upserted(result: 'inserted' | 'updated' | 'stale', replaced: number, addr: number): void {
    if (result !== 'stale') this.upsertedSized(result, replaced, addr, storedSizeAt(this.bytes, addr, this.limits));
  }

  get(segment: number): number {
    return Atomics.load(this.counts, segment); // some recent value
  }

  /** Start over (cold start recounts from the indexes; a segment is freed with nothing live). */
  reset(segment?: number): void {
    if (segment === undefined) {
      for (let i = 0; i < this.counts.length; i++) Atomics.store(this.counts, i, 0); // before any actor runs
      for (let i = 0; i < this.shards.length; i++) Atomics.store(this.shards, i, 0);
    } else Atomics.store(this.counts, segment, 0); // the segment holds nothing any index points at
  }
}

/**
 * Read epochs (epoch-based reclamation). A reader (worker, digest) brackets every synchronous stretch in
 * which it takes addresses from an index and reads entries there with enter()/exit(). A clean actor that
 * has moved every live entry out of a segment calls retire(), then frees the segment once quiescent(e).
 *
 * Why that is enough: enter() stores the global epoch it read into the reader's slot before the reader
 * touches the index. retire() bumps the epoch to e after the relocations. A reader whose slot is below e
 * (or whose slot is still 0 when the cleaner looks) may hold an old address, so the cleaner waits until
 * every slot is 0 or >= e. A reader that entered with an epoch >= e read the global after the bump, hence
 * after the relocations (seq-cst order), and the index no longer hands out addresses in the segment.
 * A reader that stores its slot after the cleaner's check also reads the index after the relocations.
 */
export class ReadEpochs {
  private readonly w: Int32Array;

  constructor(buffer: SharedArrayBuffer) {
    this.w = new Int32Array(buffer);
  }

  static slotOf(role: EpochRole, id: number): number {
    return 1 + EPOCH_ROLES[role] * EPOCH_ROLE_SLOTS + id;
  }

  enter(slot: number): void {
    // Publishes "I may read the index from epoch g on" before any index read of this stretch.
    Atomics.store(this.w, slot, Atomics.load(this.w, 0));
  }

  exit(slot: number): void {
    Atomics.store(this.w, slot, 0); // publishes that this reader holds no address any more
  }

  private readonly depth = new Map<number, number>();

  /** enter() for stretches of one thread that may interleave at awaits (the main thread's promotion
   *  and gather scans): the slot keeps the oldest stretch's epoch until the last one exits. */
  enterShared(slot: number): void {
    const d = this.depth.get(slot) ?? 0;
    if (d === 0) this.enter(slot);
    this.depth.set(slot, d + 1);
  }

  exitShared(slot: number): void {
    const d = (this.depth.get(slot) ?? 1) - 1;
    this.depth.set(slot, d);
    if (d === 0) this.exit(slot);
  }

  /** Start a new epoch after relocations; returns it. */
  retire(): number {
    // Publishes the bump after every relocation this cleaner made (they precede it in seq-cst order).
    return Atomics.add(this.w, 0, 1) + 1;
  }

  /** No reader is inside a stretch that began before epoch e. */
  quiescent(e: number): boolean {
    for (let i = 1; i < this.w.length; i++) {
      const v = Atomics.load(this.w, i); // the reader's current stretch, 0 = none
      if (v !== 0 && v < e) return false;
    }
    return true;
  }
}
