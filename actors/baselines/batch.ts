// Batch-KV (ROWAN §6.1): rwrite plus sender-side batching. Writes accumulate in a local buffer and go
// out as one one-sided write at the stream's log tail once the batch holds >= batchBytes (256 B, one
// XPLine: the paper says "larger than an XPLine"; a batch that fills a whole line is what batching is
// for, so reaching it counts) or batchTimeoutUs (5 µs) after the batch's first write. Each write's promise resolves with
// its own pool offset only once the whole batch is persistent.
//
// What the 5 µs timeout means here. JS timers have ~1 ms resolution, so the deadline is enforced two
// ways, both comparing the clock against openedAt + timeout:
//   1. at the next write(): a batch whose deadline has passed is sent first, then the new write opens
//      the next batch (the new write arrived after the timeout fired, so it is not part of the old one);
//   2. by a setImmediate check armed while a batch is open: it sends an expired batch, and re-arms
//      itself while the batch is younger than the timeout.
// So a batch is sent at the first of: reaching batchBytes; the first write() after the deadline; the
// first pass of the event loop's check phase after the deadline. While the sending thread is busy in
// synchronous code or microtasks (other coroutines issuing writes) the check phase cannot run, and a
// batch can stay open past 5 µs until a write() of this stream or the end of that busy stretch; when
// the thread is idle the check re-arms every loop pass (~1-2 µs here), so the effective timeout is
// 5 µs plus up to one loop pass. The re-arming spins the event loop while a batch is open, much as an
// RDMA sender polls its CQ.
import type { Clock } from '../../config/base/clock.js';
import { monotonicClock } from '../../config/base/clock.js';
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import type { RegionLog } from './region-log.js';
import { emptyStreamStats, type ReplicationStream, type ReplicationStreamStats } from './types.js';

export const BATCH_BYTES_DEFAULT = 256;
export const BATCH_TIMEOUT_US_DEFAULT = 5;

interface Waiter {
  /** Offset of this write inside its batch. */
  off: number;
  resolve: (at: number) => void;
  reject: (err: unknown) => void;
}

export class BatchStream implements ReplicationStream {
  readonly mode = 'batch' as const;
  readonly logId: string;
  private readonly batchBytes: number;
  private readonly timeoutMs: number;
  private readonly clock: Clock;
  private buf: Uint8Array;
  private size = 0;
  private waiters: Waiter[] = [];
  private openedAt = 0;
  private armed = false;
  private sending = 0;
  private idle: (() => void) | null = null;
  private closed = false;
  private readonly s: ReplicationStreamStats = emptyStreamStats();

  constructor(
    private readonly log: RegionLog,
    o: { batchBytes?: number; batchTimeoutUs?: number; clock?: Clock },
  ) {
    this.logId = log.traceId;
    this.batchBytes = o.batchBytes ?? BATCH_BYTES_DEFAULT;
    const us = o.batchTimeoutUs ?? BATCH_TIMEOUT_US_DEFAULT;
    if (!(this.batchBytes > 0) || !(us >= 0)) {
      throw new RowanError(ErrorCodes.BAD_ARGUMENT, `batch: need batchBytes > 0 and batchTimeoutUs >= 0, got ${this.batchBytes}, ${us}`);
    }
    this.timeoutMs = us / 1000;
    this.clock = o.clock ?? monotonicClock;
    this.buf = new Uint8Array(this.batchBytes * 2);
  }

  prepare(): Promise<void> {
    return this.log.prepare();
  }

  write(bytes: Uint8Array): Promise<number> {
    if (this.closed) return Promise.reject(new RowanError(ErrorCodes.RECEIVER_CLOSED, `batch stream ${this.logId} is closed`));
    if (bytes.length === 0) return Promise.reject(new RowanError(ErrorCodes.BAD_ARGUMENT, 'a write needs at least one byte'));
    if (this.size > 0 && this.clock.now() - this.openedAt >= this.timeoutMs) this.send('deadline');
    if (this.size + bytes.length > this.buf.length) this.grow(this.size + bytes.length);
    this.buf.set(bytes, this.size);
    const p = new Promise<number>((resolve, reject) => this.waiters.push({ off: this.size, resolve, reject }));
    if (this.size === 0) {
      this.openedAt = this.clock.now();
      this.arm();
    }
    this.size += bytes.length;
    if (this.size >= this.batchBytes) this.send('size');
    return p;
  }

  stats(): ReplicationStreamStats {
    const l = this.log.stats();
    return { ...this.s, regions: l.regions };
  }

  /** Send the open batch now, wait for every batch in flight, then close the log. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.size > 0) this.send('deadline');
    if (this.sending > 0) await new Promise<void>((r) => (this.idle = r));
    await this.log.close();
  }

  private arm(): void {
    if (this.armed) return;
    this.armed = true;
    setImmediate(this.check);
  }

  private readonly check = (): void => {
    this.armed = false;
    if (this.size === 0) return;
    if (this.clock.now() - this.openedAt >= this.timeoutMs) this.send('deadline');
    else this.arm();
  };

  private send(why: 'size' | 'deadline'): void {
    const bytes = this.buf.slice(0, this.size);
    const ws = this.waiters;
    this.size = 0;
    this.waiters = [];
    this.s.batches++;
    if (why === 'size') this.s.sizeFlushes++;
    else this.s.deadlineFlushes++;
    this.sending++;
    this.log.append(bytes).then(
      (at) => {
        this.s.writes += ws.length;
        this.s.bytes += bytes.length;
        for (const w of ws) w.resolve(at + w.off);
        this.sent();
      },
      (err: unknown) => {
        for (const w of ws) w.reject(err);
        this.sent();
      },
    );
  }

  private sent(): void {
    if (--this.sending === 0 && this.idle) {
      this.idle();
      this.idle = null;
    }
  }

  private grow(need: number): void {
    let n = this.buf.length;
    while (n < need) n *= 2;
    const b = new Uint8Array(n);
    b.set(this.buf.subarray(0, this.size));
    this.buf = b;
  }
}
