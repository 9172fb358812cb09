// RowanReceiver: the control-path half of a Rowan instance, owned by the control actor (ROWAN §3.2.2,
// §4.3). It never touches a write: senders (or the soft RNIC) land writes through the shared receive
// queue. The receiver only
//   1. keeps enough free segments posted, allocating and posting them in batches, each batch in
//      increasing address order (§4.3: 512 preallocated, batches of 128, scaled to the pool);
//   2. finds consumed segments by the non-zero first 64 bits of a later segment (§4.3: a log entry's
//      first 64 bits hold its non-zero type, and segments are zeroed before they are posted);
//   3. waits the grace period (2 ms) for writes still in flight, declares those buffers Used in the
//      queue (no reservation lands there any more), waits until every reservation already made in a
//      buffer has finished its copy (the queue's holds, srq-layout.ts), then marks the segment Used in
//      the segment meta table and hands it to digest, in b-log order and in batches.
// Why wait for the holds: a segment handed to digest may be committed, cleaned, freed and reused as
// any other log; a sender descheduled between its reservation and its copy would then write into
// someone else's log (the hazard of issue 10, found by test/sim/). A hold still there after
// `holdTimeoutMs` belongs to a sender that died or stalls that long: the receiver fences it and hands
// digest a copy of the buffer in a fresh segment instead, and keeps the original out of use (Using,
// "quarantined") for the rest of this incarnation, so a late copy can land there and harm nothing.
import type { Pool } from '../../shm/pool.js';
import { OwnerRole, SegmentState } from '../../shm/pool.js';
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import type { Clock } from '../../config/base/clock.js';
import { monotonicClock } from '../../config/base/clock.js';
import { defaultTimings } from '../../config/timings.js';
import type { ReceiveQueue } from './srq.js';

export interface ReceiverOptions {
  pool: Pool;
  srq: ReceiveQueue;
  /** Owner id recorded in the segment meta table for b-log segments (the control actor's id). */
  ownerId: number;
  /** Segments kept posted (paper: 512). */
  preallocate: number;
  /** Segments allocated per post and handed to digest per batch (paper: 128). */
  batch: number;
  /** Wait after a segment is seen consumed before it counts as Used (paper: 2 ms). */
  graceMs: number;
  /** Receives Used b-log segments, in b-log order, in batches of at most `batch`. */
  onUsed: (segments: number[]) => void;
  /** How long a Used buffer waits for its reservations' copies before it is fenced (default receiverHoldTimeoutMs, config/timings.ts). */
  holdTimeoutMs?: number;
  clock?: Clock;
}

export interface ReceiverStats {
  posted: number;
  consumed: number;
  used: number;
  handedOff: number;
  postFailures: number;
  outstanding: number;
  /** Used buffers waiting for copies still in progress, now. */
  draining: number;
  /** Buffers fenced after holdTimeoutMs and kept out of use (a copy of each went to digest). */
  quarantined: number;
}

export class RowanReceiver {
  private readonly o: ReceiverOptions;
  private readonly clock: Clock;
  /** Segment index of every posted buffer not yet Used, by buffer seq: postedSegs[seq - firstSeq]. */
  private postedSegs: number[] = [];
  private firstSeq = 0;
  /** Buffers below this seq are known consumed; consumedAt[i] is when buffer firstSeq+i was seen so. */
  private consumedUpTo = 0;
  private consumedAt: number[] = [];
  /** Buffers below this seq are declared Used in the queue (>= firstSeq: some may still be draining). */
  private usedBelow = 0;
  /** When the oldest Used buffer started waiting for its holds, or -1. */
  private drainSince = -1;
  /** Fenced buffers kept Using and out of use (see the header). */
  readonly quarantined: number[] = [];
  private readonly counts = { consumed: 0, used: 0, handedOff: 0, postFailures: 0 };

  constructor(o: ReceiverOptions) {
    if (o.batch < 1 || o.preallocate < o.batch) {
      throw new RowanError(ErrorCodes.BAD_CONFIG, `receiver: need 1 <= batch (${o.batch}) <= preallocate (${o.preallocate})`);
    }
    if (o.preallocate >= o.srq.postCap) {
      throw new RowanError(ErrorCodes.BAD_CONFIG, `receiver: preallocate ${o.preallocate} must be below the queue's ${o.srq.postCap} slots`);
    }
    this.o = o;
    this.clock = o.clock ?? monotonicClock;
    this.firstSeq = o.srq.posted();
    this.consumedUpTo = this.firstSeq;
    this.usedBelow = this.firstSeq;
  }

  /** Post the initial segments. */
  start(): void {
    this.replenish();
  }

  /**
   * One pass of the control loop; call it periodically (every ~grace/2). Returns false when the pass
   * found nothing and nothing waits for a later one (no buffer newly consumed, none in its grace or
   * draining, none posted, the pool not starved): the caller may look less often until writes land.
   */
  tick(): boolean {
    const before = this.counts.consumed + this.counts.used + this.postedSegs.length + this.counts.postFailures;
    this.detectConsumed();
    this.retireUsed();
    this.replenish();
    const after = this.counts.consumed + this.counts.used + this.postedSegs.length + this.counts.postFailures;
    return after !== before || this.consumedAt.length > 0 || this.drainSince >= 0;
  }

  stats(): ReceiverStats {
    return {
      posted: this.postedSegs.length,
      ...this.counts,
      outstanding: this.o.srq.outstanding(),
      draining: this.usedBelow - this.firstSeq,
      quarantined: this.quarantined.length,
    };
  }

