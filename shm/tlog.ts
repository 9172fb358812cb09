// A worker's t-log (§4.1, §4.2.1): a chain of pool segments the worker owns, appended to one at a time.
// The segment meta table is the only persistent record of the chain — owner (Worker, workerId) and the
// allocation seq order — so recovery needs nothing but the pool.
//
// Figure 6, primary path: a Free segment is allocated (-> Using); once it has no room for the next
// entry it is sealed and becomes Committed (at once, or when its last pending append is released, see
// below). Sealing happens *before* the next segment is allocated, so the newest segment of the chain is
// the only one appended to; recovery resumes in it.
//
// Committed promises that every entry in the segment is on all replicas, and lets garbage collection
// (actors/clean) reclaim it. A worker that replicates an entry after appending it marks the append as
// pending (`append(e, true)`) and calls `release(addr)` once the entry is replicated and indexed (or has
// failed): a full segment with pending appends is sealed but stays Using until the last one is
// released, so GC never sees a Committed segment whose entries are still about to be indexed. A crash
// ends every pending request, so recover() commits any Using segment of the chain but the newest.
import type { Limits } from '../config/limits.js';
import { ErrorCodes, RowanError } from '../config/base/errors.js';
import { LogAppender } from './appender.js';
import { entrySize, scanEntries, type EntryInput, type LogEntry } from './log.js';
import { OwnerRole, SegmentState, type MetaState } from './pool.js';
import type { PersistentRegion } from '../config/base/region.js';

/** The part of the pool (shm/pool.ts) a t-log uses; a structural type so tests can pass a fake. */
export interface TLogPool {
  readonly region: PersistentRegion;
  readonly segmentBytes: number;
  segmentOffset(i: number): number;
  meta(i: number): { state: MetaState; role: OwnerRole; ownerId: number; seq: number };
  allocate(role: OwnerRole, ownerId: number, keepFree?: number): number;
  transition(i: number, from: SegmentState, to: SegmentState): void;
  segments(filter?: { state?: MetaState; role?: OwnerRole; ownerId?: number }): number[];
}

interface Current {
  segment: number;
  appender: LogAppender;
}

export class TLog {
  readonly pool: TLogPool;
  readonly workerId: number;
  readonly limits: Limits;
  /** Owner role of the chain's segments: Worker for t-logs; Digest for the log a digest actor keeps of
   *  the multi-block b-log entries it reassembles (an index item must point at a contiguous entry). */
  readonly role: OwnerRole;
  private current: Current | null = null;
  /** Pending appends per segment (see the header); sealed segments wait here until theirs reach 0. */
  private readonly pending = new Map<number, number>();
  private readonly sealedWaiting = new Set<number>();

  /** A t-log for a worker that has none yet. The first append allocates its first segment. */
  constructor(pool: TLogPool, workerId: number, limits: Limits, role: OwnerRole = OwnerRole.Worker) {
    this.pool = pool;
    this.workerId = workerId;
    this.limits = limits;
    this.role = role;
  }

  /** The segment being appended to, or -1 when the next append will allocate one. */
  get segment(): number {
    return this.current?.segment ?? -1;
  }

  /** Pool offset where the next entry goes, or -1 when the next append will allocate a segment. */
  get tail(): number {
    return this.current?.appender.tail ?? -1;
  }

  /** Append and persist `e`; returns its pool offset. Throws PM_FULL when the pool has no free segment,
   *  ENTRY_TOO_LARGE for an entry no segment could hold, and the codec's validation errors. */
  append(e: EntryInput, pending = false, keepFree?: number): number {
    const size = entrySize(e, this.limits);
    if (size > this.pool.segmentBytes) {
      throw new RowanError(ErrorCodes.ENTRY_TOO_LARGE, `entry of ${size} bytes exceeds a ${this.pool.segmentBytes}-byte segment`);
    }
    let cur = this.current;
    if (cur === null || size > cur.appender.remaining) cur = this.nextSegment(keepFree);
    const at = cur.appender.append(e);
    if (pending) this.pending.set(cur.segment, (this.pending.get(cur.segment) ?? 0) + 1);
    return at;
  }

  /** Copy an intact entry (`bytes`: all its blocks, as a log holds them) to the tail and persist it;
   *  returns its new offset. Garbage collection moves live entries this way: checksums do not cover
   *  the address, so the bytes stay valid where they land. */
  appendRaw(bytes: Uint8Array): number {
    if (bytes.length > this.pool.segmentBytes) {
      throw new RowanError(ErrorCodes.ENTRY_TOO_LARGE, `entry of ${bytes.length} bytes exceeds a ${this.pool.segmentBytes}-byte segment`);
    }
    let cur = this.current;
    if (cur === null || bytes.length > cur.appender.remaining) cur = this.nextSegment();
    return cur.appender.appendRaw(bytes);
  }

