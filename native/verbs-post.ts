// The verbs data path: post_send, post_srq_recv, poll_cq and req_notify_cq through the function
// pointers of ibv_context.ops (decoded once per context by adoptContext in native/verbs.ts), and
// the Rowan encoders built on them.
//
// Native layout of the scratch blocks (koffi.alloc'd once, zeroed, encoded through a DataView):
//
//   Rowan write block (fixed, 296 B):  [ SEND wr | READ wr | SEND sge | READ sge | bad_wr slot ]
//                                         0        128       256        272        288
//   send / recv scratch (grows):       [ wr 0 .. wr n-1 | sge 0 .. sge m-1 | bad_wr slot ]
//   wc scratch (grows):                [ ibv_wc 0 .. ibv_wc n-1 ]
//
// The provider reads the WR chain during the call and copies it into its work queue, so reuse after
// the call returns is safe (verbs.h: "the data buffers can be reused" applies to INLINE data only —
// the WR structs themselves are never retained). These blocks are per thread: the module is loaded
// per worker_thread and JS does not re-enter a post while one is running.

import koffi from 'koffi';
import { ErrorCodes, RowanError, invariant } from '../config/base/errors.js';
import {
  IBV_SEND_SIGNALED,
  IBV_WC_RECV,
  IBV_WC_STATUS_NAMES,
  IBV_WC_SUCCESS,
  IBV_WR_RDMA_READ,
  IBV_WR_SEND,
  RECV_WR,
  SEND_WR,
  SGE,
  WC,
} from './verbs-abi.js';
import type { VerbsCq, VerbsQp, VerbsSrq } from './verbs-handles.js';

/**
 * How receive buffers are posted. Upstream rdma-core has no multi-packet SRQ for RC QPs, so each
 * receive buffer takes exactly one SEND (paper Figure 4a), not many SENDs at stride offsets (4b).
 */
export const receiveMode = 'fixed-size-buffers' as const;
export type ReceiveMode = typeof receiveMode;
/** Receive buffers are whole multiples of the 64 B stride (paper §3.2). */
export const RECEIVE_STRIDE_BYTES = 64;

const U32_MAX = 0xffffffff;

// ---- errors shared with the control path -------------------------------------------------------

export function errnoName(e: number): string {
  for (const [name, v] of Object.entries(koffi.os.errno)) if (v === e) return name;
  return `errno ${e}`;
}

export function verbsError(what: string, errno: number, details?: Record<string, unknown>): RowanError {
  const name = errnoName(errno);
  return new RowanError(ErrorCodes.VERBS, `${what} failed: ${name} (${errno})`, { errno, errnoName: name, ...details });
}

/** Verbs calls return 0 or an errno value (some providers negate it, some return -1 and set errno). */
export function rcErrno(rc: number): number {
  if (rc === -1) return koffi.errno() || 1;
  return rc < 0 ? -rc : rc;
}

// ---- scratch memory ------------------------------------------------------------------------------

class Scratch {
  ptr = 0n;
  bytes = 0;
  dv = new DataView(new ArrayBuffer(0));

  /** At least `bytes` of zeroed native memory; reallocates (rarely) only when it must grow. */
  ensure(bytes: number): DataView {
    if (bytes > this.bytes) {
      if (this.ptr !== 0n) koffi.free(this.ptr);
      const cap = Math.max(bytes, this.bytes * 2, 4096);
      this.ptr = koffi.alloc('uint8_t', cap) as bigint;
      const ab = koffi.view(this.ptr, cap);
      new Uint8Array(ab).fill(0);
      this.dv = new DataView(ab);
      this.bytes = cap;
    }
    return this.dv;
  }
}

const sendScratch = new Scratch();
const recvScratch = new Scratch();
const wcScratch = new Scratch();

const W0 = 0;
const W1 = SEND_WR.size;
const S0 = 2 * SEND_WR.size;
const S1 = S0 + SGE.size;
const BAD = S1 + SGE.size;

