// The log entry codec and the scans built on it (§4.2.2). The byte layout lives in log-layout.ts; this
// module validates entries before they are written, encodes them (splitting larger-than-MTU entries into
// self-describing blocks, Figure 7), and reads them back, rejecting anything whose structure or checksum
// does not hold. The end of a log is simply where the next block fails to read (there is no persistent
// tail pointer), so the same readers serve recovery, digest, GC and GET.
//
// Hot-path notes: one DataView per byte array is cached and reused, header fields are read and written
// with plain number arithmetic (no BigInt: versions are < 2^48), small blocks are checksummed in JS
// (log-checksum.ts says why), scans decode headers into reused scratch objects, and single-block entries
// hand out zero-copy views of the log instead of copies.
import type { Limits } from '../config/limits.js';
import { ErrorCodes, RowanError } from '../config/base/errors.js';
import { blockChecksum } from './log-checksum.js';
import {
  CHECKSUM_OFF, CNT_MAX, CNT_OFF, EntryType, EXPIRES_BYTES, FLAG_EXPIRES, FLAG_TXN, FLAGS_KNOWN, FLAGS_OFF, HEADER_BYTES, KEY_LEN_OFF,
  PAYLOAD_LEN_OFF, RESERVED_OFF, SEQ_OFF, SHARD_MAX, SHARD_OFF, TYPE_OFF, VALUE_LEN_OFF, VERSION_HI_MUL,
  VERSION_HI_OFF, VERSION_LO_OFF, VERSION_MAX, blockCount, blockPayloadLen, blockPayloadMax, blockSize,
  isEntryType, txnCount, txnIndex,
} from './log-layout.js';

export { EntryType } from './log-layout.js';

/** What a writer appends. DEL carries only a key, COMMITVER neither (its CommitVer is `version`).
 *  `expiresAt` (PUT only): the key's expiry deadline, Unix ms; absent or 0 = the key does not expire. */
export interface EntryInput {
  type: EntryType;
  shard: number;
  version: number;
  key?: Uint8Array;
  value?: Uint8Array;
  /** A transaction's entry: its `reserved` word (log-layout.ts txnWord); absent or 0 otherwise. */
  txn?: number;
  expiresAt?: number;
}

/** One decoded, checksum-verified block. `payload` is a view into the scanned bytes. */
export interface Block {
  offset: number;
  type: EntryType;
  shard: number;
  version: number;
  /** Key and value lengths of the whole entry (every block repeats them). */
  keyLen: number;
  valueLen: number;
  cnt: number;
  seq: number;
  /** The transaction word (log-layout.ts FLAG_TXN), 0 for an entry of no transaction. */
  txn: number;
  /** Flag bits of the header (FLAG_EXPIRES: the payload holds a deadline after the key). */
  flags: number;
  /** This block's slice of the payload: key ++ deadline (with FLAG_EXPIRES) ++ value. */
  payload: Uint8Array;
  /** Bytes the block occupies in the log, padding included. */
  size: number;
}

/** One whole entry read back from a log. For single-block entries `key` and `value` are views of the
 *  log itself (copy them to keep them past the segment's reuse); multi-block entries are reassembled
 *  into a fresh buffer. `bytes` is the entry's footprint in the log, padding included. */
export interface LogEntry {
  offset: number;
  type: EntryType;
  shard: number;
  version: number;
  key: Uint8Array;
  value: Uint8Array;
  /** Expiry deadline, Unix ms; 0 = none. */
  expiresAt: number;
  bytes: number;
  /** The transaction word (log-layout.ts FLAG_TXN), 0 for an entry of no transaction. */
  txn: number;
}

const EMPTY = new Uint8Array(0);

// ---- one cached DataView per byte array ----------------------------------------------------------
// Keyed on the Uint8Array itself: an identity check is cheaper than reading `.buffer`, and callers scan
// the same array (the pool mapping) over and over. Offsets into the view equal offsets into `bytes`.

let viewBytes: Uint8Array | null = null;
let view: DataView<ArrayBufferLike> = new DataView(new ArrayBuffer(0));

function viewOf(bytes: Uint8Array): DataView {
  if (bytes !== viewBytes) {
    viewBytes = bytes;
    view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }
  return view;
}

// ---- sizes and validation ------------------------------------------------------------------------

