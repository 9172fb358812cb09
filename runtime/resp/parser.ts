// RESP request parser (RESP2/RESP3 clients send the same requests): multibulk arrays of bulk strings
// (`*2\r\n$3\r\nGET\r\n$1\r\nk\r\n`) and inline commands (`PING\r\n`, what telnet sends).
//
// Zero-copy on the hot path: the arguments of a request that arrived whole are views (subarray) into
// the received chunk, which is never reused, so nothing is copied per argument. A request split across
// chunks keeps its parsed prefix as offsets and waits without re-scanning until enough bytes arrived for
// the next step (a large value is gathered with one concat, not one per chunk). Every length is bounded
// (./limits.ts) before anything is buffered for it: a bad or hostile header throws RespProtocolError
// with Redis's message, and the connection answers it and closes. A bulk string over bulkBytesMax but
// within bulkDiscardBytesMax is not an attack but a value over the limit: its bytes are dropped as they
// arrive (nothing buffered for them), the rest of the request is parsed, and the request comes out
// marked (oversizedBytes) so the connection answers an error reply and goes on.
import type { RespLimits } from './limits.js';

export class RespProtocolError extends Error {
  constructor(what: string) {
    super(`Protocol error: ${what}`);
    this.name = 'RespProtocolError';
  }
}

const CR = 13;
const LF = 10;
const STAR = 0x2a;
const DOLLAR = 0x24;
/** Longest "*<n>\r\n" / "$<n>\r\n" header line we look at before calling it garbage. */
const HEADER_LINE_MAX = 32;
const EMPTY = Buffer.alloc(0);

export class RespRequestParser {
  private buf: Buffer = EMPTY;
  private pos = 0;
  /** Chunks received while waiting for `need` bytes, not yet joined to buf. */
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private need = 0;
  // A multibulk request in progress: argument count, parsed (offset, length) pairs relative to `start`.
  private argc = -1;
  private start = 0;
  private readonly offs: number[] = [];
  private readonly lens: number[] = [];
  /** lineInt()'s results. */
  private lineN = 0;
  private lineNext = 0;
  private cursor = 0; // where parsing continues, relative to start
  // An over-limit bulk string being dropped: bytes still to drop (its data and CRLF), the arguments of
  // the request before it (copied out: the chunks they were in are let go), the largest declared length.
  private skip = 0;
  private done: Buffer[] = [];
  private oversized = 0;
  /** The largest over-limit bulk length the request last returned by next() declared; 0 = none. */
  oversizedBytes = 0;
  /** The connection has not authenticated: Redis 6.2's bounds (preAuthArgsMax, preAuthBulkBytesMax). */
  preAuth = false;

  constructor(private readonly limits: RespLimits) {}

  /** Bytes held for requests not yet complete. */
  get bufferedBytes(): number {
    return this.buf.length - this.pos + this.pendingBytes;
  }

  push(chunk: Buffer): void {
    if (this.skip > 0) {
      if (chunk.length <= this.skip) {
        this.skip -= chunk.length;
        return;
      }
      chunk = chunk.subarray(this.skip);
      this.skip = 0;
    }
    if (this.pos >= this.buf.length && this.pendingBytes === 0) {
      this.buf = chunk;
      this.pos = 0;
      this.start = 0;
      return;
    }
    this.pending.push(chunk);
    this.pendingBytes += chunk.length;
    if (this.bufferedBytes > this.limits.requestBytesMax) throw new RespProtocolError('too big request');
  }

  private join(): void {
    if (this.pendingBytes === 0) return;
    const rest = this.buf.subarray(this.pos);
    this.buf = Buffer.concat([rest, ...this.pending], rest.length + this.pendingBytes);
    this.start -= this.pos;
    this.pos = 0;
    this.pending = [];
    this.pendingBytes = 0;
  }

