// Fake verbs devices for tests, the way librpma's unit tests fake libibverbs: an ibv_context in native
// memory whose ops table points at JS functions (koffi.register), and ibv_qp / ibv_srq / ibv_cq
// objects whose `context` points at it. The binding's inline-style calls (qp->context->ops.post_send)
// then land in the test, which decodes every work request the binding encoded.
//
// Test support only; it lives in native/ because only native/ may import koffi (CONVENTIONS 5). The
// decoders here read the WRs with koffi's struct decoding of the declarations in verbs-abi.ts (whose
// layout test/unit/native/verbs-abi.test.ts pins against gcc), not with the binding's DataView
// encoders, so a wrong offset in either shows up as a mismatch.
//
// Memory of the fake (ibv_device, verbs_context/ibv_context, qp, srq, cqs):
//
//   [ verbs_context ........................ | ibv_context (= ctx) ]   when extended
//                                             ^ ctx = vctx + offsetof(verbs_context, context)
//   [ ibv_context (= ctx) ]                                              when not extended

import koffi, { type TypeObject } from 'koffi';
import * as abi from './verbs-abi.js';

type Ptr = bigint;

export interface FakeProvider {
  postSend?(qp: Ptr, wr: Ptr, badWr: Ptr): number;
  postRecv?(qp: Ptr, wr: Ptr, badWr: Ptr): number;
  postSrqRecv?(srq: Ptr, wr: Ptr, badWr: Ptr): number;
  pollCq?(cq: Ptr, numEntries: number, wc: Ptr): number;
  reqNotifyCq?(cq: Ptr, solicitedOnly: number): number;
  /** verbs_context.create_cq_ex (only wired when the fake is extended). Return a CQ or null + errno. */
  createCqEx?(context: Ptr, attr: Ptr): Ptr | null;
}

export interface FakeDeviceOptions {
  /** Surround the context with a verbs_context (abi_compat = __VERBS_ABI_IS_EXTENDED). Default true. */
  extended?: boolean;
  /** verbs_context.sz to claim (an older provider claims less). Default sizeof(struct verbs_context). */
  verbsContextSize?: number;
  deviceName?: string;
  qpNum?: number;
  cqe?: number;
}

function zalloc(type: TypeObject): Ptr {
  const p = koffi.alloc(type, 1) as Ptr;
  new Uint8Array(koffi.view(p, koffi.sizeof(type))).fill(0);
  return p;
}

const errnoOf = (name: string): number => koffi.os.errno[name] ?? 22;

export class FakeVerbsDevice {
  readonly device: Ptr;
  /** The verbs_context block (extended) or the bare ibv_context allocation. */
  private readonly block: Ptr;
  readonly ctx: Ptr;
  readonly qp: Ptr;
  readonly srq: Ptr;
  readonly cq: Ptr;
  /** Exceptions thrown inside provider callbacks (they cannot cross the C frame); tests assert empty. */
  readonly callbackErrors: unknown[] = [];
  private readonly registered: bigint[] = [];
  private readonly cqs: Ptr[] = [];
  private closed = false;