function badArgument(message: string, details?: Record<string, unknown>): never {
  throw new RowanError(ErrorCodes.BAD_ARGUMENT, message, details);
}

/** Bytes an entry with these key and value lengths occupies in a log: all blocks, padding included.
 *  Throws KEY_TOO_LARGE / VALUE_TOO_LARGE / ENTRY_TOO_LARGE when the limits forbid it. */
export function encodedSize(keyLen: number, valueLen: number, limits: Limits, expires = false): number {
  if (!Number.isInteger(keyLen) || keyLen < 0) badArgument(`key length ${keyLen} is not a length`);
  if (!Number.isInteger(valueLen) || valueLen < 0) badArgument(`value length ${valueLen} is not a length`);
  if (keyLen > limits.keyBytesMax) {
    throw new RowanError(ErrorCodes.KEY_TOO_LARGE, `key is ${keyLen} bytes, limit ${limits.keyBytesMax}`);
  }
  if (valueLen > limits.valueBytesMax) {
    throw new RowanError(ErrorCodes.VALUE_TOO_LARGE, `value is ${valueLen} bytes, limit ${limits.valueBytesMax}`);
  }
  const total = keyLen + valueLen + (expires ? EXPIRES_BYTES : 0);
  const cnt = blockCount(total, limits);
  const size = (cnt - 1) * limits.mtuBytes + blockSize(blockPayloadLen(cnt - 1, total, limits), limits);
  if (cnt > CNT_MAX || size > limits.segmentBytes) {
    throw new RowanError(ErrorCodes.ENTRY_TOO_LARGE, `entry of ${total} payload bytes needs ${size} log bytes`);
  }
  return size;
}

/** Validate a whole entry (type, shard, version, lengths, type-specific shape) and return its size. */
export function entrySize(e: EntryInput, limits: Limits): number {
  if (!isEntryType(e.type)) badArgument(`entry type ${String(e.type)} is not PUT, DEL, COMMITVER or FLUSH`);
  if (!Number.isInteger(e.shard) || e.shard < 0 || e.shard > SHARD_MAX) badArgument(`shard ${e.shard} out of range`);
  if (!Number.isInteger(e.version) || e.version < 0 || e.version > VERSION_MAX) {
    badArgument(`version ${e.version} is not a 48-bit unsigned integer`);
  }
  const k = e.key?.length ?? 0;
  const v = e.value?.length ?? 0;
  if (e.type === EntryType.Del && v !== 0) badArgument('a DEL entry carries no value');
  if (e.type === EntryType.CommitVer && (k !== 0 || v !== 0)) badArgument('a COMMITVER entry carries no key or value');
  if (e.type === EntryType.Flush && (k !== 0 || v !== 0)) badArgument('a FLUSH entry carries no key or value');
  const expires = hasDeadline(e);
  if (expires && (e.type !== EntryType.Put || !validDeadline(e.expiresAt!))) badArgument(`expiry deadline ${e.expiresAt} on a ${e.type} entry`);
  if (expires && k + EXPIRES_BYTES > blockPayloadMax(limits)) badArgument('the key and its deadline must fit one block');
  return encodedSize(k, v, limits, expires);
}

function hasDeadline(e: EntryInput): boolean {
  return e.expiresAt !== undefined && e.expiresAt !== 0;
}

/** A deadline the codec stores: a positive integer of Unix ms below 2^53. */
export function validDeadline(ms: number): boolean {
  return Number.isSafeInteger(ms) && ms > 0;
}

// ---- encoding ------------------------------------------------------------------------------------

/** Copy payload bytes [pStart, pStart+pLen) of (key ++ mid ++ value) to dst[at..] (mid: the deadline). */
function copyPayload(dst: Uint8Array, at: number, key: Uint8Array, mid: Uint8Array, value: Uint8Array, pStart: number, pLen: number): void {
  if (mid.length > 0) {
    // The deadline lies in block 0 (entrySize checks that the key and it fit one block).
    const k = key.length + mid.length;
    if (pStart === 0) {
      dst.set(key, at);
      dst.set(mid, at + key.length);
      if (pLen > k) dst.set(value.subarray(0, pLen - k), at + k);
    } else dst.set(value.subarray(pStart - k, pStart - k + pLen), at);
    return;
  }
  const k = key.length;
  const pEnd = pStart + pLen;
  if (pStart < k) {
    const kEnd = Math.min(k, pEnd);
    dst.set(pStart === 0 && kEnd === k ? key : key.subarray(pStart, kEnd), at);
  }
  if (pEnd > k) {
    const vs = Math.max(pStart - k, 0);
    const ve = pEnd - k;
    dst.set(vs === 0 && ve === value.length ? value : value.subarray(vs, ve), at + Math.max(0, k - pStart));
  }
}

