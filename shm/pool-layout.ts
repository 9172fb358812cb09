// Layout of the PM pool file (DESIGN §3, ROWAN §4.2.1 and §5.3): every offset, size and bit field of
// the file is named here (CONVENTIONS 3); shm/pool.ts only uses these names. All integers are
// little-endian (x86_64 and the file format agree; a big-endian host is refused in pool.ts).
//
//   offset 0            4 KiB                    META_OFFSET + metaBytes (rounded to 4 KiB), then
//   +-------------------+------------------------+--------- aligned to min(segmentBytes, 2 MiB) ----+
//   | superblock page   | segment meta table:    | segment 0 | segment 1 | ... | segment count-1    |
//   |                   | one 64-bit word per    |           |           |     |                    |
//   |                   | segment                |           |           |     |                    |
//   +-------------------+------------------------+-----------+-----------+-----+--------------------+
//
//   superblock page (4 KiB):
//   [0, 256)    immutable header, written once at create, CRC32C in its last 4 bytes
//     0  magic 'ROWAN-PM' (8)      8  format version u32      12 superblock bytes u32 (4096)
//     16 pool id (16 random bytes) 32 segment bytes u32       36 segment count u32
//     40 meta offset u64           48 meta bytes u64          56 data offset u64
//     64 pool bytes u64            72 creation time u64 (ms since the epoch)
//     80..252 zero                 252 crc32c of [0, 252) u32
//   [256, 320)  mutable line: 256 allocation sequence counter u64 (the last seq handed out)
//   [320, 4096) reserved, zero
//
// Format-stable across versions: the magic, the version at byte 8 and the CRC at byte 252 over
// [0, 252). A reader checks the CRC before the version, so a flipped version bit reads as corruption
// and only a well-formed superblock of another version reads as POOL_VERSION.
//
// Segments start at a multiple of min(segmentBytes, 2 MiB): on a DAX filesystem a 2 MiB-aligned 4 MiB
// segment can be mapped with huge pages, and a segment never straddles a smaller page.

import { OWNER_ID_BITS, OWNER_ID_MAX } from '../config/base/ids.js';
import { crc32c } from './crc32c.js';

export const POOL_MAGIC = Buffer.from('ROWAN-PM', 'ascii');
/** 2: log entries' shard ids come from Redis hash slots (config/slots.ts); 1 from the 64-bit key hash. */
export const POOL_FORMAT_VERSION = 2;

export const SUPERBLOCK_BYTES = 4096;
export const SB_MAGIC = 0;
export const SB_MAGIC_BYTES = 8;
export const SB_VERSION = 8;
export const SB_SUPERBLOCK_BYTES = 12;
export const SB_POOL_ID = 16;
export const SB_POOL_ID_BYTES = 16;
export const SB_SEGMENT_BYTES = 32;
export const SB_SEGMENT_COUNT = 36;
export const SB_META_OFFSET = 40;
export const SB_META_BYTES = 48;
export const SB_DATA_OFFSET = 56;
export const SB_POOL_BYTES = 64;
export const SB_CREATED_AT_MS = 72;
/** CRC32C of [0, SB_CRC) sits at SB_CRC. */
export const SB_CRC = 252;
/** End of the immutable, CRC-covered header. */
export const SB_HEADER_END = 256;
/** The allocation sequence counter: a u64 read and bumped with Atomics; outside the CRC. */
export const SB_SEQ_COUNTER = 256;
export const SB_MUTABLE_END = 320;

/** The meta table starts right after the superblock page. */
export const META_OFFSET = SUPERBLOCK_BYTES;
export const META_WORD_BYTES = 8;
export const PAGE_BYTES = 4096;
/** Segments are aligned to min(segmentBytes, this). */
export const DATA_ALIGN_MAX = 2 * 1024 * 1024;

export const SEGMENT_BYTES_MIN = 4096;
export const SEGMENT_BYTES_MAX = 2 ** 30;
/** 2^20 segments: a 8 MiB meta table; far beyond what one 4 GiB view can hold anyway. */
export const SEGMENT_COUNT_MAX = 2 ** 20;
/** Owner ids have 10 bits. */
export { OWNER_ID_MAX };
/** Sequence numbers have 32 bits; 0 means "never allocated". */
export const SEQ_MAX = 0xffffffff;

// ---- geometry ---------------------------------------------------------------------------------------

export interface PoolGeometry {
  segmentBytes: number;
  segmentCount: number;
  metaOffset: number;
  metaBytes: number;
  dataOffset: number;
  poolBytes: number;
}

function roundUp(n: number, to: number): number {
  return Math.ceil(n / to) * to;
}

