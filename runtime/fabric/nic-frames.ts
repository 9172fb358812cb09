// The wire format of the tcp fabric: what a sender (runtime/fabric/tcp.ts) and the soft RNIC (the
// nic actor) exchange over one TCP connection, which plays one RC QP: reliable, in order, pipelined.
// Every frame, both directions, little-endian:
//
//   byte 0          4         5      6          8              12
//        +----------+---------+------+----------+--------------+----------------------+
//        | length   | version | op   | flags=0  | request id   | body (length - 8 B)  |
//        +----------+---------+------+----------+--------------+----------------------+
//   length counts the bytes after itself (8 + body) and is at most the decoder's frame limit.
//
//   request op        body                                   reply op (op | 0x80)   body
//   HELLO  0x01  version u32, senderId u32, nonce 32 B   HELLO  0x81  version u32, stride u32,
//                                                                     segmentBytes u32, frameBytesMax u32,
//                                                                     flags u32 (bit 0: auth required),
//                                                                     nonce 32 B, proof 32 B
//   AUTH   0x06  proof 32 B                              AUTH   0x86  (empty)
//   SEND   0x02  data (whole 64 B strides)               SEND   0x82  offset u64, reissues u16,
//                                                                     noBufferRetries u16
//   WRITE  0x03  offset u64, data                        WRITE  0x83  (empty)
//   READ   0x04  offset u64, length u32                  READ   0x84  data
//   ALLOC  0x05  ownerId u32                             ALLOC  0x85  segment u32, offset u64, length u32
//   any failure                                          ERROR  0xff  codeLength u8, code (ASCII),
//                                                                     message (UTF-8, the rest)
// u64 fields travel as two u32 halves and must be safe integers. An error reply carries the request
// id when the header was readable (0 otherwise) and a stable code (config/base/errors.ts).
//
// Authentication (version 2; docs/security.md): HELLO and AUTH are a mutual challenge-response
// over the cluster secret (config/base/secret.ts). The nic's HELLO reply proves the secret with
// HMAC(secret, NIC_LABEL | sender nonce | nic nonce); the sender checks it, then sends AUTH with
// HMAC(secret, SENDER_LABEL | nic nonce | sender nonce). Until AUTH succeeded the nic executes nothing:
// any other frame is answered ROWAN_ERR_NOAUTH and the connection is closed. A nic started without a
// secret (--no-auth) sets no auth flag and a zero proof, and needs no AUTH. Version 1 peers fail at the
// first header (BAD_FRAME: not version 2).
//
// Decoding never trusts a field: a frame whose header is unreadable (bad version or flags, a length
// below the header or above the limit) poisons the stream -- the decoder throws and the reader must
// reply and close, since nothing after it can be framed. A well-framed frame with an unknown op or a
// malformed body throws a RowanError carrying the request id: the reader replies and goes on.
import { ErrorCodes, RowanError, type ErrorCode } from '../../config/base/errors.js';
import { NONCE_BYTES, PROOF_BYTES } from '../../config/base/secret.js';

/** 2: HELLO carries nonces and proofs, and AUTH exists (1 had no authentication). */
export const FRAME_VERSION = 2;
/** HMAC labels of the two sides' proofs (different, so a proof cannot be reflected back). */
export const NIC_LABEL = 'rowan-nic-v2 nic';
export const SENDER_LABEL = 'rowan-nic-v2 sender';
/** HELLO reply flag: the nic requires AUTH. */
export const HELLO_FLAG_AUTH = 1;
/** Frames a peer may send before it has authenticated are small (HELLO, AUTH): larger ones poison. */
export const FRAME_BYTES_MAX_UNAUTHENTICATED = 256;
/** The length prefix. */
export const LENGTH_BYTES = 4;
/** Length prefix + version + op + flags + request id. */
export const HEADER_BYTES = 12;
/** Bytes of a frame after its length prefix that are header, not body. */
const HEAD_AFTER_LENGTH = HEADER_BYTES - LENGTH_BYTES;
/** Default frame limit: one 4 MiB segment of data plus a WRITE's offset and the header. */
export const FRAME_BYTES_MAX_DEFAULT = 4 * 1024 * 1024 + 64;