/** Encode a validated entry at dst[offset..]; returns bytes written. Blocks are written back to back. */
function writeEntry(e: EntryInput, dst: Uint8Array, offset: number, limits: Limits): number {
  const key = e.key ?? EMPTY;
  const value = e.value ?? EMPTY;
  const mid = hasDeadline(e) ? deadlineBytes(e.expiresAt!) : EMPTY;
  const flags = mid.length > 0 ? FLAG_EXPIRES : 0;
  const total = key.length + mid.length + value.length;
  const cnt = blockCount(total, limits);
  const perBlock = blockPayloadMax(limits);
  const dv = viewOf(dst);
  const versionLo = e.version >>> 0;
  const versionHi = (e.version - versionLo) / VERSION_HI_MUL;
  let off = offset;
  for (let seq = 0; seq < cnt; seq++) {
    const pLen = blockPayloadLen(seq, total, limits);
    dv.setUint8(off + TYPE_OFF, e.type);
    dv.setUint8(off + FLAGS_OFF, flags | (e.txn ? FLAG_TXN : 0));
    dv.setUint16(off + SHARD_OFF, e.shard, true);
    dv.setUint32(off + CHECKSUM_OFF, 0, true); // zero while the checksum is computed over the header
    dv.setUint32(off + VERSION_LO_OFF, versionLo, true);
    dv.setUint16(off + VERSION_HI_OFF, versionHi, true);
    dv.setUint16(off + KEY_LEN_OFF, key.length, true);
    dv.setUint32(off + VALUE_LEN_OFF, value.length, true);
    dv.setUint16(off + CNT_OFF, cnt, true);
    dv.setUint16(off + SEQ_OFF, seq, true);
    dv.setUint32(off + PAYLOAD_LEN_OFF, pLen, true);
    dv.setUint32(off + RESERVED_OFF, e.txn ?? 0, true);
    copyPayload(dst, off + HEADER_BYTES, key, mid, value, seq * perBlock, pLen);
    const used = HEADER_BYTES + pLen;
    const size = blockSize(pLen, limits);
    // The destination may hold stale bytes; padding is zeroed (and checksummed) so a log never carries
    // leftovers.
    if (size > used) dst.fill(0, off + used, off + size);
    dv.setUint32(off + CHECKSUM_OFF, blockChecksum(dst, off, size), true);
    off += size;
  }
  return off - offset;
}

/** The 8 bytes of a deadline (u64 LE Unix ms). */
function deadlineBytes(ms: number): Uint8Array {
  const b = new Uint8Array(EXPIRES_BYTES);
  const dv = new DataView(b.buffer);
  dv.setUint32(0, ms >>> 0, true);
  dv.setUint32(4, Math.floor(ms / VERSION_HI_MUL), true);
  return b;
}

/** The deadline stored at bytes[at..at+8]. */
function deadlineAt(bytes: Uint8Array, at: number): number {
  const dv = viewOf(bytes);
  return dv.getUint32(at, true) + dv.getUint32(at + 4, true) * VERSION_HI_MUL;
}

/** Validate `e` and encode it at dst[offset..] (64-byte aligned). Returns the bytes written. */
export function encodeEntry(e: EntryInput, dst: Uint8Array, offset: number, limits: Limits): number {
  const size = entrySize(e, limits);
  if (!Number.isInteger(offset) || offset < 0 || offset % limits.entryAlignBytes !== 0) {
    badArgument(`entry offset ${offset} is not ${limits.entryAlignBytes}-byte aligned`);
  }
  if (offset + size > dst.length) badArgument(`entry of ${size} bytes does not fit at ${offset} in ${dst.length} bytes`);
  return writeEntry(e, dst, offset, limits);
}

/** Encode `e` into a fresh buffer and return its blocks as separate views, for senders that place each
 *  block on its own (e.g. one Rowan write per MTU). A single-block entry yields one element. */
