// The state Share-KV's sender threads of one node share (ROWAN §6.1): the tail of the node's one remote
// log and the regions it is made of. Lives in a SharedArrayBuffer handed to each sender thread.
//
//   word  0       1         2        3            4        5       6..7  8 ...
//        +-------+---------+--------+------------+--------+-------+-----+----------------------------+
//        | magic | version | cursor | regionBytes| slotCap| nodeId| pad | slots: slotCap x 8 words   |
//        +-------+---------+--------+------------+--------+-------+-----+----------------------------+
//   slot k % slotCap (the log's k-th region):
//        { tag, poolOffset lo u32, poolOffset hi u32, length, segment, pad x 3 }
//
// cursor       next free 64 B unit of the node's log (logical: unit u is byte u*64 of the chain of
//              regions). Senders take addresses with Atomics.add -- the "local atomic increment".
// regionBytes  length of every region of the log (set by whoever allocates region 0; 0 until then).
// tag          0 = never used; 2(k+1) = region k published in this slot; 2(k+1)+1 = region k being
//              allocated by the sender that claimed the slot (others poll the tag).

export const SHARE_MAGIC = 0x4853524c; // 'LRSH' little-endian
export const SHARE_VERSION = 1;
/** Addresses are handed out in whole log-entry strides (log entries are 64 B aligned, §5.3). */
export const SHARE_UNIT_BYTES = 64;

export const W_MAGIC = 0;
export const W_VERSION = 1;
export const W_CURSOR = 2;
export const W_REGION_BYTES = 3;
export const W_SLOT_CAP = 4;
export const W_NODE_ID = 5;
export const HEADER_WORDS = 8;
export const SLOT_WORDS = 8;
/** Slot word offsets. */
export const S_TAG = 0;
export const S_OFF_LO = 1;
export const S_OFF_HI = 2;
export const S_LEN = 3;
export const S_SEGMENT = 4;

/** Highest region index a tag can name (tags are int32). */
export const REGION_INDEX_MAX = 2 ** 30 - 2;

export function shareBytes(slotCap: number): number {
  return (HEADER_WORDS + slotCap * SLOT_WORDS) * 4;
}

export function slotWord(slotCap: number, k: number): number {
  return HEADER_WORDS + (k % slotCap) * SLOT_WORDS;
}

export function publishedTag(k: number): number {
  return 2 * (k + 1);
}

export function claimedTag(k: number): number {
  return 2 * (k + 1) + 1;
}

/** The region index a tag names (-1 for an unused slot). */
export function tagRegion(tag: number): number {
  return tag === 0 ? -1 : (tag >> 1) - 1;
}