interface RowanBlock {
  dv: DataView;
  w0: bigint;
  w1: bigint;
  s0: bigint;
  s1: bigint;
  bad: bigint;
}
let rowan: RowanBlock | undefined;
function rowanBlock(): RowanBlock {
  if (!rowan) {
    const s = new Scratch();
    const dv = s.ensure(BAD + 8);
    const p = s.ptr;
    rowan = { dv, w0: p + BigInt(W0), w1: p + BigInt(W1), s0: p + BigInt(S0), s1: p + BigInt(S1), bad: p + BigInt(BAD) };
  }
  return rowan;
}

// ---- encoders ------------------------------------------------------------------------------------

function putSge(dv: DataView, at: number, addr: bigint, length: number, lkey: number): void {
  dv.setBigUint64(at + SGE.addr, addr, true);
  dv.setUint32(at + SGE.length, length, true);
  dv.setUint32(at + SGE.lkey, lkey, true);
}

function putSendWr(
  dv: DataView,
  at: number,
  wrId: bigint,
  next: bigint,
  sgList: bigint,
  numSge: number,
  opcode: number,
  flags: number,
  remoteAddr: bigint,
  rkey: number,
  immData: number,
): void {
  dv.setBigUint64(at + SEND_WR.wr_id, wrId, true);
  dv.setBigUint64(at + SEND_WR.next, next, true);
  dv.setBigUint64(at + SEND_WR.sg_list, sgList, true);
  dv.setInt32(at + SEND_WR.num_sge, numSge, true);
  dv.setInt32(at + SEND_WR.opcode, opcode, true);
  dv.setUint32(at + SEND_WR.send_flags, flags, true);
  dv.setUint32(at + SEND_WR.imm_data, immData, true);
  dv.setBigUint64(at + SEND_WR.rdma_remote_addr, remoteAddr, true);
  dv.setUint32(at + SEND_WR.rdma_rkey, rkey, true);
}

function putRecvWr(dv: DataView, at: number, wrId: bigint, next: bigint, sgList: bigint, numSge: number): void {
  dv.setBigUint64(at + RECV_WR.wr_id, wrId, true);
  dv.setBigUint64(at + RECV_WR.next, next, true);
  dv.setBigUint64(at + RECV_WR.sg_list, sgList, true);
  dv.setInt32(at + RECV_WR.num_sge, numSge, true);
}

/** Which WR of the chain the provider refused (its bad_wr), as an index; -1 if it did not say. */
function badIndex(dv: DataView, badAt: number, first: bigint, wrSize: number, count: number): number {
  const bad = dv.getBigUint64(badAt, true);
  if (bad < first) return -1;
  const i = Number((bad - first) / BigInt(wrSize));
  return i < count ? i : -1;
}

function postFailure(what: string, rc: number, index: number, labels: (i: number) => string): RowanError {
  const at = index < 0 ? '' : ` at work request ${index} (${labels(index)})`;
  return verbsError(`${what}${at}`, rcErrno(rc), { badWrIndex: index });
}

const toU64 = (v: bigint | number): bigint => (typeof v === 'bigint' ? v : BigInt(v));

// ---- Rowan ---------------------------------------------------------------------------------------

/** One Rowan write: the entry to SEND and the 1-byte READ that makes it persistent at the receiver. */
export interface RowanWrite {
  /** The entry (registered local memory, e.g. in the sender's t-log). */
  localAddr: bigint;
  length: number;
  lkey: number;
  /** The request context: the READ's completion carries it (and so would an error on the SEND). */
  wrId: bigint | number;
  /** Receiver memory the READ reads one byte of (registered with REMOTE_READ). */
  readAddr: bigint;
  readRkey: number;
  /** Where the READ's byte lands locally. */
  readLocalAddr: bigint;
  readLkey: number;
}

