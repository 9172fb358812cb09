// Re-replication's copy batches (§4.5 phase 3): a new backup walks its shard's index on the primary,
// a few home buckets per COPY_SHARD request (runtime/rpc: Op.COPY_SHARD, GET-shaped), and gets back the
// entries those buckets point at. The cursor is a home bucket: a key never leaves its home bucket's
// chain (shm/index.ts forEachInBuckets), so a walk split over any number of requests visits every key
// indexed for the whole walk at least once -- what it may miss (a key inserted after its bucket was
// walked) reached the new backup by replication, which started before the walk (../node/catch-up.ts).
//
//   request  shard u16 · cursor u32 · bytesMax u32                                  (10 bytes)
//   batch    next u32 (COPY_DONE: the walk is over) · count u32 · count x entry
//   entry    type u8 · versionHi u16 · versionLo u32 · keyLen u16 · valueLen u32 · [deadline u64] · key · value
//            (type | TYPE_EXPIRES: an 8-byte expiry deadline, Unix ms, precedes the key)
// Batches hold whole buckets, at most bytesMax (at least one bucket; a bucket over the frame limit is
// refused with VALUE_TOO_LARGE -- values near valueBytesMax sharing one chain).
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import type { Limits } from '../../config/limits.js';
import type { ShardIndex } from '../../shm/index.js';
import { readEntryAt, type EntryType } from '../../shm/log.js';
import type { RawEntry } from './gather-scatter.js';

export const COPY_DONE = 0xffffffff;
export const COPY_REQUEST_BYTES = 10;
const BATCH_HEAD = 8;
const ENTRY_HEAD = 13;
/** Bit of an entry's type byte: its expiry deadline follows the head. */
const TYPE_EXPIRES = 0x80;
/** Default batch size: large enough to amortise a round trip, small next to the frame limit. */
export const COPY_BATCH_BYTES = 512 * 1024;

export interface CopyRequest {
  shard: number;
  cursor: number;
  bytesMax: number;
}

export function encodeCopyRequest(r: CopyRequest): Uint8Array {
  const b = Buffer.alloc(COPY_REQUEST_BYTES);
  b.writeUInt16LE(r.shard, 0);
  b.writeUInt32LE(r.cursor, 2);
  b.writeUInt32LE(r.bytesMax, 6);
  return b;
}

export function decodeCopyRequest(u: Uint8Array): CopyRequest {
  if (u.length !== COPY_REQUEST_BYTES) throw new RowanError(ErrorCodes.BAD_ARGUMENT, `COPY_SHARD request of ${u.length} B, not ${COPY_REQUEST_BYTES}`);
  const b = Buffer.from(u.buffer, u.byteOffset, u.byteLength);
  return { shard: b.readUInt16LE(0), cursor: b.readUInt32LE(2), bytesMax: b.readUInt32LE(6) };
}

export interface Batch {
  next: number;
  entries: RawEntry[];
  /** Encoded bytes (what crossed the wire). */
  bytes: number;
}

/**
 * One batch of `shard`'s index from home bucket `cursor` (the caller holds a read epoch: addresses
 * taken from the index stay readable). `frameMax`: the most a reply may carry.
 */
export function readBatch(index: ShardIndex, bytes: Uint8Array, shard: number, req: CopyRequest, limits: Limits, frameMax: number): Uint8Array {
  const max = Math.min(Math.max(req.bytesMax, 1024), frameMax);
  const parts: Buffer[] = [];
  let size = BATCH_HEAD;
  let count = 0;
  let next = req.cursor;
  while (next < index.bucketCount) {
    const bucket: Buffer[] = [];
    let bucketBytes = 0;
    const end = index.forEachInBuckets(next, 1, (addr) => {
      const e = readEntryAt(bytes, addr, limits);
      // An indexed entry that no longer verifies is a broken invariant (entries are immutable while indexed).
      if (e === null) throw new RowanError(ErrorCodes.POOL_META_CORRUPT, `entry at ${addr} for shard ${shard} failed its checksum`);
      const x = e.expiresAt > 0 ? 8 : 0;
      const h = Buffer.alloc(ENTRY_HEAD + x);
      h.writeUInt8(e.type | (x > 0 ? TYPE_EXPIRES : 0), 0);
      if (x > 0) h.writeBigUInt64LE(BigInt(e.expiresAt), ENTRY_HEAD);
      h.writeUInt16LE(Math.floor(e.version / 2 ** 32), 1);
      h.writeUInt32LE(e.version % 2 ** 32, 3);
      h.writeUInt16LE(e.key.length, 7);
      h.writeUInt32LE(e.value.length, 9);
      bucket.push(h, Buffer.from(e.key), Buffer.from(e.value));
      bucketBytes += h.length + e.key.length + e.value.length;
    });
    if (size + bucketBytes > max && count > 0) break;
    if (size + bucketBytes > frameMax) {
      throw new RowanError(ErrorCodes.VALUE_TOO_LARGE, `shard ${shard}'s home bucket ${next} holds ${bucketBytes} B of entries, over the ${frameMax} B a reply carries`);
    }
    parts.push(...bucket);
    size += bucketBytes;
    count += bucket.length / 3;
    next = end;
    if (size >= max) break;
  }
  const head = Buffer.alloc(BATCH_HEAD);
  head.writeUInt32LE(next >= index.bucketCount ? COPY_DONE : next, 0);
  head.writeUInt32LE(count, 4);
  return Buffer.concat([head, ...parts], size);
}

export function decodeBatch(u: Uint8Array, shard: number): Batch {
  const b = Buffer.from(u.buffer, u.byteOffset, u.byteLength);
  const bad = (why: string): never => {
    throw new RowanError(ErrorCodes.BAD_FRAME, `COPY_SHARD batch: ${why}`);
  };
  if (b.length < BATCH_HEAD) bad('shorter than its head');
  const next = b.readUInt32LE(0);
  const count = b.readUInt32LE(4);
  const entries: RawEntry[] = [];
  let at = BATCH_HEAD;
  for (let i = 0; i < count; i++) {
    if (at + ENTRY_HEAD > b.length) bad('truncated entry head');
    const tx = b.readUInt8(at);
    const t = (tx & ~TYPE_EXPIRES) as EntryType;
    const v = b.readUInt16LE(at + 1) * 2 ** 32 + b.readUInt32LE(at + 3);
    const kl = b.readUInt16LE(at + 7);
    const vl = b.readUInt32LE(at + 9);
    at += ENTRY_HEAD;
    let exp = 0;
    if ((tx & TYPE_EXPIRES) !== 0) {
      if (at + 8 > b.length) bad('truncated deadline');
      exp = Number(b.readBigUInt64LE(at));
      if (t !== 1 || !Number.isSafeInteger(exp) || exp <= 0) bad(`deadline ${exp} on an entry of type ${t}`);
      at += 8;
    }
    if (at + kl + vl > b.length) bad('truncated entry');
    entries.push({ s: shard, v, t, key: b.subarray(at, at + kl), value: b.subarray(at + kl, at + kl + vl), exp });
    at += kl + vl;
  }
  if (at !== b.length) bad('trailing bytes');
  return { next, entries, bytes: b.length };
}
