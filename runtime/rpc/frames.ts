// The client protocol's codec (DESIGN §7; layout and diagram in ./frames-layout.ts): binary,
// length-prefixed, pipelined frames over TCP between RowanClient and a worker actor's client port.
//
// Two stages, two kinds of failure:
//   - FrameReader splits a byte stream into whole frames. A length prefix it cannot trust (below the
//     header, above the limit) means nothing after it can be framed: the reader is poisoned and every
//     later next() throws the same error; the connection must be answered (if at all) and closed.
//   - decodeRequest / decodeResponse check one whole frame field by field. A bad field (reserved bits,
//     an unknown op, lengths that disagree with the frame length, a key or value over its limit) throws
//     a RowanError whose details carry the request id, so the server answers that request and goes on.
// Either way only RowanErrors come out (never a RangeError from a DataView), and a request reaches a
// handler only after every field was checked.
//
// Decoded keys and values are views into the received bytes, not copies. The reader never writes into
// a buffer it has handed out, so a view stays valid for as long as someone holds it.
import { ErrorCodes, RowanError, invariant, type ErrorCode } from '../../config/base/errors.js';
import * as L from './frames-layout.js';

export { Op, Status, PROTOCOL_VERSION, ExpiryKind, EXPIRY_MS_MAX, type ExpiryKindCode, type FrameLimits } from './frames-layout.js';

const TWO32 = 2 ** 32;
/** Chunks below this are copied into a staging buffer of STAGE_BYTES instead of queued one by one. */
const SMALL_CHUNK_BYTES = 1024;
const STAGE_BYTES = 16 * 1024;
const EMPTY = new Uint8Array(0);

export type Request =
  | { op: typeof L.Op.HELLO; id: number; term: number; version: number; /** absent: zeros */ nonce?: Uint8Array; /** absent: client */ role?: L.HelloRoleCode }
  | { op: typeof L.Op.AUTH; id: number; term: number; proof: Uint8Array }
  | { op: typeof L.Op.PUT; id: number; term: number; key: Uint8Array; value: Uint8Array }
  | { op: typeof L.Op.PUT_EXPIRES; id: number; term: number; key: Uint8Array; value: Uint8Array; kind: L.ExpiryKindCode; ms: number }
  | { op: typeof L.Op.GET | typeof L.Op.DEL | typeof L.Op.GET_REPLICA | typeof L.Op.COPY_SHARD | typeof L.Op.PEER_LEASE; id: number; term: number; key: Uint8Array }
  | { op: typeof L.Op.CONFIG; id: number; term: number }
  | { op: typeof L.Op.REPLICATE; id: number; term: number; block: Uint8Array };

export type Response =
  | { status: typeof L.Status.OK | typeof L.Status.NOT_FOUND; id: number; term: number }
  | { status: typeof L.Status.VALUE; id: number; term: number; value: Uint8Array }
  | { status: typeof L.Status.ERROR; id: number; term: number; code: string; message: string }
  | { status: typeof L.Status.CONFIG; id: number; term: number; json: string }
  | { status: typeof L.Status.CHALLENGE; id: number; term: number; nonce: Uint8Array; proof: Uint8Array };

/** A decoding failure; `details.requestId` is the id of the frame it concerns, or null if unknown. */
function frameError(code: ErrorCode, message: string, requestId: number | null): RowanError {
  return new RowanError(code, message, { requestId });
}

/** The request id a decoding error concerns, or null when the frame's id could not be read. */
export function requestIdOf(err: RowanError): number | null {
  const id = err.details?.['requestId'];
  return typeof id === 'number' ? id : null;
}

// ---- encoding ----------------------------------------------------------------------------------------

function header(first: number, id: number, term: number, bodyBytes: number): Buffer {
  invariant(Number.isSafeInteger(term) && term >= 0, `term ${term} is not a non-negative safe integer`);
  const f = Buffer.allocUnsafe(L.HEADER_BYTES + bodyBytes);
  f.writeUInt32LE(L.LENGTH_MIN + bodyBytes, L.LENGTH_OFF);
  f[L.OP_OFF] = first;
  f[L.FLAGS_OFF] = 0;
  f.writeUInt16LE(0, L.RESERVED_OFF);
  f.writeUInt32LE(id >>> 0, L.REQUEST_ID_OFF);
  f.writeUInt32LE(Math.floor(term / TWO32), L.TERM_HI_OFF);
  f.writeUInt32LE(term % TWO32, L.TERM_LO_OFF);
  return f;
}

