// The loopback RNIC: a software RDMA device behind the same VerbsLibrary seam as libibverbs
// (./verbs.ts useVerbsLibrary), so that a whole node -- its control actor's SRQ and ring CQ, its
// workers' RC QPs -- runs the production `verbs` fabric on a machine without RDMA hardware. It exists
// for tests (`rowan start --verbs-loopback DIR`, startNode's `verbsDevices`); a real deployment
// never selects it.
//
// What it emulates, and how:
//   - the device list holds one device, `loopback0`; every ibv_open_device makes a new context (one
//     "port") with its own random GID, Ethernet link layer (so QPs connect through the GID, as RoCE);
//   - a context that registers memory with remote access listens on DIR/<GID>.sock; a requester QP
//     connects there on its first post_send (the GID came in the RTR attributes), says which QP it
//     talks to, and from then on the socket is the RC connection: in order, reliable;
//   - SEND lands in the next receive WR of the target QP's SRQ (posting order, like the hardware), and a
//     SEND with no receive posted waits for one (RNR retry, infinitely); WRITE and READ check the rkey,
//     the range and the access flags of the target MR;
//   - data moves by memcpy in the responder's process, into its registered memory (a node's pool is a
//     MAP_SHARED file, so a landed write is in the page cache before the READ behind it completes:
//     durable across a process crash, like the `pagecache` persistence mode, not across power loss);
//   - CQs are queues; a CQ created with IGNORE_OVERRUN drops its oldest entry when full (a ring).
// The device and its verbs objects are here; moving data (requester and responder) is in
// ./verbs-loopback-rnic.ts, the frames on the socket in ./verbs-loopback-wire.ts.
// The responder's event loop does the copying: unlike hardware, the receiver's process is on the data
// path. The data-path ops are JS callbacks in a fake ibv_context (./verbs-fake.ts), so the binding's
// encoders and decoders are the production ones.
import koffi, { type TypeObject } from 'koffi';
import { randomBytes } from 'node:crypto';
import { mkdirSync, unlinkSync } from 'node:fs';
import * as abi from './verbs-abi.js';
import { FakeVerbsDevice, decodeCqInitAttrEx, decodeRecvWrChain, decodeSendWrChain, writePointer, writeWorkCompletions } from './verbs-fake.js';
import { listen, postWorkRequests, respond, socketPathOf, type Cq, type Ctx, type Mr, type Qp, type Srq } from './verbs-loopback-rnic.js';
import type { VerbsLibrary } from './verbs.js';

type Ptr = bigint;

export const LOOPBACK_DEVICE_NAME = 'loopback0';
/** A unix socket path holds 107 bytes: DIR/<16 hex>.sock must fit. */
export const LOOPBACK_DIR_CHARS_MAX = 107 - 22;

const EINVAL = koffi.os.errno['EINVAL'] ?? 22;

const big = (v: unknown): bigint => (v === null || v === undefined ? 0n : BigInt(v as number | bigint));

function zalloc(type: TypeObject, value: object): Ptr {
  const p = koffi.alloc(type, 1) as Ptr;
  new Uint8Array(koffi.view(p, koffi.sizeof(type))).fill(0);
  koffi.encode(p, type, value);
  return p;
}

/** The loopback RNIC's VerbsLibrary over directory `dir` (shared by every process of the emulated fabric). */
export function loopbackVerbsLibrary(dir: string): VerbsLibrary {
  return new LoopbackRnic(dir).library();
}

class LoopbackRnic {
  private device: Ptr = 0n;
  private list: Ptr = 0n;
  private readonly ctxs = new Map<Ptr, Ctx>();
  private readonly pds = new Map<Ptr, Ctx>();
  private readonly mrs = new Map<Ptr, { ctx: Ctx; mr: Mr }>();
  private readonly cqs = new Map<Ptr, Cq>();
  private readonly srqs = new Map<Ptr, Srq>();
  private readonly qps = new Map<Ptr, Qp>();
  private nextKey = 0x100;
  private nextQpNum = 0x10 + (process.pid % 0x1000) * 0x100;

  constructor(private readonly dir: string) {}

