// AsymNVM's operation log on the back end's PM (cluster replication mode `asymnvm`, docs/architecture.md):
// one record per front-end operation, written by the front end with ONE one-sided write, holding the
// operation's log blocks (a PUT/DEL's blocks, or every block of every entry of a transaction) under one
// checksum. A record is all or nothing: a record whose checksum does not verify (a write torn by the
// front end's crash) is not applied, and nothing after it in the same region is either.
//
//   record := header (64 B) ++ blocks (each a whole log block, shm/log.ts, 64 B-aligned) ++ zero pad to 64 B
//   header := u32 magic 'ANVM' | u32 payload bytes | u32 blocks | u32 seq | u32 crc | zeros to 64 B
//
// crc: CRC32C, keyed with the cluster's checksum seed (./log-checksum.ts), over the header with the
// crc field left out and the whole payload with its padding. seq counts the records of one log from 1,
// so a region's records are read in the order they were appended; a scan stops at the first record
// that is absent (zero magic), torn (checksum), or out of sequence.
import { crc32c } from './crc32c.js';
import { ErrorCodes, RowanError } from '../config/base/errors.js';
import { checksumSeed } from './log-checksum.js';

export const OP_LOG_MAGIC = 0x4d564e41; // 'ANVM' little-endian
export const OP_LOG_HEADER_BYTES = 64;
const CRC_OFF = 16;
const LINE = 64;

const pad64 = (n: number): number => (n + LINE - 1) & ~(LINE - 1);

function view(b: Uint8Array): DataView {
  return new DataView(b.buffer, b.byteOffset, b.byteLength);
}

function recordCrc(bytes: Uint8Array, off: number, size: number): number {
  const head = crc32c(Buffer.from(bytes.buffer, bytes.byteOffset + off, CRC_OFF), checksumSeed());
  return crc32c(Buffer.from(bytes.buffer, bytes.byteOffset + off + CRC_OFF + 4, size - CRC_OFF - 4), head) >>> 0;
}

/** Bytes a record of these blocks occupies. */
export function opRecordSize(blocks: readonly Uint8Array[]): number {
  let n = OP_LOG_HEADER_BYTES;
  for (const b of blocks) n += pad64(b.length);
  return n;
}

/** One record holding `blocks` (each one whole log block), sequence number `seq` (>= 1). */
export function encodeOpRecord(blocks: readonly Uint8Array[], seq: number): Uint8Array {
  if (blocks.length === 0) throw new RowanError(ErrorCodes.BAD_ARGUMENT, 'an op-log record needs at least one block');
  const size = opRecordSize(blocks);
  const out = new Uint8Array(size);
  let at = OP_LOG_HEADER_BYTES;
  for (const b of blocks) {
    out.set(b, at);
    at += pad64(b.length);
  }
  const v = view(out);
  v.setUint32(0, OP_LOG_MAGIC, true);
  v.setUint32(4, size - OP_LOG_HEADER_BYTES, true);
  v.setUint32(8, blocks.length, true);
  v.setUint32(12, seq >>> 0, true);
  v.setUint32(CRC_OFF, recordCrc(out, 0, size), true);
  return out;
}

export interface OpRecord {
  /** Pool (or buffer) offset of the record's header. */
  offset: number;
  seq: number;
  blocks: number;
  /** [payloadStart, payloadEnd): the record's blocks, back to back. */
  payloadStart: number;
  payloadEnd: number;
  /** Bytes the record occupies. */
  size: number;
}

export type OpRecordRead = { ok: true; record: OpRecord } | { ok: false; why: 'end' | 'torn' };

/** The record at `off` (before `end`), or why there is none: 'end' (nothing written: zero magic) or
 *  'torn' (a header or checksum that does not verify). */
export function readOpRecord(bytes: Uint8Array, off: number, end: number): OpRecordRead {
  if (off + OP_LOG_HEADER_BYTES > end) return { ok: false, why: 'end' };
  const v = new DataView(bytes.buffer, bytes.byteOffset + off, OP_LOG_HEADER_BYTES);
  const magic = v.getUint32(0, true);
  if (magic === 0 && v.getUint32(4, true) === 0) return { ok: false, why: 'end' };
  const payload = v.getUint32(4, true);
  const size = OP_LOG_HEADER_BYTES + payload;
  if (magic !== OP_LOG_MAGIC || payload === 0 || payload % LINE !== 0 || off + size > end) return { ok: false, why: 'torn' };
  if (recordCrc(bytes, off, size) !== v.getUint32(CRC_OFF, true)) return { ok: false, why: 'torn' };
  const record = { offset: off, seq: v.getUint32(12, true), blocks: v.getUint32(8, true), payloadStart: off + OP_LOG_HEADER_BYTES, payloadEnd: off + size, size };
  return { ok: true, record };
}

export interface OpLogScan {
  records: OpRecord[];
  /** Why the scan stopped: the region's unwritten rest, a torn record, or a record out of sequence. */
  stop: 'end' | 'torn' | 'sequence';
  /** Offset the scan stopped at. */
  at: number;
}

/** The records of one op-log region [start, end), in order, up to the first absent, torn or
 *  out-of-sequence one (`firstSeq`: the seq the region's first record must carry; 0 = any). */
export function scanOpLog(bytes: Uint8Array, start: number, end: number, firstSeq = 0): OpLogScan {
  const records: OpRecord[] = [];
  let at = start;
  let want = firstSeq;
  for (;;) {
    const r = readOpRecord(bytes, at, end);
    if (!r.ok) return { records, stop: r.why, at };
    if (want !== 0 && r.record.seq !== want) return { records, stop: 'sequence', at };
    records.push(r.record);
    want = r.record.seq + 1;
    at += r.record.size;
  }
}
