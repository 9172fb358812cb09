// The sender's completion queue (paper §5.2: "for a worker thread, all its ROWAN QPs ... share the
// same CQ, so that it can be aware of ROWAN ACKs ... by polling the CQ"). One SenderCq per worker
// thread, shared by all its VerbsConnections: it hands out wr_ids (the request context the READ
// carries), polls the CQ in batches and routes each completion to whoever posted that wr_id.
//
// Polling: while anything is tracked, the poller re-arms itself on setImmediate and drains the CQ in
// batches of `batch` completions, then runs every registered ticker (the connections' retry
// deadlines). That is a busy poll, as the paper's workers do; it stops as soon as nothing is pending,
// so an idle worker costs nothing. Tests turn `autoPoll` off and call poll() themselves.
import { pollCq, type VerbsCq, type WorkCompletion } from '../../native/verbs.js';
import { invariant } from '../../config/base/errors.js';
import { monotonicClock, type Clock } from '../../config/base/clock.js';

export type CompletionHandler = (wc: WorkCompletion, now: number) => void;
export type Ticker = (now: number) => void;

export interface SenderCqOptions {
  clock?: Clock;
  /** Completions taken per ibv_poll_cq call (default 32). */
  batch?: number;
  /** Re-arm the poller on setImmediate while anything is tracked (default true). */
  autoPoll?: boolean;
}

export interface SenderCqStats {
  polls: number;
  completions: number;
  /** Completions whose wr_id nobody tracks (a second completion of a failed chain, a closed connection). */
  untracked: number;
}

export class SenderCq {
  readonly clock: Clock;
  private readonly batch: number;
  private readonly autoPoll: boolean;
  private readonly handlers = new Map<number, CompletionHandler>();
  private readonly tickers = new Set<Ticker>();
  private readonly fatalListeners = new Set<(err: unknown) => void>();
  private nextId = 1;
  private armed = false;
  private closed = false;
  private readonly s: SenderCqStats = { polls: 0, completions: 0, untracked: 0 };

  /**
   * @param cq the CQ every QP of this worker reports to
   * @param release called once by close() (destroy the CQ if this object owns it)
   */
  constructor(
    readonly cq: VerbsCq,
    o: SenderCqOptions = {},
    private readonly release: () => void = () => {},
  ) {
    this.clock = o.clock ?? monotonicClock;
    this.batch = o.batch ?? 32;
    this.autoPoll = o.autoPoll ?? true;
    invariant(Number.isInteger(this.batch) && this.batch > 0, `SenderCq batch ${this.batch}`);
  }

  /**
   * Signaled work requests that may be outstanding at once. Half the CQ: a failed chain can report
   * twice (the unsignaled SEND's error, then the READ's flush), and the CQ must never overrun.
   */
  get capacity(): number {
    return Math.max(1, Math.floor(this.cq.cqe / 2));
  }

  get tracked(): number {
    return this.handlers.size;
  }

  hasRoom(): boolean {
    return this.handlers.size < this.capacity;
  }

  /** A fresh wr_id, never 0 and never reused while this CQ lives (2^53 ids). */
  nextWrId(): number {
    return this.nextId++;
  }

  /** Route the completion of `wrId` to `h` (once; the entry is dropped as it is delivered). */
  track(wrId: number, h: CompletionHandler): void {
    invariant(!this.handlers.has(wrId), `wr_id ${wrId} is already tracked`);
    this.handlers.set(wrId, h);
    this.arm();
  }

  untrack(wrId: number): void {
    this.handlers.delete(wrId);
  }

  /** Run `t` after every poll pass while the poller runs (retry deadlines). */
  addTicker(t: Ticker): void {
    this.tickers.add(t);
  }

  removeTicker(t: Ticker): void {
    this.tickers.delete(t);
  }

  /** Called if polling itself fails (ibv_poll_cq < 0): every tracked completion is then lost. */
  onFatal(fn: (err: unknown) => void): void {
    this.fatalListeners.add(fn);
  }

  offFatal(fn: (err: unknown) => void): void {
    this.fatalListeners.delete(fn);
  }

  /**
   * One pass: drain the CQ in batches, deliver each completion, then run the tickers. Returns the
   * number of completions taken.
   */
  poll(): number {
    if (this.closed) return 0;
    this.s.polls++;
    let total = 0;
    for (;;) {
      const wcs = pollCq(this.cq, this.batch);
      const now = this.clock.now();
      for (const wc of wcs) this.deliver(wc, now);
      total += wcs.length;
      if (wcs.length < this.batch) break;
    }
    const now = this.clock.now();
    for (const t of this.tickers) t(now);
    return total;
  }

  /** Make sure a poll pass is scheduled (no-op without autoPoll). */
  arm(): void {
    if (!this.autoPoll || this.armed || this.closed) return;
    this.armed = true;
    setImmediate(this.loop);
  }

  stats(): SenderCqStats {
    return { ...this.s };
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.handlers.clear();
    this.tickers.clear();
    this.fatalListeners.clear();
    this.release();
  }

  private readonly loop = (): void => {
    this.armed = false;
    if (this.closed) return;
    try {
      this.poll();
    } catch (err) {
      // Nothing can be delivered any more: tell the connections, which fail their pending requests.
      this.handlers.clear();
      for (const fn of [...this.fatalListeners]) fn(err);
      return;
    }
    // Keep polling while a completion is owed to someone.
    if (this.handlers.size > 0) this.arm();
  };

  private deliver(wc: WorkCompletion, now: number): void {
    this.s.completions++;
    const id = Number(wc.wrId);
    const h = this.handlers.get(id);
    if (!h) {
      this.s.untracked++;
      return;
    }
    this.handlers.delete(id);
    h(wc, now);
  }
}
