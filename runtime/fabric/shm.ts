// The `shm` transport: sender and receiver on one host (threads or processes). The sender's thread
// plays the receiver's RNIC on shared memory (DESIGN §4): it reserves the next stride-aligned slot of
// the receiver's current posted buffer with a CAS on the queue cursor, copies the write into the
// receiver's mapped pool, persists it, writes the completion into the ring CQ and acks. No receiver
// thread is on the data path.
import { dataDirFiles } from '../../config/base/files.js';
import { Pool, OwnerRole } from '../../shm/pool.js';
import type { PersistMode } from '../../native/pmem2.js';
import type { PersistentRegion } from '../../config/base/region.js';
import { tracedRegion, type PersistTrace } from '../../shm/trace.js';
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import { monotonicClock, type Clock } from '../../config/base/clock.js';
import { SRQ_CLOSED, SharedReceiveQueue } from '../rowan/srq.js';
import { ABANDONED, LATE, land, landOnce } from '../rowan/land.js';
import { withPoolMedia } from '../optane/media-file.js';
import {
  defaultSenderOptions,
  type RemoteRegion,
  type RowanConnection,
  type RowanSenderOptions,
  type SenderStats,
} from './fabric.js';

/** Where a node keeps the files a shm sender maps. */
export function shmPaths(dataDir: string): { pool: string; srq: string } {
  return dataDirFiles(dataDir);
}

// tryWrite results beyond NO_BUFFER / SRQ_CLOSED (the landing rules live in runtime/rowan/land.ts,
// shared with the tcp fabric's nic actor).
export { ABANDONED, LATE };

/** writeSlow(): no attempt was made yet (not an offset, not a landing result). */
const NOT_TRIED = -100;

export interface ShmConnectOptions extends Partial<RowanSenderOptions> {
  /** Persistence mode of the sender's own mapping of the receiver's pool (match the receiver's). */
  mode?: PersistMode;
  /** Record every persist this sender issues (for the DLWA model). */
  trace?: PersistTrace;
  /** A hold per write (true) instead of one per buffer and event-loop turn (SharedReceiveQueue.keepHolds). */
  holdPerWrite?: boolean;
  clock?: Clock;
}

export class ShmConnection implements RowanConnection {
  readonly kind = 'shm' as const;
  private readonly region: PersistentRegion;
  private readonly o: RowanSenderOptions;
  private readonly clock: Clock;
  private readonly dataStart: number;
  private readonly dataEnd: number;
  private readonly s: SenderStats = { writes: 0, bytes: 0, retries: 0, noBufferWaits: 0 };
  private closed = false;

  private constructor(
    private readonly pool: Pool,
    private readonly srq: SharedReceiveQueue,
    o: ShmConnectOptions,
  ) {
    this.o = { ...defaultSenderOptions, ...o };
    this.clock = o.clock ?? monotonicClock;
    this.region = o.trace ? tracedRegion(pool.region, o.trace) : pool.region;
    this.dataStart = pool.segmentOffset(0);
    this.dataEnd = pool.segmentOffset(pool.segmentCount - 1) + pool.segmentBytes;
    if (!o.holdPerWrite) srq.keepHolds();
  }

  /** Map the receiver node's pool and receive queue from its data directory. */
  static connect(dataDir: string, o: ShmConnectOptions = {}): ShmConnection {
    const p = shmPaths(dataDir);
    const srq = SharedReceiveQueue.attach(p.srq);
    let pool: Pool;
    try {
      // The receiver's media model, if its node runs one: a peer's landed writes pay the receiver's DIMMs.
      pool = Pool.open(p.pool, o.mode ? { mode: o.mode, wrapRegion: withPoolMedia } : { wrapRegion: withPoolMedia });
    } catch (err) {
      srq.close();
      throw err;
    }
    return new ShmConnection(pool, srq, o);
  }

  /**
   * One attempt, synchronously: reserve, copy, persist, complete. Returns the pool offset, or
   * NO_BUFFER / SRQ_CLOSED / ABANDONED / LATE. This is the whole data path of a Rowan write over shm.
   */
  tryWrite(bytes: Uint8Array): number {
    return landOnce(this.srq, this.region, bytes, this.o.senderId);
  }

