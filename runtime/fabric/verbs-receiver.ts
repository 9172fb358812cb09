// The receiver's RNIC-owned queue under the `verbs` fabric (paper §3.2.2, Figure 4a): one SRQ that
// every sender's RC QP lands its SENDs in, the PM pool registered once, and the ring CQ.
//
// RowanReceiver (runtime/rowan/receiver.ts) posts b-log SEGMENTS into a queue, in increasing address
// order, and learns which are consumed from the pool itself (the non-zero first 64 bits of a later
// segment). `ReceiveQueue` is the part of a queue it needs; the emulated SharedReceiveQueue of the
// shm/tcp fabrics already has exactly this shape, and VerbsReceiverQueue implements it on the RNIC.
//
// Receive mode. Upstream rdma-core has no multi-packet SRQ for RC QPs, so this queue cannot post a
// 4 MiB segment as one buffer many SENDs fill at 64 B strides (Figure 4b): one receive WR takes one
// SEND, whatever its size. It therefore splits every segment into FIXED-SIZE receive buffers of
// `bufferBytes` (a stride multiple) and posts those, in increasing address order, in ONE
// ibv_post_srq_recv call (Figure 4a). The cost is the paper's: a write occupies a whole buffer (the
// rest stays zero; the b-log scan steps over it) and no write may exceed `bufferBytes` — the sender
// learns the size at connection setup and refuses larger writes with ROWAN_ERR_ENTRY_TOO_LARGE.
//
// Ring CQ. Every SEND consumes a receive WR and so generates a receive completion the control thread
// never polls (§3.2.2). The CQ is created with IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN where the provider
// takes it ('cq-ex-ignore-overrun'): the RNIC then overwrites old entries like a ring. A provider
// without it ('cq-legacy') would move the QPs to error on overrun, so in that mode post() first
// drains the CQ: completions between two posts never exceed the receive WRs outstanding at the
// first, which the SRQ caps at maxWr, and the CQ is created larger than that.
import type { Pool } from '../../shm/pool.js';
import { defaultLimits } from '../../config/limits.js';
import * as verbs from '../../native/verbs.js';
import * as abi from '../../native/verbs-abi.js';
import { ErrorCodes, RowanError, invariant } from '../../config/base/errors.js';
import type { PostedBuffer } from '../rowan/srq.js';

/** What RowanReceiver needs of a receive queue: posting segments, and counting them. */
import type { ReceiveQueue } from '../rowan/srq.js';

/** What the receiver needs of an opened device (a VerbsFabric, verbs-connect.ts): its context and PD. */
export interface VerbsDevice {
  readonly ctx: verbs.VerbsContext;
  readonly pd: verbs.VerbsPd;
}
export type { ReceiveQueue };

/** Already-created verbs objects a VerbsReceiverQueue runs on (create() makes them; tests fake them). */
export interface VerbsReceiverQueueParts {
  srq: verbs.VerbsSrq;
  /** The ring CQ: recv (and send) CQ of every receiver QP. */
  cq: verbs.VerbsCq;
  /** Keys of the MR over the whole pool mapping. */
  lkey: number;
  rkey: number;
  /** The pool mapping's base address in this process (pool offset 0). */
  poolBase: bigint;
  /** The pool's bytes, to see which posted segments writes have reached (first 64 bits non-zero). */
  bytes: Uint8Array;
  segmentBytes: number;
  /** Fixed receive-buffer size a segment is split into; a multiple of the stride dividing segmentBytes. */
  bufferBytes: number;
  strideBytes?: number;
  /** Called once by close(): destroy the SRQ and CQ, deregister the pool. */
  release?: () => void;
}

export interface VerbsReceiverQueueOptions {
  /** Fixed receive-buffer size (default: the MTU limit, so any one-block entry fits). */
  bufferBytes?: number;
  /** SRQ capacity in receive WRs (the provider may grant more; default 16384). */
  maxWr?: number;
}