export const Op = {
  HELLO: 0x01,
  SEND: 0x02,
  WRITE: 0x03,
  READ: 0x04,
  ALLOC: 0x05,
  AUTH: 0x06,
} as const;
export type RequestOp = (typeof Op)[keyof typeof Op];
/** A reply's op is its request's op with this bit set. */
export const REPLY_BIT = 0x80;
export const OP_ERROR = 0xff;

const TWO32 = 2 ** 32;
/** HELLO reply body: five u32 fields, the nonce and the proof. */
const HELLO_REPLY_BYTES = 20 + NONCE_BYTES + PROOF_BYTES;

export type Request =
  | { op: typeof Op.HELLO; id: number; version: number; senderId: number; nonce: Uint8Array }
  | { op: typeof Op.AUTH; id: number; proof: Uint8Array }
  | { op: typeof Op.SEND; id: number; data: Uint8Array }
  | { op: typeof Op.WRITE; id: number; offset: number; data: Uint8Array }
  | { op: typeof Op.READ; id: number; offset: number; length: number }
  | { op: typeof Op.ALLOC; id: number; ownerId: number };

export interface HelloInfo {
  version: number;
  stride: number;
  segmentBytes: number;
  frameBytesMax: number;
}

/** The nic's half of the handshake in its HELLO reply. */
export interface HelloAuth {
  /** The nic requires AUTH (it has a secret). */
  auth: boolean;
  nonce: Uint8Array;
  /** HMAC(secret, NIC_LABEL | sender nonce | nic nonce); zeros when `auth` is false. */
  proof: Uint8Array;
}

export type Reply =
  | ({ op: typeof Op.HELLO; id: number } & HelloInfo & HelloAuth)
  | { op: typeof Op.AUTH; id: number }
  | { op: typeof Op.SEND; id: number; offset: number; reissues: number; noBufferRetries: number }
  | { op: typeof Op.WRITE; id: number }
  | { op: typeof Op.READ; id: number; data: Uint8Array }
  | { op: typeof Op.ALLOC; id: number; segment: number; offset: number; length: number }
  | { op: typeof OP_ERROR; id: number; code: string; message: string };

/** One well-framed frame; `body` is a view into the received bytes. */
export interface RawFrame {
  op: number;
  id: number;
  body: Uint8Array;
}

function frameError(code: ErrorCode, message: string, id = 0): RowanError {
  return new RowanError(code, message, { id });
}

// ---- encoding ----------------------------------------------------------------------------------------

/** A frame with a `bodyBytes`-byte body whose header is filled in; the caller writes the body at 12. */
export function allocFrame(op: number, id: number, bodyBytes: number): Buffer {
  const f = Buffer.allocUnsafe(HEADER_BYTES + bodyBytes);
  f.writeUInt32LE(HEAD_AFTER_LENGTH + bodyBytes, 0);
  f[4] = FRAME_VERSION;
  f[5] = op;
  f.writeUInt16LE(0, 6);
  f.writeUInt32LE(id >>> 0, 8);
  return f;
}

function putU64(f: Buffer, at: number, v: number): void {
  f.writeUInt32LE(v % TWO32, at);
  f.writeUInt32LE(Math.floor(v / TWO32), at + 4);
}

/** SEND, the hot path: one allocation, one copy of the caller's bytes (which it may then reuse). */
export function encodeSend(id: number, data: Uint8Array): Buffer {
  const f = allocFrame(Op.SEND, id, data.length);
  f.set(data, HEADER_BYTES);
  return f;
}

export function encodeRequest(r: Request): Buffer {
  switch (r.op) {
    case Op.HELLO: {
      const f = allocFrame(r.op, r.id, 8 + NONCE_BYTES);
      f.writeUInt32LE(r.version, 12);
      f.writeUInt32LE(r.senderId, 16);
      f.set(r.nonce.subarray(0, NONCE_BYTES), 20);
      return f;
    }
    case Op.AUTH: {
      const f = allocFrame(r.op, r.id, PROOF_BYTES);
      f.set(r.proof.subarray(0, PROOF_BYTES), 12);
      return f;
    }
    case Op.SEND:
      return encodeSend(r.id, r.data);
    case Op.WRITE: {
      const f = allocFrame(r.op, r.id, 8 + r.data.length);
      putU64(f, 12, r.offset);
      f.set(r.data, 20);
      return f;
    }
    case Op.READ: {
      const f = allocFrame(r.op, r.id, 12);
      putU64(f, 12, r.offset);
      f.writeUInt32LE(r.length, 20);
      return f;
    }
    case Op.ALLOC: {
      const f = allocFrame(r.op, r.id, 4);
      f.writeUInt32LE(r.ownerId, 12);
      return f;
    }
  }
}