/**
 * Paper §5.2: "A ROWAN operation contains a SEND followed by a 1B READ for persistence. SEND and READ
 * are sent in one ibv_post_send call. We mark SEND as unsignaled ... For READ, we store the context id
 * of the associated PUT request into the wr_id field." The READ completes only after the receiver's
 * RNIC has executed the SEND before it on this RC QP, so its completion is the Rowan ack. Both WRs
 * carry wr_id: an unsignaled WR still completes (with an error) when it fails.
 */
export function postRowanWrite(qp: VerbsQp, w: RowanWrite): void {
  invariant(w.length > 0 && w.length <= U32_MAX, `postRowanWrite: length ${w.length} out of range`);
  const b = rowanBlock();
  const dv = b.dv;
  const wrId = toU64(w.wrId);
  putSge(dv, S0, w.localAddr, w.length, w.lkey);
  putSendWr(dv, W0, wrId, b.w1, b.s0, 1, IBV_WR_SEND, 0, 0n, 0, 0);
  putSge(dv, S1, w.readLocalAddr, 1, w.readLkey);
  putSendWr(dv, W1, wrId, 0n, b.s1, 1, IBV_WR_RDMA_READ, IBV_SEND_SIGNALED, w.readAddr, w.readRkey, 0);
  dv.setBigUint64(BAD, 0n, true);
  const rc = qp.context.ops.postSend(qp.ptr, b.w0, b.bad);
  if (rc !== 0) {
    const i = badIndex(dv, BAD, b.w0, SEND_WR.size, 2);
    throw postFailure(`ibv_post_send(qp ${qp.qpNum}, Rowan SEND+READ)`, rc, i, (k) => (k === 0 ? 'SEND' : 'RDMA_READ'));
  }
}

export interface ReceiveSegment {
  addr: bigint;
  length: number;
  lkey: number;
}

/**
 * Post `segments` as receive buffers of the SRQ in ONE ibv_post_srq_recv call: a linked list in the
 * given order, which must be increasing address order (the RNIC consumes buffers in posting order,
 * so this is what lands concurrent writes sequentially in the b-log, §3.2). Buffer i gets
 * wr_id = wrIdBase + i. Each buffer is a fixed-size receive buffer (`receiveMode`) of a whole number
 * of strides.
 */
export function postReceiveBuffers(srq: VerbsSrq, segments: readonly ReceiveSegment[], wrIdBase: bigint | number): void {
  const n = segments.length;
  if (n === 0) return;
  for (let i = 0; i < n; i++) {
    const s = segments[i]!;
    invariant(
      s.length > 0 && s.length <= U32_MAX && s.length % RECEIVE_STRIDE_BYTES === 0,
      `postReceiveBuffers: buffer ${i} length ${s.length} is not a positive multiple of ${RECEIVE_STRIDE_BYTES}`,
    );
    if (i > 0) {
      const p = segments[i - 1]!;
      invariant(s.addr >= p.addr + BigInt(p.length), `postReceiveBuffers: buffer ${i} is not above buffer ${i - 1}`);
    }
  }
  const sgeBase = n * RECV_WR.size;
  const badAt = sgeBase + n * SGE.size;
  const dv = recvScratch.ensure(badAt + 8);
  const base = recvScratch.ptr;
  const id0 = toU64(wrIdBase);
  for (let i = 0; i < n; i++) {
    const s = segments[i]!;
    const wrAt = i * RECV_WR.size;
    const sgeAt = sgeBase + i * SGE.size;
    putSge(dv, sgeAt, s.addr, s.length, s.lkey);
    const next = i + 1 < n ? base + BigInt(wrAt + RECV_WR.size) : 0n;
    putRecvWr(dv, wrAt, id0 + BigInt(i), next, base + BigInt(sgeAt), 1);
  }
  dv.setBigUint64(badAt, 0n, true);
  const rc = srq.context.ops.postSrqRecv(srq.ptr, base, base + BigInt(badAt));
  if (rc !== 0) {
    const i = badIndex(dv, badAt, base, RECV_WR.size, n);
    throw postFailure(`ibv_post_srq_recv(${n} buffers)`, rc, i, (k) => `buffer 0x${segments[k]!.addr.toString(16)}`);
  }
}

