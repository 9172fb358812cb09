// Time is injected (CONVENTIONS 9): production uses the monotonic clock, tests drive a manual one.
export interface Clock {
  /** Milliseconds, monotonic. */
  now(): number;
}

export const monotonicClock: Clock = { now: () => performance.now() };

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
