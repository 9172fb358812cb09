// The shared receive queue (SRQ) of one Rowan receiver, emulated in shared memory for the shm
// transport and the soft RNIC of the tcp transport (ROWAN §3.2.2, Figure 4b; DESIGN §4).
//
// It lives in a small file `<dataDir>/rowan.srq` mapped by the receiver (control actor) and by every
// sender that lands writes directly (threads or processes on the same host). It is volatile state:
// the receiver rebuilds it at every start under a new incarnation, after marking the old file Closed.
//
//   byte 0      4        8       12       16       20       24             32
//        +------+--------+-------+--------+--------+--------+--------------+
//        |magic |version | state |postCap | cqCap  | stride | incarnation  |   read-mostly line:
//   32   +------+--------+-------+--------+--------+-----------------------+   the receiver writes,
//        |posted|usedBelow|ring  |strideBits|cqShards|                     |   senders read
//   64   +------+--------------------------------------------------------+
//        |cursor|                                                         |   its own line: every
//   128  +------+--------+------------------------------------------------+   reservation CASes it
//        |noBuf |attached|cqVoid|starved|                                 |   rare
//   256  posted ring:  ring x { poolOffset lo u32, hi u32, lengthBytes u32, seq i32 }
//        holds:        ring x { tag | count i32 }, padded to 64 B
//        CQ tails:     cqShards x { tail u32, pad to 64 B }   (a cache line each)
//        CQ rings:     cqShards x cqCap/cqShards x { poolOffset lo u32, hi u32, length u32, sender u32 }
//        senders:      SENDER_SLOTS x { pid i32, holding i32, pad to 64 B }   (a cache line each)
//
// Every version keeps magic, version and state at words 0-2, so a receiver can close a queue file
// of any older version (its senders check state) and an attacher can say which version it found.
//
// posted    count of buffers ever posted (int32). Buffer n sits in posted-ring slot n & (ring - 1); the
//           receiver fills offset and length, publishes the slot with Atomics.store(seq = n), then
//           the count with Atomics.store(posted, n + 1). A slot is refilled only once the cursor has
//           moved past the buffer it held, so a slot whose seq a sender reads is the buffer's own.
// cursor    where the next write lands, one int32 moved only by compareExchange -- the atomic
//           reservation an MP-SRQ RNIC does in hardware:
//             bit 31                     Closed (set by shutdown: every sender CAS then fails)
//             bits [strideBits, 31)      buffer seq mod 2^seqBits (seqBits = 31 - strideBits)
//             bits [0, strideBits)       strides already reserved in that buffer
//           Buffers are consumed strictly in posting order, each write lands stride-aligned inside the
//           current buffer, and a write that does not fit moves the cursor to the start of the next.
//           strideBits holds the stride count of the largest buffer the queue accepts (bufferBytesMax),
//           so a reservation never carries into the seq bits. Why a seq that wraps at 2^seqBits is
//           safe: see SharedReceiveQueue.reserve (srq.ts).
// usedBelow buffers with seq below this have been declared Used by the receiver: no reservation may
//           land there any more, and once their holds are 0 they are handed to digest (and may be
//           recycled). A shm sender checks it after reserving (a stale reservation is abandoned); a
//           write whose hold was fenced is re-issued: an exact version of the paper's 1 ms retry rule,
//           possible because shm senders see receiver state.
//           The receiver keeps posted - usedBelow below 2^seqBits (post() asserts it).
// CQ        the ring CQ, in cqShards shards: each attaching sender takes the next shard round-robin
//           (attached counts them) and writes its completions there, so two senders do not bounce
//           one tail word and one ring's cache lines between their cores on every write. A shard's
//           tail counts slots ever claimed in it (uint32, wraps); its slot = tail % (cqCap /
//           cqShards), a power of two, so the wrap at 2^32 stays in step. A write claims its slot
//           before it persists and fills it after; one that must be re-issued (LATE) fills it with
//           a void entry (length 0) and counts it in cqVoid. Completions of the queue = the sum of
//           the tails - cqVoid. The rings simply overwrite: the receiver never polls per write
//           (§3.2.2, "ring CQ").
// holds     per posted-ring slot, the reservations of its buffer whose copy has not finished: bits
//           [0, 16) count, [16, 30) the buffer's seq mod 2^14 (its tag), bit 30 Fenced. post() stores
//           (tag, 0) before it publishes the slot. A sender adds a hold to the buffer it is about to
//           reserve in *before* its cursor CAS (a CAS on the word that fails if the tag is not its
//           buffer's), and drops it after the copy is persistent (a CAS that fails if the slot holds
//           another buffer; on a fenced word it drops the count all the same and tells the sender it
//           was fenced, so the count says how many copies may still come). The receiver declares a buffer Used (usedBelow) and only then reads its holds: it
//           hands the buffer to digest -- after which it may be freed and reused -- only once they are 0.
//           Seq-cst order makes that exact (a Dekker pair): a sender whose hold the receiver did not see
//           took it after usedBelow moved, so its check of usedBelow after the CAS abandons the slot.
//           A hold still there after the receiver's timeout (its sender died, or is stalled that long)
//           is fenced: the receiver copies the buffer to a fresh segment for digest and keeps the old one
//           out of use, so a copy that still lands there harms nothing, and its sender, finding its
//           hold fenced, re-issues the write. The receiver posts a buffer into a slot only once the
//           buffer that slot held before was handed off, so a tag is never reused under live holds
//           (it repeats every 2^14 buffers: a sender would have to stall that long between its hold
//           and its copy for a release to hit the wrong buffer).
//           A shm sender (keepHolds, srq.ts) keeps one hold per buffer for its event-loop turn instead of
//           one per reservation: its later reservations there are covered by a hold taken before them,
//           and after each copy it checks, behind a locked instruction, that the hold is not fenced.
//           A restart of the receiver closes the old queue and waits for its holds before cold start
//           recycles anything (./stale-queue.ts).
// senders   who holds what, for a restart of the receiver (./stale-queue.ts): the n-th sender to
//           attach (attached counts them) takes slot n, if n < SENDER_SLOTS, and stores its pid there.
//           `holding` counts the holds it has taken and not yet released: it is raised before the hold
//           CAS and lowered after the release CAS (or after a hold CAS that failed), so while a hold of
//           this sender is in a count, its holding is above 0. A restart whose old queue still has
//           holds waits for the senders whose holding is above 0 and whose process is alive; a dead
//           sender copies nothing. A sender that attached past SENDER_SLOTS is not named: a restart
//           then counts every process that maps the queue as a possible holder.
// noBuf     reservations that found no posted buffer (receiver not ready, or too slow to re-post).
// starved   1 while the receiver could not keep buffers posted because its pool had no free segment
//           (senders that find no buffer report PM_FULL instead of a bare timeout), else 0.
//
// The cursor and each CQ tail sit on cache lines of their own: they change on every write, and the
// fields senders only read (state, posted, usedBelow, the posted ring) then stay shared in their
// caches instead of being invalidated by other senders' reservations and completions.

