// Stopping a worker: requests span awaits, and the pool must not be unmapped under one. The gate
// counts requests in flight, refuses new ones once stopping, and says when the last one has ended.
import { ErrorCodes, RowanError } from '../../config/base/errors.js';

export class RequestGate {
  private inFlight_ = 0;
  private stopping_ = false;
  private quiet: (() => void) | null = null;

  /** Requests between track()'s start and end now. */
  get inFlight(): number {
    return this.inFlight_;
  }

  get stopping(): boolean {
    return this.stopping_;
  }

  /** Refuse with NODE_NOT_RUNNING once stopping ("not applied": nothing was started). */
  check(): void {
    if (this.stopping_) throw new RowanError(ErrorCodes.NODE_NOT_RUNNING, 'this worker is stopping');
  }

  async track<T>(f: () => Promise<T>): Promise<T> {
    this.check();
    this.inFlight_++;
    try {
      return await f();
    } finally {
      if (--this.inFlight_ === 0) this.quiet?.();
    }
  }

  /** Refuse new requests and wait (at most timeoutMs) for those in flight; true once none is left. */
  quiesce(timeoutMs: number): Promise<boolean> {
    this.stopping_ = true;
    if (this.inFlight_ === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const t = setTimeout(() => resolve(this.inFlight_ === 0), timeoutMs);
      this.quiet = () => {
        clearTimeout(t);
        resolve(true);
      };
    });
  }
}