  library(): VerbsLibrary {
    return {
      getDeviceList: (num) => {
        if (!this.list) this.makeDeviceList();
        num[0] = 1;
        return this.list;
      },
      freeDeviceList: () => {},
      getDeviceGuid: () => 0n,
      openDevice: () => this.open(),
      closeDevice: (ctx) => this.close(ctx),
      allocPd: (ctx) => {
        const c = this.ctxs.get(ctx)!;
        const pd = zalloc(abi.ibv_pd, { context: ctx, handle: this.nextKey++ });
        this.pds.set(pd, c);
        return pd;
      },
      deallocPd: (pd) => (this.pds.delete(pd), koffi.free(pd), 0),
      regMr: (pd, addr, length, access) => this.regMr(pd, addr, Number(length), access),
      regMrIova2: (pd, addr, length, _iova, access) => this.regMr(pd, addr, Number(length), access),
      deregMr: (mr) => {
        const m = this.mrs.get(mr);
        if (m) m.ctx.mrs.delete(mr);
        this.mrs.delete(mr);
        koffi.free(mr);
        return 0;
      },
      createCq: (ctx, cqe) => this.createCq(this.ctxs.get(ctx)!, cqe, false),
      destroyCq: (cq) => (this.cqs.delete(cq), 0), // the fake device frees its CQs when it closes
      createSrq: (pd, attr) => this.createSrq(pd, attr),
      destroySrq: (srq) => (this.srqs.delete(srq), koffi.free(srq), 0),
      createQp: (pd, attr) => this.createQp(pd, attr),
      destroyQp: (qp) => this.destroyQp(qp),
      modifyQp: (qp, attr, mask) => this.modifyQp(qp, attr, mask),
      queryPort: (ctx, _port, attr) => {
        koffi.encode(attr, abi.ibv_port_attr, {
          state: abi.IBV_PORT_ACTIVE, max_mtu: abi.IBV_MTU_4096, active_mtu: abi.IBV_MTU_4096, gid_tbl_len: 1,
          lid: 0, link_layer: abi.IBV_LINK_LAYER_ETHERNET,
        });
        return this.ctxs.has(ctx) ? 0 : EINVAL;
      },
      queryGid: (ctx, _port, _index, gid) => {
        new Uint8Array(koffi.view(gid, 16)).set(this.ctxs.get(ctx)!.gid);
        return 0;
      },
    };
  }

  private makeDeviceList(): void {
    mkdirSync(this.dir, { recursive: true });
    this.device = zalloc(abi.ibv_device, {
      node_type: 1, transport_type: 0, name: LOOPBACK_DEVICE_NAME, dev_name: 'uverbs-loopback', dev_path: this.dir, ibdev_path: this.dir,
    });
    this.list = koffi.alloc('void *', 2) as Ptr;
    koffi.encode(this.list, koffi.array('void *', 2), [this.device, null]);
  }

  private open(): Ptr {
    const gid = Uint8Array.from([0xfe, 0x80, 0, 0, 0, 0, 0, 0, ...randomBytes(8)]);
    const ctx: Ctx = {
      fake: null as unknown as FakeVerbsDevice,
      gid,
      path: socketPathOf(this.dir, gid),
      server: null,
      mrs: new Map(),
      qps: new Map(),
    };
    ctx.fake = new FakeVerbsDevice(
      {
        postSend: (qp, wr, bad) => this.postSend(qp, wr, bad),
        postSrqRecv: (srq, wr) => this.postSrqRecv(srq, wr),
        pollCq: (cq, n, wc) => this.pollCq(cq, n, wc),
        createCqEx: (_c, attr) => this.createCq(ctx, decodeCqInitAttrEx(attr).cqe, true),
      },
      { deviceName: LOOPBACK_DEVICE_NAME },
    );
    this.ctxs.set(ctx.fake.ctx, ctx);
    return ctx.fake.ctx;
  }

  private close(ptr: Ptr): number {
    const ctx = this.ctxs.get(ptr);
    if (!ctx) return EINVAL;
    this.ctxs.delete(ptr);
    if (ctx.server) {
      ctx.server.close();
      try {
        unlinkSync(ctx.path);
      } catch {
        /* already gone */
      }
    }
    ctx.fake.close();
    return 0;
  }

  private regMr(pd: Ptr, addr: Ptr, length: number, access: number): Ptr {
    const ctx = this.pds.get(pd)!;
    const key = this.nextKey++;
    const ptr = zalloc(abi.ibv_mr, { context: ctx.fake.ctx, pd, addr, length, handle: key, lkey: key, rkey: key });
    const mr: Mr = { addr, length, lkey: key, rkey: key, access, bytes: new Uint8Array(koffi.view(addr, length)) };
    ctx.mrs.set(ptr, mr);
    this.mrs.set(ptr, { ctx, mr });
    if (access & (abi.IBV_ACCESS_REMOTE_READ | abi.IBV_ACCESS_REMOTE_WRITE)) listen(ctx);
    return ptr;
  }