export function encodeReply(r: Reply): Buffer {
  switch (r.op) {
    case Op.HELLO: {
      const f = allocFrame(r.op | REPLY_BIT, r.id, HELLO_REPLY_BYTES);
      f.writeUInt32LE(r.version, 12);
      f.writeUInt32LE(r.stride, 16);
      f.writeUInt32LE(r.segmentBytes, 20);
      f.writeUInt32LE(r.frameBytesMax, 24);
      f.writeUInt32LE(r.auth ? HELLO_FLAG_AUTH : 0, 28);
      f.set(r.nonce.subarray(0, NONCE_BYTES), 32);
      f.set(r.proof.subarray(0, PROOF_BYTES), 32 + NONCE_BYTES);
      return f;
    }
    case Op.AUTH:
      return allocFrame(r.op | REPLY_BIT, r.id, 0);
    case Op.SEND: {
      const f = allocFrame(r.op | REPLY_BIT, r.id, 12);
      putU64(f, 12, r.offset);
      f.writeUInt16LE(Math.min(r.reissues, 0xffff), 20);
      f.writeUInt16LE(Math.min(r.noBufferRetries, 0xffff), 22);
      return f;
    }
    case Op.WRITE:
      return allocFrame(r.op | REPLY_BIT, r.id, 0);
    case Op.READ: {
      const f = allocFrame(r.op | REPLY_BIT, r.id, r.data.length);
      f.set(r.data, 12);
      return f;
    }
    case Op.ALLOC: {
      const f = allocFrame(r.op | REPLY_BIT, r.id, 16);
      f.writeUInt32LE(r.segment, 12);
      putU64(f, 16, r.offset);
      f.writeUInt32LE(r.length, 24);
      return f;
    }
    case OP_ERROR: {
      const code = Buffer.from(r.code.slice(0, 255), 'latin1');
      // Messages are for people; cap them so an error reply stays small.
      const msg = Buffer.from(r.message.slice(0, 1024), 'utf8');
      const f = allocFrame(OP_ERROR, r.id, 1 + code.length + msg.length);
      f[12] = code.length;
      code.copy(f, 13);
      msg.copy(f, 13 + code.length);
      return f;
    }
  }
}

/** The ERROR reply for a failure (a RowanError keeps its code; anything else is internal). */
export function errorReply(id: number, err: unknown): Buffer {
  const code = err instanceof RowanError ? err.code : ErrorCodes.INTERNAL;
  const message = err instanceof Error ? err.message : String(err);
  return encodeReply({ op: OP_ERROR, id, code, message });
}

// ---- decoding ----------------------------------------------------------------------------------------

/**
 * Splits a byte stream into frames. push() chunks as they arrive, then take frames with next() until it
 * returns null. next() throws BAD_FRAME or FRAME_TOO_LARGE when the stream cannot be framed any more.
 */
export class FrameDecoder {
  private buf: Uint8Array = new Uint8Array(0);
  private pos = 0;
  /** Chunks received after `buf`, not merged yet: merged once the bytes asked for have all arrived, so
   *  a frame that trickles in as many small chunks is copied once, not once per chunk (linear time). */
  private queued: Uint8Array[] = [];
  private queuedBytes = 0;
  private poisoned: RowanError | null = null;
  /** Bytes copied while merging chunks (at most about twice what was received; a regression test reads it). */
  copiedBytes = 0;

  /** Frames above this many bytes poison the stream; a sender raises it to what its nic announced. */
  constructor(public frameBytesMax: number = FRAME_BYTES_MAX_DEFAULT) {}

  push(chunk: Uint8Array): void {
    if (this.pos >= this.buf.length && this.queuedBytes === 0) {
      this.buf = chunk;
      this.pos = 0;
    } else {
      this.queued.push(chunk);
      this.queuedBytes += chunk.length;
    }
  }

  /** Bytes received and not yet returned as frames. */
  buffered(): number {
    return this.buf.length - this.pos + this.queuedBytes;
  }

