// What the control side of a Rowan receiver (receiver.ts) needs of a receive queue, whichever lands the
// writes: the emulated queue of srq.ts (shm, tcp) or an RNIC's SRQ (runtime/fabric/verbs-receiver.ts).

export interface PostedBuffer {
  /** Pool offset of the buffer (a segment). */
  offset: number;
  /** Bytes; a multiple of the stride. */
  length: number;
}

/** The queue the control-side RowanReceiver drives. */
export interface ReceiveQueue {
  /** The most buffers that may be posted and not yet consumed (posting more is a broken invariant). */
  readonly postCap: number;
  /** Post buffers (pool offset, length) in one call, in increasing address order. */
  post(buffers: readonly PostedBuffer[]): void;
  /** Buffers posted so far (ever). */
  posted(): number;
  /** Posted buffers no write has reached yet, counting the one writes currently land in. */
  outstanding(): number;
  /** The receiver declared every buffer below `seq` Used (before handing them to digest). */
  markUsedBelow(seq: number): void;
  /** The receiver could (false) or could not (true) allocate the segments it wanted to post. */
  markStarved?(starved: boolean): void;
  /** Reservations in buffer `seq` whose copy has not finished (absent: a hardware RNIC's queue, whose
   *  DMA cannot outlive the grace). The receiver hands a buffer to digest only once this is 0. */
  holds?(seq: number): number;
  /** Give up on buffer `seq`'s holds (their senders died or stalled past the receiver's timeout): from
   *  now on their releases fail and they re-issue. False if the holds changed meanwhile (look again). */
  fence?(seq: number): boolean;
}