function keyRequest(op: number, id: number, term: number, key: Uint8Array): Buffer {
  const f = header(op, id, term, L.KEY_OFF + key.length);
  f.writeUInt16LE(key.length, L.HEADER_BYTES + L.KEY_LEN_OFF);
  f.set(key, L.HEADER_BYTES + L.KEY_OFF);
  return f;
}

/** One request frame; one allocation, one copy of the key and value. Lengths are the caller's to check. */
export function encodeRequest(r: Request): Buffer {
  switch (r.op) {
    case L.Op.HELLO: {
      const f = header(r.op, r.id, r.term, L.HELLO_BODY_BYTES);
      f.writeUInt32LE(r.version, L.HEADER_BYTES + L.HELLO_VERSION_OFF);
      f.fill(0, L.HEADER_BYTES + L.HELLO_NONCE_OFF);
      if (r.nonce) f.set(r.nonce.subarray(0, L.NONCE_BYTES), L.HEADER_BYTES + L.HELLO_NONCE_OFF);
      f.writeUInt32LE(r.role ?? L.HelloRole.CLIENT, L.HEADER_BYTES + L.HELLO_ROLE_OFF);
      return f;
    }
    case L.Op.AUTH: {
      const f = header(r.op, r.id, r.term, L.AUTH_BODY_BYTES);
      f.fill(0, L.HEADER_BYTES);
      f.set(r.proof.subarray(0, L.PROOF_BYTES), L.HEADER_BYTES);
      return f;
    }
    case L.Op.PUT: {
      const b = L.HEADER_BYTES;
      const f = header(r.op, r.id, r.term, L.PUT_KEY_OFF + r.key.length + r.value.length);
      f.writeUInt16LE(r.key.length, b + L.PUT_KEY_LEN_OFF);
      f.writeUInt32LE(r.value.length, b + L.PUT_VALUE_LEN_OFF);
      f.set(r.key, b + L.PUT_KEY_OFF);
      f.set(r.value, b + L.PUT_KEY_OFF + r.key.length);
      return f;
    }
    case L.Op.PUT_EXPIRES: {
      const b = L.HEADER_BYTES;
      invariant(validExpiry(r.kind, r.ms), `PUT_EXPIRES kind ${r.kind} ms ${r.ms}`);
      const f = header(r.op, r.id, r.term, L.PUTX_KEY_OFF + r.key.length + r.value.length);
      f.writeUInt16LE(r.key.length, b + L.PUT_KEY_LEN_OFF);
      f.writeUInt32LE(r.value.length, b + L.PUT_VALUE_LEN_OFF);
      f[b + L.PUTX_KIND_OFF] = r.kind;
      f[b + L.PUTX_KIND_OFF + 1] = 0;
      f.writeUInt32LE(r.ms % TWO32, b + L.PUTX_MS_LO_OFF);
      f.writeUInt32LE(Math.floor(r.ms / TWO32), b + L.PUTX_MS_HI_OFF);
      f.set(r.key, b + L.PUTX_KEY_OFF);
      f.set(r.value, b + L.PUTX_KEY_OFF + r.key.length);
      return f;
    }
    case L.Op.GET:
    case L.Op.DEL:
    case L.Op.GET_REPLICA:
    case L.Op.COPY_SHARD:
    case L.Op.PEER_LEASE:
      return keyRequest(r.op, r.id, r.term, r.key);
    case L.Op.CONFIG:
      return header(r.op, r.id, r.term, 0);
    case L.Op.REPLICATE: {
      const f = header(r.op, r.id, r.term, r.block.length);
      f.set(r.block, L.HEADER_BYTES);
      return f;
    }
  }
}

function blob(status: number, id: number, term: number, bytes: Uint8Array): Buffer {
  const f = header(status, id, term, L.BLOB_OFF + bytes.length);
  f.writeUInt32LE(bytes.length, L.HEADER_BYTES + L.BLOB_LEN_OFF);
  f.set(bytes, L.HEADER_BYTES + L.BLOB_OFF);
  return f;
}

