// The Tailwind backup buffer (Tailwind, ATC '18, §3.1-3.4): what a primary writes one-sidedly into a
// region of a backup's pool, and the backup's recovery scan, its Algorithm 1.
//
// A buffer is one pool segment (a region the backup granted: RowanConnection.allocateRegion):
//
//   +--------------+----------+-----------+----------+-----------+---- ... ----+-----------------+
//   | buffer head  | record 1 | checksum  | record 2 | checksum  |             | zero (unwritten) |
//   | 64 B         | blocks   | 64 B      | blocks   | 64 B      |             |                  |
//   +--------------+----------+-----------+----------+-----------+---- ... ----+-----------------+
//
// A record is one log entry exactly as the primary's t-log holds it (shm/log-layout.ts: one or more
// 64 B-aligned blocks, each with its own keyed CRC32C), followed by a checksum block: one RDMA WRITE
// carries both. The checksum block holds the running checksum of the buffer: CRC32C chained over the
// 32-byte header of every block written so far (the paper's "checksum over log entry headers"; a block
// header holds its payload's CRC, so the chain covers the data too), started from the cluster's
// checksum seed, and never zero (a zero result is written as 1: condition 2 of §3.4.1). Buffers are
// pre-zeroed (a granted segment is zeroed), so the end of a buffer is the first zero type byte.
//
// The buffer head (the open and close metadata of §3.3.2) names the log: the primary's node id and
// worker, the buffer's sequence number in that log, and, once the primary closed it, the bytes of
// records and the final checksum. A closed buffer whose scan does not end exactly there is corrupt
// (§3.4.2 "Bit-flips": the replica is declared corrupt, the rest is taken from other replicas).
//
// The scan (Algorithm 1) walks records by their headers' sizes, chaining each header; at a checksum
// block it compares, and only then are the record's blocks valid. It stops at the first zero type
// (end of the records), a checksum that does not match (a torn or corrupt checksum), a block that does
// not verify (a torn record), or the buffer's end. A record torn anywhere -- its body, its header, its
// checksum -- is therefore never yielded (Figure 5's three cases), and nothing after it either.
import { crc32c } from './crc32c.js';
import type { Limits } from '../config/limits.js';
import { checksumSeed } from './log-checksum.js';
import { HEADER_BYTES, PAYLOAD_LEN_OFF, blockSize } from './log-layout.js';
import { readBlock, type Block } from './log.js';

/** Bytes of the buffer head and of a checksum block: one 64 B stride each. */
export const TW_HEAD_BYTES = 64;
export const TW_CHECKSUM_BYTES = 64;
/** Type bytes: no log entry type (shm/log-layout.ts EntryType), so a b-log scan steps over both. */
export const TW_HEAD_TYPE = 0x54;
export const TW_CHECKSUM_TYPE = 0x43;
/** 'TWBF', at byte 4 of the head and byte 8 of a checksum block. */
export const TW_MAGIC = 0x46425754;

export const TwHead = { TYPE: 0, STATE: 1, NODE: 2, MAGIC: 4, WORKER: 8, SEQ: 12, CLOSED_BYTES: 16, CLOSED_CHECKSUM: 20 } as const;
export const TwState = { Open: 1, Closed: 2 } as const;
const CK_VALUE_OFF = 4;
const CK_MAGIC_OFF = 8;

export interface TwLogId {
  node: number;
  worker: number;
  seq: number;
}

const dvOf = (b: Uint8Array) => new DataView(b.buffer, b.byteOffset, b.byteLength);

/** The running checksum a buffer's chain starts from (keyed with the cluster's seed). */
export function chainStart(): number {
  return checksumSeed();
}

/** The chain over every block header of the entry `bytes` (its blocks back to back). */
export function chainEntry(running: number, bytes: Uint8Array, limits: Limits): number {
  const dv = dvOf(bytes);
  for (let off = 0; off + HEADER_BYTES <= bytes.length; ) {
    running = crc32c(bytes.subarray(off, off + HEADER_BYTES), running) >>> 0;
    off += blockSize(dv.getUint32(off + PAYLOAD_LEN_OFF, true), limits);
  }
  return running;
}

/** What a checksum block stores for a running checksum: never 0 (a torn, zero-filled block never matches). */
export function storedChecksum(running: number): number {
  return running === 0 ? 1 : running;
}

/** Write the checksum block for `running` at `at` of `dst` (64 zero bytes there). */
export function putChecksumBlock(dst: Uint8Array, at: number, running: number): void {
  const dv = dvOf(dst);
  dst[at] = TW_CHECKSUM_TYPE;
  dv.setUint32(at + CK_VALUE_OFF, storedChecksum(running), true);
  dv.setUint32(at + CK_MAGIC_OFF, TW_MAGIC, true);
}