export interface VerbsReceiverQueueStats {
  receiveMode: verbs.ReceiveMode;
  cqMode: verbs.CqMode;
  cqModeReason: string;
  bufferBytes: number;
  posted: number;
  postedWrs: number;
  outstanding: number;
  usedBelow: number;
  /** Receive completions drained (cq-legacy only) and, of those, failed ones (e.g. a SEND too long). */
  drained: number;
  receiveErrors: number;
}

const DEFAULT_MAX_WR = 16384;
const DRAIN_BATCH = 64;

export class VerbsReceiverQueue implements ReceiveQueue {
  readonly postCap: number;
  readonly srq: verbs.VerbsSrq;
  readonly cq: verbs.VerbsCq;
  readonly lkey: number;
  readonly rkey: number;
  readonly poolBase: bigint;
  readonly bufferBytes: number;
  readonly strideBytes: number;
  readonly segmentBytes: number;
  readonly receiveMode = verbs.receiveMode;
  private readonly bytes: Uint8Array;
  private readonly release: () => void;
  /** Pool offset and receive-WR count of segments from `currentSeq` up to `postedCount`. */
  private live: { offset: number; wrs: number }[] = [];
  private currentSeq = 0;
  private postedCount = 0;
  private postedWrs = 0;
  private usedBelow = 0;
  private drained = 0;
  private receiveErrors = 0;
  private closed = false;

  constructor(p: VerbsReceiverQueueParts) {
    this.srq = p.srq;
    this.cq = p.cq;
    this.lkey = p.lkey;
    this.rkey = p.rkey;
    this.poolBase = p.poolBase;
    this.bytes = p.bytes;
    this.segmentBytes = p.segmentBytes;
    this.bufferBytes = p.bufferBytes;
    this.strideBytes = p.strideBytes ?? verbs.RECEIVE_STRIDE_BYTES;
    this.release = p.release ?? (() => {});
    const b = this.bufferBytes;
    if (!Number.isInteger(b) || b <= 0 || b % this.strideBytes !== 0 || this.segmentBytes % b !== 0) {
      throw new RowanError(
        ErrorCodes.BAD_CONFIG,
        `verbs receive buffers of ${b} B must be a multiple of the ${this.strideBytes} B stride dividing the ${this.segmentBytes} B segment`,
      );
    }
    this.postCap = Math.floor(this.srq.maxWr / (this.segmentBytes / b));
    if (this.postCap < 2) {
      throw new RowanError(
        ErrorCodes.BAD_CONFIG,
        `the SRQ holds ${this.srq.maxWr} receive WRs; a ${this.segmentBytes} B segment needs ${this.segmentBytes / b} ` +
          `buffers of ${b} B, so fewer than 2 segments fit (raise maxWr or bufferBytes)`,
      );
    }
  }

  /**
   * Build the queue on a device: the SRQ, the pool's MR (LOCAL_WRITE for the RNIC's receives,
   * REMOTE_WRITE/READ for one-sided verbs and the persistence READ) and the ring CQ.
   */
  static create(fabric: VerbsDevice, pool: Pool, o: VerbsReceiverQueueOptions = {}): VerbsReceiverQueue {
    const access = abi.IBV_ACCESS_LOCAL_WRITE | abi.IBV_ACCESS_REMOTE_WRITE | abi.IBV_ACCESS_REMOTE_READ;
    const maxWr = o.maxWr ?? DEFAULT_MAX_WR;
    const undo: (() => void)[] = [];
    const unwind = (): void => {
      for (const f of undo.reverse()) f();
    };
    try {
      const base = pool.region.address;
      invariant(base !== undefined, 'the verbs receiver needs a pool mapped in this process (its address registers with the RNIC)');
      const mr = verbs.regMr(fabric.pd, base, pool.region.size, access);
      undo.push(() => verbs.deregMr(mr));
      const srq = verbs.createSrq(fabric.pd, maxWr);
      undo.push(() => verbs.destroySrq(srq));
      // Larger than the SRQ: in cq-legacy mode that is what keeps drain-at-post from overrunning it.
      const cq = verbs.createCq(fabric.ctx, srq.maxWr + DRAIN_BATCH, { ignoreOverrun: true });
      undo.push(() => verbs.destroyCq(cq));
      return new VerbsReceiverQueue({
        srq,
        cq,
        lkey: mr.lkey,
        rkey: mr.rkey,
        poolBase: base,
        bytes: pool.region.bytes,
        segmentBytes: pool.segmentBytes,
        bufferBytes: o.bufferBytes ?? defaultLimits.mtuBytes,
        release: unwind,
      });
    } catch (err) {
      unwind();
      throw err;
    }
  }

