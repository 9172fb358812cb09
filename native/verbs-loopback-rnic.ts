// The loopback RNIC's data movement (./verbs-loopback.ts has the device and its verbs objects): a
// requester QP turns its work requests into frames on its RC connection (a unix socket to the
// responder context, ./verbs-loopback-wire.ts) and completes them from the replies; a responder
// context executes the frames of each connection in order on its registered memory -- SEND into the
// next receive buffer of the QP's SRQ, WRITE and READ after the rkey, range and access checks.
import koffi from 'koffi';
import { createServer, connect as netConnect, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import * as abi from './verbs-abi.js';
import type { DecodedSendWr, FakeCompletion, FakeVerbsDevice } from './verbs-fake.js';
import { FrameReader, WireOp, decodeReply, decodeRequest, encodeReply, encodeRequest, type WireRequest } from './verbs-loopback-wire.js';

type Ptr = bigint;

const status = (name: string): number => abi.IBV_WC_STATUS_NAMES.indexOf(name);
const WC_REM_INV_REQ_ERR = status('IBV_WC_REM_INV_REQ_ERR');
const WC_LOC_LEN_ERR = abi.IBV_WC_LOC_LEN_ERR;

/** A registered region, with a view of its bytes. */
export interface Mr { addr: bigint; length: number; lkey: number; rkey: number; access: number; bytes: Uint8Array }
export interface Cq { entries: FakeCompletion[]; cap: number; ring: boolean }
export interface Srq { ctx: Ctx; posted: { wrId: bigint; addr: bigint; length: number }[]; waiting: Set<Responder> }
/** What a requester keeps of a work request until its reply (READ data goes `into` its SGEs). */
export interface Pending { wrId: bigint; signaled: boolean; opcode: number; byteLen: number; into: { addr: bigint; length: number }[] }

/** An RC QP: as requester its socket and pending WRs, as responder the sockets of its peers. */
export interface Qp {
  ptr: Ptr;
  num: number;
  ctx: Ctx;
  sendCq: Cq;
  recvCq: Cq;
  srq: Srq | null;
  sigAll: boolean;
  state: number;
  dest: { qpNum: number; path: string } | null;
  socket: Socket | null;
  pending: Map<number, Pending>;
  nextSeq: number;
  failed: boolean;
  inbound: Set<Socket>;
}

/** One opened context (a port): its GID names its socket in the fabric directory. */
export interface Ctx {
  fake: FakeVerbsDevice;
  gid: Uint8Array;
  path: string;
  server: Server | null;
  mrs: Map<Ptr, Mr>;
  qps: Map<number, Qp>;
}

/** One responder connection: the requests of one remote QP, executed in order. */
export interface Responder {
  socket: Socket;
  qp: Qp | null;
  queue: WireRequest[];
}

/** Execute a chain of send work requests on a requester QP in RTS (ibv_post_send after the checks). */
export function postWorkRequests(qp: Qp, wrs: readonly DecodedSendWr[]): void {
  for (const wr of wrs) {
    const signaled = qp.sigAll || (wr.sendFlags & abi.IBV_SEND_SIGNALED) !== 0;
    const into = wr.sges.map((s) => ({ addr: s.addr, length: s.length }));
    const byteLen = into.reduce((n, s) => n + s.length, 0);
    const opcode = wr.opcode === abi.IBV_WR_RDMA_READ ? abi.IBV_WC_RDMA_READ : wr.opcode === abi.IBV_WR_RDMA_WRITE ? abi.IBV_WC_RDMA_WRITE : abi.IBV_WC_SEND;
    if (qp.failed) {
      complete(qp.sendCq, { wrId: wr.wrId, status: abi.IBV_WC_WR_FLUSH_ERR, opcode, qpNum: qp.num });
      continue;
    }
    const seq = qp.nextSeq++;
    qp.pending.set(seq, { wrId: wr.wrId, signaled, opcode, byteLen, into });
    const req: WireRequest =
      wr.opcode === abi.IBV_WR_SEND ? { op: WireOp.Send, seq, payload: gather(into) }
      : wr.opcode === abi.IBV_WR_RDMA_WRITE ? { op: WireOp.Write, seq, remoteAddr: wr.remoteAddr, rkey: wr.rkey, payload: gather(into) }
      : { op: WireOp.Read, seq, remoteAddr: wr.remoteAddr, rkey: wr.rkey, length: byteLen };
    connection(qp).write(encodeRequest(req));
  }
}

/** The QP's RC connection, opened on first use. */
function connection(qp: Qp): Socket {
  if (qp.socket) return qp.socket;
  const s = netConnect(qp.dest!.path);
  qp.socket = s;
  s.write(encodeRequest({ op: WireOp.Hello, seq: 0, qpNum: qp.dest!.qpNum }));
  const reader = new FrameReader();
  s.on('data', (chunk: Buffer) => {
    try {
      for (const body of reader.push(chunk)) onReply(qp, body);
    } catch {
      failQp(qp, abi.IBV_WC_RETRY_EXC_ERR);
    }
  });
  // The peer is gone (its process died, or it destroyed its QP): what RC hardware reports after its retries.
  s.on('error', () => failQp(qp, abi.IBV_WC_RETRY_EXC_ERR));
  s.on('close', () => failQp(qp, abi.IBV_WC_RETRY_EXC_ERR));
  return s;
}

function onReply(qp: Qp, body: Buffer): void {
  const r = decodeReply(body);
  const p = qp.pending.get(r.seq);
  if (!p) return;
  qp.pending.delete(r.seq);
  if (r.status !== abi.IBV_WC_SUCCESS) {
    complete(qp.sendCq, { wrId: p.wrId, status: r.status, opcode: p.opcode, qpNum: qp.num });
    return failQp(qp, abi.IBV_WC_WR_FLUSH_ERR);
  }
  if (p.opcode === abi.IBV_WC_RDMA_READ) scatter(p.into, r.data);
  if (p.signaled) complete(qp.sendCq, { wrId: p.wrId, status: abi.IBV_WC_SUCCESS, opcode: p.opcode, byteLen: p.byteLen, qpNum: qp.num });
}

/** The QP enters the error state: every outstanding WR completes with `st` (errors always complete). */
function failQp(qp: Qp, st: number): void {
  if (qp.failed && qp.pending.size === 0) return;
  qp.failed = true;
  for (const p of qp.pending.values()) complete(qp.sendCq, { wrId: p.wrId, status: st, opcode: p.opcode, qpNum: qp.num });
  qp.pending.clear();
  qp.socket?.destroy();
}


/** Accept requester QPs of other contexts on the context's socket (once it exposes remote-access memory). */
export function listen(ctx: Ctx): void {
  if (ctx.server) return;
  const server = createServer((socket) => accept(ctx, socket));
  server.listen(ctx.path); // bound before listen() returns (a pipe in a non-cluster process)
  server.unref();
  ctx.server = server;
}

function accept(ctx: Ctx, socket: Socket): void {
  const r: Responder = { socket, qp: null, queue: [] };
  const reader = new FrameReader();
  socket.on('data', (chunk: Buffer) => {
    try {
      for (const body of reader.push(chunk)) {
        const req = decodeRequest(body);
        if (req.op === WireOp.Hello) {
          r.qp = ctx.qps.get(req.qpNum!) ?? null;
          if (!r.qp) return void socket.destroy(); // no such QP: the requester sees its retries run out
          r.qp.inbound.add(socket);
        } else r.queue.push(req);
      }
    } catch {
      return void socket.destroy();
    }
    respond(r);
  });
  socket.on('error', () => socket.destroy());
  socket.on('close', () => {
    r.qp?.inbound.delete(socket);
    r.qp?.srq?.waiting.delete(r);
  });
}

/** Execute queued requests in order; a SEND with no receive posted waits (RNR) and holds up the rest. */
export function respond(r: Responder): void {
  const qp = r.qp;
  if (!qp || r.socket.destroyed) return;
  while (r.queue.length > 0) {
    const req = r.queue[0]!;
    let reply: Buffer;
    if (req.op === WireOp.Send) {
      const srq = qp.srq;
      if (srq && srq.posted.length === 0) {
        srq.waiting.add(r);
        return;
      }
      reply = encodeReply(srq ? land(qp, srq, req.payload!) : WC_REM_INV_REQ_ERR, req.seq);
    } else reply = oneSided(qp.ctx, req);
    r.queue.shift();
    r.socket.write(reply);
  }
}

/** SEND: the next posted receive buffer takes the payload; the ring CQ gets the receive completion. */
function land(qp: Qp, srq: Srq, payload: Uint8Array): number {
  const recv = srq.posted.shift()!;
  const fits = payload.length <= recv.length;
  const mr = fits ? findMr(qp.ctx, recv.addr, payload.length, 0) : null;
  if (mr) mr.bytes.set(payload, Number(recv.addr - mr.addr));
  const st = mr ? abi.IBV_WC_SUCCESS : WC_LOC_LEN_ERR;
  complete(qp.recvCq, { wrId: recv.wrId, status: st, opcode: abi.IBV_WC_RECV, byteLen: payload.length, qpNum: qp.num });
  return mr ? abi.IBV_WC_SUCCESS : WC_REM_INV_REQ_ERR;
}

function oneSided(ctx: Ctx, req: WireRequest): Buffer {
  const write = req.op === WireOp.Write;
  const length = write ? req.payload!.length : req.length!;
  const need = write ? abi.IBV_ACCESS_REMOTE_WRITE : abi.IBV_ACCESS_REMOTE_READ;
  const mr = findMr(ctx, req.remoteAddr!, length, need, req.rkey);
  if (!mr) return encodeReply(abi.IBV_WC_REM_ACCESS_ERR, req.seq);
  const at = Number(req.remoteAddr! - mr.addr);
  if (write) {
    mr.bytes.set(req.payload!, at);
    return encodeReply(abi.IBV_WC_SUCCESS, req.seq);
  }
  return encodeReply(abi.IBV_WC_SUCCESS, req.seq, mr.bytes.subarray(at, at + length));
}

export function socketPathOf(dir: string, gid: Uint8Array): string {
  return join(dir, `${Buffer.from(gid.subarray(8)).toString('hex')}.sock`);
}

export function complete(cq: Cq, e: FakeCompletion): void {
  cq.entries.push(e);
  // A ring CQ overwrites its oldest entry; a plain one would overrun (the provider's error), which a
  // requester's CQ sized to its send queue never does.
  if (cq.ring && cq.entries.length > cq.cap) cq.entries.shift();
}

/** The MR of `ctx` covering [addr, addr+length) with `access` (and `rkey`, for remote access). */
function findMr(ctx: Ctx, addr: bigint, length: number, access: number, rkey?: number): Mr | null {
  for (const mr of ctx.mrs.values()) {
    if (rkey !== undefined && mr.rkey !== rkey) continue;
    if ((mr.access & access) !== access) continue;
    if (addr >= mr.addr && addr + BigInt(length) <= mr.addr + BigInt(mr.length)) return mr;
  }
  return null;
}

function gather(sges: { addr: bigint; length: number }[]): Uint8Array {
  const out = new Uint8Array(sges.reduce((n, s) => n + s.length, 0));
  let at = 0;
  for (const s of sges) {
    if (s.length > 0) out.set(new Uint8Array(koffi.view(s.addr, s.length)), at);
    at += s.length;
  }
  return out;
}

function scatter(sges: { addr: bigint; length: number }[], data: Uint8Array): void {
  let at = 0;
  for (const s of sges) {
    const n = Math.min(s.length, data.length - at);
    if (n > 0) new Uint8Array(koffi.view(s.addr, n)).set(data.subarray(at, at + n));
    at += n;
  }
}