export function encodeBlocks(e: EntryInput, limits: Limits): Uint8Array[] {
  const buf = new Uint8Array(entrySize(e, limits));
  writeEntry(e, buf, 0, limits);
  const blocks: Uint8Array[] = [];
  for (let off = 0; off < buf.length; off += limits.mtuBytes) {
    blocks.push(buf.subarray(off, Math.min(off + limits.mtuBytes, buf.length)));
  }
  return blocks;
}

// ---- decoding ------------------------------------------------------------------------------------

/** Mutable header scratch so scans decode without allocating per block. */
interface Header {
  type: EntryType;
  shard: number;
  version: number;
  keyLen: number;
  valueLen: number;
  cnt: number;
  seq: number;
  flags: number;
  payloadLen: number;
  size: number;
  txn: number;
}

function newHeader(): Header {
  return { type: EntryType.Put, shard: 0, version: 0, keyLen: 0, valueLen: 0, cnt: 0, seq: 0, flags: 0, payloadLen: 0, size: 0, txn: 0 };
}

/** Decode and verify the block at `off` into `h`. False for anything that is not a whole, intact block
 *  lying inside [off, end): zero or unknown type, unknown flags, lengths that break the limits or the
 *  block arithmetic, a block running past `end`, or a checksum mismatch. */
function decodeBlock(bytes: Uint8Array, off: number, end: number, limits: Limits, h: Header): boolean {
  if (end > bytes.length) end = bytes.length;
  if (off < 0 || off % limits.entryAlignBytes !== 0 || off + HEADER_BYTES > end) return false;
  const type = bytes[off + TYPE_OFF]!;
  if (!isEntryType(type)) return false;
  const flags = bytes[off + FLAGS_OFF]!;
  if ((flags & ~FLAGS_KNOWN) !== 0) return false;
  const dv = viewOf(bytes);
  const reserved = dv.getUint32(off + RESERVED_OFF, true);
  if ((flags & FLAG_TXN) === 0 ? reserved !== 0 : type === EntryType.CommitVer || type === EntryType.Flush || txnCount(reserved) === 0 || txnIndex(reserved) >= txnCount(reserved)) return false;
  const keyLen = dv.getUint16(off + KEY_LEN_OFF, true);
  const valueLen = dv.getUint32(off + VALUE_LEN_OFF, true);
  if (keyLen > limits.keyBytesMax || valueLen > limits.valueBytesMax) return false;
  if (type === EntryType.Del && valueLen !== 0) return false;
  if ((type === EntryType.CommitVer || type === EntryType.Flush) && (keyLen !== 0 || valueLen !== 0)) return false;
  const expires = (flags & FLAG_EXPIRES) !== 0;
  if (expires && (type !== EntryType.Put || keyLen + EXPIRES_BYTES > blockPayloadMax(limits))) return false;
  const total = keyLen + valueLen + (expires ? EXPIRES_BYTES : 0);
  const cnt = dv.getUint16(off + CNT_OFF, true);
  const seq = dv.getUint16(off + SEQ_OFF, true);
  if (cnt !== blockCount(total, limits) || seq >= cnt) return false;
  const payloadLen = dv.getUint32(off + PAYLOAD_LEN_OFF, true);
  if (payloadLen !== blockPayloadLen(seq, total, limits)) return false;
  const size = blockSize(payloadLen, limits);
  if (off + size > end) return false;
  if (dv.getUint32(off + CHECKSUM_OFF, true) !== blockChecksum(bytes, off, size)) return false;
  h.type = type;
  h.shard = dv.getUint16(off + SHARD_OFF, true);
  h.version = dv.getUint32(off + VERSION_LO_OFF, true) + dv.getUint16(off + VERSION_HI_OFF, true) * VERSION_HI_MUL;
  h.keyLen = keyLen;
  h.valueLen = valueLen;
  h.cnt = cnt;
  h.seq = seq;
  h.flags = flags;
  h.payloadLen = payloadLen;
  h.size = size;
  h.txn = reserved;
  return true;
}

