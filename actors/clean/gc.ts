// Garbage collection of one node's pool (§4.4), run by each clean actor on its share of the segments
// (segment % cleanCount === id). A Committed segment (a full t-log segment with nothing pending, a
// b-log segment every digest voted committed, a full digest or clean log segment) whose live bytes are
// below the threshold is cleaned:
//   1. scan it (t-log/digest/clean logs: contiguous entries; b-log: the hole-skipping block scan, where
//      only single-block entries are ever indexed -- multi-block ones live reassembled in a digest log);
//   2. an entry is live iff its shard's index points exactly at it (a FLUSH entry: iff its shard's
//      flush floor names it, ../shared/flush-floor.ts); copy a live entry's bytes to this
//      actor's clean log (persisted) and move the index item with a CAS that expects exactly the old
//      address (ShardIndex.relocate): if a PUT/DEL or digest replaced the item meanwhile the CAS fails
//      and the copy is dead -- a newer version is never overwritten, an older one never resurrected;
//   3. retire it under a new read epoch; a later pass frees it (Committed -> Free) once no worker/digest/
//      clean actor is still inside a stretch that began before that epoch (actors/shared/gc-state.ts,
//      ReadEpochs): nobody can hold an address in the segment. Nothing waits: passes run every few ms.
//   4. its live bytes must be 0 by then (every index change moves bytes between segments); if not, a
//      rescan decides (an index still pointing in keeps the segment for a later clean).
// Live bytes move with every relocation (LiveBytes.moved), so the accounting stays current. Copies go
// to segments of role Clean, which may use the pool's reserve (config gc.reserveSegments): GC can
// always make room. Tombstones (DEL) the index points at are live and are copied like PUTs, until the
// tombstone sweep (./tombstones.ts, run by the clean actor given `tombstones`) removes their index items
// once no older entry of their key is left on PM; then they are dead like any replaced entry.
import { actorOwner } from '../../config/base/ids.js';
import type { Limits } from '../../config/limits.js';
import { threadCpuMicros } from '../../native/libc.js';
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import { ReadEpochs } from '../shared/gc-state.js';
import type { KvGc, KvShared } from '../shared/node-shared.js';
import { scanBlogBlocks } from '../../runtime/rowan/blog-scan.js';
import { PoolEntryReader } from '../../shm/entry-reader.js';
import { hash64Into, type KeyHash } from '../../shm/hash.js';
import type { ShardIndex } from '../../shm/index.js';
import { EntryType, scanEntries } from '../../shm/log.js';
import { OwnerRole, SegmentState, type Pool } from '../../shm/pool.js';
import { TLog } from '../../shm/tlog.js';
import { TombstoneSweep, type TombstoneSweepOptions } from './tombstones.js';

export interface CleanerOptions {
  /** This thread's mapping of the node's pool. */
  pool: Pool;
  shared: KvShared;
  limits: Limits;
  id: number;
  count: number;
  liveThresholdPercent: number;
  /** Segments cleaned per pass (one epoch wait covers them all). */
  segmentsPerPass?: number;
  /** Fault injection for tests: runs between copying a live entry and moving its index item -- the
   *  window in which a PUT/DEL of the same key races the move. */
  beforeRelocate?: (key: Uint8Array, shard: number) => void;
  /** Run the node's tombstone sweep in this cleaner (one clean actor per node does). */
  tombstones?: Pick<TombstoneSweepOptions, 'eligible' | 'backupEligible' | 'floorStore' | 'savedPoints' | 'now' | 'periodMs' | 'segmentsPerStep' | 'beforeDrop'>;
  /** The simulator's mutation test substitutes a broken sweep here. */
  makeSweep?: (o: TombstoneSweepOptions) => TombstoneSweep;
  /** This thread's CPU time in microseconds, for busyUs (injected like the clock: the simulator
   *  passes its own; default threadCpuMicros, a system call). */
  cpuMicros?: () => number;
}

