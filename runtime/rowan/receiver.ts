// RowanReceiver: the control-path half of a Rowan instance, owned by the control actor (ROWAN §3.2.2,
// §4.3). It never touches a write: senders (or the soft RNIC) land writes through the shared receive
// queue. The receiver only
//   1. keeps enough free segments posted, allocating and posting them in batches, each batch in
//      increasing address order (§4.3: 512 preallocated, batches of 128, scaled to the pool);
//   2. finds consumed segments by the non-zero first 64 bits of a later segment (§4.3: a log entry's
//      first 64 bits hold its non-zero type, and segments are zeroed before they are posted);
//   3. waits the grace period (2 ms) for writes still in flight, marks those segments Used in the
//      segment meta table, and hands them to digest in batches.
// Senders re-issue any write slower than the retry bound (1 ms < grace), so a write either lands
// before its segment is declared Used or is written again into a later segment.
import type { Pool } from '../../shm/pool.js';
import { OwnerRole, SegmentState } from '../../shm/pool.js';
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import type { Clock } from '../../config/base/clock.js';
import { monotonicClock } from '../../config/base/clock.js';
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
  clock?: Clock;
}

export interface ReceiverStats {
  posted: number;
  consumed: number;
  used: number;
  handedOff: number;
  postFailures: number;
  outstanding: number;
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
  }

  /** Post the initial segments. */
  start(): void {
    this.replenish();
  }

  /** One pass of the control loop; call it periodically (every ~grace/2). */
  tick(): void {
    this.detectConsumed();
    this.retireUsed();
    this.replenish();
  }

  stats(): ReceiverStats {
    return {
      posted: this.postedSegs.length,
      ...this.counts,
      outstanding: this.o.srq.outstanding(),
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
    let n = 0;
    while (n < this.consumedAt.length && now - this.consumedAt[n]! >= this.o.graceMs) n++;
    if (n === 0) return;
    const segs = this.postedSegs.splice(0, n);
    this.consumedAt.splice(0, n);
    this.firstSeq += n;
    for (const s of segs) this.o.pool.transition(s, SegmentState.Using, SegmentState.Used);
    this.o.srq.markUsedBelow(this.firstSeq);
    this.counts.used += n;
    for (let i = 0; i < segs.length; i += this.o.batch) {
      const chunk = segs.slice(i, i + this.o.batch);
      this.o.onUsed(chunk);
      this.counts.handedOff += chunk.length;
    }
  }

  /** Keep `preallocate` segments posted ahead of the writers, posting whole batches. */
  private replenish(): void {
    const ahead = this.firstSeq + this.postedSegs.length - this.consumedUpTo;
    let want = this.o.preallocate - ahead;
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
