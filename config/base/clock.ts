// Time is injected (CONVENTIONS 9): production uses the monotonic clock, tests drive a manual one.
export interface Clock {
  /** Milliseconds, monotonic. */
  now(): number;
}

/**
 * CLOCK_MONOTONIC in milliseconds, the same in every thread of the process (and every process of the
 * host). Not performance.now(): each worker_thread has its own timeOrigin, so two threads' readings
 * of performance.now() are not comparable -- and a lease expiry one thread writes into shared memory
 * must mean the same instant to the thread that checks it (actors/kv/config-cell.ts).
 */
export const monotonicClock: Clock = {
  now: () => {
    const [s, ns] = process.hrtime();
    return s * 1e3 + ns / 1e6;
  },
};

/** Wall-clock milliseconds since the epoch, for what is shown to people and protocols as a date
 *  (Redis CLUSTER NODES, CLIENT INFO ages); never for timeouts. */
export const wallClock: Clock = { now: () => Date.now() };

export class ManualClock implements Clock {
  constructor(private t = 0) {}
  now(): number {
    return this.t;
  }
  advance(ms: number): void {
    this.t += ms;
  }
}