export const SRQ_MAGIC = 0x51525352; // 'RSRQ' little-endian
/** 2: one-word cursor with a wrapping seq, seq per posted slot, sharded CQ, hot words on their own lines.
 *  3: holds per posted buffer (the receiver hands a buffer to digest only once its copies are done).
 *  4: sender slots (pid, holds taken): a restart waits for the copies of live senders only. */
export const SRQ_VERSION = 4;

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
export const W_USED_BELOW = 9;
export const W_RING = 10;
export const W_STRIDE_BITS = 11;
export const W_CQ_SHARDS = 12;
export const W_CURSOR = 16; // byte 64
export const W_NO_BUFFER = 32; // byte 128
export const W_CQ_ATTACHED = 33;
export const W_CQ_VOID = 34;
/** 1 while the receiver cannot post for lack of free segments (its pool is full), else 0. */
export const W_STARVED = 35;

export const HEADER_BYTES = 256;
export const POSTED_SLOT_BYTES = 16;
export const CQ_SLOT_BYTES = 16;
export const CQ_TAIL_BYTES = 64;
/** CQ shards of a queue: this many, or cqCap if smaller. */
export const CQ_SHARDS_MAX = 8;

/** Word offsets inside a posted-ring slot. */
export const SLOT_OFFSET_LO = 0;
export const SLOT_OFFSET_HI = 1;
export const SLOT_LENGTH = 2;
export const SLOT_SEQ = 3;
/** SLOT_SEQ of a slot never posted into. */
export const SLOT_EMPTY = -1;

/** Cursor bit 31: the queue is Closed. As an int32 the cursor is then negative. */
export const CURSOR_CLOSED = 1 << 31;