export interface CleanerStats {
  passes: number;
  /** Segments freed. */
  segments: number;
  reclaimedBytes: number;
  copiedBytes: number;
  copiedEntries: number;
  /** Copies whose index item had moved on before the CAS (a PUT/DEL won): dead on arrival. */
  lostRaces: number;
  /** Segments left Committed because an index still pointed into them after relocation. */
  pinned: number;
  /** Segments freed although their live-byte count was not 0 (a rescan found nothing indexed). */
  drift: number;
  /** Cleaning stopped because even the reserve had no free segment. */
  aborted: number;
  /** Thread CPU microseconds spent in passes that did something (relocating, freeing; never waiting). */
  busyUs: number;
}

const NO_SEGMENTS_PER_PASS_DEFAULT = 4;

/** An indexable entry found in a segment. */
interface SegmentEntry {
  offset: number;
  type: number;
  shard: number;
  key: Uint8Array;
  bytes: number;
}

export class Cleaner {
  readonly out: TLog;
  readonly stats: CleanerStats = { passes: 0, segments: 0, reclaimedBytes: 0, copiedBytes: 0, copiedEntries: 0, lostRaces: 0, pinned: 0, drift: 0, aborted: 0, busyUs: 0 };
  private readonly gc: KvGc;
  private readonly reader: PoolEntryReader;
  private readonly hash: KeyHash = { hi: 0, lo: 0 };
  private readonly slot: number;
  /** Emptied segments and the epoch after which no reader can hold an address in them, oldest first. */
  private readonly retired: { segment: number; epoch: number }[] = [];
  private readonly retiring = new Set<number>();
  /** The tombstone sweep, in the cleaner that runs it. */
  readonly sweep: TombstoneSweep | null = null;

  constructor(private readonly o: CleanerOptions) {
    if (!o.shared.gc) throw new RowanError(ErrorCodes.BAD_CONFIG, 'clean: the node keeps no GC state (attach the shared buffers with the pool mapping)');
    this.gc = o.shared.gc;
    this.out = TLog.recover(o.pool, actorOwner(o.id), o.limits, OwnerRole.Clean);
    this.reader = new PoolEntryReader(o.pool.region, o.limits);
    this.slot = ReadEpochs.slotOf('clean', o.id);
    if (o.tombstones) {
      const so: TombstoneSweepOptions = { ...o.tombstones, pool: o.pool, shared: o.shared, limits: o.limits, epochSlot: this.slot };
      this.sweep = o.makeSweep ? o.makeSweep(so) : new TombstoneSweep(so);
    }
  }

  /** This actor's Committed segments under the live threshold, most garbage first (not those already
   *  emptied and waiting to be freed). */
  candidates(): { segment: number; live: number }[] {
    const limit = (this.o.liveThresholdPercent / 100) * this.o.pool.segmentBytes;
    return this.o.pool
      .segmentsInState(SegmentState.Committed)
      .filter((s) => s % this.o.count === this.o.id && !this.retiring.has(s))
      .map((segment) => ({ segment, live: this.gc.live.get(segment) }))
      .filter((c) => c.live < limit)
      .sort((a, b) => a.live - b.live);
  }

  /** Segments emptied and waiting for readers to leave their epoch (and 1 while a sweep cycle runs). */
  get waitingToFree(): number {
    return this.retired.length + (this.sweep?.busy ? 1 : 0);
  }

  /**
   * One pass, synchronous and never waiting: free the emptied segments no reader can still reach
   * (their epoch is quiescent), then move the live entries out of up to segmentsPerPass candidates and
   * retire them under a new epoch (freed by a later pass). Returns the segments freed plus emptied:
   * 0 means there was nothing to do now.
   */
  pass(): number {
    const cpu = this.o.cpuMicros ?? threadCpuMicros;
    const t0 = cpu();
    let progress = this.freeQuiescent();
    if (this.sweep) progress += this.sweep.step();
    const picks = this.candidates().slice(0, this.o.segmentsPerPass ?? NO_SEGMENTS_PER_PASS_DEFAULT);
    const moved: number[] = [];
    for (const { segment } of picks) {
      if (!this.relocateLive(segment)) break;
      moved.push(segment);
    }
    if (moved.length > 0) {
      const epoch = this.gc.epochs.retire();
      for (const segment of moved) {
        this.retired.push({ segment, epoch });
        this.retiring.add(segment);
      }
    }
    progress += moved.length;
    if (progress > 0) {
      this.stats.passes++;
      this.stats.busyUs += Math.round(cpu() - t0);
    }
    return progress;
  }

