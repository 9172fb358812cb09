// The lease's two messages as fixed-size binary frames, on the same connection as the JSON lines of
// ./manager-protocol.ts (issue 26, "no work without work": renewals are most of an idle cluster's
// traffic, 25 a second per node at the default lease, and a JSON line each way cost a stringify, a
// parse, a string and an object per message on both sides).
//
//   RENEW  node -> CM, 12 B                      GRANT  CM -> node, 40 B
//   +------+------+---------+                    +------+------+---------+
//   | 0x01 | 0x01 | node u16|  0                 | 0x01 | 0x02 | 0 (u16) |  0
//   +------+------+---------+                    +------+------+---------+
//   |       seq u32         |  4                 |       seq u32         |  4
//   +-----------------------+                    +-----------------------+
//   |       term u32        |  8                 |       term u32        |  8
//   +-----------------------+                    +-----------------------+
//                                                |       0 (u32)         | 12
//                                                +-----------------------+
//                                                |  leaseMs f64          | 16
//                                                |  renewMs f64          | 24
//                                                |  driftMs f64          | 32
//                                                +-----------------------+
//   (little-endian)
//
// A frame starts with FRAME_MARK, which no JSON line does (a line starts with `{`), so one reader
// (ManagerStreamReader) splits a stream mixing both. A node says `frames: 1` in its hello; only then
// does the manager grant in frames, and a node renews in frames only once it received a framed grant:
// either side of another build keeps to JSON lines. A value that does not fit a frame (a term or seq
// past 2^32 - 1) goes as a JSON line. The reader decodes a frame into one object it reuses: whoever
// receives it must copy what it keeps (the manager and the lease client only read numbers from it).
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import { LINE_BYTES_MAX } from './manager-protocol.js';

/** The first byte of a binary frame (never the first byte of a JSON line). */
export const FRAME_MARK = 0x01;
export const FrameKind = { RENEW: 1, GRANT: 2 } as const;
export const RENEW_FRAME_BYTES = 12;
export const GRANT_FRAME_BYTES = 40;

const KIND = 1;
const NODE = 2;
const SEQ = 4;
const TERM = 8;
const LEASE_MS = 16;
const RENEW_MS = 24;
const DRIFT_MS = 32;
const U32_MAX = 0xffff_ffff;
const U16_MAX = 0xffff;
const NEWLINE = 0x0a;

/** The renew a frame carries (decoded into one object the reader reuses). */
export interface RenewMessage { t: 'renew'; node: number; seq: number; term: number }
/** The grant a frame carries (decoded into one object the reader reuses). */
export interface GrantMessage { t: 'grant'; seq: number; leaseMs: number; renewMs: number; driftMs: number; term: number }

const fitsU32 = (x: number): boolean => Number.isInteger(x) && x >= 0 && x <= U32_MAX;

/**
 * Encodes one kind of frame into a buffer it reuses while the socket takes each write at once (a
 * write still queued keeps its bytes: the next one gets a new buffer).
 */
class FrameWriter {
  private buf: Buffer;

  constructor(private readonly bytes: number) {
    this.buf = Buffer.alloc(bytes);
  }

  /** The buffer to fill for the next frame (zeroed padding stays zero). */
  next(): Buffer {
    return this.buf;
  }

  /** `queued` = the socket's writableLength after the write: anything but 0 (undefined: a socket that
   *  does not say) and the socket may still hold this buffer, so the next frame gets a new one. */
  sent(queued: number | undefined): void {
    if (queued !== 0) this.buf = Buffer.alloc(this.bytes);
  }
}

/** Writes renew frames (the node's side); null from renew() when the values do not fit a frame. */
export class RenewWriter {
  private readonly w = new FrameWriter(RENEW_FRAME_BYTES);

  renew(node: number, seq: number, term: number): Buffer | null {
    if (!(Number.isInteger(node) && node >= 0 && node <= U16_MAX) || !fitsU32(seq) || !fitsU32(term)) return null;
    const b = this.w.next();
    b[0] = FRAME_MARK;
    b[KIND] = FrameKind.RENEW;
    b.writeUInt16LE(node, NODE);
    b.writeUInt32LE(seq, SEQ);
    b.writeUInt32LE(term, TERM);
    return b;
  }

  /** After the socket write: `queued` = the socket's writableLength (0: the buffer is free again). */
  sent(queued: number | undefined): void {
    this.w.sent(queued);
  }
}

/** Writes grant frames (the manager's side); null from grant() when the values do not fit a frame. */
export class GrantWriter {
  private readonly w = new FrameWriter(GRANT_FRAME_BYTES);

  grant(seq: number, leaseMs: number, renewMs: number, driftMs: number, term: number): Buffer | null {
    if (!fitsU32(seq) || !fitsU32(term)) return null;
    const b = this.w.next();
    b[0] = FRAME_MARK;
    b[KIND] = FrameKind.GRANT;
    b.writeUInt32LE(seq, SEQ);
    b.writeUInt32LE(term, TERM);
    b.writeDoubleLE(leaseMs, LEASE_MS);
    b.writeDoubleLE(renewMs, RENEW_MS);
    b.writeDoubleLE(driftMs, DRIFT_MS);
    return b;
  }

