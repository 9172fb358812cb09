// libibverbs through koffi: the binding under the `verbs` fabric (DESIGN §4, paper §3.2 and §5.2).
//
// Control path (device, PD, MR, CQ, SRQ, QP and its state machine) calls exported symbols of
// libibverbs.so.1. The data path cannot: ibv_post_send, ibv_post_recv, ibv_post_srq_recv,
// ibv_poll_cq and ibv_req_notify_cq are `static inline` in verbs.h and jump through the provider's
// function table `ibv_context.ops`. So does this binding: each context's table is decoded ONCE into
// callable functions (`adoptContext`), and every QP, SRQ and CQ handle keeps its context.
// ibv_create_cq_ex and ibv_query_port are static inline too; they look their op up in the
// `verbs_context` that surrounds an extended context (verbs_get_ctx_op), which `extendedOp` mirrors.
//
// Receive mode. The paper's receiver uses a multi-packet SRQ (64 B stride, 4 MiB buffers). Upstream
// rdma-core (Debian ships 44) has no multi-packet SRQ for RC QPs — the authors' primitive needs
// MLNX_OFED 4.x experimental verbs — so this transport posts FIXED-SIZE receive buffers, each a
// multiple of the stride, in increasing address order (the paper's Figure 4a): `receiveMode`.
//
// Work requests are encoded into native buffers allocated once and reused (koffi.alloc + a DataView
// over koffi.view): a Rowan write allocates nothing native. The provider copies WRs into its own queue
// before post_* returns, so one scratch block per thread (this module is loaded per worker_thread) is
// enough; nothing keeps a pointer into it after the call.
//
// Return codes become RowanErrors here with errno named (CONVENTIONS 5, 6): VERBS_NO_DEVICE when there
// is nothing to open (the node then refuses `--fabric verbs`), VERBS for every other failure,
// including a work completion whose status is not IBV_WC_SUCCESS.
//
// Files: verbs-abi.ts (struct layouts, enum values), verbs-post.ts (data path and Rowan encoders, all
// re-exported here), verbs-qp.ts (QP state-transition attributes), verbs-mem.ts (registrable native
// buffers), verbs-fake.ts (fake devices, tests). The transport on top: runtime/fabric/verbs*.ts.

import { readdirSync } from 'node:fs';
import koffi, { type LibraryHandle, type TypeObject } from 'koffi';
import { ErrorCodes, RowanError, invariant } from '../config/base/errors.js';
import * as abi from './verbs-abi.js';
import { errnoName, rcErrno, verbsError } from './verbs-post.js';
import { VerbsContext, VerbsCq, VerbsMr, VerbsPd, VerbsQp, VerbsSrq, type CqMode } from './verbs-handles.js';
export { VerbsContext, VerbsCq, VerbsMr, VerbsPd, VerbsQp, VerbsSrq, type CqMode, type DataPathOps } from './verbs-handles.js';
import {
  type QpInitOptions,
  type QpRtrOptions,
  type QpRtsOptions,
  type QpTransition,
  qpInitAttr,
  qpRtrAttr,
  qpRtsAttr,
} from './verbs-qp.js';

export * from './verbs-qp.js';

const LIBRARY = 'libibverbs.so.1';
const NO_DEVICE_HINT = 'use --fabric shm or --fabric tcp';
const SYSFS_RDMA_DEVICES = '/sys/class/infiniband';

// ---- the library (control path) ------------------------------------------------------------------

type Ptr = bigint;
type NullablePtr = bigint | null;

/**
 * The exported libibverbs symbols the control path calls. libibverbs itself by default; a software
 * device (./verbs-loopback.ts) stands in for it when a node is started with one (useVerbsLibrary).
 */