  /**
   * The first attempt runs synchronously with no async frame, and a write that lands resolves at
   * once: the common case costs one promise. Anything else (re-issues, no buffer, errors) continues
   * in writeSlow.
   */
  write(bytes: Uint8Array): Promise<number> {
    if (this.closed || bytes.length === 0 || bytes.length % this.srq.strideBytes !== 0) return this.writeSlow(bytes, NOT_TRIED);
    let at: number;
    try {
      at = landOnce(this.srq, this.region, bytes, this.o.senderId);
    } catch (err) {
      return Promise.reject(err);
    }
    if (at < 0) return this.writeSlow(bytes, at);
    this.s.writes++;
    this.s.bytes += bytes.length;
    return Promise.resolve(at);
  }

  /** write() after its first attempt came back `first` (NOT_TRIED: checks first, then lands). */
  private async writeSlow(bytes: Uint8Array, first: number): Promise<number> {
    this.checkOpen();
    if (bytes.length === 0 || bytes.length % this.srq.strideBytes !== 0) {
      throw new RowanError(ErrorCodes.BAD_ARGUMENT, `a Rowan write is whole ${this.srq.strideBytes} B strides, got ${bytes.length} B`);
    }
    let landing =
      first === NOT_TRIED
        ? land(this.srq, this.region, bytes, this.o.senderId)
        : first === ABANDONED || first === LATE
          ? land(this.srq, this.region, bytes, this.o.senderId, 1)
          : { at: first, reissues: 0 };
    let waitStart = -1;
    let backoffMs = 0.05;
    for (;;) {
      const { at, reissues } = landing;
      this.s.retries += reissues;
      if (at >= 0) {
        this.s.writes++;
        this.s.bytes += bytes.length;
        return at;
      }
      if (at === SRQ_CLOSED) throw new RowanError(ErrorCodes.RECEIVER_CLOSED, `receiver at ${this.srq.path} has shut down`);
      // NO_BUFFER: the receiver has not posted (enough) buffers yet. Retry with backoff; never drop.
      this.s.noBufferWaits++;
      const now = this.clock.now();
      if (waitStart < 0) waitStart = now;
      else if (now - waitStart > this.o.noBufferTimeoutMs) {
        if (this.srq.starved()) {
          throw new RowanError(ErrorCodes.PM_FULL, `the receiver at ${this.srq.path} has no free PM segment to post as a receive buffer (its pool is full)`);
        }
        throw new RowanError(ErrorCodes.WRITE_TIMEOUT, `no receive buffer posted at ${this.srq.path} for ${this.o.noBufferTimeoutMs} ms`);
      }
      await sleep(backoffMs);
      backoffMs = Math.min(backoffMs * 2, 2);
      landing = land(this.srq, this.region, bytes, this.o.senderId);
    }
  }

  async writeAt(offset: number, bytes: Uint8Array): Promise<void> {
    this.checkOpen();
    this.checkRange(offset, bytes.length);
    this.region.bytes.set(bytes, offset);
    this.region.persist(offset, bytes.length);
  }

  async read(offset: number, length: number): Promise<Uint8Array> {
    this.checkOpen();
    this.checkRange(offset, length);
    return this.region.bytes.slice(offset, offset + length);
  }

  async allocateRegion(ownerId: number): Promise<RemoteRegion> {
    this.checkOpen();
    const segment = this.pool.allocate(OwnerRole.Remote, ownerId);
    return { segment, offset: this.pool.segmentOffset(segment), length: this.pool.segmentBytes };
  }

  stats(): SenderStats {
    return { ...this.s };
  }

  /** The receive queue's own counters (posted, completions, no-buffer events). */
  queueStats(): ReturnType<SharedReceiveQueue['stats']> {
    return this.srq.stats();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.srq.close();
    this.pool.close();
  }

  private checkOpen(): void {
    if (this.closed) throw new RowanError(ErrorCodes.RECEIVER_CLOSED, 'connection closed');
  }

  private checkRange(offset: number, length: number): void {
    if (!Number.isInteger(offset) || offset < this.dataStart || length < 0 || offset + length > this.dataEnd) {
      throw new RowanError(ErrorCodes.BAD_ARGUMENT, `[${offset}, +${length}) is outside the pool's segments`);
    }
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
