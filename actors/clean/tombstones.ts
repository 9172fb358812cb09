// Tombstone GC (issue 12): a DEL leaves a tombstone in its shard's index -- the index item points at
// the DEL entry -- so that an older PUT of the key, still somewhere on PM, neither wins a version
// comparison at run time nor comes back at a cold start. Nothing else ever removes it, so a churn of
// unique PUT+DEL keys grows the index (and the clean logs the tombstones are copied into) without
// bound. A clean actor runs this sweep (one per node, the clean actor with id 0) to remove index items
// of tombstones no older entry of their key can outlive.
//
// The rule. A tombstone of key K with version vd, indexed at address A in segment T, of shard s, on
// node N, is dropped (its index item removed with a CAS that expects exactly (tag, A)) when:
//   (1) s is eligible on N, as its primary (P) or as its backup (B):
//       P: N has been s's primary in every configuration published since it started
//          (primarySinceStart: the configuration cell's per-shard "primary moved" flag, set by the
//          main thread whenever it publishes a configuration naming another primary, is never set;
//          no configuration is pending). No other node's writes of s can land on N's PM later. A
//          shard promoted here, or moved away and back (even between two cycles), is not eligible: a
//          paused old primary may still land writes into N's b-log.
//       B: N is a full (not catching-up) backup of s in the current configuration, replication mode
//          rowan, no configuration pending, and the node has a floor store (backupNow).
//   (2) vd <= V, the cycle's bound for s, read at the start of the cycle:
//       P: the shard's CommitVer (actors/shared/commit.ts commitVerOf): every PUT/DEL of s with a version
//          <= vd has finished -- its t-log entry is persistent and its index update done (or it
//          failed) -- so no entry of K older than vd will ever be written by a worker again (the
//          primary's workers take versions from one counter); and at most the commit point saved
//          durably (actors/shared/commit-points.ts): if N restarts, the round confirming it as primary
//          scatters entries its backups list to it, and it refuses those at or below that point.
//       B: the shard's persisted floor PF (actors/shared/floors.ts), which this cycle first raised to the
//          effective floor EF and wrote durably (FloorStore) before reading it. Below PF, N's index
//          holds every acknowledged entry, and every path that could still bring an entry of s <= PF
//          refuses it (PF <= EF <= F):
//          - digest refuses and invalidates on PM every PUT/DEL block <= F it meets after the
//            CommitVer block that set F. Every acknowledged entry <= F landed before that block (its
//            landing finished before the primary counted it finished, computed the CommitVer and sent
//            the block; reservations in the b-log follow real time), and digest applies the b-log in
//            order, so arrival out of version order (b) is over by then. What comes after is a failed
//            or unknown-outcome write still landing through a soft NIC (a), a re-issued duplicate of
//            an applied entry, or a paused old primary's write (d): never needed;
//          - promotion's catch-up scan and scattered/gathered entries (c) refuse entries <= EF: an
//            acknowledged block <= EF lies in a Committed segment, never in the Using/Used ones
//            promotion and gather read;
//          - a cold start refuses and invalidates blocks <= PF in b-log segments it finds Using or
//            Used (never digested, or digested with their late blocks already invalidated: either
//            way only late blocks <= PF can be valid there), quarantined originals included.
//          Only re-replication's copies of the primary's index bypass the floor, and a catching-up
//          backup is not eligible. So after the drop no entry of K older than vd is ever indexed
//          here, at run time or by a cold start, except from T itself (below).
//   (3) the cycle's epoch, retired after reading V, is quiescent before any segment is scanned
//       (the moment P): every clean actor's copy of an entry it saw live before the tombstone was
//       indexed is complete (a copy is made inside a read-epoch stretch, gc-state.ts ReadEpochs).
//       After P no entry of K older than vd is written anywhere on N: not by a worker (2P), not by a
//       clean actor (it copies only what the index points at, and that is the tombstone or newer), not
//       by digest or gather (1P, 2B: digest's reassembled entries are above F).
//   (4) after P, the sweep scans every non-free segment claimed before P (pool seq <= the counter
//       read at P; one claimed later holds only entries written after P) and K occurs in none but T:
//       no key hash fingerprint of K in any of their entries (a fingerprint collision only keeps a
//       tombstone), and no b-log multi-block entry of s whose key it could not read. On a backup this
//       includes every b-log block landed before the scan reached it, late ones too; one landing
//       after that is covered by (2B).
//   Eligibility is looked at again right before each drop: a configuration change during a cycle
//   (a term change, a promotion, this node becoming catching-up) keeps the tombstones of its shards.
// Then no entry of K older than vd is on PM outside T, and none will be. T itself still holds the
// tombstone: a cold start before T is freed indexes the tombstone again (it outranks whatever older
// entry of K T holds); T is freed as a whole (one meta word) once nothing indexed is left in it, and
// its older entries of K go with the tombstone. So a cold start never resurrects K, and at run time
// the index answers "absent" for K exactly as it answered "deleted".
// Why not a rule on segment age alone ("drop once every segment older than T is freed"): an entry of K
// older than vd can sit in a *younger* segment -- another worker's t-log segment claimed after T, or a
// clean log a cleaner copied K's PUT into just before the DEL -- so age does not bound where it is;
// the scan looks for K itself (and uses age only to skip segments claimed after P).
// Races: a PUT or DEL of K that replaces the item first makes the CAS fail (the write wins); one that
// comes after finds K absent and inserts (a PUT) or writes a fresh tombstone (a DEL of a key the
// index holds) -- with a version above vd either way. The decision re-reads the entry at A and the
// index inside a read-epoch stretch, so A cannot be freed and reused under it.
// Cost: a cycle scans the pool's non-free segments, a few per clean pass, so the actor stays
// responsive; cycles start every tombstoneSweepPeriodMs (config/timings.ts), backing off (up to 16x) while they drop
// nothing, and never sooner than SWEEP_DUTY_PAUSE times the time the last cycle spent scanning and
// deciding after it ended (the sweep takes at most about a fifth of its clean actor's time however big
// the pool). Dropped tombstones stop counting as live bytes, so their segments become clean candidates.
// A cycle whose scan found no DEL entry at all proves there is no tombstone on PM; while no index item
// has been made to point at a DEL entry since that cycle began (LiveBytes' count, ../shared/gc-state.ts),
// the next cycles skip their scan -- a node that only PUTs never scans -- up to SWEEP_SKIP_MAX_MS, after
// which one scans anyway (a path indexing a tombstone without that count then costs a delay, not a leak).
import type { Limits } from '../../config/limits.js';
import { defaultTimings } from '../../config/timings.js';
import { commitVerOf } from '../shared/commit.js';
import { INFLIGHT_WORKERS_MAX, ReadEpochs } from '../shared/gc-state.js';
import { ConfigCell } from '../shared/config-cell.js';
import { isCatchingUp } from '../../config/cluster.js';
import { ShardFloors, type FloorStore } from '../shared/floors.js';
import type { KvGc, KvShared, KvStart } from '../shared/node-shared.js';
import { scanBlogBlocks } from '../../runtime/rowan/blog-scan.js';
import { hash64Into, type KeyHash } from '../../shm/hash.js';
import { EntryType, readEntryAt, scanEntries } from '../../shm/log.js';
import { OwnerRole, SegmentState, type Pool } from '../../shm/pool.js';
import { SEGMENT_COUNT_MAX } from '../../shm/pool-layout.js';
import { PoolEntryReader } from '../../shm/entry-reader.js';