export interface VerbsLibrary {
  getDeviceList(num: number[]): NullablePtr;
  freeDeviceList(list: Ptr): void;
  getDeviceGuid(dev: Ptr): bigint | number;
  openDevice(dev: Ptr): NullablePtr;
  closeDevice(ctx: Ptr): number;
  allocPd(ctx: Ptr): NullablePtr;
  deallocPd(pd: Ptr): number;
  regMr(pd: Ptr, addr: Ptr, length: number | bigint, access: number): NullablePtr;
  regMrIova2(pd: Ptr, addr: Ptr, length: number | bigint, iova: bigint, access: number): NullablePtr;
  deregMr(mr: Ptr): number;
  createCq(ctx: Ptr, cqe: number, cqContext: null, channel: null, compVector: number): NullablePtr;
  destroyCq(cq: Ptr): number;
  createSrq(pd: Ptr, attr: Ptr): NullablePtr;
  destroySrq(srq: Ptr): number;
  createQp(pd: Ptr, attr: Ptr): NullablePtr;
  destroyQp(qp: Ptr): number;
  modifyQp(qp: Ptr, attr: Ptr, mask: number): number;
  queryPort(ctx: Ptr, port: number, attr: Ptr): number;
  queryGid(ctx: Ptr, port: number, index: number, gid: Ptr): number;
}

let lib: VerbsLibrary | undefined;

/**
 * Use `library` instead of libibverbs for every device call of this thread from now on (null: back
 * to libibverbs). Set once, at thread start, before any device is opened: handles of one library
 * mean nothing to another.
 */
export function useVerbsLibrary(library: VerbsLibrary | null): void {
  lib = library ?? undefined;
}

/** libibverbs (or the library useVerbsLibrary chose), loaded once per thread. Not needed by adopted (fake) contexts. */
function verbsLib(): VerbsLibrary {
  if (lib) return lib;
  let h: LibraryHandle;
  try {
    h = koffi.load(LIBRARY);
  } catch (err) {
    throw new RowanError(
      ErrorCodes.VERBS_NO_DEVICE,
      `no RDMA device found (${LIBRARY} cannot be loaded -- package libibverbs1: apt-get install libibverbs1 ibverbs-providers: ${(err as Error).message}); ${NO_DEVICE_HINT}`,
    );
  }
  // The default symbol versions (IBVERBS_1.1+) are the ones verbs.h declares; dlsym returns those.
  lib = {
    getDeviceList: h.func('void *ibv_get_device_list(_Out_ int *num_devices)'),
    freeDeviceList: h.func('void ibv_free_device_list(void *list)'),
    getDeviceGuid: h.func('uint64_t ibv_get_device_guid(void *device)'),
    openDevice: h.func('void *ibv_open_device(void *device)'),
    closeDevice: h.func('int ibv_close_device(void *context)'),
    allocPd: h.func('void *ibv_alloc_pd(void *context)'),
    deallocPd: h.func('int ibv_dealloc_pd(void *pd)'),
    regMr: h.func('void *ibv_reg_mr(void *pd, void *addr, size_t length, int access)'),
    regMrIova2: h.func('void *ibv_reg_mr_iova2(void *pd, void *addr, size_t length, uint64_t iova, unsigned int access)'),
    deregMr: h.func('int ibv_dereg_mr(void *mr)'),
    createCq: h.func('void *ibv_create_cq(void *context, int cqe, void *cq_context, void *channel, int comp_vector)'),
    destroyCq: h.func('int ibv_destroy_cq(void *cq)'),
    createSrq: h.func('void *ibv_create_srq(void *pd, void *srq_init_attr)'),
    destroySrq: h.func('int ibv_destroy_srq(void *srq)'),
    createQp: h.func('void *ibv_create_qp(void *pd, void *qp_init_attr)'),
    destroyQp: h.func('int ibv_destroy_qp(void *qp)'),
    modifyQp: h.func('int ibv_modify_qp(void *qp, void *attr, int attr_mask)'),
    // The exported ibv_query_port takes the old (compat) attr layout, a prefix of ibv_port_attr;
    // verbs.h's macro zeroes the whole struct first and so do we (`queryPort`).
    queryPort: h.func('int ibv_query_port(void *context, uint8_t port_num, void *port_attr)'),
    queryGid: h.func('int ibv_query_gid(void *context, uint8_t port_num, int index, void *gid)'),
  };
  return lib;
}