  /** Make `n` unread bytes contiguous in `buf` if they have all arrived; false if not yet. */
  private have(n: number): boolean {
    const inBuf = this.buf.length - this.pos;
    if (inBuf >= n) return true;
    if (inBuf + this.queuedBytes < n) return false;
    // Everything buffered goes into one array: the unread tail (less than n bytes) and every queued chunk.
    const merged = new Uint8Array(inBuf + this.queuedBytes);
    merged.set(this.buf.subarray(this.pos), 0);
    let at = inBuf;
    for (const c of this.queued) {
      merged.set(c, at);
      at += c.length;
    }
    this.copiedBytes += merged.length;
    this.buf = merged;
    this.pos = 0;
    this.queued = [];
    this.queuedBytes = 0;
    return true;
  }

  next(): RawFrame | null {
    if (this.poisoned) throw this.poisoned;
    if (!this.have(HEADER_BYTES)) return null;
    let b = this.buf;
    let p = this.pos;
    const length = (b[p]! | (b[p + 1]! << 8) | (b[p + 2]! << 16) | (b[p + 3]! << 24)) >>> 0;
    const id = (b[p + 8]! | (b[p + 9]! << 8) | (b[p + 10]! << 16) | (b[p + 11]! << 24)) >>> 0;
    if (b[p + 4] !== FRAME_VERSION || b[p + 6] !== 0 || b[p + 7] !== 0) {
      return this.poison(frameError(ErrorCodes.BAD_FRAME, `frame header is not version ${FRAME_VERSION} with zero flags`));
    }
    if (length < HEAD_AFTER_LENGTH) {
      return this.poison(frameError(ErrorCodes.BAD_FRAME, `frame length ${length} is below the ${HEAD_AFTER_LENGTH} B header`, id));
    }
    if (length + LENGTH_BYTES > this.frameBytesMax) {
      return this.poison(
        frameError(ErrorCodes.FRAME_TOO_LARGE, `frame of ${length + LENGTH_BYTES} B exceeds the ${this.frameBytesMax} B limit`, id),
      );
    }
    if (!this.have(LENGTH_BYTES + length)) return null;
    b = this.buf;
    p = this.pos;
    const end = p + LENGTH_BYTES + length;
    this.pos = end;
    return { op: b[p + 5]!, id, body: b.subarray(p + HEADER_BYTES, end) };
  }

  /** The stream ended: throws BAD_FRAME if it stopped inside a frame (a truncated frame). */
  end(): void {
    if (this.poisoned) throw this.poisoned;
    const rest = this.buffered();
    if (rest > 0) throw frameError(ErrorCodes.BAD_FRAME, `stream ended inside a frame (${rest} B of it received)`);
  }

  private poison(err: RowanError): never {
    this.poisoned = err;
    throw err;
  }
}

/** Decode exactly one frame from `bytes` (tests, tools): truncated or trailing bytes are BAD_FRAME. */
export function decodeFrame(bytes: Uint8Array, frameBytesMax = FRAME_BYTES_MAX_DEFAULT): RawFrame {
  const d = new FrameDecoder(frameBytesMax);
  d.push(bytes);
  const f = d.next();
  if (!f) throw frameError(ErrorCodes.BAD_FRAME, `truncated frame: ${bytes.length} B do not hold one whole frame`);
  if (d.buffered() > 0) throw frameError(ErrorCodes.BAD_FRAME, `${d.buffered()} B after the frame`, f.id);
  return f;
}

function view(body: Uint8Array): DataView {
  return new DataView(body.buffer, body.byteOffset, body.byteLength);
}

function u64(v: DataView, at: number, id: number): number {
  const hi = v.getUint32(at + 4, true);
  if (hi >= 2 ** 21) throw frameError(ErrorCodes.BAD_FRAME, `u64 field at ${at} is not a safe integer`, id);
  return hi * TWO32 + v.getUint32(at, true);
}

function needBody(f: RawFrame, what: string, exact: number | null, min = 0): void {
  const n = f.body.length;
  if ((exact !== null && n !== exact) || n < min) {
    const want = exact !== null ? `${exact} B` : `at least ${min} B`;
    throw frameError(ErrorCodes.BAD_FRAME, `${what} body is ${n} B, expected ${want}`, f.id);
  }
}