/** The pause grows (doubling) up to this many periods while cycles drop nothing. */
const SWEEP_BACKOFF_MAX = 16;
/** Bytes of segments scanned per step (one step per clean pass; at least one segment). */
const SWEEP_BYTES_PER_STEP = 4 * 1024 * 1024;
/** The pause after a cycle is at least this many times the time the cycle spent working. */
const SWEEP_DUTY_PAUSE = 4;
/** A cycle is skipped for want of tombstones (see the header) for at most this long after the last scan. */
const SWEEP_SKIP_MAX_MS = 30_000;

export interface TombstoneSweepOptions {
  pool: Pool;
  shared: KvShared;
  limits: Limits;
  /** May this node drop tombstones of `shard`: its primary in every configuration since it started? */
  eligible: (shard: number) => boolean;
  /** May it drop them as a backup of `shard` (rule 1B)? Needs `floorStore` too. */
  backupEligible?: (shard: number) => boolean;
  /** Where the persisted floors are written before anything is dropped under them (rule 2B). */
  floorStore?: FloorStore;
  /** Rule 2P: bound a primary's drops by the commit point saved durably too (a node whose main thread
   *  saves them, actors/shared/commit-points.ts; unit tests without one leave it off). */
  savedPoints?: boolean;
  /** Monotonic milliseconds (the actor's injected clock). */
  now: () => number;
  /** Read-epoch slot of the actor running the sweep (it reads addresses from the indexes). */
  epochSlot: number;
  periodMs?: number;
  segmentsPerStep?: number;
  /** Fault injection for tests: runs between the decision's last index check and the removal CAS --
   *  the window in which a PUT/DEL of the same key races the drop. */
  beforeDrop?: (key: Uint8Array, shard: number) => void;
}