  /** Free retired segments in retirement order while their epoch is quiescent. A segment whose live
   *  bytes are not 0 is checked by a rescan: still indexed -> left Committed (cleaned again later). */
  private freeQuiescent(): number {
    let freed = 0;
    while (this.retired.length > 0 && this.gc.epochs.quiescent(this.retired[0]!.epoch)) {
      const { segment } = this.retired.shift()!;
      this.retiring.delete(segment);
      if (this.gc.live.get(segment) !== 0) {
        if (this.stillIndexed(segment)) {
          this.stats.pinned++;
          continue;
        }
        this.stats.drift++;
      }
      this.o.pool.transition(segment, SegmentState.Committed, SegmentState.Free);
      this.gc.live.reset(segment);
      this.stats.segments++;
      this.stats.reclaimedBytes += this.o.pool.segmentBytes;
      freed++;
    }
    return freed;
  }

  /** Copy every live entry of `seg` to the clean log and move its index item. False if the pool ran
   *  out of segments even with the reserve (what was moved stays moved; the segment stays Committed). */
  relocateLive(seg: number): boolean {
    return this.reading(() => {
      for (const { e, index, hash } of this.liveEntries(seg)) {
        let at: number;
        try {
          at = this.out.appendRaw(this.o.pool.region.bytes.subarray(e.offset, e.offset + e.bytes));
        } catch (err) {
          if (err instanceof RowanError && err.code === ErrorCodes.PM_FULL) {
            this.stats.aborted++;
            return false;
          }
          throw err;
        }
        this.stats.copiedBytes += e.bytes;
        this.stats.copiedEntries++;
        this.o.beforeRelocate?.(e.key, e.shard);
        const moved = e.type === EntryType.Flush ? index.relocateFloor(e.offset, at) : index.relocate(e.key, hash, e.offset, at);
        if (moved) this.gc.live.moved(e.offset, at);
        else this.stats.lostRaces++;
      }
      return true;
    });
  }

  /** Does any index still point at an entry of `seg`? */
  private stillIndexed(seg: number): boolean {
    return this.reading(() => !this.liveEntries(seg).next().done);
  }

  /** Run f inside this actor's read epoch (it takes addresses from the indexes). */
  private reading<T>(f: () => T): T {
    this.gc.epochs.enter(this.slot);
    try {
      return f();
    } finally {
      this.gc.epochs.exit(this.slot);
    }
  }

  /** The entries of `seg` their shard's index points at exactly (live), with the index and key hash. */
  private *liveEntries(seg: number): Generator<{ e: SegmentEntry; index: ShardIndex; hash: KeyHash }> {
    for (const e of this.entries(seg)) {
      const index = this.o.shared.indexes[e.shard];
      if (!index || e.type === EntryType.CommitVer) continue;
      // A FLUSH entry is live while it is its shard's floor (../shared/flush-floor.ts): a cold start
      // needs it as long as older entries may be left anywhere in the pool.
      if (e.type === EntryType.Flush) {
        if (index.floorAddr() === e.offset) yield { e, index, hash: this.hash };
        continue;
      }
      const hash = hash64Into(e.key, this.hash);
      if (index.get(e.key, hash, this.reader) === e.offset) yield { e, index, hash }; // else dead: a newer entry is indexed
    }
  }

  /** The indexable entries of a segment: whole entries of a contiguous log, single-block entries of a
   *  b-log segment (offset, type, shard, key, bytes). */
  private *entries(seg: number): Generator<SegmentEntry> {
    const pool = this.o.pool;
    const start = pool.segmentOffset(seg);
    const end = start + pool.segmentBytes;
    const bytes = pool.region.bytes;
    if (pool.meta(seg).role === OwnerRole.Control || pool.meta(seg).role === OwnerRole.Remote) {
      for (const b of scanBlogBlocks(bytes, start, end, this.o.limits)) {
        if (b.cnt !== 1) continue;
        yield { offset: b.offset, type: b.type, shard: b.shard, key: b.payload.subarray(0, b.keyLen), bytes: b.size };
      }
      return;
    }
    for (const e of scanEntries(bytes, start, end, this.o.limits)) yield { offset: e.offset, type: e.type, shard: e.shard, key: e.key, bytes: e.bytes };
  }
}