/** A request frame's fields; throws UNKNOWN_OP or BAD_FRAME (with the request id in details). */
export function parseRequest(f: RawFrame): Request {
  const v = view(f.body);
  switch (f.op) {
    case Op.HELLO:
      needBody(f, 'HELLO', 8 + NONCE_BYTES);
      return { op: Op.HELLO, id: f.id, version: v.getUint32(0, true), senderId: v.getUint32(4, true), nonce: f.body.subarray(8) };
    case Op.AUTH:
      needBody(f, 'AUTH', PROOF_BYTES);
      return { op: Op.AUTH, id: f.id, proof: f.body };
    case Op.SEND:
      needBody(f, 'SEND', null, 1);
      return { op: Op.SEND, id: f.id, data: f.body };
    case Op.WRITE:
      needBody(f, 'WRITE', null, 9);
      return { op: Op.WRITE, id: f.id, offset: u64(v, 0, f.id), data: f.body.subarray(8) };
    case Op.READ:
      needBody(f, 'READ', 12);
      return { op: Op.READ, id: f.id, offset: u64(v, 0, f.id), length: v.getUint32(8, true) };
    case Op.ALLOC:
      needBody(f, 'ALLOC', 4);
      return { op: Op.ALLOC, id: f.id, ownerId: v.getUint32(0, true) };
    default:
      throw frameError(ErrorCodes.UNKNOWN_OP, `unknown request op 0x${f.op.toString(16)}`, f.id);
  }
}

const ERROR_CODE_RE = /^ROWAN_ERR_[A-Z0-9_]{1,64}$/;

/** A reply frame's fields; throws UNKNOWN_OP or BAD_FRAME. */
export function parseReply(f: RawFrame): Reply {
  const v = view(f.body);
  switch (f.op) {
    case Op.HELLO | REPLY_BIT:
      needBody(f, 'HELLO reply', HELLO_REPLY_BYTES);
      return {
        op: Op.HELLO,
        id: f.id,
        version: v.getUint32(0, true),
        stride: v.getUint32(4, true),
        segmentBytes: v.getUint32(8, true),
        frameBytesMax: v.getUint32(12, true),
        auth: (v.getUint32(16, true) & HELLO_FLAG_AUTH) !== 0,
        nonce: new Uint8Array(f.body.subarray(20, 20 + NONCE_BYTES)),
        proof: new Uint8Array(f.body.subarray(20 + NONCE_BYTES)),
      };
    case Op.AUTH | REPLY_BIT:
      needBody(f, 'AUTH reply', 0);
      return { op: Op.AUTH, id: f.id };
    case Op.SEND | REPLY_BIT:
      needBody(f, 'SEND reply', 12);
      return { op: Op.SEND, id: f.id, offset: u64(v, 0, f.id), reissues: v.getUint16(8, true), noBufferRetries: v.getUint16(10, true) };
    case Op.WRITE | REPLY_BIT:
      needBody(f, 'WRITE reply', 0);
      return { op: Op.WRITE, id: f.id };
    case Op.READ | REPLY_BIT:
      return { op: Op.READ, id: f.id, data: f.body };
    case Op.ALLOC | REPLY_BIT:
      needBody(f, 'ALLOC reply', 16);
      return { op: Op.ALLOC, id: f.id, segment: v.getUint32(0, true), offset: u64(v, 4, f.id), length: v.getUint32(12, true) };
    case OP_ERROR: {
      needBody(f, 'ERROR reply', null, 1);
      const n = f.body[0]!;
      if (1 + n > f.body.length) throw frameError(ErrorCodes.BAD_FRAME, `ERROR reply code of ${n} B overruns its body`, f.id);
      const code = Buffer.from(f.body.buffer, f.body.byteOffset + 1, n).toString('latin1');
      if (!ERROR_CODE_RE.test(code)) throw frameError(ErrorCodes.BAD_FRAME, 'ERROR reply code is not a ROWAN_ERR_ code', f.id);
      const message = Buffer.from(f.body.buffer, f.body.byteOffset + 1 + n, f.body.length - 1 - n).toString('utf8');
      return { op: OP_ERROR, id: f.id, code, message };
    }
    default:
      throw frameError(ErrorCodes.UNKNOWN_OP, `unknown reply op 0x${f.op.toString(16)}`, f.id);
  }
}