export interface CursorGeometry {
  /** Low bits of the cursor: strides reserved in the current buffer. */
  strideBits: number;
  /** The next 31 - strideBits bits: the current buffer's seq, mod 2^seqBits. */
  seqBits: number;
  /** Posted-ring slots: a power of two >= postCap, below 2^seqBits. */
  ring: number;
}

/**
 * How the cursor word is split for buffers of at most `bufferBytesMax`, and the ring size. Null if
 * postCap leaves too few seq bits (see reserve() in srq.ts for why the ring must stay below 2^seqBits
 * and posted - usedBelow below 2^seqBits).
 */
export function cursorGeometry(bufferBytesMax: number, stride: number, postCap: number): CursorGeometry | null {
  const strideBits = 32 - Math.clz32(Math.floor(bufferBytesMax / stride)); // holds bufferBytesMax / stride itself
  const seqBits = 31 - strideBits;
  let ring = 2;
  while (ring < postCap) ring *= 2;
  if (seqBits < 2 || ring * 2 > 2 ** seqBits) return null;
  return { strideBits, seqBits, ring };
}

export function cqShardsFor(cqCap: number): number {
  return Math.min(CQ_SHARDS_MAX, cqCap);
}

/** Hold word fields (see the header). */
export const HOLD_COUNT_MASK = 0xffff;
export const HOLD_TAG_SHIFT = 16;
export const HOLD_TAG_MASK = 0x3fff;
export const HOLD_FENCED = 1 << 30;

/** The hold word of a live buffer `seq` with `count` holds. */
export function holdWord(seq: number, count: number): number {
  return ((seq & HOLD_TAG_MASK) << HOLD_TAG_SHIFT) | count;
}

/** Bytes of the holds array: one word per ring slot, padded to a cache line. */
function holdsBytes(ring: number): number {
  return Math.ceil((ring * 4) / 64) * 64;
}

/** Int32 word index of the hold word of the slot buffer `seq` sits in. */
export function holdsWord(ring: number, seq: number): number {
  return (HEADER_BYTES + ring * POSTED_SLOT_BYTES + (seq & (ring - 1)) * 4) >> 2;
}

/** Senders named in the queue (see the header); later ones attach unnamed. */
export const SENDER_SLOTS = 256;
export const SENDER_SLOT_BYTES = 64;
/** Word offsets inside a sender slot. */
export const SENDER_PID = 0;
export const SENDER_HOLDING = 1;

/** Where the sender slots start: after the CQ rings, on a cache line of their own. */
function beforeSenders(ring: number, cqCap: number): number {
  return Math.ceil((HEADER_BYTES + ring * POSTED_SLOT_BYTES + holdsBytes(ring) + cqShardsFor(cqCap) * CQ_TAIL_BYTES + cqCap * CQ_SLOT_BYTES) / 64) * 64;
}

export function srqBytes(ring: number, cqCap: number): number {
  return beforeSenders(ring, cqCap) + SENDER_SLOTS * SENDER_SLOT_BYTES;
}

/** Int32 word index of sender slot `n` (n < SENDER_SLOTS). */
export function senderSlotWord(ring: number, cqCap: number, n: number): number {
  return (beforeSenders(ring, cqCap) + n * SENDER_SLOT_BYTES) >> 2;
}

/** Int32 word index of the posted-ring slot for buffer `seq` (any seq congruent mod `ring` shares it). */
export function postedSlotWord(ring: number, seq: number): number {
  return (HEADER_BYTES + (seq & (ring - 1)) * POSTED_SLOT_BYTES) >> 2;
}

/** Int32 word index of CQ shard `shard`'s tail. */
export function cqTailWord(ring: number, shard: number): number {
  return (HEADER_BYTES + ring * POSTED_SLOT_BYTES + holdsBytes(ring) + shard * CQ_TAIL_BYTES) >> 2;
}

/** Int32 word index of slot 0 of CQ shard `shard`'s ring (its slots follow, CQ_SLOT_BYTES apart). */
export function cqRingWord(ring: number, cqCap: number, shard: number): number {
  const shards = cqShardsFor(cqCap);
  return (HEADER_BYTES + ring * POSTED_SLOT_BYTES + holdsBytes(ring) + shards * CQ_TAIL_BYTES + shard * (cqCap / shards) * CQ_SLOT_BYTES) >> 2;
}