  /** The posted b-log segments not yet Used, in b-log order (for status and cold start). */
  pendingSegments(): number[] {
    return [...this.postedSegs];
  }

  /** First 64 bits of a segment: non-zero once any write landed at its start. */
  private firstWordNonZero(seg: number): boolean {
    const off = this.o.pool.segmentOffset(seg);
    const b = this.o.pool.region.bytes;
    for (let i = 0; i < 8; i++) if (b[off + i] !== 0) return true;
    return false;
  }

  private detectConsumed(): void {
    const posted = this.firstSeq + this.postedSegs.length;
    // The highest posted segment already written at its start: every segment before it is consumed.
    let highest = -1;
    for (let seq = posted - 1; seq > this.consumedUpTo; seq--) {
      if (this.firstWordNonZero(this.postedSegs[seq - this.firstSeq]!)) {
        highest = seq;
        break;
      }
    }
    if (highest < 0) return;
    const now = this.clock.now();
    for (let seq = this.consumedUpTo; seq < highest; seq++) this.consumedAt.push(now);
    this.counts.consumed += highest - this.consumedUpTo;
    this.consumedUpTo = highest;
  }

  private retireUsed(): void {
    const now = this.clock.now();
    // 1. Buffers past their grace are declared Used: no reservation made from now on lands in them.
    let m = this.usedBelow - this.firstSeq;
    while (m < this.consumedAt.length && now - this.consumedAt[m]! >= this.o.graceMs) m++;
    if (this.firstSeq + m > this.usedBelow) {
      this.usedBelow = this.firstSeq + m;
      this.o.srq.markUsedBelow(this.usedBelow);
    }
    // 2. Hand them on, in order, once no copy into them is still to come (read after step 1's store:
    //    a hold not seen here was taken after it, and its sender abandons the slot).
    const segs: number[] = [];
    while (this.firstSeq < this.usedBelow) {
      let seg = this.postedSegs[0]!;
      if ((this.o.srq.holds?.(this.firstSeq) ?? 0) > 0) {
        if (this.drainSince < 0) this.drainSince = now;
        if (now - this.drainSince < (this.o.holdTimeoutMs ?? defaultTimings.receiverHoldTimeoutMs)) break;
        const copy = this.fenceAndCopy(this.firstSeq, seg);
        if (copy < 0) break; // the holds moved, or no free segment for the copy: next tick
        seg = copy;
      }
      this.drainSince = -1;
      this.postedSegs.shift();
      this.consumedAt.shift();
      this.firstSeq++;
      this.o.pool.transition(seg, SegmentState.Using, SegmentState.Used);
      segs.push(seg);
    }
    if (segs.length === 0) return;
    this.counts.used += segs.length;
    for (let i = 0; i < segs.length; i += this.o.batch) {
      const chunk = segs.slice(i, i + this.o.batch);
      this.o.onUsed(chunk);
      this.counts.handedOff += chunk.length;
    }
  }

  /**
   * Give up waiting for buffer `seq`'s holds: fence them, copy the buffer into a fresh segment (what
   * digest gets instead) and keep the original Using, out of use. Returns the copy's segment, or -1.
   */
  private fenceAndCopy(seq: number, seg: number): number {
    const pool = this.o.pool;
    let copy: number;
    try {
      copy = pool.allocate(OwnerRole.Control, this.o.ownerId);
    } catch (err) {
      if (err instanceof RowanError && err.code === ErrorCodes.PM_FULL) return -1;
      throw err;
    }
    if (!this.o.srq.fence?.(seq)) {
      pool.free(copy); // Using -> Free: nothing was written to it
      return -1;
    }
    // A late copy may land in the original while we read it: a torn block fails its checksum in the
    // copy and digest's scan steps over it; a whole one is a duplicate its sender re-issues anyway.
    const from = pool.segmentOffset(seg);
    const to = pool.segmentOffset(copy);
    pool.region.bytes.copyWithin(to, from, from + pool.segmentBytes);
    pool.region.persist(to, pool.segmentBytes);
    this.quarantined.push(seg);
    return copy;
  }

  /** Keep `preallocate` segments posted ahead of the writers, posting whole batches. */
  private replenish(): void {
    const ahead = this.firstSeq + this.postedSegs.length - this.consumedUpTo;
    // Never more than postCap buffers past the oldest one not yet handed on: a posted-ring slot (and
    // its holds word) is reused only once the buffer it held was handed on.
    let want = Math.min(this.o.preallocate - ahead, this.o.srq.postCap - this.postedSegs.length);
    while (want > 0) {
      const n = Math.min(want, this.o.batch);
      const segs: number[] = [];
      try {
        for (let i = 0; i < n; i++) segs.push(this.o.pool.allocate(OwnerRole.Control, this.o.ownerId));
      } catch (err) {
        if (!(err instanceof RowanError && err.code === ErrorCodes.PM_FULL)) throw err;
        this.counts.postFailures++;
      }
      this.o.srq.markStarved?.(segs.length < n);
      if (segs.length === 0) return;
      segs.sort((a, b) => this.o.pool.segmentOffset(a) - this.o.pool.segmentOffset(b));
      // Allocation zeroed each segment (so its first 64 bits read zero until a write lands) before
      // publishing it Using; post them as one batch in increasing address order.
      this.o.srq.post(segs.map((s) => ({ offset: this.o.pool.segmentOffset(s), length: this.o.pool.segmentBytes })));
      this.postedSegs.push(...segs);
      want -= segs.length;
      if (segs.length < n) return; // pool ran dry; try again next tick
    }
  }
}