/** Encode `value` as `type` into fresh native memory, run `fn` on it, then free it (control path only). */
function withStruct<T>(type: TypeObject, value: object, fn: (p: Ptr) => T): T {
  const p = koffi.alloc(type, 1) as Ptr;
  try {
    new Uint8Array(koffi.view(p, koffi.sizeof(type))).fill(0);
    koffi.encode(p, type, value);
    return fn(p);
  } finally {
    koffi.free(p);
  }
}

// ---- handles: native/verbs-handles.ts ----------------------------------------------------------

const OPS_OFFSET = koffi.offsetof(abi.ibv_context, 'ops');
const ABI_COMPAT_OFFSET = koffi.offsetof(abi.ibv_context, 'abi_compat');

function readPtr(base: Ptr, offset: number): NullablePtr {
  return koffi.decode(base, offset, 'void *') as NullablePtr;
}

function missingOp(name: string): never {
  throw new RowanError(ErrorCodes.VERBS, `the provider has no ibv_context.ops.${name}`);
}

function decodeOp<F>(ctxPtr: Ptr, member: string, proto: TypeObject): F {
  const fn = readPtr(ctxPtr, OPS_OFFSET + koffi.offsetof(abi.ibv_context_ops, member));
  return (fn ? koffi.decode(fn, proto) : () => missingOp(member)) as F;
}

/**
 * Wrap an ibv_context pointer, decoding its data-path ops once. openDevice() uses it; so do tests
 * with fake contexts, and so can code that got a context elsewhere.
 */
export function adoptContext(ptr: Ptr, deviceName = '(adopted)'): VerbsContext {
  invariant(ptr !== 0n, 'adoptContext: null ibv_context');
  return new VerbsContext(ptr, deviceName, {
    postSend: decodeOp(ptr, 'post_send', abi.post_send_fn),
    postRecv: decodeOp(ptr, 'post_recv', abi.post_recv_fn),
    postSrqRecv: decodeOp(ptr, 'post_srq_recv', abi.post_srq_recv_fn),
    pollCq: decodeOp(ptr, 'poll_cq', abi.poll_cq_fn),
    reqNotifyCq: decodeOp(ptr, 'req_notify_cq', abi.req_notify_cq_fn),
  });
}

/** Every verbs object begins with `struct ibv_context *context`; the inline verbs follow it. */
function checkOwner(kind: string, ptr: Ptr, ctx: VerbsContext): void {
  invariant(ptr !== 0n, `adopt${kind}: null pointer`);
  invariant(readPtr(ptr, 0) === ctx.ptr, `adopt${kind}: object's ->context is not this context`);
}

export function adoptQp(ctx: VerbsContext, ptr: Ptr): VerbsQp {
  checkOwner('Qp', ptr, ctx);
  return new VerbsQp(ptr, ctx, koffi.decode(ptr, koffi.offsetof(abi.ibv_qp, 'qp_num'), 'uint32_t') as number);
}

export function adoptSrq(ctx: VerbsContext, ptr: Ptr, maxWr = 0, maxSge = 1): VerbsSrq {
  checkOwner('Srq', ptr, ctx);
  return new VerbsSrq(ptr, ctx, maxWr, maxSge);
}

export function adoptCq(ctx: VerbsContext, ptr: Ptr, mode: CqMode = 'cq-legacy', reason = 'adopted'): VerbsCq {
  checkOwner('Cq', ptr, ctx);
  return new VerbsCq(ptr, ctx, koffi.decode(ptr, koffi.offsetof(abi.ibv_cq, 'cqe'), 'int') as number, mode, reason);
}

/**
 * verbs_get_ctx_op(): the pointer of an op of the surrounding verbs_context, or why there is none.
 * A context is extended when abi_compat == __VERBS_ABI_IS_EXTENDED; the op exists when the provider's
 * verbs_context is large enough to hold it (`sz`) and set it.
 */