  constructor(provider: FakeProvider, opts: FakeDeviceOptions = {}) {
    const extended = opts.extended ?? true;
    this.device = zalloc(abi.ibv_device);
    koffi.encode(this.device, abi.ibv_device, { name: opts.deviceName ?? 'fake0' });

    const ops: Record<string, Ptr | null> = {
      post_send: this.register(provider.postSend, abi.post_send_fn),
      post_recv: this.register(provider.postRecv, abi.post_recv_fn),
      post_srq_recv: this.register(provider.postSrqRecv, abi.post_srq_recv_fn),
      poll_cq: this.register(provider.pollCq, abi.poll_cq_fn),
      req_notify_cq: this.register(provider.reqNotifyCq, abi.req_notify_cq_fn),
    };
    const context = {
      device: this.device,
      ops,
      cmd_fd: -1,
      async_fd: -1,
      num_comp_vectors: 1,
      abi_compat: extended ? abi.VERBS_ABI_IS_EXTENDED : null,
    };
    if (extended) {
      this.block = zalloc(abi.verbs_context);
      this.ctx = this.block + BigInt(abi.VERBS_CONTEXT_CONTEXT_OFFSET);
      koffi.encode(this.block, abi.verbs_context, {
        create_cq_ex: this.register(provider.createCqEx, abi.create_cq_ex_fn, (e) => (koffi.errno(errnoOf(e)), null)),
        sz: opts.verbsContextSize ?? koffi.sizeof(abi.verbs_context),
        context,
      });
    } else {
      this.block = zalloc(abi.ibv_context);
      this.ctx = this.block;
      koffi.encode(this.ctx, abi.ibv_context, context);
    }

    this.qp = zalloc(abi.ibv_qp);
    koffi.encode(this.qp, abi.ibv_qp, {
      context: this.ctx,
      qp_num: opts.qpNum ?? 0x1234,
      state: abi.IBV_QPS_RTS,
      qp_type: abi.IBV_QPT_RC,
    });
    this.srq = zalloc(abi.ibv_srq);
    koffi.encode(this.srq, abi.ibv_srq, { context: this.ctx });
    this.cq = this.allocCq(opts.cqe ?? 256);
  }

  /** A fake ibv_cq of this context (what a fake create_cq_ex returns). Freed by close(). */
  allocCq(cqe: number): Ptr {
    const cq = zalloc(abi.ibv_cq);
    koffi.encode(cq, abi.ibv_cq, { context: this.ctx, cqe });
    this.cqs.push(cq);
    return cq;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const r of this.registered) koffi.unregister(r);
    for (const p of [this.device, this.block, this.qp, this.srq, ...this.cqs]) koffi.free(p);
  }

  /** Register `fn` as a C function pointer of `proto`; a throw is recorded and becomes `onThrow`'s value. */
  private register(
    fn: ((...args: never[]) => unknown) | undefined,
    proto: TypeObject,
    onThrow: (errnoName: string) => unknown = () => errnoOf('EINVAL'),
  ): Ptr | null {
    if (!fn) return null;
    const wrapped = (...args: unknown[]): unknown => {
      try {
        return (fn as (...a: unknown[]) => unknown)(...args);
      } catch (err) {
        this.callbackErrors.push(err);
        return onThrow('EINVAL');
      }
    };
    const p = koffi.register(wrapped, koffi.pointer(proto));
    this.registered.push(p);
    return p;
  }
}

// ---- decoders of what the binding encoded ------------------------------------------------------

export interface DecodedSge {
  addr: bigint;
  length: number;
  lkey: number;
}

export interface DecodedSendWr {
  self: bigint;
  wrId: bigint;
  next: bigint;
  numSge: number;
  opcode: number;
  sendFlags: number;
  immData: number;
  /** wr.rdma */
  remoteAddr: bigint;
  rkey: number;
  sgList: bigint;
  sges: DecodedSge[];
}

export interface DecodedRecvWr {
  self: bigint;
  wrId: bigint;
  next: bigint;
  numSge: number;
  sgList: bigint;
  sges: DecodedSge[];
}

const big = (v: unknown): bigint => (v === null || v === undefined ? 0n : BigInt(v as number | bigint));

function decodeSges(list: bigint, n: number): DecodedSge[] {
  if (list === 0n || n <= 0) return [];
  const raw = koffi.decode(list, abi.ibv_sge, n) as Array<Record<string, unknown>>;
  return raw.map((s) => ({ addr: big(s['addr']), length: s['length'] as number, lkey: s['lkey'] as number }));
}

const rdmaType = abi.ibv_send_wr_wr.members!['rdma']!.type;

