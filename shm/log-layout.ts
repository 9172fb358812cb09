// The on-PM format of a log entry (ROWAN §4.2.2, Figure 7). One module declares every offset so the
// codec, the scans and anyone peeking at raw segments (control's first-64-bits check) agree by name.
//
// An entry is one or more *blocks*. Every block starts 64-byte aligned, carries the full header, and is
// zero-padded to a multiple of 64 bytes. An entry whose encoded size would exceed the MTU is split into
// blocks of at most mtuBytes each, so a receiver-side RNIC that scatters an entry's packets across
// non-contiguous b-log slots still leaves self-describing pieces; ⟨shard, version⟩ names the entry.
//
//  byte 0      1       2       4          8        12       14       16          20    22    24          28         32
//      +------+-------+-------+----------+--------+--------+--------+-----------+-----+-----+-----------+----------+
//      | type | flags | shard | checksum | ver lo | ver hi | keyLen | valueLen  | cnt | seq | payloadLen| reserved |
//      |  u8  |  u8   |  u16  |   u32    |  u32   |  u16   |  u16   |   u32     | u16 | u16 |    u32    |  u32     |
//      +------+-------+-------+----------+--------+--------+--------+-----------+-----+-----+-----------+----------+
//      | payload: this block's slice of (key bytes ++ value bytes)  | zero padding up to the next 64-byte line |
//      +--------------------------------------------------------------------------------------------------------+
//
// Flag 0x02 (FLAG_EXPIRES, PUT only): the entry has an expiry deadline, 8 bytes (u64 LE, Unix ms, decided
// by the primary) between the key and the value: payload = key ++ deadline ++ value. keyLen/valueLen
// stay the key's and the value's own lengths, so the deadline adds EXPIRES_BYTES to the payload; it
// always lies in block 0 (keyBytesMax + EXPIRES_BYTES < one block's payload, checked by the codec), and
// the key still starts right after the header, so key probes ignore the flag.
//
// All fields little-endian. `type` is never zero: the control actor decides that the RNIC has started
// filling a posted b-log segment by its first 64 bits turning non-zero (§4.3), and a scan ends at the
// first zero header. keyLen/valueLen describe the whole entry (identical in every block); payloadLen is
// this block's share. Block `seq` holds payload bytes [seq*P, seq*P + payloadLen) where P is
// blockPayloadMax(limits), so reassembly needs no adjacency. The checksum is CRC32C over the whole block:
// the header with the checksum field zeroed, the payload, and the padding. Covering the padding costs at
// most 63 bytes of CRC and means any bit flip anywhere in a block's footprint is caught.
import type { Limits } from '../config/limits.js';

export const EntryType = {
  Put: 1,
  Del: 2,
  /** ⟨shard, CommitVer⟩ dissemination (§4.4); the CommitVer rides in the version field, no key/value. */
  CommitVer: 3,
  /** FLUSHDB/FLUSHALL of one shard (actors/worker/flush.ts): no key or value; its version is the shard's
   *  *flush floor* -- every PUT/DEL of the shard with a lower version is dead, wherever it lies. */
  Flush: 4,
} as const;
export type EntryType = (typeof EntryType)[keyof typeof EntryType];

export const HEADER_BYTES = 32;
export const TYPE_OFF = 0;
export const FLAGS_OFF = 1;
export const SHARD_OFF = 2;
export const CHECKSUM_OFF = 4;
export const VERSION_LO_OFF = 8;
export const VERSION_HI_OFF = 12;
export const KEY_LEN_OFF = 14;
export const VALUE_LEN_OFF = 16;
export const CNT_OFF = 20;
export const SEQ_OFF = 22;
export const PAYLOAD_LEN_OFF = 24;
export const RESERVED_OFF = 28;

/** Flag bit: the entry is one of a transaction's writes (MULTI/EXEC, actors/worker/txn-write.ts). Its
 *  `reserved` word is then TXN_COUNT (u16, low half: how many entries the transaction wrote, >= 1) |
 *  TXN_INDEX (u16, high half: this entry's place, < count); the transaction's entries carry the
 *  consecutive versions base .. base + count - 1 of their shard, so entry i has version base + i and
 *  ⟨shard, version - index⟩ names the transaction. Whatever rebuilds state from a log applies a
 *  transaction's entries only once all `count` of them are present (./txn-entries.ts). Without the
 *  flag `reserved` is 0. */
export const FLAG_TXN = 0x01;
/** Flag bit: the payload carries an expiry deadline after the key (see above). */
export const FLAG_EXPIRES = 0x02;
/** Bytes of the deadline FLAG_EXPIRES adds to the payload. */
export const EXPIRES_BYTES = 8;
/** The flag bits readers understand; they reject unknown bits rather than guess at their meaning. */
export const FLAGS_KNOWN = FLAG_TXN | FLAG_EXPIRES;

/** The `reserved` word of a transaction's entry `index` of `count`. */
export function txnWord(count: number, index: number): number {
  return (count | (index << 16)) >>> 0;
}
export function txnCount(word: number): number {
  return word & 0xffff;
}
export function txnIndex(word: number): number {
  return word >>> 16;
}

export const SHARD_MAX = 0xffff;
export const VERSION_MAX = 2 ** 48 - 1;
export const VERSION_HI_MUL = 2 ** 32;
export const KEY_LEN_MAX = 0xffff;
export const CNT_MAX = 0xffff;

export function isEntryType(t: number): t is EntryType {
  return t === EntryType.Put || t === EntryType.Del || t === EntryType.CommitVer || t === EntryType.Flush;
}

export function alignUp(n: number, align: number): number {
  return Math.ceil(n / align) * align;
}

/** Payload bytes one block can hold: a full block is exactly one MTU. */
export function blockPayloadMax(limits: Limits): number {
  return limits.mtuBytes - HEADER_BYTES;
}

/** Blocks needed for a payload of `payloadLen` bytes (at least one, even for an empty payload). */
export function blockCount(payloadLen: number, limits: Limits): number {
  return payloadLen === 0 ? 1 : Math.ceil(payloadLen / blockPayloadMax(limits));
}

/** Payload bytes carried by block `seq` of an entry whose whole payload is `payloadLen` bytes. */
export function blockPayloadLen(seq: number, payloadLen: number, limits: Limits): number {
  const p = blockPayloadMax(limits);
  return Math.min(p, payloadLen - seq * p);
}

/** Bytes a block occupies in the log, padding included. */
export function blockSize(blockPayload: number, limits: Limits): number {
  return alignUp(HEADER_BYTES + blockPayload, limits.entryAlignBytes);
}