export function extendedOp(ctx: VerbsContext, op: 'create_cq_ex' | 'query_port'): { fn: Ptr | null; reason: string } {
  if (readPtr(ctx.ptr, ABI_COMPAT_OFFSET) !== abi.VERBS_ABI_IS_EXTENDED) {
    return { fn: null, reason: 'the context is not an extended verbs_context (abi_compat)' };
  }
  const vctx = ctx.ptr - BigInt(abi.VERBS_CONTEXT_CONTEXT_OFFSET);
  const sz = Number(koffi.decode(vctx, koffi.offsetof(abi.verbs_context, 'sz'), 'size_t'));
  const opOffset = koffi.offsetof(abi.verbs_context, op);
  if (sz < koffi.sizeof(abi.verbs_context) - opOffset) {
    return { fn: null, reason: `the provider's verbs_context (sz ${sz}) predates ${op}` };
  }
  const fn = readPtr(vctx, opOffset);
  return fn ? { fn, reason: `verbs_context.${op}` } : { fn: null, reason: `the provider does not implement ${op}` };
}

// ---- devices -------------------------------------------------------------------------------------

export interface DeviceInfo {
  name: string;
  devName: string;
  ibdevPath: string;
  nodeType: number;
  transportType: number;
  /** Node GUID, hex, in the byte order ibv_devinfo prints. */
  guid: string;
}

function beHex64(v: bigint | number): string {
  const b = Buffer.alloc(8);
  b.writeBigUInt64LE(BigInt(v)); // __be64 read as a little-endian integer: memory order = wire order
  return b.toString('hex');
}

/** Why the device list is empty, as far as sysfs tells: no RDMA support in the kernel, or no device. */
function noDeviceReason(): string {
  let names: string[];
  try {
    names = readdirSync(SYSFS_RDMA_DEVICES);
  } catch {
    return `${SYSFS_RDMA_DEVICES} does not exist: the kernel has no RDMA support loaded (ib_core and a device driver such as mlx5_ib, or rdma_rxe for soft RoCE)`;
  }
  return names.length === 0
    ? `${SYSFS_RDMA_DEVICES} is empty: RDMA modules are loaded but no device is bound (no RNIC, or no rdma_rxe link added)`
    : `${SYSFS_RDMA_DEVICES} lists ${names.join(', ')}, but libibverbs has no provider for them (install rdma-core's providers, e.g. ibverbs-providers)`;
}

function withDeviceList<T>(fn: (devices: Ptr[], errno: number) => T): T {
  const l = verbsLib();
  const num = [0];
  const list = l.getDeviceList(num);
  const errno = list ? 0 : koffi.errno();
  try {
    const n = list ? num[0]! : 0;
    const devices = n > 0 ? (koffi.decode(list!, 'void *', n) as Ptr[]) : [];
    return fn(devices, errno);
  } finally {
    if (list) l.freeDeviceList(list);
  }
}

function deviceInfo(dev: Ptr): DeviceInfo {
  const d = koffi.decode(dev, abi.ibv_device) as Record<string, unknown>;
  return {
    name: d['name'] as string,
    devName: d['dev_name'] as string,
    ibdevPath: d['ibdev_path'] as string,
    nodeType: d['node_type'] as number,
    transportType: d['transport_type'] as number,
    guid: beHex64(verbsLib().getDeviceGuid(dev)),
  };
}

/** The RDMA devices libibverbs sees; [] when there are none (or no kernel support at all). */
export function listDevices(): DeviceInfo[] {
  if (!verbsLoadable()) return []; // not installed: no device either (openDevice says why)
  return withDeviceList((devices) => devices.map(deviceInfo));
}

/** Whether libibverbs (or the library useVerbsLibrary chose) loads in this thread. */
export function verbsLoadable(): boolean {
  try {
    verbsLib();
    return true;
  } catch {
    return false;
  }
}