function toBlock(bytes: Uint8Array, off: number, h: Header): Block {
  const p = off + HEADER_BYTES;
  return {
    offset: off, type: h.type, shard: h.shard, version: h.version, keyLen: h.keyLen, valueLen: h.valueLen,
    cnt: h.cnt, seq: h.seq, txn: h.txn, flags: h.flags, payload: bytes.subarray(p, p + h.payloadLen), size: h.size,
  };
}

/** The verified block at `offset`, or null if there is none (see decodeBlock for what is rejected). */
export function readBlock(bytes: Uint8Array, offset: number, end: number, limits: Limits): Block | null {
  const h = newHeader();
  return decodeBlock(bytes, offset, end, limits, h) ? toBlock(bytes, offset, h) : null;
}

/** Every block from `start` on, back to back, up to the first one that does not read (the log's end). */
export function* scanBlocks(bytes: Uint8Array, start: number, end: number, limits: Limits): Generator<Block> {
  const h = newHeader();
  for (let off = start; decodeBlock(bytes, off, end, limits, h); off += h.size) yield toBlock(bytes, off, h);
}

const scratch = newHeader();
const scratchNext = newHeader();

/** The whole entry whose first block is at `offset`, its other blocks following contiguously (as a
 *  writer lays them down), or null if it is not intact. */
function decodeEntry(bytes: Uint8Array, offset: number, end: number, limits: Limits): LogEntry | null {
  const h = scratch;
  if (!decodeBlock(bytes, offset, end, limits, h) || h.seq !== 0) return null;
  const p = offset + HEADER_BYTES;
  const x = (h.flags & FLAG_EXPIRES) !== 0 ? EXPIRES_BYTES : 0;
  const expiresAt = x > 0 ? deadlineAt(bytes, p + h.keyLen) : 0;
  if (h.cnt === 1) {
    return {
      offset, type: h.type, shard: h.shard, version: h.version, bytes: h.size, txn: h.txn, expiresAt,
      key: bytes.subarray(p, p + h.keyLen), value: bytes.subarray(p + h.keyLen + x, p + h.keyLen + x + h.valueLen),
    };
  }
  const payload = new Uint8Array(h.keyLen + x + h.valueLen);
  payload.set(bytes.subarray(p, p + h.payloadLen), 0);
  const perBlock = blockPayloadMax(limits);
  const n = scratchNext;
  let off = offset + h.size;
  for (let seq = 1; seq < h.cnt; seq++) {
    if (!decodeBlock(bytes, off, end, limits, n) || n.seq !== seq || n.shard !== h.shard || n.version !== h.version
      || n.type !== h.type || n.keyLen !== h.keyLen || n.valueLen !== h.valueLen || n.txn !== h.txn || n.flags !== h.flags) return null;
    const q = off + HEADER_BYTES;
    payload.set(bytes.subarray(q, q + n.payloadLen), seq * perBlock);
    off += n.size;
  }
  return {
    offset, type: h.type, shard: h.shard, version: h.version, bytes: off - offset, txn: h.txn, expiresAt,
    key: payload.subarray(0, h.keyLen), value: payload.subarray(h.keyLen + x),
  };
}

/** Every entry from `start` on, multi-block entries reassembled from contiguous blocks, up to the first
 *  block that does not read or an entry that is incomplete (a torn tail is never yielded). */
export function* scanEntries(bytes: Uint8Array, start: number, end: number, limits: Limits): Generator<LogEntry> {
  let off = start;
  for (;;) {
    const e = decodeEntry(bytes, off, end, limits);
    if (e === null) return;
    yield e;
    off += e.bytes;
  }
}

/** What verifyEntryAt tells of an intact entry, copying nothing. */
export interface EntryHead {
  type: EntryType;
  shard: number;
  version: number;
  /** The entry's footprint (all blocks, padding included). */
  bytes: number;
  /** Offset of the key from the entry's start when it lies in block 0 (HEADER_BYTES), -1 when it
   *  spans blocks (read the entry with readEntryAt for it). */
  keyAt: number;
  keyLen: number;
}

export function newEntryHead(): EntryHead {
  return { type: EntryType.Put, shard: 0, version: 0, bytes: 0, keyAt: 0, keyLen: 0 };
}

/** readEntryAt's check (every block and its checksum) into `out`, without allocating for a
 *  single-block entry: for verifying many packed entries (a shard copy's batch) in one pass. */
