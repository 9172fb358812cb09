// The `verbs` transport, sender side (DESIGN §4; paper §3.2, §5.2). A VerbsConnection is one worker's
// RC QP to one remote receiver. A Rowan write is an unsignaled SEND of the entry followed, in the same
// ibv_post_send, by a signaled 1-byte RDMA READ whose wr_id is the request context: the READ can only
// complete after the receiver's RNIC executed the SEND ahead of it on the QP, so its completion is
// the ack that the entry is persistent in the receiver's b-log. The receiver's CPU is not involved.
//
// Memory. The SEND's data must stay put until the chain completes, so each write is copied into a
// staging slot of one registered native buffer and sent from there; slots are recycled once every
// attempt that may read them has completed. The same buffer holds the bounce area for writeAt/read
// and the 1-byte scratch every persistence READ lands in (its value is never looked at).
//
//   registered buffer:  [ slot 0 | slot 1 | ... | slot n-1 | bulk (writeAt / read) | scratch ]
//                         bufferBytes each (the receiver's fixed receive-buffer size)
//
// Retry (paper §4.3, DESIGN §4). The receiver declares a consumed segment Used 2 ms (grace) after it
// sees it consumed; a sender cannot see receiver state, so an attempt whose READ has not completed
// within `retryMs` (1 ms) is re-issued with a fresh wr_id, from the same slot. Only an attempt that
// completes within retryMs of being posted acknowledges the write: a late completion proves the entry
// landed, not that it landed before its segment went to digest. The duplicate copies are harmless
// (digest applies entries version-conditionally). "Completes" is when the poller sees it, so a busy
// event loop errs toward an extra copy, never toward a lost one.
//
// Landed address. RDMA SEND completions report nothing of where the receiver's RNIC put the data (the
// receive completion, with the buffer's wr_id, goes to the receiver's ring CQ, which no one polls), so
// write() resolves with LANDED_ADDRESS_UNKNOWN (-1). Callers must not rely on the offset under verbs.
import {
  IBV_ACCESS_LOCAL_WRITE,
  IBV_SEND_SIGNALED,
  IBV_WC_RDMA_READ,
  IBV_WR_RDMA_READ,
  IBV_WR_RDMA_WRITE,
} from '../../native/verbs-abi.js';
import { NativeBuffer } from '../../native/verbs-mem.js';
import * as verbs from '../../native/verbs.js';
import { ErrorCodes, RowanError, invariant } from '../../config/base/errors.js';
import {
  defaultSenderOptions,
  type RemoteRegion,
  type RowanConnection,
  type RowanSenderOptions,
  type SenderStats,
} from './fabric.js';
import { SenderCq, type SenderCqOptions } from './verbs-cq.js';
import {
  type ControlRequester,
  type VerbsFabricOptions,
  VerbsFabric,
  bringUpQp,
  dialVerbs,
  localEndpoint,
  openVerbsFabric,
} from './verbs-connect.js';

export { openVerbsFabric, listenVerbs, VerbsFabric } from './verbs-connect.js';
export type { VerbsListener, ListenVerbsOptions, VerbsFabricOptions } from './verbs-connect.js';
export { VerbsReceiverQueue, type ReceiveQueue } from './verbs-receiver.js';
export { SenderCq } from './verbs-cq.js';

/** Completion statuses that mean the receiver did not answer (its RNIC's retries ran out). */
const UNREACHABLE_STATUSES: ReadonlySet<string> = new Set(['IBV_WC_RETRY_EXC_ERR', 'IBV_WC_RNR_RETRY_EXC_ERR']);

/**
 * A completion saying the receiver is unreachable becomes PEER_GONE (status kept in the message and
 * details): the QP is in the error state for good, and a caller's only way on is a new connection,
 * which it makes on PEER_GONE as it does under shm and tcp. Other failures stay VERBS.
 */
function peerGoneOf(err: unknown): unknown {
  if (!(err instanceof RowanError) || err.code !== ErrorCodes.VERBS) return err;
  if (!UNREACHABLE_STATUSES.has(String(err.details?.['statusName']))) return err;
  return new RowanError(ErrorCodes.PEER_GONE, `verbs receiver unreachable: ${err.message}`, err.details);
}

/** What write() resolves with under verbs: the sender cannot learn where a SEND landed. */
export const LANDED_ADDRESS_UNKNOWN = -1;