/** Open the named device, or the first one. Throws VERBS_NO_DEVICE when there is nothing to open. */
export function openDevice(name?: string): VerbsContext {
  const l = verbsLib();
  return withDeviceList((devices, errno) => {
    if (devices.length === 0) {
      throw new RowanError(
        ErrorCodes.VERBS_NO_DEVICE,
        `no RDMA device found (ibv_get_device_list returned 0 devices: ${noDeviceReason()}); ${NO_DEVICE_HINT}`,
        errno ? { errno, errnoName: errnoName(errno) } : undefined,
      );
    }
    const infos = devices.map(deviceInfo);
    const i = name === undefined ? 0 : infos.findIndex((d) => d.name === name);
    if (i < 0) {
      throw new RowanError(
        ErrorCodes.VERBS_NO_DEVICE,
        `no RDMA device named ${name} (found: ${infos.map((d) => d.name).join(', ')}); ${NO_DEVICE_HINT}`,
      );
    }
    const ctx = l.openDevice(devices[i]!);
    if (!ctx) throw verbsError(`ibv_open_device(${infos[i]!.name})`, koffi.errno());
    return adoptContext(ctx, infos[i]!.name);
  });
}

export function closeDevice(ctx: VerbsContext): void {
  const rc = verbsLib().closeDevice(ctx.ptr);
  if (rc !== 0) throw verbsError('ibv_close_device', rcErrno(rc));
}

export interface PortInfo {
  state: number;
  active: boolean;
  maxMtu: number;
  activeMtu: number;
  lid: number;
  linkLayer: number;
  gidTblLen: number;
  portCapFlags: number;
}

/** ibv_query_port as verbs.h's macro does it: the extended op if present, else the compat symbol. */
export function queryPort(ctx: VerbsContext, port = 1): PortInfo {
  const size = koffi.sizeof(abi.ibv_port_attr);
  return withStruct(abi.ibv_port_attr, {}, (p) => {
    const ext = extendedOp(ctx, 'query_port');
    const rc = ext.fn
      ? (koffi.decode(ext.fn, abi.query_port_fn) as (c: Ptr, n: number, a: Ptr, s: number) => number)(ctx.ptr, port, p, size)
      : verbsLib().queryPort(ctx.ptr, port, p);
    if (rc !== 0) throw verbsError(`ibv_query_port(${ctx.deviceName}, ${port})`, rcErrno(rc));
    const a = koffi.decode(p, abi.ibv_port_attr) as Record<string, number>;
    return {
      state: a['state']!,
      active: a['state'] === abi.IBV_PORT_ACTIVE,
      maxMtu: a['max_mtu']!,
      activeMtu: a['active_mtu']!,
      lid: a['lid']!,
      linkLayer: a['link_layer']!,
      gidTblLen: a['gid_tbl_len']!,
      portCapFlags: a['port_cap_flags']!,
    };
  });
}

/** The 16-byte GID at `index` of `port` (RoCE needs it for the address vector). */
export function queryGid(ctx: VerbsContext, port: number, index: number): Uint8Array {
  // koffi encodes a union from exactly one member: an empty object threw before ibv_query_gid ran.
  return withStruct(abi.ibv_gid, { raw: new Uint8Array(16) }, (p) => {
    const rc = verbsLib().queryGid(ctx.ptr, port, index, p);
    if (rc !== 0) throw verbsError(`ibv_query_gid(${port}, ${index})`, rcErrno(rc));
    return new Uint8Array(koffi.view(p, 16).slice(0));
  });
}

// ---- PD, MR --------------------------------------------------------------------------------------

export function allocPd(ctx: VerbsContext): VerbsPd {
  const pd = verbsLib().allocPd(ctx.ptr);
  if (!pd) throw verbsError('ibv_alloc_pd', koffi.errno());
  return new VerbsPd(pd, ctx);
}

