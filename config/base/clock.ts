// Time is injected (CONVENTIONS 9): production uses the monotonic clock, tests drive a manual one.
export interface Clock {
  /** Milliseconds, monotonic. */
  now(): number;
}

/**
 * CLOCK_MONOTONIC in milliseconds, the same in every thread of the process (and every process of the
 * host). Not performance.now(): each worker_thread has its own timeOrigin, so two threads' readings
 * of performance.now() are not comparable -- and a lease expiry one thread writes into shared memory
 * must mean the same instant to the thread that checks it (actors/shared/config-cell.ts).
 */
export const monotonicClock: Clock = {
  now: () => {
    const [s, ns] = process.hrtime();
    return s * 1e3 + ns / 1e6;
  },
};

/** From `now` to the next multiple of `periodMs` on its clock, skipping one less than `minMs` away (by
 *  default a quarter period: a timer that fired a little early does not run twice in a row; 0: the
 *  next one, in (0, periodMs]): where periodic duties of several threads or processes meet, so they
 *  share wakeups (the load samples, idle ticks, lease renewals). */
export function gridDelayMs(now: number, periodMs: number, minMs = periodMs / 4): number {
  const d = periodMs - (now % periodMs);
  return d < minMs ? d + periodMs : d;
}

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

/** A timer a Timers implementation handed out: unref() keeps it from holding the process open. */
export interface TimerHandle {
  unref(): TimerHandle;
}

/**
 * Timers are injected like the clock (CONVENTIONS 9): the node's and the manager's control-plane logic
 * (lease client, peer leases, failover rounds) schedules through this, so the simulator (test/sim) can
 * run it under simulated time. Production passes realTimers, Node's own functions.
 */
export interface Timers {
  setTimeout(fn: () => void, ms: number): TimerHandle;
  clearTimeout(t: TimerHandle | undefined): void;
  setInterval(fn: () => void, ms: number): TimerHandle;
  clearInterval(t: TimerHandle | undefined): void;
  /** Run `fn` after the I/O already waiting (a zero-time yield). */
  setImmediate(fn: () => void): void;
}

export const realTimers: Timers = {
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (t) => clearTimeout(t as NodeJS.Timeout | undefined),
  setInterval: (fn, ms) => setInterval(fn, ms),
  clearInterval: (t) => clearInterval(t as NodeJS.Timeout | undefined),
  setImmediate: (fn) => void setImmediate(fn),
};

/** A promise that resolves after `ms` on `timers`. */
export function sleepOn(timers: Timers, ms: number): Promise<void> {
  return new Promise((r) => timers.setTimeout(r, ms));
}
