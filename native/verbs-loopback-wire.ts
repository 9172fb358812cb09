// The wire of the loopback RNIC (./verbs-loopback.ts): what one emulated RC QP sends its peer over a
// unix socket, and the peer's replies. One socket per connected QP pair, so the stream is in order
// like an RC QP; nothing here knows about ROWAN.
//
//   request:  [u32 bytes after this word][u8 op][u32 seq][op fields ...]
//     HELLO   u32 destination QP number (the first frame of a socket)
//     SEND    payload
//     WRITE   u64 remote address, u32 rkey, payload
//     READ    u64 remote address, u32 rkey, u32 length
//   reply:    [u32 bytes after this word][u8 status (IBV_WC_*)][u32 seq][READ data]
//
// Every request but HELLO gets exactly one reply, in order; the requester keeps what it needs to
// complete the work request (wr_id, signaled, where READ data goes) by seq.

export const WireOp = { Hello: 0, Send: 1, Write: 2, Read: 3 } as const;
export type WireOp = (typeof WireOp)[keyof typeof WireOp];

/** Longest frame either side accepts (a SEND is at most one receive buffer; READs move 64 KiB chunks). */
export const WIRE_FRAME_BYTES_MAX = 16 * 1024 * 1024;

export interface WireRequest {
  op: WireOp;
  seq: number;
  qpNum?: number;
  remoteAddr?: bigint;
  rkey?: number;
  length?: number;
  payload?: Uint8Array;
}

export interface WireReply {
  status: number;
  seq: number;
  data: Uint8Array;
}

export function encodeRequest(r: WireRequest): Buffer {
  const payload = r.payload ?? new Uint8Array(0);
  const fields = r.op === WireOp.Hello ? 4 : r.op === WireOp.Send ? 0 : r.op === WireOp.Write ? 12 : 16;
  const body = 5 + fields + (r.op === WireOp.Send || r.op === WireOp.Write ? payload.length : 0);
  const b = Buffer.alloc(4 + body);
  b.writeUInt32LE(body, 0);
  b.writeUInt8(r.op, 4);
  b.writeUInt32LE(r.seq >>> 0, 5);
  if (r.op === WireOp.Hello) b.writeUInt32LE(r.qpNum!, 9);
  if (r.op === WireOp.Write || r.op === WireOp.Read) {
    b.writeBigUInt64LE(r.remoteAddr!, 9);
    b.writeUInt32LE(r.rkey!, 17);
  }
  if (r.op === WireOp.Read) b.writeUInt32LE(r.length!, 21);
  if (r.op === WireOp.Send) b.set(payload, 9);
  if (r.op === WireOp.Write) b.set(payload, 21);
  return b;
}

export function decodeRequest(body: Buffer): WireRequest {
  const op = body.readUInt8(0) as WireOp;
  const seq = body.readUInt32LE(1);
  switch (op) {
    case WireOp.Hello:
      return { op, seq, qpNum: body.readUInt32LE(5) };
    case WireOp.Send:
      return { op, seq, payload: body.subarray(5) };
    case WireOp.Write:
      return { op, seq, remoteAddr: body.readBigUInt64LE(5), rkey: body.readUInt32LE(13), payload: body.subarray(17) };
    case WireOp.Read:
      return { op, seq, remoteAddr: body.readBigUInt64LE(5), rkey: body.readUInt32LE(13), length: body.readUInt32LE(17) };
    default:
      throw new Error(`loopback RNIC: unknown op ${String(op)}`);
  }
}

export function encodeReply(status: number, seq: number, data?: Uint8Array): Buffer {
  const n = data?.length ?? 0;
  const b = Buffer.alloc(9 + n);
  b.writeUInt32LE(5 + n, 0);
  b.writeUInt8(status, 4);
  b.writeUInt32LE(seq >>> 0, 5);
  if (data) b.set(data, 9);
  return b;
}

export function decodeReply(body: Buffer): WireReply {
  return { status: body.readUInt8(0), seq: body.readUInt32LE(1), data: body.subarray(5) };
}

/** Splits a byte stream into frame bodies (the length word removed). */
export class FrameReader {
  private buf: Buffer = Buffer.alloc(0);

  /** Feed a chunk; returns the complete frame bodies it finished. Throws on an oversized frame. */
  push(chunk: Buffer): Buffer[] {
    this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
    const out: Buffer[] = [];
    while (this.buf.length >= 4) {
      const n = this.buf.readUInt32LE(0);
      if (n > WIRE_FRAME_BYTES_MAX || n < 5) throw new Error(`loopback RNIC: bad frame length ${n}`);
      if (this.buf.length < 4 + n) break;
      out.push(this.buf.subarray(4, 4 + n));
      this.buf = this.buf.subarray(4 + n);
    }
    return out;
  }
}