/** The 64 B buffer head of an open buffer, or of a closed one with `closed` filled in (its checksum as
 *  the last checksum block stores it; 0 for a buffer closed without records). */
export function encodeHead(id: TwLogId, closed?: { bytes: number; checksum: number }): Uint8Array {
  const h = new Uint8Array(TW_HEAD_BYTES);
  const dv = dvOf(h);
  h[TwHead.TYPE] = TW_HEAD_TYPE;
  h[TwHead.STATE] = closed ? TwState.Closed : TwState.Open;
  dv.setUint16(TwHead.NODE, id.node, true);
  dv.setUint32(TwHead.MAGIC, TW_MAGIC, true);
  dv.setUint32(TwHead.WORKER, id.worker, true);
  dv.setUint32(TwHead.SEQ, id.seq, true);
  if (closed) {
    dv.setUint32(TwHead.CLOSED_BYTES, closed.bytes, true);
    dv.setUint32(TwHead.CLOSED_CHECKSUM, closed.checksum, true);
  }
  return h;
}

export interface TwHeadInfo extends TwLogId {
  closed: { bytes: number; checksum: number } | null;
}

/** The head at `start`, or null when the segment there is no Tailwind buffer. */
export function readHead(bytes: Uint8Array, start: number): TwHeadInfo | null {
  const dv = dvOf(bytes);
  if (bytes[start + TwHead.TYPE] !== TW_HEAD_TYPE || dv.getUint32(start + TwHead.MAGIC, true) !== TW_MAGIC) return null;
  const state = bytes[start + TwHead.STATE];
  if (state !== TwState.Open && state !== TwState.Closed) return null;
  return {
    node: dv.getUint16(start + TwHead.NODE, true),
    worker: dv.getUint32(start + TwHead.WORKER, true),
    seq: dv.getUint32(start + TwHead.SEQ, true),
    closed: state === TwState.Closed ? { bytes: dv.getUint32(start + TwHead.CLOSED_BYTES, true), checksum: dv.getUint32(start + TwHead.CLOSED_CHECKSUM, true) } : null,
  };
}

export type TwStop = 'end' | 'checksum' | 'torn' | 'full';

export interface TwScanStats {
  /** Records whose checksum matched (yielded). */
  records: number;
  blocks: number;
  /** Offset just past the last valid checksum: the durably replicated prefix (Algorithm 1's `offset`). */
  validEnd: number;
  /** Why the scan stopped: a zero type (the records' end), a checksum mismatch, a block that does not
   *  verify (a torn record), the buffer's end. */
  stop: TwStop;
  /** Blocks read after the last valid checksum and dropped (a torn record's). */
  dropped: number;
  /** The last valid checksum (storedChecksum form; 0 before the first record). */
  checksum: number;
}

export function newTwScanStats(): TwScanStats {
  return { records: 0, blocks: 0, validEnd: 0, stop: 'end', dropped: 0, checksum: 0 };
}

/** Algorithm 1 over the buffer at [start, end) (see the header): the blocks of every record followed by
 *  a matching checksum, in order; `stats` says where and why it stopped. */
export function* scanTailwindBuffer(bytes: Uint8Array, start: number, end: number, limits: Limits, stats: TwScanStats = newTwScanStats()): Generator<Block> {
  const dv = dvOf(bytes);
  let pos = start + TW_HEAD_BYTES;
  let running = chainStart();
  let pending: Block[] = [];
  stats.validEnd = pos;
  stats.stop = 'full';
  while (pos + TW_CHECKSUM_BYTES <= end) {
    const type = bytes[pos]!;
    if (type === 0) {
      stats.stop = 'end';
      break;
    }
    if (type === TW_CHECKSUM_TYPE) {
      const stored = dv.getUint32(pos + CK_VALUE_OFF, true);
      if (stored !== storedChecksum(running) || dv.getUint32(pos + CK_MAGIC_OFF, true) !== TW_MAGIC || pending.length === 0) {
        stats.stop = 'checksum';
        break;
      }
      for (const b of pending) yield b;
      stats.records++;
      stats.blocks += pending.length;
      pending = [];
      pos += TW_CHECKSUM_BYTES;
      stats.validEnd = pos;
      stats.checksum = stored;
      continue;
    }
    const b = readBlock(bytes, pos, end, limits);
    if (b === null) {
      stats.stop = 'torn';
      break;
    }
    running = crc32c(bytes.subarray(pos, pos + HEADER_BYTES), running) >>> 0;
    pending.push(b);
    pos += b.size;
  }
  stats.dropped = pending.length;
}

/** Whether a closed buffer's scan ended where its head says (else the buffer is corrupt). */
export function closedMatches(head: TwHeadInfo, start: number, stats: TwScanStats): boolean {
  return head.closed === null || (stats.validEnd === start + TW_HEAD_BYTES + head.closed.bytes && stats.checksum === head.closed.checksum);
}
