// Erda's metadata at the receiver (Erda §3.2.3, Figure 6), as this harness lays it out in regions of
// the receiver's pool that the writing node allocated (role Remote, like rwrite's logs).
//
// An index region is a chain link of a hash table written one-sidedly by one writer stream:
//
//   byte 0        8            16                 64                                      length
//       +--------+------------+-------+-- pad --+--------+--------+--------+--------+-- ... --+
//       | magic  | next index | slots |         | slot 0: tag u64 | entry u64 | slot 1 ...     |
//       |  u64   | region u64 |  u32  |         +-----------------+-----------+----------------+
//       +--------+------------+-------+---------+
//
// A slot is 16 bytes: `tag` (the key's 64-bit hash, written once when the writer claims the slot; the
// paper stores the key itself, here the object in the log carries it and readers compare it) and the
// 8-byte atomic write region `entry`:
//
//   bit 0       new tag: 1 -> offset A is the newest object, B the one before; 0 -> the other way round
//   bits 1-31   offset A (pool offset / 64; 0 = none)
//   bit 32      reserved
//   bits 33-63  offset B (pool offset / 64; 0 = none)
//
// An update flips the new tag and writes the new object's offset into the half that held the older
// one, so the entry always names the newest object and the one before (the "old version" a reader falls
// back to when the newest fails its checksum). The whole entry is one 8-byte aligned write.
// Collisions probe linearly for at most PROBES slots; a key that finds none in this region goes to the
// next one (`next index region`, 0 = none yet), so readers follow the chain.
import { ErrorCodes, RowanError } from '../../config/base/errors.js';

export const ERDA_MAGIC = 0x4144_5245_4944_4e49n; // 'INDIERDA' little-endian
export const INDEX_HEADER_BYTES = 64;
export const NEXT_OFF = 8;
export const SLOTS_OFF = 16;
export const SLOT_BYTES = 16;
export const SLOT_TAG_OFF = 0;
export const SLOT_ENTRY_OFF = 8;
/** Slots a key probes in one index region before it moves on to the next. */
export const PROBES = 32;
/** Offsets are stored in 64-byte units in 31 bits: pools up to 128 GiB. */
export const OFFSET_UNIT = 64;
const OFFSET_UNITS_MAX = 2 ** 31 - 1;

export interface ErdaEntry {
  /** Pool offset of the newest object (0: none). */
  newest: number;
  /** Pool offset of the object before it (0: none). */
  previous: number;
  /** The new tag as stored (which half holds `newest`). */
  newTag: 0 | 1;
}

export const EMPTY_ENTRY: Readonly<ErdaEntry> = Object.freeze({ newest: 0, previous: 0, newTag: 0 });

function units(offset: number): number {
  if (offset % OFFSET_UNIT !== 0 || offset / OFFSET_UNIT > OFFSET_UNITS_MAX)
    throw new RowanError(ErrorCodes.BAD_ARGUMENT, `erda: object offset ${offset} is not a 64-byte unit below 128 GiB`);
  return offset / OFFSET_UNIT;
}

/** The entry after writing an object at `at`: the tag flips, `at` goes into the half that held the
 *  older object, the newest so far becomes the previous one. */
export function nextEntry(e: Readonly<ErdaEntry>, at: number): ErdaEntry {
  return { newest: at, previous: e.newest, newTag: e.newTag === 1 ? 0 : 1 };
}

/** The 8 bytes of `e` (two little-endian u32 words: [tag | A << 1], [B << 1]). */
export function encodeEntry(e: Readonly<ErdaEntry>): Uint8Array {
  const [a, b] = e.newTag === 1 ? [e.newest, e.previous] : [e.previous, e.newest];
  const out = new Uint8Array(8);
  const dv = new DataView(out.buffer);
  dv.setUint32(0, ((units(a) << 1) | e.newTag) >>> 0, true);
  dv.setUint32(4, (units(b) << 1) >>> 0, true);
  return out;
}

export function decodeEntry(bytes: Uint8Array, off = 0): ErdaEntry {
  const dv = new DataView(bytes.buffer, bytes.byteOffset + off, 8);
  const w0 = dv.getUint32(0, true);
  const w1 = dv.getUint32(4, true);
  const newTag = (w0 & 1) as 0 | 1;
  const a = (w0 >>> 1) * OFFSET_UNIT;
  const b = (w1 >>> 1) * OFFSET_UNIT;
  return newTag === 1 ? { newest: a, previous: b, newTag } : { newest: b, previous: a, newTag };
}

/** Slots an index region of `length` bytes holds. */
export function slotCount(length: number): number {
  return Math.floor((length - INDEX_HEADER_BYTES) / SLOT_BYTES);
}

/** Pool offset of slot `i` of the index region at `regionOffset`. */
export function slotOffset(regionOffset: number, i: number): number {
  return regionOffset + INDEX_HEADER_BYTES + i * SLOT_BYTES;
}

/** A key hash as the u64 tag stored in a slot; never 0 (0 marks a free slot). */
export function tagOf(hi: number, lo: number): bigint {
  const t = (BigInt(hi >>> 0) << 32n) | BigInt(lo >>> 0);
  return t === 0n ? 1n : t;
}

/** The header of a fresh index region: magic, no next region yet, its slot count. */
export function indexHeader(slots: number): Uint8Array {
  const out = new Uint8Array(SLOTS_OFF + 4);
  const dv = new DataView(out.buffer);
  dv.setBigUint64(0, ERDA_MAGIC, true);
  dv.setUint32(SLOTS_OFF, slots, true);
  return out;
}

/** The 8-byte `next index region` field pointing at `next`. */
export function nextField(next: number): Uint8Array {
  const out = new Uint8Array(8);
  new DataView(out.buffer).setBigUint64(0, BigInt(next), true);
  return out;
}