export interface TombstoneStats {
  cycles: number;
  /** Cycles skipped: no DEL entry on PM at the last scan and none indexed since. */
  skipped: number;
  /** Segments scanned by the cycles. */
  scanned: number;
  /** Committed tombstones of eligible shards the cycles found indexed. */
  candidates: number;
  dropped: number;
  /** Candidates kept because their key occurs in another segment (or a CAS lost to a write). */
  kept: number;
  /** Of `dropped`, those of shards this node backs up. */
  droppedOnBackup: number;
  /** Floor writes that failed (the cycle keeps the floors persisted before). */
  floorSaveFailures: number;
}

interface Candidate {
  offset: number;
  shard: number;
  version: number;
  hi: number;
  lo: number;
}

type Phase = 'idle' | 'quiesce' | 'scan';

export class TombstoneSweep {
  readonly stats: TombstoneStats = { cycles: 0, skipped: 0, scanned: 0, candidates: 0, dropped: 0, kept: 0, droppedOnBackup: 0, floorSaveFailures: 0 };
  protected readonly floors: ShardFloors;
  private readonly gc: KvGc;
  private readonly reader: PoolEntryReader;
  private readonly inflight: BigInt64Array;
  /** Per shard, the commit point saved durably (../shared/commit-points.ts). */
  private readonly points: BigInt64Array;
  private readonly hash: KeyHash = { hi: 0, lo: 0 };
  private phase: Phase = 'idle';
  private nextAt = 0;
  private backoff = 1;
  /** Milliseconds the current cycle spent in its steps. */
  private busyMs = 0;
  // The current cycle (see the header): bounds per shard (-1 = not eligible), its epoch, the seq at P.
  private bounds: number[] = [];
  /** Per shard, whether the cycle's bound is a backup's floor (rule 1B). */
  private asBackup: boolean[] = [];
  private epoch = 0;
  private seqAtP = 0;
  private queue: number[] = [];
  /** fingerprint * SEGMENT_COUNT_MAX + segment, one per entry scanned (duplicates are harmless). */
  private occurrences: number[] = [];
  /** Per shard, segments holding a b-log multi-block entry whose key the scan could not read. */
  private unreadable = new Map<number, Set<number>>();
  private candidates: Candidate[] = [];
  /** DEL entries (and unreadable multi-block ones) the current cycle's scan met. */
  private delsSeen = 0;
  /** The last completed cycle: the DEL count when it began, when it ended, and whether it met a DEL
   *  (null: none yet, so the first cycle always scans). */
  private lastScan: { dels: number; at: number; sawDel: boolean } | null = null;
  private delsAtStart = 0;

  constructor(private readonly o: TombstoneSweepOptions) {
    this.gc = o.shared.gc!;
    this.reader = new PoolEntryReader(o.pool.region, o.limits);
    this.inflight = new BigInt64Array(this.gc.buffers.inflight);
    this.points = new BigInt64Array(this.gc.buffers.points);
    this.floors = new ShardFloors(this.gc.buffers.floors);
  }

