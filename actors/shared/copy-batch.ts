// Re-replication's copy batches (§4.5 phase 3): a new backup walks its shard's index on the primary,
// a range of home buckets per COPY_SHARD request (runtime/rpc: Op.COPY_SHARD, GET-shaped), and gets back
// the entries those buckets point at. The cursor is a home bucket: a key never leaves its home bucket's
// chain (shm/index.ts forEachInBuckets), so a walk split over any number of requests -- and over
// disjoint bucket ranges walked side by side -- visits every key indexed for the whole walk at least
// once; what it may miss (a key inserted after its bucket was walked) reached the new backup by
// replication, which started before the walk (../migration/copy.ts).
//
// A backup that kept its pool (a restart: ../migration/reconcile.ts) asks with `above`, the highest
// version it holds of the shard: an entry at or below it comes back as its key and version only
// (listed), one above it in full. It may also ask for named keys (KEYS): their entries, at any version.
//
//   walk v1  shard u16 · cursor u32 · bytesMax u32                                      (10 bytes)
//   walk v2  shard u16 · cursor u32 · bytesMax u32 · above u48 · end u32                (20 bytes)
//   walk v3  walk v2 · flags u32 (PACKED: answered with a packed batch, ./copy-packed.ts)  (24 bytes)
//   keys     shard u16 · KEYS_CURSOR u32 · bytesMax u32 · count u32 · count x (keyLen u16 · key)
//   batch v1 next u32 (COPY_DONE: the walk is over) · count u32 · count x entry       (walk v1)
//   batch v2 next u32 · count u32 · counter u48 · count x entry                        (walk v2, keys;
//            a KEYS batch's `next` is the first key it did not answer, COPY_DONE when it answered all)
//   entry    type u8 (| LISTED: key only | EXPIRES: a deadline follows) · versionHi u16 · versionLo u32
//            · keyLen u16 · valueLen u32 · [deadline u64, Unix ms] · key · value   (v1; v2 listed ones)
//   raw      RAW u8 · length u32 · the entry as the primary's log stores it (all blocks, padded, each
//            with its checksum): v2 sends full entries so -- a copy, never decoded or re-encoded on the
//            primary; the new backup verifies every block before it appends the bytes to its log
// `counter` is the shard's version counter when the request was admitted (the walk's first batch:
// after every older write finished). Batches hold whole buckets, at most bytesMax (at least one
// bucket; a bucket over the frame limit is refused with VALUE_TOO_LARGE -- values near valueBytesMax
// sharing one chain).
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import type { Limits } from '../../config/limits.js';
import { hash64Into } from '../../shm/hash.js';
import type { EntryReader, ShardIndex } from '../../shm/index.js';
import { readEntryAt, storedSizeAt, versionAt, EntryType, type LogEntry } from '../../shm/log.js';
import type { RawEntry } from './gather-scatter.js';

export const COPY_DONE = 0xffffffff;
/** The cursor of a KEYS request. */
export const KEYS_CURSOR = 0xfffffffe;
export const COPY_REQUEST_BYTES = 10;
const WALK_V2_BYTES = 20;
const WALK_V3_BYTES = 24;
/** Walk v3 flag: the answer is a packed batch (./copy-packed.ts). */
const FLAG_PACKED = 1;
const KEYS_HEAD = 14;
const BATCH_HEAD = 8;
const BATCH_V2_HEAD = 14;
const ENTRY_HEAD = 13;
/** Type flag of an entry sent as its key and version only. */
const LISTED = 0x80;
/** Type flag of a full entry whose expiry deadline (u64, Unix ms) follows its head (v1 batches; a v2
 *  batch sends full entries raw, their deadline inside). */
const EXPIRES = 0x20;
const DEADLINE_BYTES = 8;
/** Type of an entry sent as its stored bytes (v2). */
const RAW = 0x40;
const RAW_HEAD = 5;
/** Default batch size: the frame limit at the default valueBytesMax (1 MiB), so a copy of large shards
 *  makes few round trips; several bucket ranges are walked side by side (../migration/copy.ts). */
export const COPY_BATCH_BYTES = 1024 * 1024 - 64;
/** Key bytes a KEYS request carries at most (the request rides in a GET frame's u16-sized key). */
export const KEYS_REQUEST_BYTES_MAX = 60 * 1024;

export interface CopyRequest {
  shard: number;
  cursor: number;
  bytesMax: number;
  /** v2: entries at or below it are listed (key and version), not sent. */
  above?: number;
  /** v2: the walk stops at this home bucket (exclusive; default: the end of the table). */
  end?: number;
  /** A KEYS request: the entries of these keys. */
  keys?: Uint8Array[];
  /** v3: answer with a packed batch (./copy-packed.ts). */
  packed?: boolean;
}

