// The verbs the soft RNIC executes on its node's memory: SEND lands a Rowan write in the b-log through
// the shared receive queue (exactly the shm rules: runtime/rowan/land.ts), WRITE and READ are one-sided
// on the pool, ALLOC hands out a free segment for one-sided logs. Everything is synchronous and
// validated before memory is touched: an offset outside the pool's segments, or a WRITE outside a
// segment this nic handed out, is refused with a stable code and nothing is written.
//
// The nic maps the pool and the receive queue itself (each actor maps the pool, DESIGN §3). The queue is
// created by the control actor; until it exists a SEND waits (RECEIVER_NOT_READY, retryable), and when
// a receiver restart closes it, the nic attaches the new one.
import { defaultLimits } from '../../config/limits.js';
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import { shmPaths } from '../../runtime/fabric/shm.js';
import { land } from '../../runtime/rowan/land.js';
import { NO_BUFFER, SRQ_CLOSED, SharedReceiveQueue } from '../../runtime/rowan/srq.js';
import { OwnerRole, SegmentState, type Pool } from '../../shm/pool.js';
import type { HelloInfo } from '../../runtime/fabric/nic-frames.js';

export interface NicMemoryOptions {
  dataDir: string;
  /** The node's pool, injected (NicServerOptions.pool); the nic never unmaps it. */
  pool: () => Pool;
  frameBytesMax: number;
  now: () => number;
}

/** SEND outcome: landed at a pool offset, or wait and try again (nothing was written). */
export type SendResult = { at: number; reissues: number } | { wait: WaitCode };
/** Why a SEND waits: no buffer posted, no buffer because the receiver's pool is full, no queue yet. */
export type WaitCode = typeof ErrorCodes.NO_BUFFER | typeof ErrorCodes.PM_FULL | typeof ErrorCodes.RECEIVER_NOT_READY;

/** After the queue closed, look for a new one at most this often. */
const REATTACH_MS = 100;

export class NicMemory {
  private pool: Pool | null = null;
  private srq: SharedReceiveQueue | null = null;
  private closedAt = -Infinity;
  /** Segments handed out by ALLOC: the only targets of WRITE (an RNIC's memory registration). */
  private readonly granted = new Set<number>();
  private readonly now: () => number;
  private closed = false;

  constructor(private readonly o: NicMemoryOptions) {
    this.now = o.now;
  }

  hello(): Omit<HelloInfo, 'version'> {
    let segmentBytes = 0;
    try {
      segmentBytes = this.mapPool().segmentBytes;
    } catch {
      // no pool yet: the sender learns the segment size is unknown (0) and SENDs wait for the receiver
    }
    return { stride: defaultLimits.entryAlignBytes, segmentBytes, frameBytesMax: this.o.frameBytesMax };
  }

  /** SEND: land `data` in the b-log, persistent before this returns an offset. */
  send(data: Uint8Array, senderId: number): SendResult {
    const stride = defaultLimits.entryAlignBytes;
    if (data.length % stride !== 0)
      throw new RowanError(ErrorCodes.BAD_ARGUMENT, `a Rowan write is whole ${stride} B strides, got ${data.length} B`);
    const srq = this.queue();
    if (!srq) return { wait: ErrorCodes.RECEIVER_NOT_READY };
    const r = land(srq, this.mapPool().region, data, senderId);
    if (r.at === NO_BUFFER) return { wait: srq.starved() ? ErrorCodes.PM_FULL : ErrorCodes.NO_BUFFER };
    if (r.at === SRQ_CLOSED) {
      this.detachQueue();
      throw new RowanError(ErrorCodes.RECEIVER_CLOSED, `receiver at ${srq.path} has shut down`);
    }
    return r;
  }

  /** WRITE: copy + persist inside one segment handed out by ALLOC. */
  write(offset: number, data: Uint8Array): void {
    const pool = this.mapPool();
    this.checkRange(pool, offset, data.length);
    const seg = pool.segmentOf(offset);
    if (offset + data.length > pool.segmentOffset(seg) + pool.segmentBytes)
      throw new RowanError(ErrorCodes.BAD_ARGUMENT, `WRITE [${offset}, +${data.length}) crosses the end of segment ${seg}`);
    if (!this.granted.has(seg) || pool.meta(seg).state !== SegmentState.Using)
      throw new RowanError(ErrorCodes.BAD_ARGUMENT, `WRITE into segment ${seg}, which was not handed out by ALLOC (or is no longer in use)`);
    pool.region.bytes.set(data, offset);
    pool.region.persist(offset, data.length);
  }

  /** READ: a copy of the pool bytes (a reply must fit one frame). */
  read(offset: number, length: number): Uint8Array {
    const pool = this.mapPool();
    const max = this.o.frameBytesMax - 12;
    if (length > max) throw new RowanError(ErrorCodes.BAD_ARGUMENT, `READ of ${length} B exceeds the ${max} B a reply can carry`);
    this.checkRange(pool, offset, length);
    return pool.region.bytes.subarray(offset, offset + length);
  }

  /** ALLOC: a free segment for one-sided writes (PM_FULL when none). */
  alloc(ownerId: number): { segment: number; offset: number; length: number } {
    const pool = this.mapPool();
    const segment = pool.allocate(OwnerRole.Remote, ownerId);
    this.granted.add(segment);
    return { segment, offset: pool.segmentOffset(segment), length: pool.segmentBytes };
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.detachQueue();
    this.pool = null;
  }

  private mapPool(): Pool {
    if (this.closed) throw new RowanError(ErrorCodes.RECEIVER_CLOSED, 'the nic is stopping');
    if (this.pool) return this.pool;
    try {
      this.pool = this.o.pool();
    } catch (err) {
      if (err instanceof RowanError && err.code === ErrorCodes.POOL_NOT_FOUND)
        throw new RowanError(ErrorCodes.RECEIVER_NOT_READY, `no pool in ${this.o.dataDir} yet`);
      throw err;
    }
    return this.pool;
  }

  /** The receive queue, attached on first use; null while control has not created it. */
  private queue(): SharedReceiveQueue | null {
    if (this.srq) return this.srq;
    if (this.now() - this.closedAt < REATTACH_MS) throw new RowanError(ErrorCodes.RECEIVER_CLOSED, 'the receiver has shut down');
    try {
      this.mapPool();
      this.srq = SharedReceiveQueue.attach(shmPaths(this.o.dataDir).srq);
    } catch (err) {
      if (err instanceof RowanError && err.code === ErrorCodes.RECEIVER_NOT_READY) return null;
      throw err;
    }
    return this.srq;
  }

  private detachQueue(): void {
    if (!this.srq) return;
    this.srq.close();
    this.srq = null;
    this.closedAt = this.now();
  }

  private checkRange(pool: Pool, offset: number, length: number): void {
    const start = pool.segmentOffset(0);
    const end = pool.segmentOffset(pool.segmentCount - 1) + pool.segmentBytes;
    if (!Number.isSafeInteger(offset) || offset < start || length < 0 || offset + length > end)
      throw new RowanError(ErrorCodes.BAD_ARGUMENT, `[${offset}, +${length}) is outside the pool's segments [${start}, ${end})`);
  }
}