  /** A cycle is under way (waiting for its epoch or scanning). */
  get busy(): boolean {
    return this.phase !== 'idle';
  }

  /** One bounded step; returns the work done (segments scanned + tombstones dropped), 0 if none. */
  step(): number {
    if (this.phase === 'idle') {
      if (this.o.now() < this.nextAt) return 0;
      return this.start();
    }
    if (this.phase === 'quiesce') {
      if (!this.gc.epochs.quiescent(this.epoch)) return 0;
      this.seqAtP = this.o.pool.currentSeq();
      this.queue = this.o.pool.segments().filter((s) => this.o.pool.meta(s).state !== SegmentState.Free);
      this.phase = 'scan';
    }
    const t0 = this.o.now();
    const perStep = this.o.segmentsPerStep ?? Math.max(1, Math.floor(SWEEP_BYTES_PER_STEP / this.o.pool.segmentBytes));
    const n = Math.min(this.queue.length, perStep);
    const segs = this.queue.splice(0, n);
    this.reading(() => {
      for (const s of segs) this.scanSegment(s);
    });
    if (this.queue.length > 0) {
      this.busyMs += this.o.now() - t0;
      return n;
    }
    return n + this.decide(t0);
  }

  /** Read the bounds, retire the cycle's epoch. Nothing to do unless some shard is eligible. */
  private start(): number {
    const { shared } = this.o;
    const shardCount = shared.indexes.length;
    this.asBackup = shared.indexes.map((ix, s) => !!ix && !!this.o.floorStore && !this.o.eligible(s) && (this.o.backupEligible?.(s) ?? false));
    this.persistFloors();
    this.bounds = shared.indexes.map((ix, s) => {
      if (!ix) return -1;
      if (this.asBackup[s]) return this.backupBound(s);
      // P: and at or below the commit point saved durably (../shared/commit-points.ts: a restarted
      // primary refuses scattered entries at or below it, and must not miss a tombstone dropped above).
      if (!this.o.eligible(s)) return -1;
      const cv = commitVerOf(shared.versions, this.inflight, shardCount, INFLIGHT_WORKERS_MAX, s);
      return this.o.savedPoints ? Math.min(cv, Number(Atomics.load(this.points, s))) : cv;
    });
    if (this.bounds.every((b) => b <= 0) || this.nothingToFind()) {
      this.nextAt = this.o.now() + (this.o.periodMs ?? defaultTimings.tombstoneSweepPeriodMs);
      return 0;
    }
    this.delsAtStart = this.gc.live.tombstonesIndexed();
    this.delsSeen = 0;
    // Retired after the bounds were read (seq-cst): readers that entered before it may still copy.
    this.epoch = this.gc.epochs.retire();
    this.phase = 'quiesce';
    this.occurrences = [];
    this.unreadable = new Map();
    this.candidates = [];
    this.busyMs = 0;
    this.stats.cycles++;
    return 0;
  }

  /** No tombstone can be on PM: the last scan met no DEL entry and none was indexed since it began. */
  private nothingToFind(): boolean {
    const l = this.lastScan;
    if (l === null || l.sawDel || this.gc.live.tombstonesIndexed() !== l.dels || this.o.now() - l.at >= SWEEP_SKIP_MAX_MS) return false;
    this.stats.skipped++;
    return true;
  }

  /** Rule 2B: write the backups' effective floors durably where they rose, then count them persisted. */
  private persistFloors(): void {
    const store = this.o.floorStore;
    if (!store) return;
    const raise = new Map<number, number>();
    this.asBackup.forEach((b, s) => {
      if (b && this.floors.effective(s) > this.floors.persisted(s)) raise.set(s, this.floors.effective(s));
    });
    if (raise.size === 0) return;
    const all = new Map<number, number>();
    for (let s = 0; s < this.asBackup.length; s++) {
      const v = Math.max(this.floors.persisted(s), raise.get(s) ?? 0);
      if (v > 0) all.set(s, v);
    }
    try {
      store.save(all);
    } catch {
      this.stats.floorSaveFailures++; // the old floors stay persisted, and bound this cycle
      return;
    }
    for (const [s, v] of raise) this.floors.raisePersisted(s, v);
  }