  /** The next complete request's arguments, or null until more bytes arrive. Throws RespProtocolError. */
  next(): Buffer[] | null {
    this.oversizedBytes = 0;
    for (;;) {
      if (this.skip > 0) return null;
      if (this.need > this.buf.length - this.pos + this.pendingBytes) return null;
      this.need = 0;
      this.join();
      if (this.pos >= this.buf.length) return null;
      const args = this.buf[this.pos] === STAR || this.argc >= 0 ? this.multibulk() : this.inline();
      if (args === null) return null;
      if (args.length > 0) return args; // empty requests ("*0", blank lines) are skipped, as Redis does
    }
  }

  /** The line at [from, CRLF) as an integer, into lineN (the value) and lineNext (the offset after the
   *  CRLF): no object per header line. False if incomplete; throws on garbage. */
  private lineInt(from: number, what: string): boolean {
    const b = this.buf;
    const end = Math.min(b.length, from + HEADER_LINE_MAX);
    let i = from + 1;
    while (i < end && b[i] !== CR) i++;
    if (i >= end || i + 1 >= b.length) {
      if (b.length - from >= HEADER_LINE_MAX) throw new RespProtocolError(`too big ${what} count string`);
      this.need = b.length - this.pos + 1;
      return false;
    }
    if (b[i + 1] !== LF) throw new RespProtocolError(`invalid ${what} length`);
    let n = 0;
    let neg = false;
    let j = from + 1;
    if (b[j] === 0x2d) {
      neg = true;
      j++;
    }
    if (j === i) throw new RespProtocolError(`invalid ${what} length`);
    for (; j < i; j++) {
      const d = b[j]! - 0x30;
      if (d < 0 || d > 9) throw new RespProtocolError(`invalid ${what} length`);
      n = n * 10 + d;
    }
    this.lineN = neg ? -n : n;
    this.lineNext = i + 2;
    return true;
  }

  private multibulk(): Buffer[] | null {
    const b = this.buf;
    if (this.argc < 0) {
      if (!this.lineInt(this.pos, 'mbulk')) return null;
      const argc = this.lineN;
      if (this.preAuth && argc > this.limits.preAuthArgsMax) throw new RespProtocolError('unauthenticated multibulk length');
      if (argc > this.limits.argsMax) throw new RespProtocolError('invalid multibulk length');
      this.start = this.pos;
      if (argc <= 0) {
        this.pos = this.lineNext;
        return [];
      }
      this.argc = argc;
      this.offs.length = 0; // reused: only this parser holds them
      this.lens.length = 0;
      this.done = [];
      this.oversized = 0;
      this.cursor = this.lineNext - this.start;
    }
    while (this.done.length + this.offs.length < this.argc) {
      const at = this.start + this.cursor;
      if (at >= b.length) {
        this.need = at - this.pos + 1;
        return null;
      }
      if (b[at] !== DOLLAR) throw new RespProtocolError(`expected '$', got '${String.fromCharCode(b[at]!)}'`);
      if (!this.lineInt(at, 'bulk')) return null;
      const n = this.lineN;
      const next = this.lineNext;
      if (this.preAuth && n > this.limits.preAuthBulkBytesMax) throw new RespProtocolError('unauthenticated bulk length');
      if (n < 0 || n > this.limits.bulkDiscardBytesMax) throw new RespProtocolError('invalid bulk length');
      if (n > this.limits.bulkBytesMax) {
        if (this.dropBulk(n, next)) continue;
        return null;
      }
      if (next + n + 2 > b.length) {
        if (next + n + 2 - this.start > this.limits.requestBytesMax) throw new RespProtocolError('too big request');
        this.need = next + n + 2 - this.pos;
        return null;
      }
      if (b[next + n] !== CR || b[next + n + 1] !== LF) throw new RespProtocolError('expected CRLF after bulk string');
      this.offs.push(next - this.start);
      this.lens.push(n);
      this.cursor = next + n + 2 - this.start;
    }
    const args = this.done;
    for (let i = 0; i < this.offs.length; i++) args.push(b.subarray(this.start + this.offs[i]!, this.start + this.offs[i]! + this.lens[i]!));
    this.pos = this.start + this.cursor;
    this.argc = -1;
    this.done = [];
    this.oversizedBytes = this.oversized;
    return args;
  }

