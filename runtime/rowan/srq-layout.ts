// The shared receive queue (SRQ) of one Rowan receiver, emulated in shared memory for the shm
// transport and the soft RNIC of the tcp transport (ROWAN §3.2.2, Figure 4b; DESIGN §4).
//
// It lives in a small file `<dataDir>/rowan.srq` mapped by the receiver (control actor) and by every
// sender that lands writes directly (threads or processes on the same host). It is volatile state:
// the receiver rebuilds it at every start under a new incarnation, after marking the old file Closed.
//
//   byte 0      4        8       12       16       20       24             32
//        +------+--------+-------+--------+--------+--------+--------------+
//        |magic |version | state |postCap | cqCap  | stride | incarnation  |
//        +------+--------+-------+--------+--------+--------+--------------+
//   32   |posted|cqTail  |noBuf  |usedBelow| cursor (i64, at byte 48)      |
//        +------+--------+-------+--------+--------------------------------+
//   256  posted ring: postCap x { poolOffset lo u32, hi u32, lengthBytes u32, pad }
//        ring CQ:     cqCap   x { poolOffset lo u32, hi u32, length u32, sender u32 }
//
// posted   count of buffers ever posted (int32); buffer n sits in posted-ring slot n % postCap. The
//          receiver fills the slot, then publishes it with Atomics.store(posted, n + 1).
// cursor   where the next write lands: (buffer seq << 32) | strides used in that buffer. Senders move
//          it with compareExchange -- the atomic reservation an MP-SRQ RNIC does in hardware: buffers
//          are consumed strictly in posting order, each write lands stride-aligned inside the current
//          buffer, and a write that does not fit moves the cursor to the start of the next buffer.
// cqTail   completions ever written (uint32, wraps); CQ slot = cqTail % cqCap (cqCap a power of two,
//          so the wrap at 2^32 stays in step). The ring simply overwrites: the receiver never polls
//          per write (§3.2.2, "ring CQ").
// noBuf    reservations that found no posted buffer (receiver not ready, or too slow to re-post).
// starved  (word 20) 1 while the receiver could not keep buffers posted because its pool had no free
//          segment (senders that find no buffer report PM_FULL instead of a bare timeout), else 0.
// usedBelow buffers with seq below this have been declared Used by the receiver (and may be digested
//          and recycled). A shm sender checks it before copying (a stale reservation is abandoned) and
//          after persisting (a write that landed as its buffer went Used is re-issued): an exact
//          version of the paper's 1 ms retry rule, possible because shm senders see receiver state.

export const SRQ_MAGIC = 0x51525352; // 'RSRQ' little-endian
export const SRQ_VERSION = 1;

export const SrqState = { Init: 0, Ready: 1, Closed: 2 } as const;
export type SrqState = (typeof SrqState)[keyof typeof SrqState];

// Int32 word indexes (byte offset / 4).
export const W_MAGIC = 0;
export const W_VERSION = 1;
export const W_STATE = 2;
export const W_POST_CAP = 3;
export const W_CQ_CAP = 4;
export const W_STRIDE = 5;
export const W_INCARNATION_LO = 6;
export const W_INCARNATION_HI = 7;
export const W_POSTED = 8;
export const W_CQ_TAIL = 9;
export const W_NO_BUFFER = 10;
export const W_USED_BELOW = 11;
export const W_CURSOR_LO = 12;
export const W_CURSOR_HI = 13;
export const W_STARVED = 20;
/** BigInt64 word index of the cursor (byte 48). */
export const W64_CURSOR = 6;

export const HEADER_BYTES = 256;
export const POSTED_SLOT_BYTES = 16;
export const CQ_SLOT_BYTES = 16;

export function srqBytes(postCap: number, cqCap: number): number {
  return HEADER_BYTES + postCap * POSTED_SLOT_BYTES + cqCap * CQ_SLOT_BYTES;
}

/** Int32 word index of posted-ring slot for buffer `seq`. */
export function postedSlotWord(postCap: number, seq: number): number {
  return (HEADER_BYTES + (seq % postCap) * POSTED_SLOT_BYTES) >> 2;
}

/** Int32 word index of ring-CQ slot for completion number `n` (uint32). */
export function cqSlotWord(postCap: number, cqCap: number, n: number): number {
  return (HEADER_BYTES + postCap * POSTED_SLOT_BYTES + (n & (cqCap - 1)) * CQ_SLOT_BYTES) >> 2;
}

export function packCursor(seq: number, strides: number): bigint {
  return (BigInt(seq) << 32n) | BigInt(strides);
}