  /** Rule 2B: a backup's bound is its persisted floor. Overridden only by the simulator's mutation test
   *  (test/sim/mutations.ts). */
  protected backupBound(shard: number): number {
    return this.floors.persisted(shard);
  }

  /** Is the candidate's shard still eligible the way it was at the cycle's start (rule 1)? */
  private stillEligible(shard: number): boolean {
    return this.asBackup[shard] ? !this.o.eligible(shard) && (this.o.backupEligible?.(shard) ?? false) : this.o.eligible(shard);
  }

  /** Record every key of segment `seg` and the committed tombstones indexed there. */
  private scanSegment(seg: number): void {
    const pool = this.o.pool;
    const m = pool.meta(seg);
    // Free now: nothing of it survives a cold start. Claimed after P: only entries written after P.
    if (m.state === SegmentState.Free || m.seq > this.seqAtP) return;
    this.stats.scanned++;
    const start = pool.segmentOffset(seg);
    const end = start + pool.segmentBytes;
    const bytes = pool.region.bytes;
    if (m.role === OwnerRole.Control || m.role === OwnerRole.Remote) {
      for (const b of scanBlogBlocks(bytes, start, end, this.o.limits)) {
        if (b.type === EntryType.CommitVer) continue;
        if (b.type === EntryType.Del || (b.seq === 0 && b.cnt > 1 && b.keyLen > b.payload.length)) this.delsSeen++;
        if (b.cnt === 1 || (b.seq === 0 && b.keyLen <= b.payload.length)) this.note(seg, b.offset, b.type, b.shard, b.version, b.payload.subarray(0, b.keyLen), b.cnt === 1);
        else if (b.seq === 0) (this.unreadable.get(b.shard) ?? this.unreadable.set(b.shard, new Set()).get(b.shard)!).add(seg);
        // Blocks past the first: their entry is recorded where its first block lies (no first block on
        // PM, no entry a cold start could reassemble).
      }
      return;
    }
    for (const e of scanEntries(bytes, start, end, this.o.limits)) {
      if (e.type === EntryType.Del) this.delsSeen++;
      if (e.type !== EntryType.CommitVer) this.note(seg, e.offset, e.type, e.shard, e.version, e.key, true);
    }
  }

  private note(seg: number, offset: number, type: number, shard: number, version: number, key: Uint8Array, whole: boolean): void {
    const h = hash64Into(key, this.hash);
    this.occurrences.push((h.lo >>> 0) * SEGMENT_COUNT_MAX + seg);
    if (!whole || type !== EntryType.Del || !(version <= (this.bounds[shard] ?? -1))) return;
    const index = this.o.shared.indexes[shard];
    if (index && index.get(key, h, this.reader) === offset) this.candidates.push({ offset, shard, version, hi: h.hi, lo: h.lo });
  }

  /** The end of a cycle: drop every candidate whose key occurs in no other segment (see the header). */
  private decide(t0: number): number {
    const occ = Float64Array.from(this.occurrences);
    occ.sort();
    this.occurrences = [];
    let dropped = 0;
    this.reading(() => {
      for (const c of this.candidates) {
        if (!this.stillEligible(c.shard) || this.occursElsewhere(occ, c) || !this.dropIfStill(c)) this.stats.kept++;
        else {
          dropped++;
          if (this.asBackup[c.shard]) this.stats.droppedOnBackup++;
        }
      }
    });
    this.stats.candidates += this.candidates.length;
    this.stats.dropped += dropped;
    this.candidates = [];
    this.unreadable = new Map();
    this.phase = 'idle';
    this.backoff = dropped > 0 ? 1 : Math.min(SWEEP_BACKOFF_MAX, this.backoff * 2);
    const now = this.o.now();
    this.lastScan = { dels: this.delsAtStart, at: now, sawDel: this.delsSeen > 0 };
    this.busyMs += now - t0;
    this.nextAt = now + Math.max((this.o.periodMs ?? defaultTimings.tombstoneSweepPeriodMs) * this.backoff, SWEEP_DUTY_PAUSE * this.busyMs);
    return dropped;
  }