const ERROR_CODE_RE = /^ROWAN_ERR_[A-Z0-9_]+$/;

export function encodeResponse(r: Response): Buffer {
  switch (r.status) {
    case L.Status.OK:
    case L.Status.NOT_FOUND:
      return header(r.status, r.id, r.term, 0);
    case L.Status.VALUE:
      return blob(r.status, r.id, r.term, r.value);
    case L.Status.CONFIG:
      return blob(r.status, r.id, r.term, Buffer.from(r.json, 'utf8'));
    case L.Status.CHALLENGE: {
      const f = header(r.status, r.id, r.term, L.CHALLENGE_BODY_BYTES);
      f.set(r.nonce.subarray(0, L.NONCE_BYTES), L.HEADER_BYTES + L.CHALLENGE_NONCE_OFF);
      f.set(r.proof.subarray(0, L.PROOF_BYTES), L.HEADER_BYTES + L.CHALLENGE_PROOF_OFF);
      return f;
    }
    case L.Status.ERROR: {
      const codeOk = ERROR_CODE_RE.test(r.code) && r.code.length <= L.ERROR_CODE_BYTES_MAX;
      const code = Buffer.from(codeOk ? r.code : 'ROWAN_ERR_INTERNAL', 'latin1');
      // 1024 UTF-16 units are at most 4096 UTF-8 bytes: the cut never splits a character's bytes.
      const msg = Buffer.from(r.message.slice(0, L.ERROR_MESSAGE_BYTES_MAX / 4), 'utf8');
      const b = L.HEADER_BYTES;
      const f = header(r.status, r.id, r.term, L.ERROR_CODE_OFF + code.length + 4 + msg.length);
      f.writeUInt16LE(code.length, b + L.ERROR_CODE_LEN_OFF);
      code.copy(f, b + L.ERROR_CODE_OFF);
      f.writeUInt32LE(msg.length, b + L.ERROR_CODE_OFF + code.length);
      msg.copy(f, b + L.ERROR_CODE_OFF + code.length + 4);
      return f;
    }
  }
}

/** The ERROR response for anything thrown: a RowanError keeps its code, the rest is internal. */
export function errorResponse(id: number, term: number, err: unknown): Buffer {
  const code = err instanceof RowanError ? err.code : 'ROWAN_ERR_INTERNAL';
  const message = err instanceof Error ? err.message : String(err);
  return encodeResponse({ status: L.Status.ERROR, id, term, code, message });
}

// ---- framing -----------------------------------------------------------------------------------------

/**
 * Splits a byte stream into whole frames (each returned with its length prefix). Chunks are kept as
 * they arrived (tiny ones gathered into a staging buffer); a frame inside one chunk is returned as a
 * view of it, a frame spanning chunks is copied once into a buffer of its own size -- so a 1 MiB value
 * arriving in 64 KiB pieces costs one copy, not one per piece. Memory is bounded by about one frame
 * plus one chunk: the limit is checked as soon as the length prefix is in.
 */
export class FrameReader {
  /** Received chunks; chunks[first] is the oldest still holding unread bytes (a queue without shift()). */
  private chunks: Uint8Array[] = [];
  private first = 0;
  /** Read position in chunks[first]. */
  private off = 0;
  private bytes = 0;
  private poisoned: RowanError | null = null;
  private readonly scratch = new Uint8Array(L.HEADER_BYTES);
  /** Staging buffer for small chunks, and the queued view of its filled part. */
  private stage: Uint8Array = EMPTY;
  private stageView: Uint8Array | null = null;

  /** Longer frames poison the stream; the owner may change it between frames (a connection raises it
   *  once authenticated). */
  constructor(public frameBytesMax: number) {
    invariant(frameBytesMax >= L.HEADER_BYTES, `frame limit ${frameBytesMax} is below the ${L.HEADER_BYTES} B header`);
  }