/** The receiver's side of a connection, as its welcome described it. */
export interface VerbsRemote {
  /** Address of the receiver's pool offset 0 (its mapping base), and the pool MR's rkey. */
  poolBase: bigint;
  rkey: number;
  /** One-sided verbs stay inside [dataStart, dataEnd) (the pool's segments). */
  dataStart: number;
  dataEnd: number;
  /** Pool offset the 1-byte persistence READ of a Rowan write reads. */
  readOffset: number;
  /** The receiver's fixed receive-buffer size: the largest Rowan write. */
  bufferBytes: number;
  strideBytes: number;
}

/** Already-created verbs objects a VerbsConnection runs on (connect() makes them; tests fake them). */
export interface VerbsSenderParts {
  qp: verbs.VerbsQp;
  /** The worker's shared CQ (the QP's send CQ). */
  cq: SenderCq;
  /** Registered local memory laid out by senderLayout(), and its MR's lkey. */
  memory: NativeBuffer;
  lkey: number;
  remote: VerbsRemote;
  /** max_send_wr the QP was created with. */
  sendQueueWrs: number;
  /** The side channel (allocateRegion); absent, allocateRegion is unavailable. */
  control?: ControlRequester;
  /** Called once by close(), after the connection stopped using the QP and memory. */
  release?: () => void;
}

export interface VerbsConnectionOptions extends Partial<RowanSenderOptions> {
  /** Writes staged (in flight) at once; more wait in order (default 64). */
  slots?: number;
  /** Bounce area for writeAt/read, which move larger ranges in chunks of this (default 64 KiB). */
  bulkBytes?: number;
}

export interface VerbsConnectOptions extends VerbsConnectionOptions, VerbsFabricOptions, SenderCqOptions {
  host: string;
  port: number;
  /** The worker's device (opened per connection if absent, and closed with it). */
  fabric?: VerbsFabric;
  /** The worker's shared CQ (created per connection if absent). */
  cq?: SenderCq;
  connectTimeoutMs?: number;
}

export interface VerbsSenderStats extends SenderStats {
  /** Completions that came after retryMs: ignored, the write was (or will be) re-issued. */
  late: number;
  inFlight: number;
  queued: number;
}

/** Byte offsets of the slots, the bulk area and the scratch byte in the registered buffer. */
export function senderLayout(bufferBytes: number, slots: number, bulkBytes: number): { bulkAt: number; scratchAt: number; size: number } {
  const bulkAt = slots * bufferBytes;
  const scratchAt = bulkAt + bulkBytes;
  return { bulkAt, scratchAt, size: scratchAt + 64 };
}

const DEFAULT_SLOTS = 64;
const DEFAULT_BULK_BYTES = 64 * 1024;

interface WriteJob {
  kind: 'rowan';
  bytes: Uint8Array;
  slot: number;
  /** Attempts posted whose completion has not been seen (each may still read the slot). */
  inflight: number;
  /** wr_id and post time of the latest attempt. */
  current: number;
  issuedAt: number;
  /** When write() was called: the noBufferTimeoutMs deadline counts from here. */
  firstAt: number;
  settled: boolean;
  resolve: (at: number) => void;
  reject: (err: unknown) => void;
}

interface RawJob {
  kind: 'raw';
  wrs: Omit<verbs.SendWorkRequest, 'wrId'>[];
  settled: boolean;
  resolve: () => void;
  reject: (err: unknown) => void;
}

type Job = WriteJob | RawJob;

export class VerbsConnection implements RowanConnection {
  readonly kind = 'verbs' as const;
  private readonly o: RowanSenderOptions;
  private readonly qp: verbs.VerbsQp;
  private readonly cq: SenderCq;
  private readonly mem: NativeBuffer;
  private readonly lkey: number;
  private readonly remote: VerbsRemote;
  private readonly sendQueueWrs: number;
  private readonly control: ControlRequester | undefined;
  private readonly release: () => void;
  private readonly layout: ReturnType<typeof senderLayout>;
  private readonly bulkBytes: number;
  private readonly freeSlots: number[] = [];
  private readonly queue: Job[] = [];
  private readonly active = new Set<Job>();
  private readonly wrIds = new Set<number>();
  private sqInFlight = 0;
  private bulkLock: Promise<void> = Promise.resolve();
  private failed: unknown = null;
  private closed = false;
  private readonly s: VerbsSenderStats = { writes: 0, bytes: 0, retries: 0, noBufferWaits: 0, late: 0, inFlight: 0, queued: 0 };

