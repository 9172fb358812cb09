// Appends entries to one log range [start, end) of a PersistentRegion — a t-log or clean segment owned
// by a single actor. Each append encodes in place and persists exactly the entry's bytes before it
// returns, so a returned offset means the entry survives a crash (to the region's persistence mode).
//
// There is no persistent tail pointer (§4.2.2): recover() finds the tail by scanning to the first block
// that does not verify. It then zeroes whatever non-zero bytes lie past that tail — the remains of a
// torn append. Otherwise a later, shorter append could leave part of the torn bytes (e.g. an intact
// trailing block of a torn multi-block entry) right where the next scan continues.
import { Buffer } from 'node:buffer';
import type { Limits } from '../config/limits.js';
import { ErrorCodes, RowanError, invariant } from '../config/base/errors.js';
import type { PersistentRegion } from '../config/base/region.js';
import { encodeEntry, entrySize, scanEntries, type EntryInput } from './log.js';

/** Granularity at which recover() looks for stale bytes past the tail. */
const SANITIZE_CHUNK_BYTES = 4096;
const ZERO_CHUNK = new Uint8Array(SANITIZE_CHUNK_BYTES);

export class LogAppender {
  readonly region: PersistentRegion;
  readonly start: number;
  readonly end: number;
  readonly limits: Limits;
  private tailOff: number;
  /** Entries found by recover() (0 for a fresh appender). */
  readonly recoveredEntries: number;

  constructor(region: PersistentRegion, start: number, end: number, limits: Limits, tail = start, recovered = 0) {
    invariant(start % limits.entryAlignBytes === 0 && start <= end && end <= region.bytes.length,
      `log range [${start}, ${end}) must be aligned and inside the region`);
    invariant(tail >= start && tail <= end && tail % limits.entryAlignBytes === 0, `tail ${tail} out of range`);
    this.region = region;
    this.start = start;
    this.end = end;
    this.limits = limits;
    this.tailOff = tail;
    this.recoveredEntries = recovered;
  }

  /** Where the next entry goes. */
  get tail(): number {
    return this.tailOff;
  }

  get remaining(): number {
    return this.end - this.tailOff;
  }

  /** Whether `e` would fit (throws the codec's errors for an entry that is invalid anywhere). */
  fits(e: EntryInput): boolean {
    return entrySize(e, this.limits) <= this.remaining;
  }

  /** Encode `e` at the tail and persist it; returns the entry's offset. SEGMENT_FULL if it does not fit. */
  append(e: EntryInput): number {
    const size = entrySize(e, this.limits);
    const off = this.tailOff;
    if (size > this.end - off) {
      throw new RowanError(ErrorCodes.SEGMENT_FULL, `entry of ${size} bytes does not fit in ${this.end - off} bytes`,
        { size, remaining: this.end - off });
    }
    encodeEntry(e, this.region.bytes, off, this.limits);
    this.region.persist(off, size);
    this.tailOff = off + size;
    return off;
  }

  /** Copy an already-encoded entry (all its blocks) to the tail and persist it; returns its offset. */
  appendRaw(src: Uint8Array): number {
    const off = this.tailOff;
    const size = src.length;
    invariant(size > 0 && size % this.limits.entryAlignBytes === 0, `raw entry of ${size} bytes is not whole strides`);
    if (size > this.end - off) {
      throw new RowanError(ErrorCodes.SEGMENT_FULL, `entry of ${size} bytes does not fit in ${this.end - off} bytes`,
        { size, remaining: this.end - off });
    }
    this.region.bytes.set(src, off);
    this.region.persist(off, size);
    this.tailOff = off + size;
    return off;
  }

  /** appendRaw for `srcs[from..]`, as many as fit, with one persist over them all (a crash before it
   *  returns leaves a torn tail, which recover() cuts at the first entry that does not verify). Offsets
   *  go to `out` at the same indexes; returns the index of the first one that did not fit. */
  appendRawMany(srcs: readonly Uint8Array[], from: number, out: number[]): number {
    const start = this.tailOff;
    let off = start;
    let i = from;
    for (; i < srcs.length; i++) {
      const src = srcs[i]!;
      invariant(src.length > 0 && src.length % this.limits.entryAlignBytes === 0, `raw entry of ${src.length} bytes is not whole strides`);
      if (src.length > this.end - off) break;
      this.region.bytes.set(src, off);
      out[i] = off;
      off += src.length;
    }
    if (off > start) this.region.persist(start, off - start);
    this.tailOff = off;
    return i;
  }

  /** Entries [from, to) of `src`, lying back to back at src[offs[i], offs[i + 1]) (a packed copy
   *  batch), as many as fit: one copy and one persist for them all. Their offsets go to out[i - base];
   *  returns the index of the first that did not fit. */
  appendPacked(src: Uint8Array, offs: Int32Array, from: number, to: number, out: number[], base: number): number {
    const start = this.tailOff;
    const first = offs[from]!;
    let i = from;
    while (i < to && offs[i + 1]! - first <= this.end - start) i++;
    const len = offs[i]! - first;
    if (len === 0) return i;
    invariant(len % this.limits.entryAlignBytes === 0, `packed entries of ${len} bytes are not whole strides`);
    this.region.bytes.set(src.subarray(first, first + len), start);
    for (let j = from; j < i; j++) out[j - base] = start + offs[j]! - first;
    this.region.persist(start, len);
    this.tailOff = start + len;
    return i;
  }

  /** Reopen a log range after a restart: the tail goes after the last intact entry, stale bytes past it
   *  are zeroed and persisted. */
  static recover(region: PersistentRegion, start: number, end: number, limits: Limits): LogAppender {
    let tail = start;
    let count = 0;
    for (const e of scanEntries(region.bytes, start, end, limits)) {
      tail = e.offset + e.bytes;
      count++;
    }
    zeroStaleBytes(region, tail, end);
    return new LogAppender(region, start, end, limits, tail, count);
  }
}

/** Zero every non-zero chunk in [from, end) and persist what changed. memcmp via Buffer.compare keeps
 *  the common case (an all-zero remainder) cheap. */
function zeroStaleBytes(region: PersistentRegion, from: number, end: number): void {
  const bytes = region.bytes;
  const zero = Buffer.from(ZERO_CHUNK.buffer);
  for (let off = from; off < end; off += SANITIZE_CHUNK_BYTES) {
    const stop = Math.min(off + SANITIZE_CHUNK_BYTES, end);
    const chunk = Buffer.from(bytes.buffer, bytes.byteOffset + off, stop - off);
    if (Buffer.compare(chunk, zero.subarray(0, stop - off)) !== 0) {
      bytes.fill(0, off, stop);
      region.persist(off, stop - off);
    }
  }
}