  push(chunk: Uint8Array): void {
    if (this.poisoned || chunk.length === 0) return; // nothing after a poisoned prefix is looked at
    this.bytes += chunk.length;
    if (chunk.length >= SMALL_CHUNK_BYTES) {
      this.chunks.push(chunk);
      return;
    }
    // A peer trickling tiny segments must not cost one queued object per byte: copy small chunks into
    // a staging buffer we own. Bytes already in it are never rewritten (views of them may be out).
    const last = this.chunks.length - 1;
    if (this.stageView !== null && last >= this.first && this.chunks[last] === this.stageView && this.stageView.length + chunk.length <= STAGE_BYTES) {
      const end = this.stageView.length;
      this.stage.set(chunk, end);
      this.stageView = this.stage.subarray(0, end + chunk.length); // same start, so `off` stays valid
      this.chunks[last] = this.stageView;
      return;
    }
    this.stage = new Uint8Array(STAGE_BYTES);
    this.stage.set(chunk, 0);
    this.stageView = this.stage.subarray(0, chunk.length);
    this.chunks.push(this.stageView);
  }

  /** Bytes received and not yet returned in a frame. */
  buffered(): number {
    return this.bytes;
  }

  /** The next whole frame, or null until more bytes arrive. Throws (and stays poisoned) on a bad prefix. */
  next(): Uint8Array | null {
    if (this.poisoned) throw this.poisoned;
    if (this.bytes < L.LENGTH_BYTES) return null;
    const h = this.peek(Math.min(this.bytes, L.HEADER_BYTES));
    const length = u32(h, L.LENGTH_OFF);
    // The id is worth reporting only if it lies inside the claimed frame and has arrived.
    const id = h.length >= L.REQUEST_ID_OFF + 4 && length >= L.REQUEST_ID_OFF ? u32(h, L.REQUEST_ID_OFF) : null;
    if (length < L.LENGTH_MIN) {
      return this.poison(frameError(ErrorCodes.BAD_FRAME, `frame length ${length} is below the ${L.LENGTH_MIN} B header`, id));
    }
    if (length + L.LENGTH_BYTES > this.frameBytesMax) {
      return this.poison(
        frameError(ErrorCodes.FRAME_TOO_LARGE, `frame of ${length + L.LENGTH_BYTES} B exceeds the ${this.frameBytesMax} B limit`, id),
      );
    }
    const total = length + L.LENGTH_BYTES;
    return this.bytes < total ? null : this.take(total);
  }

  /** The stream ended; throws BAD_FRAME if it ended inside a frame (that frame is dropped). */
  end(): void {
    if (this.poisoned) throw this.poisoned;
    if (this.bytes === 0) return;
    const h = this.peek(Math.min(this.bytes, L.HEADER_BYTES));
    const id = h.length >= L.REQUEST_ID_OFF + 4 ? u32(h, L.REQUEST_ID_OFF) : null;
    const n = this.bytes;
    this.drop();
    throw frameError(ErrorCodes.BAD_FRAME, `stream ended inside a frame (${n} B of it received)`, id);
  }

  private poison(err: RowanError): never {
    this.poisoned = err;
    this.drop();
    throw err;
  }

  private drop(): void {
    this.chunks = [];
    this.first = 0;
    this.off = 0;
    this.stageView = null;
    this.bytes = 0;
  }

  /** The first n (<= HEADER_BYTES) buffered bytes, without consuming them. */
  private peek(n: number): Uint8Array {
    const c0 = this.chunks[this.first]!;
    if (c0.length - this.off >= n) return c0.subarray(this.off, this.off + n);
    let filled = 0;
    let off = this.off;
    for (let i = this.first; filled < n; i++, off = 0) {
      const c = this.chunks[i]!;
      const k = Math.min(n - filled, c.length - off);
      this.scratch.set(c.subarray(off, off + k), filled);
      filled += k;
    }
    return this.scratch.subarray(0, n);
  }

  /** Consume `total` buffered bytes (total <= buffered) as one frame. */
  private take(total: number): Uint8Array {
    this.bytes -= total;
    const c0 = this.chunks[this.first]!;
    if (c0.length - this.off >= total) {
      const f = c0.subarray(this.off, this.off + total);
      this.off += total;
      if (this.off === c0.length) this.shift();
      return f;
    }
    const f = new Uint8Array(total);
    let filled = 0;
    while (filled < total) {
      const c = this.chunks[this.first]!;
      const k = Math.min(total - filled, c.length - this.off);
      f.set(c.subarray(this.off, this.off + k), filled);
      filled += k;
      this.off += k;
      if (this.off === c.length) this.shift();
    }
    return f;
  }