  sent(queued: number | undefined): void {
    this.w.sent(queued);
  }
}

function frameBytes(kind: number): number {
  if (kind === FrameKind.RENEW) return RENEW_FRAME_BYTES;
  if (kind === FrameKind.GRANT) return GRANT_FRAME_BYTES;
  throw new RowanError(ErrorCodes.BAD_FRAME, `manager protocol: a frame of unknown kind ${kind}`);
}

/**
 * Splits a byte stream of JSON lines and binary frames into messages, in order, each handed to `each`
 * as it completes. Bytes of an incomplete message wait in a list of chunks (copies: a chunk is never
 * kept, so a socket may read into one buffer it reuses), joined only once it can complete. BAD_FRAME for a line that is not JSON or a
 * frame of unknown kind; FRAME_TOO_LARGE for a line over LINE_BYTES_MAX.
 */
export class ManagerStreamReader<T> {
  private held: Buffer[] = [];
  private heldBytes = 0;
  private readonly renewMsg: RenewMessage = { t: 'renew', node: 0, seq: 0, term: 0 };
  private readonly grantMsg: GrantMessage = { t: 'grant', seq: 0, leaseMs: 0, renewMs: 0, driftMs: 0, term: 0 };
  /** A frame came on this stream: the other side reads frames too (a node renews in frames from then on). */
  framed = false;
  /** The longest line held: LINE_BYTES_MAX, or less for a peer that has not authenticated yet. */
  lineBytesMax = LINE_BYTES_MAX;
  /** Said in FRAME_TOO_LARGE's message after the limit ("before the handshake"). */
  limitNote = '';

  push(chunk: Buffer | string, each: (m: T) => void): void {
    let buf = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
    if (this.heldBytes > 0) {
      if (!this.completes(buf)) return this.hold(Buffer.from(buf)); // a copy: the socket may read into `chunk` again
      this.held.push(buf);
      buf = Buffer.concat(this.held, this.heldBytes + buf.length);
      this.held = [];
      this.heldBytes = 0;
    }
    let i = 0;
    while (i < buf.length) {
      const next = buf[i] === FRAME_MARK ? this.frame(buf, i, each) : this.line(buf, i, each);
      if (next < 0) break;
      i = next;
    }
    if (i < buf.length) this.hold(Buffer.from(buf.subarray(i))); // a copy: the rest of `buf` may be reused
  }

  /** Whether `chunk` can complete the held bytes' first message. */
  private completes(chunk: Buffer): boolean {
    const first = this.held[0]!;
    if (first[0] !== FRAME_MARK) return chunk.includes(NEWLINE);
    if (first.length < 2) return true; // the kind is in `chunk`
    return this.heldBytes + chunk.length >= frameBytes(first[1]!);
  }

  private hold(b: Buffer): void {
    this.held.push(b);
    this.heldBytes += b.length;
    if (this.heldBytes > this.lineBytesMax) throw new RowanError(ErrorCodes.FRAME_TOO_LARGE, `manager protocol: a line over ${this.lineBytesMax} B${this.limitNote}`);
  }

  /** The frame at `i`: the offset after it, or -1 when incomplete. */
  private frame(buf: Buffer, i: number, each: (m: T) => void): number {
    if (buf.length - i < 2) return -1;
    const kind = buf[i + KIND]!;
    const end = i + frameBytes(kind);
    if (end > buf.length) return -1;
    this.framed = true;
    if (kind === FrameKind.RENEW) {
      const m = this.renewMsg;
      m.node = buf.readUInt16LE(i + NODE);
      m.seq = buf.readUInt32LE(i + SEQ);
      m.term = buf.readUInt32LE(i + TERM);
      each(m as T);
    } else {
      const m = this.grantMsg;
      m.seq = buf.readUInt32LE(i + SEQ);
      m.term = buf.readUInt32LE(i + TERM);
      m.leaseMs = buf.readDoubleLE(i + LEASE_MS);
      m.renewMs = buf.readDoubleLE(i + RENEW_MS);
      m.driftMs = buf.readDoubleLE(i + DRIFT_MS);
      each(m as T);
    }
    return end;
  }

  /** The line at `i`: the offset after its newline, or -1 when incomplete. */
  private line(buf: Buffer, i: number, each: (m: T) => void): number {
    const nl = buf.indexOf(NEWLINE, i);
    if (nl < 0) return -1;
    if (nl === i) return nl + 1;
    const text = buf.toString('utf8', i, nl);
    let m: T;
    try {
      m = JSON.parse(text) as T;
    } catch {
      throw new RowanError(ErrorCodes.BAD_FRAME, `manager protocol: a line that is not JSON (${text.slice(0, 80)})`);
    }
    each(m);
    return nl + 1;
  }
}