export function verifyEntryAt(bytes: Uint8Array, offset: number, end: number, limits: Limits, out: EntryHead): boolean {
  const h = scratch;
  if (!decodeBlock(bytes, offset, end, limits, h) || h.seq !== 0) return false;
  out.type = h.type;
  out.shard = h.shard;
  out.version = h.version;
  out.keyLen = h.keyLen;
  out.keyAt = h.payloadLen >= h.keyLen ? HEADER_BYTES : -1;
  if (h.cnt === 1) {
    out.bytes = h.size;
    return true;
  }
  const e = decodeEntry(bytes, offset, end, limits); // the other blocks, reassembled
  if (e === null) return false;
  out.bytes = e.bytes;
  return true;
}

/** The entry at a known address (what an index item points to), checksum-verified, or null. */
export function readEntryAt(bytes: Uint8Array, offset: number, limits: Limits, end = bytes.length): LogEntry | null {
  return decodeEntry(bytes, offset, end, limits);
}

// ---- index probes ----------------------------------------------------------------------------------
// The index (shm/index.ts, EntryReader) compares keys and versions at addresses it took from entries
// that were verified when they were indexed; log entries are immutable while indexed. These probes
// therefore read the header and key in place without a checksum pass or any allocation. A GET still
// reads the value through readEntryAt, which verifies.

/** Does the PUT/DEL entry at `offset` carry exactly `key`? (Keys may span blocks when long.) */
export function keyEqualsAt(bytes: Uint8Array, offset: number, key: Uint8Array, limits: Limits): boolean {
  if (offset < 0 || offset + HEADER_BYTES > bytes.length) return false;
  const type = bytes[offset + TYPE_OFF];
  if (type !== EntryType.Put && type !== EntryType.Del) return false;
  const k = viewOf(bytes).getUint16(offset + KEY_LEN_OFF, true);
  if (k !== key.length) return false;
  const perBlock = blockPayloadMax(limits);
  // Blocks before the one holding the key's end are full, so block s starts at offset + s * mtuBytes.
  for (let j = 0, src = offset + HEADER_BYTES; j < k; j += perBlock, src += limits.mtuBytes) {
    const n = Math.min(perBlock, k - j);
    if (src + n > bytes.length) return false;
    for (let x = 0; x < n; x++) if (bytes[src + x] !== key[j + x]) return false;
  }
  return true;
}

/** Bytes the intact entry whose first block is at `offset` occupies in a contiguous log (all blocks,
 *  padding included), from its header's lengths. For a single-block entry that is its block size. */
export function storedSizeAt(bytes: Uint8Array, offset: number, limits: Limits): number {
  const dv = viewOf(bytes);
  const expires = (bytes[offset + FLAGS_OFF]! & FLAG_EXPIRES) !== 0;
  return encodedSize(dv.getUint16(offset + KEY_LEN_OFF, true), dv.getUint32(offset + VALUE_LEN_OFF, true), limits, expires);
}

/** The expiry deadline (Unix ms, 0 = none) of the indexed PUT at `offset`, read in place like the
 *  probes above (the deadline lies in block 0, right after the key). */
export function expiresAtOf(bytes: Uint8Array, offset: number): number {
  if ((bytes[offset + FLAGS_OFF]! & FLAG_EXPIRES) === 0) return 0;
  return deadlineAt(bytes, offset + HEADER_BYTES + viewOf(bytes).getUint16(offset + KEY_LEN_OFF, true));
}

/** A single-block entry's key, value and deadline from its verified block (cnt 1). */
export function singleBlockEntry(b: Block): { key: Uint8Array; value: Uint8Array; expiresAt: number } {
  const x = (b.flags & FLAG_EXPIRES) !== 0 ? EXPIRES_BYTES : 0;
  const key = b.payload.subarray(0, b.keyLen);
  const expiresAt = x > 0 ? deadlineAt(b.payload, b.keyLen) : 0;
  return { key, value: b.payload.subarray(b.keyLen + x, b.keyLen + x + b.valueLen), expiresAt };
}

/** The 48-bit version stored in the header at `offset`. */
export function versionAt(bytes: Uint8Array, offset: number): number {
  const dv = viewOf(bytes);
  return dv.getUint32(offset + VERSION_LO_OFF, true) + dv.getUint16(offset + VERSION_HI_OFF, true) * VERSION_HI_MUL;
}