  /** Run on verbs objects that already exist and are connected (RTS). */
  constructor(p: VerbsSenderParts, o: VerbsConnectionOptions = {}) {
    this.o = { ...defaultSenderOptions, ...o };
    this.qp = p.qp;
    this.cq = p.cq;
    this.mem = p.memory;
    this.lkey = p.lkey;
    this.remote = p.remote;
    this.sendQueueWrs = p.sendQueueWrs;
    this.control = p.control;
    this.release = p.release ?? (() => {});
    const slots = o.slots ?? DEFAULT_SLOTS;
    this.bulkBytes = o.bulkBytes ?? DEFAULT_BULK_BYTES;
    this.layout = senderLayout(this.remote.bufferBytes, slots, this.bulkBytes);
    invariant(slots >= 1 && this.sendQueueWrs >= 2, `verbs sender: ${slots} slots, ${this.sendQueueWrs} send WRs`);
    invariant(this.mem.size >= this.layout.size, `verbs sender: memory of ${this.mem.size} B < layout ${this.layout.size} B`);
    for (let i = slots - 1; i >= 0; i--) this.freeSlots.push(i);
    this.cq.addTicker(this.tick);
    this.cq.onFatal(this.fail);
  }

  /**
   * Open (or share) the device and CQ, bring up an RC QP with the receiver listening at host:port,
   * register the staging memory. On a machine without RDMA this rejects at once with
   * ROWAN_ERR_VERBS_NO_DEVICE, before any network traffic.
   */
  static async connect(o: VerbsConnectOptions): Promise<VerbsConnection> {
    const undo: (() => void)[] = [];
    const unwind = (): void => {
      for (const f of undo.splice(0).reverse()) {
        try {
          f();
        } catch {
          /* keep unwinding: the first error is the one to report */
        }
      }
    };
    try {
      const fabric = o.fabric ?? openVerbsFabric(o);
      if (!o.fabric) undo.push(() => fabric.close());
      const slots = o.slots ?? DEFAULT_SLOTS;
      const sendQueueWrs = 2 * slots + 2;
      let cq: SenderCq;
      if (o.cq) cq = o.cq;
      else {
        const raw = verbs.createCq(fabric.ctx, 2 * sendQueueWrs, { ignoreOverrun: false });
        const own = new SenderCq(raw, o, () => verbs.destroyCq(raw));
        undo.push(() => own.close());
        cq = own;
      }
      const qp = verbs.createRcQp(fabric.pd, { sendCq: cq.cq, recvCq: cq.cq, maxSendWr: sendQueueWrs });
      undo.push(() => verbs.destroyQp(qp));
      const local = localEndpoint(fabric, qp);
      const hello = { endpoint: local, senderId: o.senderId ?? 0 };
      const { channel, welcome } = await dialVerbs(o.host, o.port, hello, o.connectTimeoutMs ?? 5000);
      undo.push(() => channel.close());
      const remote: VerbsRemote = {
        poolBase: welcome.pool.base,
        rkey: welcome.pool.rkey,
        dataStart: welcome.pool.dataStart,
        dataEnd: welcome.pool.dataEnd,
        readOffset: welcome.pool.readOffset,
        bufferBytes: welcome.queue.bufferBytes,
        strideBytes: welcome.queue.strideBytes,
      };
      const memory = NativeBuffer.alloc(senderLayout(remote.bufferBytes, slots, o.bulkBytes ?? DEFAULT_BULK_BYTES).size);
      undo.push(() => memory.free());
      const mr = verbs.regMr(fabric.pd, memory.address, memory.size, IBV_ACCESS_LOCAL_WRITE);
      undo.push(() => verbs.deregMr(mr));
      bringUpQp(fabric, qp, local, welcome.endpoint, 0); // a requester only: it grants no remote access
      undo.length = 0;
      // The QP goes first: once it is destroyed the RNIC no longer reads the staging memory.
      const release = (): void => {
        verbs.destroyQp(qp);
        verbs.deregMr(mr);
        memory.free();
        if (!o.cq) cq.close();
        if (!o.fabric) fabric.close();
      };
      const conn = new VerbsConnection({ qp, cq, memory, lkey: mr.lkey, remote, sendQueueWrs, control: channel, release }, o);
      // The receiver closes the side channel when it destroys our QP (or its process is gone): nothing
      // posted from now on will complete, so say PEER_GONE now rather than after the RNIC's retries.
      channel.onClose = (err) => conn.receiverGone(`verbs receiver ${o.host}:${o.port} closed the side channel (${err.message})`);
      return conn;
    } catch (err) {
      unwind();
      throw err;
    }
  }

