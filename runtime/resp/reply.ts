// RESP replies as values, and their encoding for a connection's protocol version (RESP2 or RESP3,
// chosen by HELLO). One value type serves both: a map is a RESP3 map or a RESP2 flat array, a null is
// `_` or `$-1`, a verbatim string is `=` or a bulk string, as Redis itself encodes them.
//
//   Uint8Array / string  bulk string (a string as its UTF-8 bytes)
//   number / bigint      integer (must be an integer; a bigint for 64-bit values beyond 2^53)
//   null                 null (RESP2: null bulk string)
//   Reply[]              array
//   Simple / RespErr     simple string / error (`+OK`, `-ERR ...`): no CR or LF inside
//   RMap / RSet / Verbatim / NullArray    RESP3 types with their RESP2 fallbacks

export class Simple {
  constructor(readonly s: string) {}
}
export class RespErr {
  /** `s` starts with the error code: "ERR ...", "MOVED 3999 127.0.0.1:7001", "CROSSSLOT ...". */
  constructor(readonly s: string) {}
}
export class RMap {
  constructor(readonly entries: [Reply, Reply][]) {}
}
export class RSet {
  constructor(readonly items: Reply[]) {}
}
export class Verbatim {
  constructor(readonly text: string) {}
}
export class NullArray {}

export type Reply = Uint8Array | string | number | bigint | null | Reply[] | Simple | RespErr | RMap | RSet | Verbatim | NullArray;

export const OK = new Simple('OK');
export const NULL_ARRAY = new NullArray();

export function err(s: string): RespErr {
  return new RespErr(s.replace(/[\r\n]+/g, ' '));
}

/** take() copies batches up to this size out of the encoding buffer (Buffer.allocUnsafe serves them from
 *  Node's shared 8 KiB pool: poolSize >>> 1). */
const TAKE_COPY_MAX = 4 * 1024 - 1;

/** A growable output buffer replies are encoded into, handed to the socket in one write per batch. */
export class RespWriter {
  private buf = Buffer.allocUnsafe(16 * 1024);
  private len = 0;

  get length(): number {
    return this.len;
  }

  /** The bytes written so far, and reset. The socket keeps what it is given until written, so the
   *  encoding buffer is never handed over while it is reused: a small batch (the norm: a few replies)
   *  is copied out into a slice of Node's shared pool, and the buffer stays (no 16 KiB allocation per
   *  write, issue 26); a large one hands the buffer over and starts a fresh one. */
  take(): Buffer {
    const n = this.len;
    this.len = 0;
    if (n <= TAKE_COPY_MAX) {
      const out = Buffer.allocUnsafe(n);
      this.buf.copy(out, 0, 0, n);
      return out;
    }
    const out = this.buf.subarray(0, n);
    this.buf = Buffer.allocUnsafe(Math.max(16 * 1024, Math.min(n, 1024 * 1024)));
    return out;
  }

  private ensure(n: number): void {
    if (this.len + n <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.len + n));
    this.buf.copy(next, 0, 0, this.len);
    this.buf = next;
  }

  private ascii(s: string): void {
    this.ensure(s.length);
    this.len += this.buf.write(s, this.len, 'latin1');
  }

  private head(type: string, n: number): void {
    this.ascii(`${type}${n}\r\n`);
  }

  private bulk(b: Uint8Array | string): void {
    if (typeof b === 'string') {
      const n = Buffer.byteLength(b, 'utf8');
      this.head('$', n);
      this.ensure(n + 2);
      this.len += this.buf.write(b, this.len, 'utf8');
    } else {
      this.head('$', b.length);
      this.ensure(b.length + 2);
      this.buf.set(b, this.len);
      this.len += b.length;
    }
    this.buf[this.len++] = 13;
    this.buf[this.len++] = 10;
  }

  /** Encode one reply for protocol `proto` (2 or 3). */
  write(r: Reply, proto: number): void {
    if (r === null) this.ascii(proto === 3 ? '_\r\n' : '$-1\r\n');
    else if (typeof r === 'string' || r instanceof Uint8Array) this.bulk(r);
    else if (typeof r === 'number' || typeof r === 'bigint') this.ascii(`:${r}\r\n`);
    else if (Array.isArray(r)) {
      this.head('*', r.length);
      for (const x of r) this.write(x, proto);
    } else if (r instanceof Simple) this.ascii(`+${r.s}\r\n`);
    else if (r instanceof RespErr) {
      this.ensure(Buffer.byteLength(r.s) + 3);
      this.buf[this.len++] = 0x2d;
      this.len += this.buf.write(r.s, this.len, 'utf8');
      this.buf[this.len++] = 13;
      this.buf[this.len++] = 10;
    } else if (r instanceof RMap) {
      this.head(proto === 3 ? '%' : '*', proto === 3 ? r.entries.length : r.entries.length * 2);
      for (const [k, v] of r.entries) {
        this.write(k, proto);
        this.write(v, proto);
      }
    } else if (r instanceof RSet) {
      this.head(proto === 3 ? '~' : '*', r.items.length);
      for (const x of r.items) this.write(x, proto);
    } else if (r instanceof Verbatim) {
      if (proto !== 3) this.bulk(r.text);
      else {
        const n = Buffer.byteLength(r.text, 'utf8') + 4;
        this.head('=', n);
        this.ensure(n + 2);
        this.len += this.buf.write('txt:', this.len, 'latin1');
        this.len += this.buf.write(r.text, this.len, 'utf8');
        this.buf[this.len++] = 13;
        this.buf[this.len++] = 10;
      }
    } else if (r instanceof NullArray) this.ascii(proto === 3 ? '_\r\n' : '*-1\r\n');
  }
}