  /** Done with chunks[first]. O(1): the array is reset when empty, compacted when mostly consumed. */
  private shift(): void {
    this.chunks[this.first++] = EMPTY;
    this.off = 0;
    if (this.first === this.chunks.length) {
      this.chunks.length = 0;
      this.first = 0;
    } else if (this.first >= 1024 && this.first * 2 >= this.chunks.length) {
      this.chunks.splice(0, this.first);
      this.first = 0;
    }
  }
}

function u32(b: Uint8Array, at: number): number {
  return (b[at]! | (b[at + 1]! << 8) | (b[at + 2]! << 16) | (b[at + 3]! << 24)) >>> 0;
}

function u16(b: Uint8Array, at: number): number {
  return b[at]! | (b[at + 1]! << 8);
}

/** A PUT_EXPIRES deadline the protocol carries: a known kind, whole ms in [1, EXPIRY_MS_MAX]. */
function validExpiry(kind: number, ms: number): boolean {
  return (kind === L.ExpiryKind.TTL_MS || kind === L.ExpiryKind.AT_UNIX_MS) && Number.isSafeInteger(ms) && ms >= 1 && ms <= L.EXPIRY_MS_MAX;
}

// ---- decoding ----------------------------------------------------------------------------------------

function decodePutExpires(h: Head, b: Uint8Array, limits: L.FrameLimits): Request {
  if (b.length < L.PUTX_KEY_OFF) bodyIs(h, 'PUT_EXPIRES', L.PUTX_KEY_OFF);
  const keyLen = u16(b, L.PUT_KEY_LEN_OFF);
  const valueLen = u32(b, L.PUT_VALUE_LEN_OFF);
  bodyIs(h, 'PUT_EXPIRES', L.PUTX_KEY_OFF + keyLen + valueLen);
  checkKey(keyLen, limits, h.id);
  if (valueLen > limits.valueBytesMax) throw frameError(ErrorCodes.VALUE_TOO_LARGE, `value is ${valueLen} bytes, limit ${limits.valueBytesMax}`, h.id);
  const kind = b[L.PUTX_KIND_OFF]!;
  const ms = u32(b, L.PUTX_MS_HI_OFF) * TWO32 + u32(b, L.PUTX_MS_LO_OFF);
  if (b[L.PUTX_KIND_OFF + 1] !== 0 || !validExpiry(kind, ms)) {
    throw frameError(ErrorCodes.BAD_FRAME, `PUT_EXPIRES kind ${kind} (1 TTL ms, 2 Unix ms), ${ms} ms (1..${L.EXPIRY_MS_MAX}), reserved byte ${b[L.PUTX_KIND_OFF + 1]} (0)`, h.id);
  }
  const k = L.PUTX_KEY_OFF;
  return { op: L.Op.PUT_EXPIRES, id: h.id, term: h.term, key: b.subarray(k, k + keyLen), value: b.subarray(k + keyLen), kind: kind as L.ExpiryKindCode, ms };
}

interface Head {
  first: number;
  id: number;
  term: number;
  body: Uint8Array;
}

/** The header fields of one whole frame from FrameReader; `what` names the direction in messages. */
function readHead(f: Uint8Array, what: string): Head {
  // FrameReader guarantees these; a caller passing hand-made bytes gets the same typed errors.
  if (f.length < L.HEADER_BYTES) throw frameError(ErrorCodes.BAD_FRAME, `${what} of ${f.length} B is shorter than the header`, null);
  const id = u32(f, L.REQUEST_ID_OFF);
  if (u32(f, L.LENGTH_OFF) + L.LENGTH_BYTES !== f.length)
    throw frameError(ErrorCodes.BAD_FRAME, `${what} length field disagrees with its ${f.length} B`, id);
  if (f[L.FLAGS_OFF] !== 0) throw frameError(ErrorCodes.BAD_FRAME, `${what} flags 0x${f[L.FLAGS_OFF]!.toString(16)} are not 0`, id);
  if (u16(f, L.RESERVED_OFF) !== 0) throw frameError(ErrorCodes.BAD_FRAME, `${what} reserved field is not 0`, id);
  const hi = u32(f, L.TERM_HI_OFF);
  if (hi >= L.TERM_HI_LIMIT) throw frameError(ErrorCodes.BAD_FRAME, `${what} term is not a safe integer`, id);
  return { first: f[L.OP_OFF]!, id, term: hi * TWO32 + u32(f, L.TERM_LO_OFF), body: f.subarray(L.HEADER_BYTES) };
}