// ---- general posts -------------------------------------------------------------------------------

export interface ScatterGatherEntry {
  addr: bigint;
  length: number;
  lkey: number;
}

export interface SendWorkRequest {
  wrId: bigint | number;
  /** IBV_WR_SEND, IBV_WR_RDMA_WRITE, IBV_WR_RDMA_READ, ... */
  opcode: number;
  /** IBV_SEND_* (default 0: unsignaled). */
  sendFlags?: number;
  sges: readonly ScatterGatherEntry[];
  /** wr.rdma.remote_addr and wr.rdma.rkey, for RDMA WRITE/READ. */
  remoteAddr?: bigint;
  rkey?: number;
  immData?: number;
}

/** ibv_post_send of `wrs` as one chain, in order. */
export function postSend(qp: VerbsQp, wrs: readonly SendWorkRequest[]): void {
  const n = wrs.length;
  if (n === 0) return;
  let sges = 0;
  for (const wr of wrs) sges += wr.sges.length;
  const sgeBase = n * SEND_WR.size;
  const badAt = sgeBase + sges * SGE.size;
  const dv = sendScratch.ensure(badAt + 8);
  const base = sendScratch.ptr;
  let sgeAt = sgeBase;
  for (let i = 0; i < n; i++) {
    const wr = wrs[i]!;
    const wrAt = i * SEND_WR.size;
    const list = wr.sges.length > 0 ? base + BigInt(sgeAt) : 0n;
    for (const s of wr.sges) {
      putSge(dv, sgeAt, s.addr, s.length, s.lkey);
      sgeAt += SGE.size;
    }
    const next = i + 1 < n ? base + BigInt(wrAt + SEND_WR.size) : 0n;
    putSendWr(dv, wrAt, toU64(wr.wrId), next, list, wr.sges.length, wr.opcode, wr.sendFlags ?? 0,
      wr.remoteAddr ?? 0n, wr.rkey ?? 0, wr.immData ?? 0);
  }
  dv.setBigUint64(badAt, 0n, true);
  const rc = qp.context.ops.postSend(qp.ptr, base, base + BigInt(badAt));
  if (rc !== 0) {
    const i = badIndex(dv, badAt, base, SEND_WR.size, n);
    throw postFailure(`ibv_post_send(qp ${qp.qpNum}, ${n} WRs)`, rc, i, (k) => `opcode ${wrs[k]!.opcode}`);
  }
}

export interface RecvWorkRequest {
  wrId: bigint | number;
  sges: readonly ScatterGatherEntry[];
}

/** ibv_post_srq_recv of `wrs` as one chain, in order (no ordering check: see postReceiveBuffers). */
export function postSrqRecv(srq: VerbsSrq, wrs: readonly RecvWorkRequest[]): void {
  const n = wrs.length;
  if (n === 0) return;
  let sges = 0;
  for (const wr of wrs) sges += wr.sges.length;
  const sgeBase = n * RECV_WR.size;
  const badAt = sgeBase + sges * SGE.size;
  const dv = recvScratch.ensure(badAt + 8);
  const base = recvScratch.ptr;
  let sgeAt = sgeBase;
  for (let i = 0; i < n; i++) {
    const wr = wrs[i]!;
    const wrAt = i * RECV_WR.size;
    const list = wr.sges.length > 0 ? base + BigInt(sgeAt) : 0n;
    for (const s of wr.sges) {
      putSge(dv, sgeAt, s.addr, s.length, s.lkey);
      sgeAt += SGE.size;
    }
    const next = i + 1 < n ? base + BigInt(wrAt + RECV_WR.size) : 0n;
    putRecvWr(dv, wrAt, toU64(wr.wrId), next, list, wr.sges.length);
  }
  dv.setBigUint64(badAt, 0n, true);
  const rc = srq.context.ops.postSrqRecv(srq.ptr, base, base + BigInt(badAt));
  if (rc !== 0) {
    const i = badIndex(dv, badAt, base, RECV_WR.size, n);
    throw postFailure(`ibv_post_srq_recv(${n} WRs)`, rc, i, (k) => `wr_id ${wrs[k]!.wrId}`);
  }
}