/** The one layout a (segmentBytes, segmentCount) pair has. Readers recompute it and compare. */
export function poolGeometry(segmentBytes: number, segmentCount: number): PoolGeometry {
  const metaBytes = roundUp(segmentCount * META_WORD_BYTES, PAGE_BYTES);
  const dataOffset = roundUp(META_OFFSET + metaBytes, Math.min(segmentBytes, DATA_ALIGN_MAX));
  return {
    segmentBytes,
    segmentCount,
    metaOffset: META_OFFSET,
    metaBytes,
    dataOffset,
    poolBytes: dataOffset + segmentCount * segmentBytes,
  };
}

// ---- superblock codec -------------------------------------------------------------------------------

export interface Superblock extends PoolGeometry {
  version: number;
  poolId: string;
  createdAtMs: number;
}

/** The CRC over the immutable header, as stored at SB_CRC. */
export function superblockCrc(page: Uint8Array): number {
  return crc32c(Buffer.from(page.buffer, page.byteOffset, SB_CRC));
}

/** A fresh superblock page (mutable line and reserved bytes zero). */
export function encodeSuperblock(sb: Superblock): Buffer {
  const page = Buffer.alloc(SUPERBLOCK_BYTES);
  POOL_MAGIC.copy(page, SB_MAGIC);
  page.writeUInt32LE(sb.version, SB_VERSION);
  page.writeUInt32LE(SUPERBLOCK_BYTES, SB_SUPERBLOCK_BYTES);
  Buffer.from(sb.poolId, 'hex').copy(page, SB_POOL_ID);
  page.writeUInt32LE(sb.segmentBytes, SB_SEGMENT_BYTES);
  page.writeUInt32LE(sb.segmentCount, SB_SEGMENT_COUNT);
  page.writeBigUInt64LE(BigInt(sb.metaOffset), SB_META_OFFSET);
  page.writeBigUInt64LE(BigInt(sb.metaBytes), SB_META_BYTES);
  page.writeBigUInt64LE(BigInt(sb.dataOffset), SB_DATA_OFFSET);
  page.writeBigUInt64LE(BigInt(sb.poolBytes), SB_POOL_BYTES);
  page.writeBigUInt64LE(BigInt(sb.createdAtMs), SB_CREATED_AT_MS);
  page.writeUInt32LE(superblockCrc(page), SB_CRC);
  return page;
}

/** u64 fields as numbers; a value beyond 2^53 cannot be a real size and decodes as NaN. */
function u64(page: Buffer, at: number): number {
  const v = page.readBigUInt64LE(at);
  return v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : NaN;
}

/** Field decoding only; validation (magic, CRC, version, geometry) is pool.ts's job. */
export function decodeSuperblock(page: Buffer): Superblock {
  return {
    version: page.readUInt32LE(SB_VERSION),
    poolId: page.subarray(SB_POOL_ID, SB_POOL_ID + SB_POOL_ID_BYTES).toString('hex'),
    segmentBytes: page.readUInt32LE(SB_SEGMENT_BYTES),
    segmentCount: page.readUInt32LE(SB_SEGMENT_COUNT),
    metaOffset: u64(page, SB_META_OFFSET),
    metaBytes: u64(page, SB_META_BYTES),
    dataOffset: u64(page, SB_DATA_OFFSET),
    poolBytes: u64(page, SB_POOL_BYTES),
    createdAtMs: u64(page, SB_CREATED_AT_MS),
  };
}

// ---- segment meta word ------------------------------------------------------------------------------
//
//   bit  0..2   state     Free 0, Using 1, Used 2, Committed 3, Claiming 4 (5..7 invalid)
//   bit  3..5   role      None 0, Worker 1, Control 2, Digest 3, Clean 4, Migration 5, Remote 6 (7 invalid)
//   bit  6..15  owner id  0..1023 (which worker/digest/... actor of that role)
//   bit 16..47  seq       pool-wide allocation sequence number; 0 = never allocated
//   bit 48..63  check     CRC-16/XMODEM of bits 0..47 as 6 little-endian bytes
//
// One word per segment, so every state change is a single aligned 8-byte store: failure-atomic on
// x86 PM, and a compare-and-swap on a BigUint64Array over the mapping lets threads and processes that
// map the same file allocate without a lock.
//
// Check: CRC-16/XMODEM (poly 0x1021, init 0, no final xor) rather than bits of a CRC32C, because with
// init 0 the check of all-zero data is 0, so the all-zero word — what a freshly created pool holds —
// is a valid "Free, never used" entry by construction. Over 48 data bits this polynomial detects
// every 1-, 2- and 3-bit error and every burst of up to 16 bits, and it runs in JS on six table
// lookups (no native call per word when a large table is validated at open).
//
// Claiming is internal to allocation: a segment is claimed (persisted as Claiming) before it is
// zeroed, and published as Using only after the zeros are persistent, so a crash can never leave a
// Using segment that still holds the log entries of its previous life. A Claiming word found after a
// crash names an allocation that never completed; Pool.recoverInterruptedAllocations frees it.

