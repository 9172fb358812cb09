// Layout of one per-shard index (§5.3) inside ONE SharedArrayBuffer (CONVENTIONS 3). Every field has a
// name here; shm/index.ts only uses these names.
//
//   byte 0                                   64
//   +----------------------------------------+------------------------------------------------------+
//   | header: 16 x int32 (one cache line)    | buckets[0 .. bucketCount + overflowCapacity)         |
//   |  [0] MAGIC 'RIDX'   [1] LAYOUT_VERSION |  primary buckets 0 .. bucketCount-1, then the        |
//   |  [2] BUCKET_COUNT   [3] OVERFLOW_CAP   |  overflow area bucketCount .. +overflowCapacity-1,    |
//   |  [4] BUCKET_SLOTS   [5] OVERFLOW_USED  |  handed out in order by the OVERFLOW_USED bump counter |
//   |  [6] ITEMS          [7] OVERFLOW_MAX   |  (the buffer is a growable SharedArrayBuffer: the     |
//   |  [8..11] FLUSH FLOOR, its entry (i64 x2)|
//   |  [12] FLOOR LOCK  [13..15] reserved    |   overflow area grows up to OVERFLOW_MAX buckets)     |
//   +----------------------------------------+------------------------------------------------------+
//
//   one bucket = BUCKET_SLOTS x 64-bit slots (8 x 8 B = one 64-byte cache line by default):
//   +---------+---------+-----+-----------------+--------------------------------------------+
//   | item 0  | item 1  | ... | item SLOTS-2    | link slot: lo word = next bucket id (0 = end)|
//   +---------+---------+-----+-----------------+            hi word = chain lock (head only)|
//                                                +--------------------------------------------+
//   item (int64, little-endian) = tag:16 | address:48.  Item 0 (address 0) = empty slot.
//     as int32 halves: lo word = address bits 0..31; hi word = tag << 16 | address bits 32..47.
//
// The link lives in the bucket's last slot rather than in a parallel array so that a lookup touches one
// cache line per bucket, as in CLHT-style bucket tables; a bucket therefore holds BUCKET_SLOTS - 1
// items (7 with the default `indexBucketItems` = 8). Bucket id 0 is a primary bucket and never the
// target of a link, so 0 can mean "end of chain". The chain lock word sits in the head bucket's link
// slot for the same cache-line reason; it is only ever touched by inserters.

export const INDEX_MAGIC = 0x52494458; // 'RIDX'
export const INDEX_LAYOUT_VERSION = 2;

export const HEADER_BYTES = 64;
export const HEADER_I32 = HEADER_BYTES / 4;

// Header fields, as int32 indexes into the buffer.
export const H_MAGIC = 0;
export const H_LAYOUT_VERSION = 1;
export const H_BUCKET_COUNT = 2;
export const H_OVERFLOW_CAPACITY = 3;
export const H_BUCKET_SLOTS = 4;
/** Overflow buckets handed out so far (bump counter; may overshoot the capacity on INDEX_FULL). */
export const H_OVERFLOW_USED = 5;
/** Live items (inserted minus removed). */
export const H_ITEMS = 6;
/** Overflow buckets the buffer may grow to (its maxByteLength); OVERFLOW_CAP is what it holds now. */
export const H_OVERFLOW_MAX = 7;

/** The shard's flush floor (FLUSHDB/FLUSHALL, actors/shared/flush-floor.ts), as int64 indexes into the
 *  header viewed as a BigInt64Array: every entry of the shard with a lower version is dead; and the pool
 *  address of the FLUSH entry that set it (0 = none), the one GC must keep while the floor applies. */
export const H64_FLOOR = 4;
export const H64_FLOOR_ADDR = 5;
/** The floor's low and high int32 halves (little-endian), for reads without a BigInt. */
export const H_FLOOR_LO = 8;
export const H_FLOOR_HI = 9;
/** A spin lock (int32) making a floor raise and its entry's address one step. */
export const H_FLOOR_LOCK = 12;
/** Changes to what the table says (int32, wrapping): bumped after every insert, update and removal of
 *  an item is published, and after a floor raise -- not after a GC relocation, which moves an entry
 *  without changing it. A reader that saw the same count before a walk and now knows the walk still
 *  describes the table (INFO keyspace and DBSIZE reuse a count: actors/worker/resp/keyspace.ts). */
export const H_CHANGES = 13;

export const SLOT_BYTES = 8;
/** Within a slot viewed as two int32s (little-endian): the low and high words. */
export const SLOT_LO_WORD = 0;
export const SLOT_HI_WORD = 1;

export const TAG_BITS = 16;
export const TAG_MASK = 0xffff;
/** The tag is the top 16 bits of the item, i.e. the top 16 bits of the slot's hi word. */
export const TAG_SHIFT_IN_HI_WORD = 16;
/** Address bits 32..47 sit in the low 16 bits of the hi word. */
export const ADDR_HI_MASK = 0xffff;
export const ADDR_BITS = 48;
export const ADDR_MAX = 2 ** ADDR_BITS - 1;
export const TWO_POW_32 = 2 ** 32;

/** Link word value meaning "no next bucket". */
export const LINK_NONE = 0;

/** Chain lock states (a three-state futex lock: free, held, held with possible waiters). */
export const LOCK_FREE = 0;
export const LOCK_HELD = 1;
export const LOCK_CONTENDED = 2;

/** Bytes needed for a table of this shape. */
export function indexBytes(bucketCount: number, overflowCapacity: number, bucketSlots: number): number {
  return HEADER_BYTES + (bucketCount + overflowCapacity) * bucketSlots * SLOT_BYTES;
}

/** Overflow buckets a buffer of `byteLength` holds (the inverse of indexBytes). */
export function overflowCapacityOf(byteLength: number, bucketCount: number, bucketSlots: number): number {
  return Math.floor((byteLength - HEADER_BYTES) / (bucketSlots * SLOT_BYTES)) - bucketCount;
}

/** int32 index of a slot's low word; the hi word is the next one. `slot` counts 64-bit slots. */
export function slotLoWord(slot: number): number {
  return HEADER_I32 + slot * 2 + SLOT_LO_WORD;
}

export function slotHiWord(slot: number): number {
  return HEADER_I32 + slot * 2 + SLOT_HI_WORD;
}

// JS typed arrays use the platform byte order; the int32 halves above assume little-endian, which is
// every platform Node 20 ships for. Checked once at load so a big-endian port fails loudly.
const probe = new Uint8Array(new Uint32Array([1]).buffer);
if (probe[0] !== 1) throw new Error('shm/index-layout: little-endian platform required');