export function deallocPd(pd: VerbsPd): void {
  const rc = verbsLib().deallocPd(pd.ptr);
  if (rc !== 0) throw verbsError('ibv_dealloc_pd', rcErrno(rc));
}

/**
 * Register [address, address+length) — e.g. the PM pool's mapping — with `access` (IBV_ACCESS_*).
 * Like verbs.h's ibv_reg_mr macro, flags in IBV_ACCESS_OPTIONAL_RANGE go through ibv_reg_mr_iova2.
 */
export function regMr(pd: VerbsPd, address: bigint, length: number | bigint, access: number): VerbsMr {
  const l = verbsLib();
  const mr =
    (access & abi.IBV_ACCESS_OPTIONAL_RANGE) === 0
      ? l.regMr(pd.ptr, address, length, access)
      : l.regMrIova2(pd.ptr, address, length, address, access);
  if (!mr) throw verbsError(`ibv_reg_mr(0x${address.toString(16)}, ${length})`, koffi.errno());
  const m = koffi.decode(mr, abi.ibv_mr) as Record<string, number>;
  return new VerbsMr(mr, address, length, m['lkey']!, m['rkey']!);
}

export function deregMr(mr: VerbsMr): void {
  const rc = verbsLib().deregMr(mr.ptr);
  if (rc !== 0) throw verbsError('ibv_dereg_mr', rcErrno(rc));
}

// ---- CQ, SRQ, QP ---------------------------------------------------------------------------------

export interface CreateCqOptions {
  /** Ask for IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN (default true: the receiver's ring CQ never polled per write). */
  ignoreOverrun?: boolean;
}

/**
 * A CQ of at least `cqe` entries. With ignoreOverrun, tries ibv_create_cq_ex with
 * IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN (through verbs_context.create_cq_ex, as the inline does) and falls
 * back to ibv_create_cq when the provider lacks the op or rejects the flag; `mode`/`modeReason` say which.
 */
export function createCq(ctx: VerbsContext, cqe: number, opts: CreateCqOptions = {}): VerbsCq {
  let reason = 'ignore-overrun not requested';
  if (opts.ignoreOverrun ?? true) {
    const ext = extendedOp(ctx, 'create_cq_ex');
    reason = ext.reason;
    if (ext.fn) {
      const createEx = koffi.decode(ext.fn, abi.create_cq_ex_fn) as (c: Ptr, a: Ptr) => NullablePtr;
      const attr = {
        cqe,
        cq_context: null,
        channel: null,
        comp_vector: 0,
        wc_flags: abi.IBV_WC_STANDARD_FLAGS,
        comp_mask: abi.IBV_CQ_INIT_ATTR_MASK_FLAGS,
        flags: abi.IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN,
        parent_domain: null,
      };
      const cq = withStruct(abi.ibv_cq_init_attr_ex, attr, (p) => createEx(ctx.ptr, p));
      // struct ibv_cq_ex begins with the members of struct ibv_cq (ibv_cq_ex_to_cq is a cast).
      if (cq) return adoptCq(ctx, cq, 'cq-ex-ignore-overrun', 'ibv_create_cq_ex with IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN');
      const e = koffi.errno();
      reason = `ibv_create_cq_ex(IGNORE_OVERRUN) failed: ${errnoName(e)} (${e})`;
    }
  }
  const cq = verbsLib().createCq(ctx.ptr, cqe, null, null, 0);
  if (!cq) throw verbsError(`ibv_create_cq(${cqe})`, koffi.errno());
  return adoptCq(ctx, cq, 'cq-legacy', `ibv_create_cq (${reason})`);
}

export function destroyCq(cq: VerbsCq): void {
  const rc = verbsLib().destroyCq(cq.ptr);
  if (rc !== 0) throw verbsError('ibv_destroy_cq', rcErrno(rc));
}