  posted(): number {
    return this.postedCount;
  }

  outstanding(): number {
    this.refreshCurrent();
    return this.postedCount - this.currentSeq;
  }

  /**
   * Split each segment into fixed-size receive buffers and post them all with one
   * ibv_post_srq_recv, in increasing address order. Receive WR i (ever) gets wr_id i.
   */
  post(buffers: readonly PostedBuffer[]): void {
    invariant(!this.closed, 'post on a closed verbs receive queue');
    if (buffers.length === 0) return;
    if (this.cq.mode === 'cq-legacy') this.drain();
    const b = this.bufferBytes;
    const segments: verbs.ReceiveSegment[] = [];
    const added: { offset: number; wrs: number }[] = [];
    for (let i = 0; i < buffers.length; i++) {
      const { offset, length } = buffers[i]!;
      invariant(length > 0 && length % b === 0, `segment length ${length} is not a multiple of the ${b} B receive buffer`);
      invariant(offset >= 0 && offset + length <= this.bytes.length, `segment [${offset}, +${length}) outside the pool`);
      if (i > 0) invariant(offset >= buffers[i - 1]!.offset + buffers[i - 1]!.length, 'segments not in increasing address order');
      const base = this.poolBase + BigInt(offset);
      for (let k = 0; k < length / b; k++) segments.push({ addr: base + BigInt(k * b), length: b, lkey: this.lkey });
      added.push({ offset, wrs: length / b });
    }
    this.refreshCurrent();
    let live = segments.length;
    for (const s of this.live) live += s.wrs;
    invariant(live <= this.srq.maxWr, `post would put ${live} receive WRs in an SRQ of ${this.srq.maxWr}`);
    verbs.postReceiveBuffers(this.srq, segments, this.postedWrs);
    this.postedWrs += segments.length;
    this.postedCount += buffers.length;
    this.live.push(...added);
  }

  markUsedBelow(seq: number): void {
    // No sender can see this (RDMA senders see no receiver state); their 1 ms retry rule covers it.
    this.usedBelow = Math.max(this.usedBelow, seq);
  }

  /** Poll the ring CQ empty, counting failed receives (only needed in cq-legacy mode). */
  drain(): number {
    let n = 0;
    for (;;) {
      const wcs = verbs.pollCq(this.cq, DRAIN_BATCH);
      for (const wc of wcs) if (wc.error) this.receiveErrors++;
      n += wcs.length;
      if (wcs.length < DRAIN_BATCH) break;
    }
    this.drained += n;
    return n;
  }

  stats(): VerbsReceiverQueueStats {
    return {
      receiveMode: this.receiveMode,
      cqMode: this.cq.mode,
      cqModeReason: this.cq.modeReason,
      bufferBytes: this.bufferBytes,
      posted: this.postedCount,
      postedWrs: this.postedWrs,
      outstanding: this.outstanding(),
      usedBelow: this.usedBelow,
      drained: this.drained,
      receiveErrors: this.receiveErrors,
    };
  }

  /** Destroy the SRQ and CQ and deregister the pool; destroy every QP on them first. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.release();
  }

  /**
   * The RNIC consumes buffers in posting order, so the highest posted segment whose first 64 bits
   * are non-zero is the one writes land in now; every segment before it is consumed.
   */
  private refreshCurrent(): void {
    for (let i = this.live.length - 1; i > 0; i--) {
      if (firstWordNonZero(this.bytes, this.live[i]!.offset)) {
        this.live.splice(0, i);
        this.currentSeq += i;
        return;
      }
    }
  }
}

function firstWordNonZero(b: Uint8Array, off: number): boolean {
  for (let i = 0; i < 8; i++) if (b[off + i] !== 0) return true;
  return false;
}