  /** Does the candidate's key (fingerprint) occur in a segment other than its own? Overridden only by
   *  the simulator's mutation test (test/sim/mutations.ts). */
  protected occursElsewhere(occ: Float64Array, c: Candidate): boolean {
    const own = this.o.pool.segmentOf(c.offset);
    for (const seg of this.unreadable.get(c.shard) ?? []) if (seg !== own) return true;
    const fp = c.lo >>> 0;
    for (let i = lowerBound(occ, fp * SEGMENT_COUNT_MAX); i < occ.length && Math.floor(occ[i]! / SEGMENT_COUNT_MAX) === fp; i++) {
      if (occ[i]! % SEGMENT_COUNT_MAX !== own) return true;
    }
    return false;
  }

  /** Remove the candidate's index item if it still points at the same tombstone. Inside a read stretch. */
  private dropIfStill(c: Candidate): boolean {
    const e = readEntryAt(this.o.pool.region.bytes, c.offset, this.o.limits);
    // The bytes at the offset are still this tombstone (not freed and reused since the scan).
    if (e === null || e.type !== EntryType.Del || e.shard !== c.shard || e.version !== c.version) return false;
    const h = hash64Into(e.key, this.hash);
    if (h.hi !== c.hi || h.lo !== c.lo) return false;
    const index = this.o.shared.indexes[c.shard];
    if (!index || index.get(e.key, h, this.reader) !== c.offset) return false;
    this.o.beforeDrop?.(e.key, c.shard);
    if (!index.remove(e.key, h, c.offset)) return false; // a PUT/DEL of the key replaced it: it wins
    this.gc.live.removed(c.offset);
    return true;
  }

  private reading(f: () => void): void {
    this.gc.epochs.enter(this.o.epochSlot);
    try {
      f();
    } finally {
      this.gc.epochs.exit(this.o.epochSlot);
    }
  }
}

/**
 * The sweep's eligibility as a primary (rule 1P of the header): shards this node was primary of in the
 * configuration it started with and in every configuration published since -- the cell's per-shard
 * "primary moved" flag, set by the main thread at every publish naming another primary, so a move away
 * and back between two cycles is seen too. While a configuration is pending nothing drops.
 */
export function primarySinceStart(kv: Pick<KvStart, 'cell' | 'cluster' | 'nodeId'>): (shard: number) => boolean {
  const cell = ConfigCell.attach(kv.cell);
  return (shard) => !cell.reconfiguring(shard) && kv.cluster.shards[shard]?.primary === kv.nodeId && !cell.primaryMoved(shard) && cell.config().shards[shard]?.primary === kv.nodeId;
}

/**
 * The sweep's eligibility as a backup (rule 1B): a full backup of the shard in the current
 * configuration, in replication mode rowan (the floors come from CommitVer blocks in the b-log), with
 * no configuration pending.
 */
export function backupNow(kv: Pick<KvStart, 'cell' | 'nodeId'>): (shard: number) => boolean {
  const cell = ConfigCell.attach(kv.cell);
  return (shard) => {
    if (cell.reconfiguring(shard)) return false;
    const c = cell.config();
    const s = c.shards[shard];
    return !!s && c.replication === 'rowan' && s.primary !== kv.nodeId && s.backups.includes(kv.nodeId) && !isCatchingUp(c, shard, kv.nodeId);
  };
}

/** First index i of sorted `a` with a[i] >= x. */
function lowerBound(a: Float64Array, x: number): number {
  let lo = 0;
  let hi = a.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (a[mid]! < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The epoch slot of clean actor `id` (the sweep runs in a clean actor). */
export function sweepEpochSlot(id: number): number {
  return ReadEpochs.slotOf('clean', id);
}
