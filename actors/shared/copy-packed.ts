// Packed copy batches (issue 28, "copies at memory speed"): the answer to a walk v3 request
// (./copy-batch.ts). A v2 batch frames every full entry on its own (RAW u8 · length u32 · entry), so the
// new backup cut it into one view per entry, verified each through a LogEntry of its own and appended
// them one by one: allocation and a fresh DataView per 100 B object cost more than the copying. A packed
// batch carries the full entries back to back exactly as a log stores them (each a whole number of
// 64 B strides), so the new backup verifies them in one pass over one buffer (shm/log.ts verifyEntryAt,
// nothing allocated per entry), lands runs of them in its log with one copy and one persist per
// segment, and indexes them from there (../migration/absorb.ts absorbPacked).
//
//   packed batch  next u32 · count u32 · counter u48 · listed u32 · packedBytes u32 · zero u16  (24 B)
//                 · packedBytes: `count` full entries back to back, as the primary's log stores them
//                 · `listed` entries of keys at or below the request's `above`, key and version only
//                   (./copy-batch.ts entry format, LISTED)
//
// `next` and `counter` mean what they mean in a v2 batch. A batch holds whole buckets, at most the
// request's bytesMax (at least one bucket; one over the frame limit is refused, as in v2). A batch
// that is short or torn -- fewer bytes than its head announces, an entry that does not verify or runs
// past the packed section, bytes left over -- is refused whole with BAD_FRAME before anything of it
// is written.
import { Buffer } from 'node:buffer';
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import type { Limits } from '../../config/limits.js';
import type { ShardIndex } from '../../shm/index.js';
import { EntryType, newEntryHead, readEntryAt, storedSizeAt, verifyEntryAt, versionAt, type LogEntry } from '../../shm/log.js';
import { BatchFull, BatchWriter, COPY_DONE, decodeEntryAt, type Batch, type CopyRequest } from './copy-batch.js';
import type { RawEntry } from './gather-scatter.js';
import { plausibleVersion } from './trust.js';

export const PACKED_HEAD = 24;

/** A packed batch, its entries verified (decodePackedBatch). */
export interface PackedBatch {
  shard: number;
  next: number;
  /** The shard's version counter at the walk's admission. */
  counter: number;
  /** The full entries back to back (offsets from 0; 4-byte aligned for the checksum's word reads). */
  packed: Uint8Array;
  count: number;
  /** Entry i lies at packed[offs[i], offs[i + 1]). */
  offs: Int32Array;
  versions: Float64Array;
  /** Where entry i's key starts from the entry's start, -1 when it spans blocks; its length. */
  keyAt: Int32Array;
  keyLens: Int32Array;
  /** Entries listed by key and version only (at or below the request's `above`). */
  listed: RawEntry[];
  /** Encoded bytes (what crossed the wire). */
  bytes: number;
}

/** The packed section and the listed entries of one batch being built. */
class PackedWriter {
  buf: Buffer;
  at = PACKED_HEAD;
  count = 0;
  readonly listed = new BatchWriter(4096, 0);

  constructor(size: number) {
    this.buf = Buffer.allocUnsafe(Math.max(size, PACKED_HEAD + 4096));
  }

  get size(): number {
    return this.at + this.listed.at;
  }

  /** Copy the stored entry at src[addr, addr + n). */
  copy(src: Uint8Array, addr: number, n: number, frameMax: number, shard: number): void {
    if (this.size + n > frameMax) throw new BatchFull(`shard ${shard}: a copy batch would exceed the ${frameMax} B a reply carries`);
    if (this.at + n > this.buf.length) {
      const next = Buffer.allocUnsafe(Math.min(frameMax, Math.max(this.at + n, this.buf.length * 2)));
      this.buf.copy(next, 0, 0, this.at);
      this.buf = next;
    }
    this.buf.set(src.subarray(addr, addr + n), this.at);
    this.at += n;
    this.count++;
  }

  list(e: LogEntry, frameMax: number, shard: number): void {
    this.listed.put(e, true, frameMax - this.at, shard);
  }

  finish(next: number, counter: number): Uint8Array {
    const out = Buffer.allocUnsafe(this.size);
    this.buf.copy(out, 0, 0, this.at);
    this.listed.buf.copy(out, this.at, 0, this.listed.at);
    out.writeUInt32LE(next, 0);
    out.writeUInt32LE(this.count, 4);
    out.writeUInt16LE(Math.floor(counter / 2 ** 32), 8);
    out.writeUInt32LE(counter % 2 ** 32, 10);
    out.writeUInt32LE(this.listed.count, 14);
    out.writeUInt32LE(this.at - PACKED_HEAD, 18);
    out.writeUInt16LE(0, 22);
    return out;
  }
}

/** An indexed entry that no longer verifies is a broken invariant (entries are immutable while indexed). */
function listedAt(bytes: Uint8Array, addr: number, shard: number, limits: Limits): LogEntry {
  const e = readEntryAt(bytes, addr, limits);
  if (e === null) throw new RowanError(ErrorCodes.POOL_META_CORRUPT, `entry at ${addr} for shard ${shard} failed its checksum`);
  return e;
}