  /** appendRaw for many entries, one persist per segment they land in; returns their offsets. */
  appendRawMany(srcs: readonly Uint8Array[]): number[] {
    const out = new Array<number>(srcs.length);
    for (let i = 0; i < srcs.length; ) {
      const size = srcs[i]!.length;
      if (size > this.pool.segmentBytes) throw new RowanError(ErrorCodes.ENTRY_TOO_LARGE, `entry of ${size} bytes exceeds a ${this.pool.segmentBytes}-byte segment`);
      let cur = this.current;
      if (cur === null || size > cur.appender.remaining) cur = this.nextSegment();
      i = cur.appender.appendRawMany(srcs, i, out);
    }
    return out;
  }

  /** Entries [from, to) of a packed batch (LogAppender.appendPacked), one copy and one persist per
   *  segment they land in; returns their offsets. */
  appendPacked(src: Uint8Array, offs: Int32Array, from: number, to: number): number[] {
    const out = new Array<number>(to - from);
    for (let i = from; i < to; ) {
      const size = offs[i + 1]! - offs[i]!;
      if (size > this.pool.segmentBytes) throw new RowanError(ErrorCodes.ENTRY_TOO_LARGE, `entry of ${size} bytes exceeds a ${this.pool.segmentBytes}-byte segment`);
      let cur = this.current;
      if (cur === null || size > cur.appender.remaining) cur = this.nextSegment();
      i = cur.appender.appendPacked(src, offs, i, to, out, from);
    }
    return out;
  }

  /** A pending append (see the header) is done: replicated and indexed, or failed. */
  release(addr: number): void {
    const seg = Math.floor((addr - this.pool.segmentOffset(0)) / this.pool.segmentBytes);
    const n = (this.pending.get(seg) ?? 0) - 1;
    if (n < 0) throw new RowanError(ErrorCodes.INTERNAL, `t-log ${this.workerId}: release of ${addr} without a pending append`);
    if (n > 0) {
      this.pending.set(seg, n);
      return;
    }
    this.pending.delete(seg);
    if (this.sealedWaiting.delete(seg)) this.pool.transition(seg, SegmentState.Using, SegmentState.Committed);
  }

  /** Appends not yet released, over all segments. */
  get pendingAppends(): number {
    let n = 0;
    for (const v of this.pending.values()) n += v;
    return n;
  }

  /** Commit the current segment now (Using -> Committed); the next append starts a new one. Used when
   *  the segment is full, and by a worker that wants to close a segment early (e.g. on shutdown). */
  seal(): void {
    const cur = this.current;
    if (cur === null) return;
    this.current = null;
    if ((this.pending.get(cur.segment) ?? 0) > 0) this.sealedWaiting.add(cur.segment);
    else this.pool.transition(cur.segment, SegmentState.Using, SegmentState.Committed);
  }

  private nextSegment(keepFree?: number): Current {
    this.seal();
    const segment = keepFree === undefined ? this.pool.allocate(this.role, this.workerId) : this.pool.allocate(this.role, this.workerId, keepFree);
    const start = this.pool.segmentOffset(segment);
    const cur = { segment, appender: new LogAppender(this.pool.region, start, start + this.pool.segmentBytes, this.limits) };
    this.current = cur;
    return cur;
  }

  /** The worker's t-log segments (Using or Committed), oldest first. */
  segments(): number[] {
    return chainOf(this.pool, this.workerId, this.role);
  }

  /** Every entry of the t-log in append order, with pool offsets. Single-block entries are views of the
   *  pool mapping (see LogEntry). */
  *entries(): Generator<LogEntry> {
    const bytes = this.pool.region.bytes;
    for (const seg of this.segments()) {
      const start = this.pool.segmentOffset(seg);
      yield* scanEntries(bytes, start, start + this.pool.segmentBytes, this.limits);
    }
  }

  /** Rebuild a worker's t-log after a restart: the newest segment of its chain, if still Using, is
   *  reopened after its last intact entry (stale bytes of a torn append past it are zeroed); otherwise
   *  the next append allocates. Older Using segments (sealed while appends were pending, then the
   *  process died, which ended those requests) are committed. */
  static recover(pool: TLogPool, workerId: number, limits: Limits, role: OwnerRole = OwnerRole.Worker): TLog {
    const log = new TLog(pool, workerId, limits, role);
    const chain = chainOf(pool, workerId, role);
    const newest = chain.at(-1);
    for (const seg of chain.slice(0, -1)) {
      if (pool.meta(seg).state === SegmentState.Using) pool.transition(seg, SegmentState.Using, SegmentState.Committed);
    }
    if (newest !== undefined && pool.meta(newest).state === SegmentState.Using) {
      const start = pool.segmentOffset(newest);
      log.current = { segment: newest, appender: LogAppender.recover(pool.region, start, start + pool.segmentBytes, limits) };
    }
    return log;
  }
}

function chainOf(pool: TLogPool, workerId: number, role: OwnerRole): number[] {
  return pool.segments({ role, ownerId: workerId }).filter((i) => {
    const s = pool.meta(i).state;
    return s === SegmentState.Using || s === SegmentState.Committed;
  });
}