/** Follow an ibv_send_wr chain from `first` (at most `limit` WRs, against a corrupt loop). */
export function decodeSendWrChain(first: bigint, limit = 1024): DecodedSendWr[] {
  const out: DecodedSendWr[] = [];
  for (let p = first; p !== 0n && out.length < limit; ) {
    const w = koffi.decode(p, abi.ibv_send_wr) as Record<string, unknown>;
    const rdma = koffi.decode(p, koffi.offsetof(abi.ibv_send_wr, 'wr'), rdmaType) as Record<string, unknown>;
    const d: DecodedSendWr = {
      self: p,
      wrId: big(w['wr_id']),
      next: big(w['next']),
      numSge: w['num_sge'] as number,
      opcode: w['opcode'] as number,
      sendFlags: w['send_flags'] as number,
      immData: w['imm_data'] as number,
      remoteAddr: big(rdma['remote_addr']),
      rkey: rdma['rkey'] as number,
      sgList: big(w['sg_list']),
      sges: [],
    };
    d.sges = decodeSges(d.sgList, d.numSge);
    out.push(d);
    p = d.next;
  }
  return out;
}

export function decodeRecvWrChain(first: bigint, limit = 1 << 16): DecodedRecvWr[] {
  const out: DecodedRecvWr[] = [];
  for (let p = first; p !== 0n && out.length < limit; ) {
    const w = koffi.decode(p, abi.ibv_recv_wr) as Record<string, unknown>;
    const d: DecodedRecvWr = {
      self: p,
      wrId: big(w['wr_id']),
      next: big(w['next']),
      numSge: w['num_sge'] as number,
      sgList: big(w['sg_list']),
      sges: [],
    };
    d.sges = decodeSges(d.sgList, d.numSge);
    out.push(d);
    p = d.next;
  }
  return out;
}

export interface DecodedCqInitAttrEx {
  cqe: number;
  compVector: number;
  wcFlags: bigint;
  compMask: number;
  flags: number;
  cqContext: bigint;
  channel: bigint;
  parentDomain: bigint;
}

export function decodeCqInitAttrEx(p: bigint): DecodedCqInitAttrEx {
  const a = koffi.decode(p, abi.ibv_cq_init_attr_ex) as Record<string, unknown>;
  return {
    cqe: a['cqe'] as number,
    compVector: a['comp_vector'] as number,
    wcFlags: big(a['wc_flags']),
    compMask: a['comp_mask'] as number,
    flags: a['flags'] as number,
    cqContext: big(a['cq_context']),
    channel: big(a['channel']),
    parentDomain: big(a['parent_domain']),
  };
}

export interface FakeCompletion {
  wrId: bigint;
  status: number;
  opcode: number;
  byteLen?: number;
  vendorErr?: number;
  qpNum?: number;
  immData?: number;
}

/** What a provider's poll_cq does: fill `wc[0..n)`; returns n. */
export function writeWorkCompletions(wc: bigint, entries: readonly FakeCompletion[]): number {
  const size = koffi.sizeof(abi.ibv_wc);
  entries.forEach((e, i) => {
    koffi.encode(wc, i * size, abi.ibv_wc, {
      wr_id: e.wrId,
      status: e.status,
      opcode: e.opcode,
      vendor_err: e.vendorErr ?? 0,
      byte_len: e.byteLen ?? 0,
      imm_data: e.immData ?? 0,
      qp_num: e.qpNum ?? 0,
      src_qp: 0,
      wc_flags: 0,
      pkey_index: 0,
      slid: 0,
      sl: 0,
      dlid_path_bits: 0,
    });
  });
  return entries.length;
}

/** Store a pointer at `at` (what a provider does with *bad_wr). */
export function writePointer(at: bigint, value: bigint): void {
  koffi.encode(at, 'void *', value);
}

/**
 * A fake CQ's contents: tests push completions, the provider's poll_cq hands out at most
 * `num_entries` of them per call, oldest first (wire `poll` as FakeProvider.pollCq).
 */
export class FakeCompletionFeed {
  readonly pending: FakeCompletion[] = [];
  /** poll_cq calls seen, with the num_entries asked for. */
  readonly calls: number[] = [];

  push(...entries: FakeCompletion[]): void {
    this.pending.push(...entries);
  }

  readonly poll = (_cq: Ptr, numEntries: number, wc: Ptr): number => {
    this.calls.push(numEntries);
    return writeWorkCompletions(wc, this.pending.splice(0, numEntries));
  };
}