  /**
   * Rowan write. Resolves with LANDED_ADDRESS_UNKNOWN (-1) once a READ behind the SEND completed within
   * retryMs: the entry is then persistent in the receiver's b-log, at an address only the receiver
   * knows. Writes are whole strides and at most the receiver's receive-buffer size.
   */
  write(bytes: Uint8Array): Promise<number> {
    const gate = this.gate();
    if (gate) return Promise.reject(gate);
    const { strideBytes: stride, bufferBytes } = this.remote;
    if (bytes.length === 0 || bytes.length % stride !== 0) {
      return Promise.reject(new RowanError(ErrorCodes.BAD_ARGUMENT, `a Rowan write is whole ${stride} B strides, got ${bytes.length} B`));
    }
    if (bytes.length > bufferBytes) {
      return Promise.reject(new RowanError(
        ErrorCodes.ENTRY_TOO_LARGE,
        `a ${bytes.length} B write cannot fit the receiver's ${bufferBytes} B fixed-size receive buffers (verbs receive mode ${verbs.receiveMode})`,
      ));
    }
    return new Promise<number>((resolve, reject) => {
      const firstAt = this.cq.clock.now();
      this.queue.push({ kind: 'rowan', bytes, slot: -1, inflight: 0, current: 0, issuedAt: 0, firstAt, settled: false, resolve, reject });
      this.pump();
    });
  }

  /** RDMA WRITE into the receiver's pool, then a 1-byte READ of its last byte (persistence). */
  async writeAt(offset: number, bytes: Uint8Array): Promise<void> {
    this.checkRange(offset, bytes.length);
    const { rkey } = this.remote;
    await this.withBulk(async () => {
      for (let done = 0; done < bytes.length; ) {
        const n = Math.min(this.bulkBytes, bytes.length - done);
        this.mem.bytes.set(bytes.subarray(done, done + n), this.layout.bulkAt);
        const at = this.remoteAddr(offset + done);
        await this.raw([
          { opcode: IBV_WR_RDMA_WRITE, sges: [this.local(this.layout.bulkAt, n)], remoteAddr: at, rkey },
          { opcode: IBV_WR_RDMA_READ, sendFlags: IBV_SEND_SIGNALED, sges: [this.local(this.layout.scratchAt, 1)], remoteAddr: at + BigInt(n - 1), rkey },
        ]);
        done += n;
      }
    });
  }

  /** RDMA READ from the receiver's pool. */
  async read(offset: number, length: number): Promise<Uint8Array> {
    this.checkRange(offset, length);
    const out = new Uint8Array(length);
    await this.withBulk(async () => {
      for (let done = 0; done < length; ) {
        const n = Math.min(this.bulkBytes, length - done);
        await this.raw([
          { opcode: IBV_WR_RDMA_READ, sendFlags: IBV_SEND_SIGNALED, sges: [this.local(this.layout.bulkAt, n)], remoteAddr: this.remoteAddr(offset + done), rkey: this.remote.rkey },
        ]);
        out.set(this.mem.bytes.subarray(this.layout.bulkAt, this.layout.bulkAt + n), done);
        done += n;
      }
    });
    return out;
  }

  /** Ask the receiver, over the side channel, for a segment to write one-sidedly into. */
  async allocateRegion(ownerId: number): Promise<RemoteRegion> {
    const gate = this.gate();
    if (gate) throw gate;
    if (!this.control) throw new RowanError(ErrorCodes.FABRIC_UNAVAILABLE, 'this verbs connection has no side channel');
    const res = await this.control.request({ op: 'allocate', ownerId });
    const r = res['region'] as Partial<RemoteRegion> | undefined;
    if (!r || !Number.isInteger(r.segment) || !Number.isInteger(r.offset) || !Number.isInteger(r.length)) {
      throw new RowanError(ErrorCodes.BAD_FRAME, `verbs side channel: malformed region ${JSON.stringify(r)}`);
    }
    return r as RemoteRegion;
  }