/** readBatch (./copy-batch.ts) answering a walk v3 request: a packed batch. The caller holds a read epoch. */
export function readPackedBatch(index: ShardIndex, bytes: Uint8Array, shard: number, req: CopyRequest, limits: Limits, frameMax: number, counter: number): Uint8Array {
  const max = Math.min(Math.max(req.bytesMax, 1024), frameMax);
  const w = new PackedWriter(Math.min(frameMax, max + 64 * 1024));
  const above = req.above ?? 0;
  const end = Math.min(index.bucketCount, req.end ?? COPY_DONE);
  const floor = index.floor();
  const visit = (addr: number): void => {
    const v = versionAt(bytes, addr);
    if (floor !== 0 && v < floor) return; // flushed (./flush-floor.ts), its item not removed yet
    if (v <= above) w.list(listedAt(bytes, addr, shard, limits), frameMax, shard);
    else w.copy(bytes, addr, storedSizeAt(bytes, addr, limits), frameMax, shard);
  };
  let next = req.cursor;
  while (next < end) {
    const at = w.at;
    const count = w.count;
    const listedAt0 = w.listed.at;
    const listedCount = w.listed.count;
    let after: number;
    try {
      after = index.forEachInBuckets(next, 1, visit);
    } catch (err) {
      if (!(err instanceof BatchFull) || count + listedCount === 0) throw err; // one bucket over the frame: refused
      after = -1;
    }
    if ((after < 0 || w.size > max) && count + listedCount > 0) {
      w.at = at; // the bucket goes into the next batch, whole
      w.count = count;
      w.listed.at = listedAt0;
      w.listed.count = listedCount;
      break;
    }
    next = after;
    if (w.size >= max) break;
  }
  return w.finish(next >= end ? COPY_DONE : next, counter);
}

function bad(why: string): never {
  throw new RowanError(ErrorCodes.BAD_FRAME, `COPY_SHARD packed batch: ${why}`);
}

/** Decode a packed batch of `shard` and verify every entry (blocks, checksums, shard, type, a plausible
 *  version); BAD_FRAME for a short, torn or foreign one. */
export function decodePackedBatch(u: Uint8Array, shard: number, limits: Limits): PackedBatch {
  const b = Buffer.from(u.buffer, u.byteOffset, u.byteLength);
  if (b.length < PACKED_HEAD) bad(`${b.length} B, shorter than its ${PACKED_HEAD} B head`);
  const count = b.readUInt32LE(4);
  const listedCount = b.readUInt32LE(14);
  const packedBytes = b.readUInt32LE(18);
  if (packedBytes % limits.entryAlignBytes !== 0 || b.readUInt16LE(22) !== 0) bad(`head announces ${packedBytes} B of entries, not whole ${limits.entryAlignBytes} B strides`);
  if (PACKED_HEAD + packedBytes > b.length) bad(`torn: its head announces ${packedBytes} B of entries, ${b.length - PACKED_HEAD} B arrived`);
  let packed: Uint8Array = b.subarray(PACKED_HEAD, PACKED_HEAD + packedBytes);
  if ((packed.byteOffset & 3) !== 0) packed = new Uint8Array(packed); // aligned: the checksum reads words
  const pb: PackedBatch = {
    shard, next: b.readUInt32LE(0), counter: b.readUInt16LE(8) * 2 ** 32 + b.readUInt32LE(10), packed, count,
    offs: new Int32Array(count + 1), versions: new Float64Array(count), keyAt: new Int32Array(count), keyLens: new Int32Array(count), listed: [], bytes: b.length,
  };
  verifyPacked(pb, limits);
  let at = PACKED_HEAD + packedBytes;
  for (let i = 0; i < listedCount; i++) {
    const { e, listed, end } = decodeEntryAt(b, at, shard, bad);
    if (!listed) bad(`entry ${i} after the packed ones is not a listed one`);
    pb.listed.push(e);
    at = end;
  }
  if (at !== b.length) bad(`${b.length - at} B after its last entry`);
  return pb;
}

/** A v2 walk batch (./copy-batch.ts: full entries raw, one by one, the others listed) as a packed batch,
 *  its entries verified alike: what a copy from a primary of an older build, which refuses walk v3
 *  requests, absorbs (one copy of its entries into one buffer). */
export function packedOfV2(v2: Batch, shard: number, limits: Limits): PackedBatch {
  if (v2.entries.length > 0) bad(`a v2 walk batch with ${v2.entries.length} decoded full entries`);
  const packed = new Uint8Array(v2.raws.reduce((n, r) => n + r.length, 0));
  let at = 0;
  for (const r of v2.raws) {
    if (r.length % limits.entryAlignBytes !== 0) bad(`a raw entry of ${r.length} B, not whole ${limits.entryAlignBytes} B strides`);
    packed.set(r, at);
    at += r.length;
  }
  const count = v2.raws.length;
  const pb: PackedBatch = {
    shard, next: v2.next, counter: v2.counter, packed, count,
    offs: new Int32Array(count + 1), versions: new Float64Array(count), keyAt: new Int32Array(count), keyLens: new Int32Array(count), listed: v2.listed, bytes: v2.bytes,
  };
  verifyPacked(pb, limits);
  return pb;
}

function verifyPacked(pb: PackedBatch, limits: Limits): void {
  const h = newEntryHead();
  const end = pb.packed.length;
  let at = 0;
  for (let i = 0; i < pb.count; i++) {
    if (at >= end) bad(`torn: ${pb.count} entries announced, ${i} in its ${end} B`);
    if (!verifyEntryAt(pb.packed, at, end, limits, h)) bad(`entry ${i} of ${pb.count} (at ${at} of ${end} B) does not verify: torn or corrupt`);
    if (h.shard !== pb.shard || (h.type !== EntryType.Put && h.type !== EntryType.Del) || !plausibleVersion(h.version)) {
      bad(`entry ${i} is of shard ${h.shard}, type ${h.type}, version ${h.version} in a batch of shard ${pb.shard}`);
    }
    pb.offs[i] = at;
    pb.versions[i] = h.version;
    pb.keyAt[i] = h.keyAt;
    pb.keyLens[i] = h.keyLen;
    at += h.bytes;
  }
  if (at !== end) bad(`${end - at} B of entries after the ${pb.count} announced`);
  pb.offs[pb.count] = at;
}