const hi16 = (v: number) => Math.floor(v / 2 ** 32);
const lo32 = (v: number) => v % 2 ** 32;

export function encodeCopyRequest(r: CopyRequest): Uint8Array {
  if (r.keys) {
    const b = Buffer.alloc(KEYS_HEAD + r.keys.reduce((n, k) => n + 2 + k.length, 0));
    b.writeUInt16LE(r.shard, 0);
    b.writeUInt32LE(KEYS_CURSOR, 2);
    b.writeUInt32LE(r.bytesMax, 6);
    b.writeUInt32LE(r.keys.length, 10);
    let at = KEYS_HEAD;
    for (const k of r.keys) {
      b.writeUInt16LE(k.length, at);
      b.set(k, at + 2);
      at += 2 + k.length;
    }
    return b;
  }
  const v2 = r.above !== undefined || r.end !== undefined || r.packed === true;
  const b = Buffer.alloc(r.packed ? WALK_V3_BYTES : v2 ? WALK_V2_BYTES : COPY_REQUEST_BYTES);
  b.writeUInt16LE(r.shard, 0);
  b.writeUInt32LE(r.cursor, 2);
  b.writeUInt32LE(r.bytesMax, 6);
  if (v2) {
    b.writeUInt16LE(hi16(r.above ?? 0), 10);
    b.writeUInt32LE(lo32(r.above ?? 0), 12);
    b.writeUInt32LE(r.end ?? COPY_DONE, 16);
  }
  if (r.packed) b.writeUInt32LE(FLAG_PACKED, 20);
  return b;
}

export function decodeCopyRequest(u: Uint8Array): CopyRequest {
  const bad = (why: string): never => {
    throw new RowanError(ErrorCodes.BAD_ARGUMENT, `COPY_SHARD request: ${why}`);
  };
  if (u.length < COPY_REQUEST_BYTES) bad(`${u.length} B, under ${COPY_REQUEST_BYTES}`);
  const b = Buffer.from(u.buffer, u.byteOffset, u.byteLength);
  const r: CopyRequest = { shard: b.readUInt16LE(0), cursor: b.readUInt32LE(2), bytesMax: b.readUInt32LE(6) };
  if (r.cursor === KEYS_CURSOR) {
    if (u.length < KEYS_HEAD) bad('KEYS request shorter than its head');
    const count = b.readUInt32LE(10);
    const keys: Uint8Array[] = [];
    let at = KEYS_HEAD;
    for (let i = 0; i < count; i++) {
      if (at + 2 > b.length) bad('truncated key length');
      const n = b.readUInt16LE(at);
      if (at + 2 + n > b.length) bad('truncated key');
      keys.push(b.subarray(at + 2, at + 2 + n));
      at += 2 + n;
    }
    if (at !== b.length) bad('trailing bytes');
    return { ...r, keys };
  }
  if (u.length === COPY_REQUEST_BYTES) return r;
  if (u.length !== WALK_V2_BYTES && u.length !== WALK_V3_BYTES) bad(`${u.length} B, not ${COPY_REQUEST_BYTES}, ${WALK_V2_BYTES} or ${WALK_V3_BYTES}`);
  const v2 = { ...r, above: b.readUInt16LE(10) * 2 ** 32 + b.readUInt32LE(12), end: b.readUInt32LE(16) };
  if (u.length === WALK_V2_BYTES) return v2;
  const flags = b.readUInt32LE(20);
  if (flags !== FLAG_PACKED) bad(`walk v3 flags ${flags}`);
  return { ...v2, packed: true };
}

/** Whether a request asks for a v2 batch (a counter in its head, listed entries). */
export function isV2(r: CopyRequest): boolean {
  return r.keys !== undefined || r.above !== undefined || r.end !== undefined || r.packed === true;
}

/** The batch would outgrow the frame: the bucket being added goes into the next batch. */
export class BatchFull extends RowanError {
  constructor(message: string) {
    super(ErrorCodes.VALUE_TOO_LARGE, message);
  }
}

/** A growable output buffer for one batch. */
export class BatchWriter {
  buf: Buffer;
  at: number;
  count = 0;

  constructor(size: number, readonly head: number) {
    this.buf = Buffer.allocUnsafe(Math.max(size, head + 4096));
    this.at = head;
  }