/** The shared receive queue all of a receiver's RC QPs land SENDs in. */
export function createSrq(pd: VerbsPd, maxWr: number, maxSge = 1): VerbsSrq {
  const attrType = abi.ibv_srq_init_attr;
  return withStruct(attrType, { srq_context: null, attr: { max_wr: maxWr, max_sge: maxSge, srq_limit: 0 } }, (p) => {
    const srq = verbsLib().createSrq(pd.ptr, p);
    if (!srq) throw verbsError(`ibv_create_srq(max_wr ${maxWr})`, koffi.errno());
    // ibv_create_srq writes back the actual capacities.
    const got = koffi.decode(p, attrType) as { attr: { max_wr: number; max_sge: number } };
    return new VerbsSrq(srq, pd.context, got.attr.max_wr, got.attr.max_sge);
  });
}

export function destroySrq(srq: VerbsSrq): void {
  const rc = verbsLib().destroySrq(srq.ptr);
  if (rc !== 0) throw verbsError('ibv_destroy_srq', rcErrno(rc));
}

export interface RcQpOptions {
  sendCq: VerbsCq;
  recvCq: VerbsCq;
  /** Receives go to this SRQ (the receiver side); the QP then has no receive queue of its own. */
  srq?: VerbsSrq;
  maxSendWr: number;
  maxSendSge?: number;
  maxRecvWr?: number;
  maxRecvSge?: number;
  maxInlineData?: number;
  /** Signal every send (default false: Rowan signals only the READ). */
  sqSigAll?: boolean;
}

export function createRcQp(pd: VerbsPd, o: RcQpOptions): VerbsQp {
  const init = {
    qp_context: null,
    send_cq: o.sendCq.ptr,
    recv_cq: o.recvCq.ptr,
    srq: o.srq ? o.srq.ptr : null,
    cap: {
      max_send_wr: o.maxSendWr,
      max_recv_wr: o.srq ? 0 : (o.maxRecvWr ?? 1),
      max_send_sge: o.maxSendSge ?? 1,
      max_recv_sge: o.srq ? 0 : (o.maxRecvSge ?? 1),
      max_inline_data: o.maxInlineData ?? 0,
    },
    qp_type: abi.IBV_QPT_RC,
    sq_sig_all: o.sqSigAll ? 1 : 0,
  };
  return withStruct(abi.ibv_qp_init_attr, init, (p) => {
    const qp = verbsLib().createQp(pd.ptr, p);
    if (!qp) throw verbsError(`ibv_create_qp(RC, max_send_wr ${o.maxSendWr})`, koffi.errno());
    return adoptQp(pd.context, qp);
  });
}

export function destroyQp(qp: VerbsQp): void {
  const rc = verbsLib().destroyQp(qp.ptr);
  if (rc !== 0) throw verbsError('ibv_destroy_qp', rcErrno(rc));
}

/** The struct ibv_qp_attr bytes modifyQpTo* hand to ibv_modify_qp (exposed so tests can check them). */
export function encodeQpAttr(t: QpTransition): Uint8Array {
  const size = koffi.sizeof(abi.ibv_qp_attr);
  return withStruct(abi.ibv_qp_attr, t.attr, (p) => new Uint8Array(koffi.view(p, size).slice(0)));
}

function modifyQp(qp: VerbsQp, step: string, a: QpTransition): void {
  const rc = withStruct(abi.ibv_qp_attr, a.attr, (p) => verbsLib().modifyQp(qp.ptr, p, a.mask));
  if (rc !== 0) throw verbsError(`ibv_modify_qp(qp ${qp.qpNum} -> ${step})`, rcErrno(rc), { mask: a.mask });
}

export function modifyQpToInit(qp: VerbsQp, o: QpInitOptions = {}): void {
  modifyQp(qp, 'INIT', qpInitAttr(o));
}
export function modifyQpToRtr(qp: VerbsQp, o: QpRtrOptions): void {
  modifyQp(qp, 'RTR', qpRtrAttr(o));
}
export function modifyQpToRts(qp: VerbsQp, o: QpRtsOptions): void {
  modifyQp(qp, 'RTS', qpRtsAttr(o));
}

export * from './verbs-post.js';