  stats(): SenderStats {
    return { writes: this.s.writes, bytes: this.s.bytes, retries: this.s.retries, noBufferWaits: this.s.noBufferWaits };
  }

  /** stats() plus what only this transport knows. */
  verbsStats(): VerbsSenderStats {
    return { ...this.s, inFlight: this.active.size, queued: this.queue.length };
  }

  /** Poll the shared CQ once (completions of every connection on it, then retry deadlines). */
  poll(): number {
    return this.cq.poll();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const err = new RowanError(ErrorCodes.RECEIVER_CLOSED, 'connection closed');
    for (const job of [...this.queue, ...this.active]) this.settle(job, err);
    this.queue.length = 0;
    this.active.clear();
    for (const id of this.wrIds) this.cq.untrack(id);
    this.wrIds.clear();
    this.cq.removeTicker(this.tick);
    this.cq.offFatal(this.fail);
    this.control?.close();
    this.release();
  }

  // ---- the send queue ----------------------------------------------------------------------------

  /** Post queued jobs, in order, while the send queue, the CQ and the slots have room. */
  private pump(): void {
    while (this.queue.length > 0 && !this.failed && !this.closed) {
      const job = this.queue[0]!;
      if (job.kind === 'rowan') {
        if (this.freeSlots.length === 0 || !this.room(2)) return;
        job.slot = this.freeSlots.pop()!;
        this.mem.bytes.set(job.bytes, job.slot * this.remote.bufferBytes);
        this.queue.shift();
        this.active.add(job);
        this.issue(job, this.cq.clock.now());
      } else {
        if (!this.room(job.wrs.length)) return;
        this.queue.shift();
        this.active.add(job);
        this.issueRaw(job);
      }
    }
  }

  private room(wrs: number): boolean {
    return this.sqInFlight + wrs <= this.sendQueueWrs && this.cq.hasRoom();
  }

  /** Post one attempt of a Rowan write: SEND from its slot + 1-byte READ, with a fresh wr_id. */
  private issue(job: WriteJob, now: number): void {
    const wrId = this.cq.nextWrId();
    try {
      verbs.postRowanWrite(this.qp, {
        localAddr: this.mem.at(job.slot * this.remote.bufferBytes),
        length: job.bytes.length,
        lkey: this.lkey,
        wrId,
        readAddr: this.remoteAddr(this.remote.readOffset),
        readRkey: this.remote.rkey,
        readLocalAddr: this.mem.at(this.layout.scratchAt),
        readLkey: this.lkey,
      });
    } catch (err) {
      this.settle(job, err);
      this.retire(job);
      return;
    }
    job.inflight++;
    job.current = wrId;
    job.issuedAt = now;
    this.sqInFlight += 2;
    this.wrIds.add(wrId);
    this.cq.track(wrId, (wc, at) => this.onWriteCompletion(job, wrId, now, wc, at));
  }

  private onWriteCompletion(job: WriteJob, wrId: number, issuedAt: number, wc: verbs.WorkCompletion, now: number): void {
    if (!wc.error && wc.opcode !== IBV_WC_RDMA_READ) {
      // Not the ack (a SEND completion would only come with sq_sig_all): keep waiting for the READ.
      this.cq.track(wrId, (w, at) => this.onWriteCompletion(job, wrId, issuedAt, w, at));
      return;
    }
    this.wrIds.delete(wrId);
    job.inflight--;
    this.sqInFlight -= 2;
    if (wc.error) this.fail(wc.error);
    else if (!job.settled) {
      if (now - issuedAt <= this.o.retryMs) {
        this.s.writes++;
        this.s.bytes += job.bytes.length;
        job.settled = true;
        job.resolve(LANDED_ADDRESS_UNKNOWN);
      } else this.s.late++; // tick() re-issues it (or already did)
    }
    this.retire(job);
    this.pump();
  }