// ---- completions ---------------------------------------------------------------------------------

export interface WorkCompletion {
  wrId: bigint;
  status: number;
  statusName: string;
  opcode: number;
  vendorErr: number;
  byteLen: number;
  immData: number;
  qpNum: number;
  srcQp: number;
  wcFlags: number;
  /**
   * null on IBV_WC_SUCCESS, else a RowanError(VERBS) naming the status. For a failed completion only
   * wrId, status, vendorErr and qpNum are meaningful (ibv_poll_cq(3)).
   */
  error: RowanError | null;
}

export function wcStatusName(status: number): string {
  return IBV_WC_STATUS_NAMES[status] ?? `IBV_WC_STATUS_${status}`;
}

/** True for a receive completion (IBV_WC_RECV is a bit of the opcode, verbs.h). */
export function isReceiveCompletion(wc: WorkCompletion): boolean {
  return (wc.opcode & IBV_WC_RECV) !== 0;
}

/** ibv_poll_cq for up to `max` completions, decoded; failed ones carry `error`. */
export function pollCq(cq: VerbsCq, max: number): WorkCompletion[] {
  invariant(Number.isInteger(max) && max > 0, `pollCq: max ${max} must be a positive integer`);
  const dv = wcScratch.ensure(max * WC.size);
  const n = cq.context.ops.pollCq(cq.ptr, max, wcScratch.ptr);
  if (n < 0) throw new RowanError(ErrorCodes.VERBS, `ibv_poll_cq failed: returned ${n}`, { rc: n });
  invariant(n <= max, `ibv_poll_cq returned ${n} completions for ${max} slots`);
  const out: WorkCompletion[] = new Array(n);
  for (let i = 0; i < n; i++) {
    const at = i * WC.size;
    const status = dv.getInt32(at + WC.status, true);
    const wc: WorkCompletion = {
      wrId: dv.getBigUint64(at + WC.wr_id, true),
      status,
      statusName: wcStatusName(status),
      opcode: dv.getInt32(at + WC.opcode, true),
      vendorErr: dv.getUint32(at + WC.vendor_err, true),
      byteLen: dv.getUint32(at + WC.byte_len, true),
      immData: dv.getUint32(at + WC.imm_data, true),
      qpNum: dv.getUint32(at + WC.qp_num, true),
      srcQp: dv.getUint32(at + WC.src_qp, true),
      wcFlags: dv.getUint32(at + WC.wc_flags, true),
      error: null,
    };
    if (status !== IBV_WC_SUCCESS) {
      wc.error = new RowanError(
        ErrorCodes.VERBS,
        `work completion failed: ${wc.statusName} (status ${status}, wr_id ${wc.wrId}, qp ${wc.qpNum}, vendor_err 0x${wc.vendorErr.toString(16)})`,
        { status, statusName: wc.statusName, wrId: String(wc.wrId), qpNum: wc.qpNum, vendorErr: wc.vendorErr },
      );
    }
    out[i] = wc;
  }
  return out;
}

/** ibv_req_notify_cq: arm the CQ's completion channel for the next (solicited) completion. */
export function reqNotifyCq(cq: VerbsCq, solicitedOnly = false): void {
  const rc = cq.context.ops.reqNotifyCq(cq.ptr, solicitedOnly ? 1 : 0);
  if (rc !== 0) throw verbsError('ibv_req_notify_cq', rcErrno(rc));
}
