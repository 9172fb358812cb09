// Timers on the simulator's event loop (config/base/clock.ts Timers, CONVENTIONS 9), for the control
// plane's product code the simulator runs: the lease client, peer leases, the configuration manager
// and the configuration cell's waits. Each set belongs to one incarnation of a process (a node or the
// manager): once it is gone (`alive()` false) none of its timers fires and none of its sleeps ends --
// a crashed process does nothing more. A callback that throws (a broken invariant: in production an
// uncaught exception) is reported through `onError`.
import type { TimerHandle, Timers } from '../../config/base/clock.js';
import type { CellWake } from '../../actors/shared/config-cell.js';
import type { EventLoop } from './loop.js';
import { SimCrash } from './region.js';

/** Node's timers wait at least 1 ms (a shorter or non-finite delay becomes 1): so do these -- a wait
 *  loop that asks for the rest of a deadline (1e-13 ms) must not spin at one simulated instant. */
function nodeDelay(ms: number): number {
  return Number.isFinite(ms) && ms >= 1 ? ms : 1;
}

class SimTimer implements TimerHandle {
  cancelled = false;
  unref(): TimerHandle {
    return this;
  }
}

export class SimTimers implements Timers {
  constructor(
    private readonly loop: EventLoop,
    /** Trace tag of this set's events (who, incarnation). */
    private readonly tag: (string | number)[],
    readonly alive: () => boolean,
    private readonly onError: (where: string, err: unknown) => void,
  ) {}

  setTimeout(fn: () => void, ms: number): TimerHandle {
    const t = new SimTimer();
    this.loop.at(nodeDelay(ms), [...this.tag, 'timeout'], () => {
      if (!t.cancelled) this.run(fn);
    }, true);
    return t;
  }

  setInterval(fn: () => void, ms: number): TimerHandle {
    const t = new SimTimer();
    const tick = (): void => {
      if (t.cancelled || !this.alive()) return;
      this.run(fn);
      if (!t.cancelled && this.alive()) this.loop.at(nodeDelay(ms), [...this.tag, 'interval'], tick, true);
    };
    this.loop.at(nodeDelay(ms), [...this.tag, 'interval'], tick, true);
    return t;
  }

  clearTimeout(t: TimerHandle | undefined): void {
    if (t instanceof SimTimer) t.cancelled = true;
  }

  clearInterval(t: TimerHandle | undefined): void {
    this.clearTimeout(t);
  }

  setImmediate(fn: () => void): void {
    this.loop.at(0, [...this.tag, 'immediate'], () => this.run(fn), true);
  }

  /** A sleep of this incarnation: never ends once it is gone. */
  sleep = (ms: number): Promise<void> => new Promise((r) => this.setTimeout(r, ms));

  private run(fn: () => void): void {
    if (!this.alive()) return;
    try {
      fn();
    } catch (err) {
      if (!(err instanceof SimCrash)) this.onError('timer', err);
    }
  }
}

/** The configuration cell's waits (requests waiting out a prepare or a promotion) on simulated time. */
export class SimCellWake implements CellWake {
  private waiting: (() => void)[] = [];

  constructor(private readonly timers: SimTimers) {}

  wait(timeoutMs: number): Promise<void> {
    return new Promise((resolve) => {
      let done = false;
      const wake = (): void => {
        if (!done) (done = true), resolve();
      };
      this.waiting.push(wake);
      this.timers.setTimeout(wake, Math.max(0, timeoutMs));
    });
  }

  notify(): void {
    const w = this.waiting;
    this.waiting = [];
    for (const wake of w) wake();
  }
}