  private issueRaw(job: RawJob): void {
    const wrId = this.cq.nextWrId();
    try {
      verbs.postSend(this.qp, job.wrs.map((w) => ({ ...w, wrId })));
    } catch (err) {
      this.settle(job, err);
      this.active.delete(job);
      return;
    }
    const n = job.wrs.length;
    this.sqInFlight += n;
    this.wrIds.add(wrId);
    const onDone = (wc: verbs.WorkCompletion): void => {
      if (!wc.error && wc.opcode !== IBV_WC_RDMA_READ) return this.cq.track(wrId, onDone);
      this.wrIds.delete(wrId);
      this.sqInFlight -= n;
      this.active.delete(job);
      if (wc.error) this.fail(wc.error);
      else if (!job.settled) {
        job.settled = true;
        job.resolve();
      }
      this.pump();
    };
    this.cq.track(wrId, onDone);
  }

  /** Retry deadlines, run by the CQ after each poll pass. */
  private readonly tick = (now: number): void => {
    if (this.failed || this.closed) return;
    for (const job of this.active) {
      if (job.kind !== 'rowan' || job.settled) continue;
      if (now - job.firstAt > this.o.noBufferTimeoutMs) {
        this.settle(job, this.timeout('no attempt was acknowledged within'));
        this.retire(job);
      } else if (now - job.issuedAt > this.o.retryMs && this.room(2)) {
        this.s.retries++;
        this.issue(job, now);
      }
    }
    // Writes still waiting for a slot or send-queue room age too (slots held by unanswered attempts).
    while (this.queue.length > 0 && this.queue[0]!.kind === 'rowan' && now - (this.queue[0] as WriteJob).firstAt > this.o.noBufferTimeoutMs) {
      this.settle(this.queue.shift()!, this.timeout('the write found no free staging slot for'));
    }
    this.pump();
  };

  private timeout(what: string): RowanError {
    return new RowanError(
      ErrorCodes.WRITE_TIMEOUT,
      `Rowan write: ${what} ${this.o.noBufferTimeoutMs} ms (retry bound ${this.o.retryMs} ms; receiver out of buffers, or unreachable)`,
    );
  }

  /** The receiver is gone (its side channel closed): fail everything with PEER_GONE, which callers reconnect on. */
  receiverGone(why: string): void {
    if (!this.closed) this.fail(new RowanError(ErrorCodes.PEER_GONE, why));
  }

  /** A failed completion: the RC QP is now in the error state, so nothing more will succeed. */
  private readonly fail = (cause: unknown): void => {
    const err = peerGoneOf(cause);
    if (!this.failed) this.failed = err;
    for (const job of [...this.queue, ...this.active]) this.settle(job, err);
    this.queue.length = 0;
  };

  private settle(job: Job, err: unknown): void {
    if (job.settled) return;
    job.settled = true;
    job.reject(err);
  }

  /** Give a settled write's slot back once no attempt of it can still read it. */
  private retire(job: WriteJob): void {
    if (!job.settled || job.inflight > 0) return;
    this.active.delete(job);
    if (job.slot >= 0) this.freeSlots.push(job.slot);
    job.slot = -1;
  }

  // ---- one-sided helpers -------------------------------------------------------------------------

  private raw(wrs: Omit<verbs.SendWorkRequest, 'wrId'>[]): Promise<void> {
    const gate = this.gate();
    if (gate) return Promise.reject(gate);
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ kind: 'raw', wrs, settled: false, resolve, reject });
      this.pump();
    });
  }

  /** One writeAt/read at a time owns the bulk area. */
  private withBulk<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.bulkLock.then(fn);
    this.bulkLock = run.then(() => undefined, () => undefined);
    return run;
  }

  private local(offset: number, length: number): verbs.ScatterGatherEntry {
    return { addr: this.mem.at(offset), length, lkey: this.lkey };
  }

  private remoteAddr(poolOffset: number): bigint {
    return this.remote.poolBase + BigInt(poolOffset);
  }

  private gate(): unknown {
    if (this.closed) return new RowanError(ErrorCodes.RECEIVER_CLOSED, 'connection closed');
    return this.failed;
  }

  private checkRange(offset: number, length: number): void {
    const gate = this.gate();
    if (gate) throw gate;
    const { dataStart, dataEnd } = this.remote;
    if (!Number.isInteger(offset) || !Number.isInteger(length) || offset < dataStart || length < 0 || offset + length > dataEnd) {
      throw new RowanError(ErrorCodes.BAD_ARGUMENT, `[${offset}, +${length}) is outside the receiver pool's segments`);
    }
  }
}