  /** Encode `e` (listed: key and version only). */
  put(e: LogEntry, listed: boolean, frameMax: number, shard: number): void {
    const valueLen = listed ? 0 : e.value.length;
    const x = !listed && e.expiresAt > 0 ? DEADLINE_BYTES : 0;
    this.room(this.at + ENTRY_HEAD + x + e.key.length + valueLen, frameMax, shard);
    const b = this.buf;
    let at = this.at;
    b[at] = e.type | (listed ? LISTED : 0) | (x > 0 ? EXPIRES : 0);
    b.writeUInt16LE(hi16(e.version), at + 1);
    b.writeUInt32LE(lo32(e.version), at + 3);
    b.writeUInt16LE(e.key.length, at + 7);
    b.writeUInt32LE(valueLen, at + 9);
    at += ENTRY_HEAD;
    if (x > 0) {
      b.writeBigUInt64LE(BigInt(e.expiresAt), at);
      at += x;
    }
    b.set(e.key, at);
    at += e.key.length;
    if (!listed) {
      b.set(e.value, at);
      at += valueLen;
    }
    this.at = at;
    this.count++;
  }

  /** Copy the stored entry `raw` as it is. */
  putRaw(raw: Uint8Array, frameMax: number, shard: number): void {
    this.room(this.at + RAW_HEAD + raw.length, frameMax, shard);
    this.buf[this.at] = RAW;
    this.buf.writeUInt32LE(raw.length, this.at + 1);
    this.buf.set(raw, this.at + RAW_HEAD);
    this.at += RAW_HEAD + raw.length;
    this.count++;
  }

  room(need: number, frameMax: number, shard: number): void {
    if (need > frameMax) throw new BatchFull(`shard ${shard}: a copy batch would exceed the ${frameMax} B a reply carries`);
    if (need <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.min(frameMax, Math.max(need, this.buf.length * 2)));
    this.buf.copy(next, 0, 0, this.at);
    this.buf = next;
  }

  finish(next: number, counter: number | null): Uint8Array {
    this.buf.writeUInt32LE(next, 0);
    this.buf.writeUInt32LE(this.count, 4);
    if (counter !== null) {
      this.buf.writeUInt16LE(hi16(counter), 8);
      this.buf.writeUInt32LE(lo32(counter), 10);
    }
    return this.buf.subarray(0, this.at);
  }
}

export interface Batch {
  next: number;
  /** Entries sent in full. */
  entries: RawEntry[];
  /** Entries listed by key and version only (at or below the request's `above`). */
  listed: RawEntry[];
  /** v2: full entries as the primary stores them (unverified: ../migration/absorb.ts checks them). */
  raws: Uint8Array[];
  /** v2: the shard's version counter at the request's admission (v1: 0). */
  counter: number;
  /** Encoded bytes (what crossed the wire). */
  bytes: number;
}

/** An indexed entry that no longer verifies is a broken invariant (entries are immutable while indexed). */
function entryAt(bytes: Uint8Array, addr: number, shard: number, limits: Limits): LogEntry {
  const e = readEntryAt(bytes, addr, limits);
  if (e === null) throw new RowanError(ErrorCodes.POOL_META_CORRUPT, `entry at ${addr} for shard ${shard} failed its checksum`);
  return e;
}

/**
 * One batch of `shard`'s index from home bucket `cursor` (the caller holds a read epoch: addresses
 * taken from the index stay readable). `frameMax`: the most a reply may carry; `counter`: the
 * shard's version counter at admission (v2 batches carry it).
 */
export function readBatch(index: ShardIndex, bytes: Uint8Array, shard: number, req: CopyRequest, limits: Limits, frameMax: number, counter = 0): Uint8Array {
  const v2 = isV2(req);
  const max = Math.min(Math.max(req.bytesMax, 1024), frameMax);
  const w = new BatchWriter(Math.min(frameMax, max + 64 * 1024), v2 ? BATCH_V2_HEAD : BATCH_HEAD);
  const above = req.above ?? 0;
  const end = Math.min(index.bucketCount, req.end ?? COPY_DONE);
  let next = req.cursor;
  const floor = index.floor();
  while (next < end) {
    const mark = w.at;
    const marked = w.count;
    let after: number;
    try {
      after = index.forEachInBuckets(next, 1, (addr) => {
        if (floor !== 0 && versionAt(bytes, addr) < floor) return; // flushed (./flush-floor.ts), its item not removed yet
        if (!v2) w.put(entryAt(bytes, addr, shard, limits), false, frameMax, shard);
        else if (versionAt(bytes, addr) <= above) w.put(entryAt(bytes, addr, shard, limits), true, frameMax, shard);
        else w.putRaw(bytes.subarray(addr, addr + storedSizeAt(bytes, addr, limits)), frameMax, shard);
      });
    } catch (err) {
      if (!(err instanceof BatchFull) || marked === 0) throw err; // one bucket over the frame: refused
      after = -1;
    }
    if ((after < 0 || w.at > max) && marked > 0) {
      w.at = mark; // the bucket goes into the next batch, whole
      w.count = marked;
      break;
    }
    next = after;
    if (w.at >= max) break;
  }
  return w.finish(next >= end ? COPY_DONE : next, v2 ? counter : null);
}