export const SegmentState = { Free: 0, Using: 1, Used: 2, Committed: 3 } as const;
export type SegmentState = (typeof SegmentState)[keyof typeof SegmentState];
/** The internal allocation state (see above); never passed to or accepted by transition(). */
export const SEGMENT_CLAIMING = 4;
export type MetaState = SegmentState | typeof SEGMENT_CLAIMING;

/** Remote: a region a remote node writes one-sidedly (the rwrite/batch/share baselines), owner = that
 *  node's id (config/base/ids.ts). */
export const OwnerRole = { None: 0, Worker: 1, Control: 2, Digest: 3, Clean: 4, Migration: 5, Remote: 6 } as const;
export type OwnerRole = (typeof OwnerRole)[keyof typeof OwnerRole];

export const META_STATE_BITS = 3;
export const META_ROLE_SHIFT = 3;
export const META_ROLE_BITS = 3;
export const META_OWNER_SHIFT = 6;
export const META_OWNER_BITS = OWNER_ID_BITS;
export const META_SEQ_SHIFT = 16;
export const META_CHECK_SHIFT = 48;

const STATE_MAX = SEGMENT_CLAIMING;
const ROLE_MAX = OwnerRole.Remote;

export interface MetaFields {
  state: MetaState;
  role: OwnerRole;
  ownerId: number;
  seq: number;
}

const CRC16_TABLE = buildCrc16Table(0x1021);
function buildCrc16Table(poly: number): Uint16Array {
  const t = new Uint16Array(256);
  for (let i = 0; i < 256; i++) {
    let c = i << 8;
    for (let k = 0; k < 8; k++) c = c & 0x8000 ? ((c << 1) ^ poly) & 0xffff : (c << 1) & 0xffff;
    t[i] = c;
  }
  return t;
}

function crc16Byte(crc: number, b: number): number {
  return ((crc << 8) & 0xffff) ^ CRC16_TABLE[((crc >>> 8) ^ b) & 0xff]!;
}

/** The 16-bit check of the low 48 bits, given as lo = bits 0..31 and mid = bits 32..47. */
export function metaCheck(lo: number, mid: number): number {
  let c = 0;
  c = crc16Byte(c, lo & 0xff);
  c = crc16Byte(c, (lo >>> 8) & 0xff);
  c = crc16Byte(c, (lo >>> 16) & 0xff);
  c = crc16Byte(c, lo >>> 24);
  c = crc16Byte(c, mid & 0xff);
  return crc16Byte(c, (mid >>> 8) & 0xff);
}

/** Encode fields into a meta word (as an unsigned 64-bit BigInt, for BigUint64Array and Atomics). */
export function encodeMeta(f: MetaFields): bigint {
  const low16 = f.state | (f.role << META_ROLE_SHIFT) | (f.ownerId << META_OWNER_SHIFT);
  const lo = (low16 | ((f.seq & 0xffff) << 16)) >>> 0;
  const mid = f.seq >>> 16;
  const hi = (mid | (metaCheck(lo, mid) << 16)) >>> 0;
  return (BigInt(hi) << 32n) | BigInt(lo);
}

export type MetaDecode = { ok: true; fields: MetaFields } | { ok: false; reason: string };

/** Decode and verify a word given as its two 32-bit halves (what a DataView reads cheaply). */
export function decodeMetaHalves(lo: number, hi: number): MetaDecode {
  const mid = hi & 0xffff;
  if (hi >>> 16 !== metaCheck(lo, mid)) return { ok: false, reason: 'check bits do not match' };
  const state = lo & 0b111;
  const role = (lo >>> META_ROLE_SHIFT) & 0b111;
  const ownerId = (lo >>> META_OWNER_SHIFT) & OWNER_ID_MAX;
  const seq = ((lo >>> 16) | (mid << 16)) >>> 0;
  if (state > STATE_MAX) return { ok: false, reason: `invalid state ${state}` };
  if (role > ROLE_MAX) return { ok: false, reason: `invalid owner role ${role}` };
  if ((state === SegmentState.Free) !== (role === OwnerRole.None))
    return { ok: false, reason: `state ${state} with owner role ${role}` };
  if (state === SegmentState.Free && ownerId !== 0) return { ok: false, reason: 'free segment with an owner id' };
  return { ok: true, fields: { state: state as MetaState, role: role as OwnerRole, ownerId, seq } };
}

export function decodeMeta(word: bigint): MetaDecode {
  return decodeMetaHalves(Number(word & 0xffffffffn), Number(word >> 32n));
}

/** The word of a segment that was never allocated. */
export const META_NEVER_USED = 0n;