  private createCq(ctx: Ctx, cqe: number, ring: boolean): Ptr {
    const ptr = ctx.fake.allocCq(cqe);
    this.cqs.set(ptr, { entries: [], cap: cqe, ring });
    return ptr;
  }

  private createSrq(pd: Ptr, _attr: Ptr): Ptr {
    const ctx = this.pds.get(pd)!;
    const ptr = zalloc(abi.ibv_srq, { context: ctx.fake.ctx, pd, handle: this.nextKey++ });
    this.srqs.set(ptr, { ctx, posted: [], waiting: new Set() });
    return ptr; // the attr's max_wr stays what was asked for: that is what this SRQ holds
  }

  private createQp(pd: Ptr, attrPtr: Ptr): Ptr {
    const ctx = this.pds.get(pd)!;
    const a = koffi.decode(attrPtr, abi.ibv_qp_init_attr) as Record<string, unknown>;
    const num = this.nextQpNum++ & 0xffffff;
    const srqPtr = big(a['srq']);
    const ptr = zalloc(abi.ibv_qp, {
      context: ctx.fake.ctx, pd, send_cq: a['send_cq'], recv_cq: a['recv_cq'], srq: a['srq'], qp_num: num,
      state: abi.IBV_QPS_RESET, qp_type: abi.IBV_QPT_RC,
    });
    const qp: Qp = {
      ptr, num, ctx,
      sendCq: this.cqs.get(big(a['send_cq']))!,
      recvCq: this.cqs.get(big(a['recv_cq']))!,
      srq: srqPtr ? this.srqs.get(srqPtr)! : null,
      sigAll: a['sq_sig_all'] !== 0,
      state: abi.IBV_QPS_RESET, dest: null, socket: null, pending: new Map(), nextSeq: 1, failed: false, inbound: new Set(),
    };
    this.qps.set(ptr, qp);
    ctx.qps.set(num, qp);
    return ptr;
  }

  private destroyQp(ptr: Ptr): number {
    const qp = this.qps.get(ptr);
    if (!qp) return EINVAL;
    this.qps.delete(ptr);
    qp.ctx.qps.delete(qp.num);
    qp.failed = true;
    qp.socket?.destroy();
    for (const s of qp.inbound) s.destroy();
    koffi.free(ptr);
    return 0;
  }

  private modifyQp(ptr: Ptr, attr: Ptr, mask: number): number {
    const qp = this.qps.get(ptr);
    if (!qp) return EINVAL;
    if (mask & abi.IBV_QP_STATE) qp.state = koffi.decode(attr, abi.offsetOf(abi.ibv_qp_attr, 'qp_state'), 'int') as number;
    if (qp.state === abi.IBV_QPS_RTR && mask & abi.IBV_QP_DEST_QPN) {
      const destQpNum = koffi.decode(attr, abi.offsetOf(abi.ibv_qp_attr, 'dest_qp_num'), 'uint32_t') as number;
      const dgid = new Uint8Array(koffi.view(attr + BigInt(abi.offsetOf(abi.ibv_qp_attr, 'ah_attr.grh.dgid')), 16));
      qp.dest = { qpNum: destQpNum, path: socketPathOf(this.dir, dgid) };
    }
    return 0;
  }

  private postSend(qpPtr: Ptr, wrPtr: Ptr, bad: Ptr): number {
    const qp = this.qps.get(qpPtr);
    if (!qp || qp.state !== abi.IBV_QPS_RTS || !qp.dest) {
      writePointer(bad, wrPtr);
      return EINVAL;
    }
    postWorkRequests(qp, decodeSendWrChain(wrPtr));
    return 0;
  }

  private postSrqRecv(srqPtr: Ptr, wrPtr: Ptr): number {
    const srq = this.srqs.get(srqPtr);
    if (!srq) return EINVAL;
    for (const wr of decodeRecvWrChain(wrPtr)) {
      srq.posted.push({ wrId: wr.wrId, addr: wr.sges[0]?.addr ?? 0n, length: wr.sges.reduce((n, s) => n + s.length, 0) });
    }
    if (srq.waiting.size > 0) {
      const waiting = [...srq.waiting];
      srq.waiting.clear();
      setImmediate(() => waiting.forEach((r) => respond(r))); // not inside the caller's ibv_post_srq_recv
    }
    return 0;
  }

  private pollCq(cqPtr: Ptr, n: number, wc: Ptr): number {
    const cq = this.cqs.get(cqPtr);
    return cq ? writeWorkCompletions(wc, cq.entries.splice(0, n)) : 0;
  }
}