/** The entries of `keys` in `shard`'s index, at whatever version (absent keys are left out), as many
 *  keys as a frame holds: `next` is the index of the first key not answered (COPY_DONE: all were). */
export function readKeys(index: ShardIndex, bytes: Uint8Array, shard: number, keys: readonly Uint8Array[], reader: EntryReader, limits: Limits, frameMax: number, counter: number): Uint8Array {
  const w = new BatchWriter(64 * 1024, BATCH_V2_HEAD);
  const hash = { hi: 0, lo: 0 };
  for (let i = 0; i < keys.length; i++) {
    const addr = index.get(keys[i]!, hash64Into(keys[i]!, hash), reader);
    if (addr === 0 || versionAt(bytes, addr) < index.floor()) continue; // absent, or flushed (./flush-floor.ts)
    try {
      w.putRaw(bytes.subarray(addr, addr + storedSizeAt(bytes, addr, limits)), frameMax, shard);
    } catch (err) {
      if (!(err instanceof BatchFull) || w.count === 0) throw err;
      return w.finish(i, counter);
    }
  }
  return w.finish(COPY_DONE, counter);
}

export function decodeBatch(u: Uint8Array, shard: number, v2 = false): Batch {
  const b = Buffer.from(u.buffer, u.byteOffset, u.byteLength);
  const bad = (why: string): never => {
    throw new RowanError(ErrorCodes.BAD_FRAME, `COPY_SHARD batch: ${why}`);
  };
  const head = v2 ? BATCH_V2_HEAD : BATCH_HEAD;
  if (b.length < head) bad('shorter than its head');
  const next = b.readUInt32LE(0);
  const count = b.readUInt32LE(4);
  const counter = v2 ? b.readUInt16LE(8) * 2 ** 32 + b.readUInt32LE(10) : 0;
  const entries: RawEntry[] = [];
  const listed: RawEntry[] = [];
  let at = head;
  const raws: Uint8Array[] = [];
  for (let i = 0; i < count; i++) {
    if (v2 && b[at] === RAW) {
      if (at + RAW_HEAD > b.length) bad('truncated raw entry head');
      const n = b.readUInt32LE(at + 1);
      if (at + RAW_HEAD + n > b.length) bad('truncated raw entry');
      raws.push(b.subarray(at + RAW_HEAD, at + RAW_HEAD + n));
      at += RAW_HEAD + n;
      continue;
    }
    const { e, listed: l, end } = decodeEntryAt(b, at, shard, bad);
    (l ? listed : entries).push(e);
    at = end;
  }
  if (at !== b.length) bad('trailing bytes');
  return { next, entries, listed, raws, counter, bytes: b.length };
}

/** The v1-format entry (listed, or full with its deadline) at `at` of batch `b`; `bad` throws. */
export function decodeEntryAt(b: Buffer, at: number, shard: number, bad: (why: string) => never): { e: RawEntry; listed: boolean; end: number } {
  if (at + ENTRY_HEAD > b.length) bad('truncated entry head');
  const t = b.readUInt8(at);
  const v = b.readUInt16LE(at + 1) * 2 ** 32 + b.readUInt32LE(at + 3);
  const kl = b.readUInt16LE(at + 7);
  const vl = b.readUInt32LE(at + 9);
  at += ENTRY_HEAD;
  const type = (t & ~(LISTED | EXPIRES)) as EntryType;
  let exp = 0;
  if (t & EXPIRES) {
    if (at + DEADLINE_BYTES > b.length) bad('truncated deadline');
    exp = Number(b.readBigUInt64LE(at));
    if (type !== EntryType.Put || (t & LISTED) !== 0 || !Number.isSafeInteger(exp) || exp <= 0) bad(`deadline ${exp} on an entry of type ${t}`);
    at += DEADLINE_BYTES;
  }
  if (at + kl + vl > b.length) bad('truncated entry');
  const e = { s: shard, v, t: type, key: b.subarray(at, at + kl), value: b.subarray(at + kl, at + kl + vl), ...(exp ? { exp } : {}) };
  return { e, listed: (t & LISTED) !== 0, end: at + kl + vl };
}