function checkKey(n: number, limits: L.FrameLimits, id: number): void {
  if (n > limits.keyBytesMax) throw frameError(ErrorCodes.KEY_TOO_LARGE, `key is ${n} bytes, limit ${limits.keyBytesMax}`, id);
}

function bodyIs(h: Head, name: string, want: number): void {
  if (h.body.length !== want)
    throw frameError(ErrorCodes.BAD_FRAME, `${name} body is ${h.body.length} B, its fields say ${want} B`, h.id);
}

/** Check one request frame completely; throws BAD_FRAME, UNKNOWN_OP, KEY_TOO_LARGE or VALUE_TOO_LARGE. */
export function decodeRequest(f: Uint8Array, limits: L.FrameLimits): Request {
  const h = readHead(f, 'request');
  const b = h.body;
  switch (h.first) {
    case L.Op.HELLO: {
      // Another version's HELLO is read far enough to name its version (the connection answers it).
      if ((b.length === L.HELLO_V1_BODY_BYTES || b.length === L.HELLO_V2_BODY_BYTES) && u32(b, L.HELLO_VERSION_OFF) !== L.PROTOCOL_VERSION)
        return { op: L.Op.HELLO, id: h.id, term: h.term, version: u32(b, L.HELLO_VERSION_OFF) };
      const version = u32(b, L.HELLO_VERSION_OFF);
      bodyIs(h, 'HELLO', L.HELLO_BODY_BYTES);
      const role = u32(b, L.HELLO_ROLE_OFF);
      if (role !== L.HelloRole.CLIENT && role !== L.HelloRole.PEER) throw frameError(ErrorCodes.BAD_FRAME, `HELLO role ${role} is neither client (1) nor peer (2)`, h.id);
      return { op: L.Op.HELLO, id: h.id, term: h.term, version, nonce: b.subarray(L.HELLO_NONCE_OFF, L.HELLO_ROLE_OFF), role };
    }
    case L.Op.AUTH:
      bodyIs(h, 'AUTH', L.AUTH_BODY_BYTES);
      return { op: L.Op.AUTH, id: h.id, term: h.term, proof: b };
    case L.Op.PUT: {
      if (b.length < L.PUT_KEY_OFF) bodyIs(h, 'PUT', L.PUT_KEY_OFF);
      const keyLen = u16(b, L.PUT_KEY_LEN_OFF);
      const valueLen = u32(b, L.PUT_VALUE_LEN_OFF);
      bodyIs(h, 'PUT', L.PUT_KEY_OFF + keyLen + valueLen);
      checkKey(keyLen, limits, h.id);
      if (valueLen > limits.valueBytesMax)
        throw frameError(ErrorCodes.VALUE_TOO_LARGE, `value is ${valueLen} bytes, limit ${limits.valueBytesMax}`, h.id);
      const k = L.PUT_KEY_OFF;
      return { op: L.Op.PUT, id: h.id, term: h.term, key: b.subarray(k, k + keyLen), value: b.subarray(k + keyLen) };
    }
    case L.Op.PUT_EXPIRES:
      return decodePutExpires(h, b, limits);
    case L.Op.GET:
    case L.Op.DEL:
    case L.Op.GET_REPLICA:
    case L.Op.COPY_SHARD:
    case L.Op.PEER_LEASE: {
      const name = L.OP_NAMES[h.first]!;
      if (b.length < L.KEY_OFF) bodyIs(h, name, L.KEY_OFF);
      const keyLen = u16(b, L.KEY_LEN_OFF);
      bodyIs(h, name, L.KEY_OFF + keyLen);
      // COPY_SHARD's "key" is its request (actors/shared/copy-batch.ts: a KEYS request lists up to
      // 60 KiB of keys), checked by its decoder; the u16 field and the frame limit bound it.
      if (h.first !== L.Op.COPY_SHARD) checkKey(keyLen, limits, h.id);
      const op = h.first as typeof L.Op.GET | typeof L.Op.DEL | typeof L.Op.GET_REPLICA | typeof L.Op.COPY_SHARD | typeof L.Op.PEER_LEASE;
      return { op, id: h.id, term: h.term, key: b.subarray(L.KEY_OFF) };
    }
    case L.Op.CONFIG:
      bodyIs(h, 'CONFIG', 0);
      return { op: L.Op.CONFIG, id: h.id, term: h.term };
    case L.Op.REPLICATE:
      // The block itself is checked (checksum, lengths) by the handler that decodes it.
      if (b.length === 0) throw frameError(ErrorCodes.BAD_FRAME, 'REPLICATE body is empty; it must be one log block', h.id);
      return { op: L.Op.REPLICATE, id: h.id, term: h.term, block: b };
    default:
      throw frameError(ErrorCodes.UNKNOWN_OP, `unknown request op ${h.first}`, h.id);
  }
}

