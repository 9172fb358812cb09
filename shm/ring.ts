// SPSC ring of Int32 words between two threads: one per directed actor pair (control -> digest.0, ...).
// The primitive is the `ringbuf.js` RingBuffer (wait-free single-producer single-consumer over a
// SharedArrayBuffer); it was measured fast enough here (bench/ring.bench.ts, > 5 M records/s batched),
// so there is no home-grown ring. Around it this file adds what the runtime needs: all-or-nothing
// publishes (a record is never split across two publishes), and a "space" wait so a producer facing a
// full ring sleeps instead of spinning.
//
//   data SAB (layout owned by ringbuf.js; capacityWords + 1 slots, one always kept empty)
//   +-----------+-----------+--------------------------------------------------+
//   | WRITE_PTR | READ_PTR  | STORAGE: Int32 x (capacityWords + 1)              |
//   | u32 @0    | u32 @4    | @8 ...                                            |
//   +-----------+-----------+--------------------------------------------------+
//     WRITE_PTR: next slot the producer fills; stored (Atomics.store) after the words are copied.
//     READ_PTR:  next slot the consumer reads; stored after the words are copied out.
//
//   ctl SAB (ours, Int32 words)
//   +-----------+---------------+-------------+
//   | SPACE_SEQ | SPACE_WAITING | CAPACITY    |
//   +-----------+---------------+-------------+
//     SPACE_SEQ:     bumped by the consumer when it frees space while the producer waits for it.
//     SPACE_WAITING: 1 while the producer is (about to be) asleep on SPACE_SEQ.
//     CAPACITY:      capacityWords, written once at creation (a cross-check for the other side).
import { RingBuffer } from 'ringbuf.js';
import { defaultLimits } from '../config/limits.js';
import { ErrorCodes, RowanError, invariant } from '../config/base/errors.js';

export const RingCtl = {
  SPACE_SEQ: 0,
  SPACE_WAITING: 1,
  CAPACITY: 2,
  WORDS: 4, // padded so the ctl block is 16 bytes
} as const;

/** What crosses a thread boundary to open the same ring on the other side (SABs are shared, not copied). */
export interface RingHandle {
  data: SharedArrayBuffer;
  ctl: SharedArrayBuffer;
}


export class Ring {
  readonly capacityWords: number;
  private readonly rb: RingBuffer;
  private readonly ctl: Int32Array;

  /** Allocate a ring able to hold `capacityWords` Int32 words. */
  static create(capacityWords: number): Ring {
    const { ringWordsMin, ringWordsMax } = defaultLimits;
    if (!Number.isInteger(capacityWords) || capacityWords < ringWordsMin || capacityWords > ringWordsMax)
      throw new RowanError(
        ErrorCodes.BAD_CONFIG,
        `ring capacity ${capacityWords} words is outside [${ringWordsMin}, ${ringWordsMax}]`,
      );
    // ringbuf.js allocates capacity + 1 slots and keeps one empty to tell full from empty.
    const data = RingBuffer.getStorageForCapacity(capacityWords, Int32Array);
    const ctl = new SharedArrayBuffer(RingCtl.WORDS * 4);
    new Int32Array(ctl)[RingCtl.CAPACITY] = capacityWords; // before any other thread sees the SAB
    return new Ring({ data, ctl });
  }

  /** Open a ring created elsewhere (the other end of the pair). */
  constructor(readonly handle: RingHandle) {
    this.rb = new RingBuffer(handle.data, Int32Array);
    this.ctl = new Int32Array(handle.ctl);
    this.capacityWords = this.rb.capacity();
    invariant(this.ctl[RingCtl.CAPACITY] === this.capacityWords, 'ring ctl block does not match its data block');
  }

  /** Words waiting to be consumed. Exact on the consumer side; a lower bound anywhere else. */
  depth(): number {
    return this.rb.availableRead();
  }

  /** Words that can be published right now. Exact on the producer side; a lower bound elsewhere. */
  free(): number {
    return this.rb.availableWrite();
  }

  // ---- producer side -------------------------------------------------------------------------------

  /**
   * Publish words[0..length) as one unit, or nothing: false when the ring lacks room. ringbuf.js copies
   * the words, then stores WRITE_PTR (Atomics.store, seq-cst): the consumer that loads the new WRITE_PTR
   * sees every copied word, so a batch of records becomes visible at once.
   */
  tryPublish(words: Int32Array, length = words.length): boolean {
    if (length > this.capacityWords)
      throw new RowanError(ErrorCodes.RECORD_TOO_LARGE, `${length} words exceed ring capacity ${this.capacityWords}`);
    if (this.rb.availableWrite() < length) return false;
    const n = this.rb.push(words, length, 0);
    invariant(n === length, 'single producer saw room vanish between check and push');
    return true;
  }

  /**
   * Resolve once `length` words fit. Eventcount: read SPACE_SEQ, announce SPACE_WAITING, re-check, then
   * sleep on SPACE_SEQ; the consumer bumps SPACE_SEQ after freeing space whenever it sees SPACE_WAITING.
   */
  async waitForSpace(length: number): Promise<void> {
    while (this.rb.availableWrite() < length) {
      // Read before announcing: a bump after this load makes waitAsync return at once ("not-equal").
      const seq = Atomics.load(this.ctl, RingCtl.SPACE_SEQ);
      // Announce the sleep; the consumer's next pop observes it (seq-cst, ordered before our re-check).
      Atomics.store(this.ctl, RingCtl.SPACE_WAITING, 1);
      if (this.rb.availableWrite() >= length) break;
      // Sleep until SPACE_SEQ moves off `seq`; no timeout, the consumer's notify is guaranteed by the above.
      await Atomics.waitAsync(this.ctl, RingCtl.SPACE_SEQ, seq).value;
    }
    // Withdraw the announcement so the consumer stops bumping SPACE_SEQ on every pop.
    Atomics.store(this.ctl, RingCtl.SPACE_WAITING, 0);
  }

  // ---- consumer side -------------------------------------------------------------------------------

  /**
   * Copy up to `max` words into out[offset..], returning how many. ringbuf.js stores READ_PTR after the
   * copy (Atomics.store): the producer may reuse those slots only after it loads the new READ_PTR.
   */
  take(out: Int32Array, offset: number, max: number): number {
    const n = this.rb.pop(out, max, offset);
    // A producer asleep in waitForSpace announced it here; only then pay for a notify.
    if (n > 0 && Atomics.load(this.ctl, RingCtl.SPACE_WAITING) === 1) {
      // Publish "space freed": the waiter's waitAsync on SPACE_SEQ resolves and it re-checks room.
      Atomics.add(this.ctl, RingCtl.SPACE_SEQ, 1);
      // Wake the producer thread's waitAsync (one waiter: single producer).
      Atomics.notify(this.ctl, RingCtl.SPACE_SEQ, 1);
    }
    return n;
  }
}