  /** Drop an over-limit bulk string of `n` bytes whose data starts at `from`: the arguments parsed so
   *  far are copied out and an empty one stands for it. True when it was all here (parsing goes on
   *  after it); false when the rest is dropped by push() as it arrives. */
  private dropBulk(n: number, from: number): boolean {
    const b = this.buf;
    for (let i = 0; i < this.offs.length; i++) this.done.push(Buffer.from(b.subarray(this.start + this.offs[i]!, this.start + this.offs[i]! + this.lens[i]!)));
    this.done.push(EMPTY);
    this.offs.length = 0;
    this.lens.length = 0;
    this.oversized = Math.max(this.oversized, n);
    this.need = 0;
    this.cursor = 0;
    const here = b.length - from;
    if (here >= n + 2) {
      this.pos = this.start = from + n + 2;
      return true;
    }
    this.skip = n + 2 - here;
    this.buf = EMPTY;
    this.pos = this.start = 0;
    return false;
  }

  private inline(): Buffer[] | null {
    const b = this.buf;
    const nl = b.indexOf(LF, this.pos);
    if (nl < 0) {
      if (b.length - this.pos > this.limits.inlineBytesMax) throw new RespProtocolError('too big inline request');
      this.need = b.length - this.pos + 1;
      return null;
    }
    if (nl - this.pos > this.limits.inlineBytesMax) throw new RespProtocolError('too big inline request');
    const end = nl > this.pos && b[nl - 1] === CR ? nl - 1 : nl;
    const line = b.subarray(this.pos, end);
    this.pos = nl + 1;
    const args = splitArgs(line);
    if (args === null) throw new RespProtocolError('unbalanced quotes in request');
    if (args.length > this.limits.argsMax) throw new RespProtocolError('invalid multibulk length');
    return args;
  }
}

const HEX = (c: number) => (c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66) || (c >= 0x41 && c <= 0x46);

/** Redis's sdssplitargs: spaces separate, "..." with \n \r \t \b \a \\ \xHH escapes, '...' with \'. */
export function splitArgs(line: Buffer): Buffer[] | null {
  const out: Buffer[] = [];
  const n = line.length;
  let i = 0;
  const isSpace = (c: number) => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d || c === 0x0b || c === 0x0c;
  for (;;) {
    while (i < n && isSpace(line[i]!)) i++;
    if (i >= n) return out;
    const cur: number[] = [];
    let inDq = false;
    let inSq = false;
    for (;;) {
      if (i >= n) {
        if (inDq || inSq) return null;
        break;
      }
      const c = line[i]!;
      if (inDq) {
        if (c === 0x5c && i + 3 < n && line[i + 1] === 0x78 && HEX(line[i + 2]!) && HEX(line[i + 3]!)) {
          cur.push(parseInt(String.fromCharCode(line[i + 2]!, line[i + 3]!), 16));
          i += 3;
        } else if (c === 0x5c && i + 1 < n) {
          const e = line[++i]!;
          cur.push(e === 0x6e ? 10 : e === 0x72 ? 13 : e === 0x74 ? 9 : e === 0x62 ? 8 : e === 0x61 ? 7 : e);
        } else if (c === 0x22) {
          if (i + 1 < n && !isSpace(line[i + 1]!)) return null; // closing quote must be followed by a space
          inDq = false;
          i++;
          break;
        } else cur.push(c);
      } else if (inSq) {
        if (c === 0x5c && i + 1 < n && line[i + 1] === 0x27) {
          cur.push(0x27);
          i++;
        } else if (c === 0x27) {
          if (i + 1 < n && !isSpace(line[i + 1]!)) return null;
          inSq = false;
          i++;
          break;
        } else cur.push(c);
      } else if (isSpace(c)) break;
      else if (c === 0x22) inDq = true;
      else if (c === 0x27) inSq = true;
      else cur.push(c);
      i++;
    }
    out.push(Buffer.from(cur));
  }
}