/** Decode bytes as text without copying them first. */
function text(bytes: Uint8Array, encoding: 'utf8' | 'latin1'): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString(encoding);
}

function blobOf(h: Head, name: string, max: number): Uint8Array {
  if (h.body.length < L.BLOB_OFF) bodyIs(h, name, L.BLOB_OFF);
  const n = u32(h.body, L.BLOB_LEN_OFF);
  bodyIs(h, name, L.BLOB_OFF + n);
  if (n > max) throw frameError(ErrorCodes.BAD_FRAME, `${name} of ${n} B exceeds the ${max} B limit`, h.id);
  return h.body.subarray(L.BLOB_OFF);
}

/** Check one response frame completely (the client side); throws BAD_FRAME or UNKNOWN_OP. */
export function decodeResponse(f: Uint8Array, limits: L.FrameLimits): Response {
  const h = readHead(f, 'response');
  const b = h.body;
  switch (h.first) {
    case L.Status.OK:
    case L.Status.NOT_FOUND:
      bodyIs(h, h.first === L.Status.OK ? 'OK' : 'NOT_FOUND', 0);
      return { status: h.first, id: h.id, term: h.term };
    case L.Status.VALUE:
      return { status: L.Status.VALUE, id: h.id, term: h.term, value: blobOf(h, 'VALUE', limits.valueBytesMax) };
    case L.Status.CONFIG: {
      const json = text(blobOf(h, 'CONFIG', L.CONFIG_JSON_BYTES_MAX), 'utf8');
      return { status: L.Status.CONFIG, id: h.id, term: h.term, json };
    }
    case L.Status.CHALLENGE:
      bodyIs(h, 'CHALLENGE', L.CHALLENGE_BODY_BYTES);
      return {
        status: L.Status.CHALLENGE,
        id: h.id,
        term: h.term,
        nonce: new Uint8Array(b.subarray(L.CHALLENGE_NONCE_OFF, L.CHALLENGE_PROOF_OFF)),
        proof: new Uint8Array(b.subarray(L.CHALLENGE_PROOF_OFF)),
      };
    case L.Status.ERROR: {
      if (b.length < L.ERROR_CODE_OFF) bodyIs(h, 'ERROR', L.ERROR_CODE_OFF);
      const codeLen = u16(b, L.ERROR_CODE_LEN_OFF);
      const msgLenAt = L.ERROR_CODE_OFF + codeLen;
      if (b.length < msgLenAt + 4) bodyIs(h, 'ERROR', msgLenAt + 4);
      const msgLen = u32(b, msgLenAt);
      bodyIs(h, 'ERROR', msgLenAt + 4 + msgLen);
      const code = text(b.subarray(L.ERROR_CODE_OFF, msgLenAt), 'latin1');
      if (codeLen > L.ERROR_CODE_BYTES_MAX || !ERROR_CODE_RE.test(code))
        throw frameError(ErrorCodes.BAD_FRAME, 'ERROR code is not a ROWAN_ERR_ name', h.id);
      const message = text(b.subarray(msgLenAt + 4), 'utf8');
      return { status: L.Status.ERROR, id: h.id, term: h.term, code, message };
    }
    default:
      throw frameError(ErrorCodes.UNKNOWN_OP, `unknown response status ${h.first}`, h.id);
  }
}
