// When an actor's periodic duty runs (issue 26, "no work without work"). A tick runs every base period
// while it finds work; a tick that reports 'idle' (nothing done, nothing pending) doubles the wait, up
// to the idle bound, so an idle actor wakes a few times a second instead of hundreds. Whoever creates
// work wakes it (wake(): the worker on each PUT/DEL, the clean actor on a digest's batch), and the next
// tick runs within one base period again. A tick may also name when it next needs to look
// ({ inMs }: the manager's earliest lease expiry), clamped to [base, idle bound].
//
// The timer is one setTimeout re-armed after each tick (never setInterval): a slow tick delays the next
// instead of piling up behind it.
//
// At the idle bound, given a clock, ticks fall on the bound's grid of that clock (multiples of it):
// the idle actors sharing a thread (control, clean, migration on `background`) then tick in one
// wakeup of the thread instead of one each, a few times a second (issue 26, idle cost).
import { gridDelayMs, type Clock, type Timers, type TimerHandle } from '../config/base/clock.js';

/** What a tick reports: nothing (it worked: the base period again), 'idle', or when to look next. */
export type TickResult = void | 'idle' | { inMs: number };

export class TickSchedule {
  private delayMs: number;
  private timer: TimerHandle | undefined;
  private running = false;
  private stopped = false;
  /** A wake() came while a tick ran: the next wait is the base period whatever the tick reports. */
  private woken = false;

  constructor(
    private readonly baseMs: number,
    /** The longest wait while ticks report idle (= baseMs: never stretched). */
    private readonly idleMaxMs: number,
    private readonly run: () => void,
    private readonly timers: Pick<Timers, 'setTimeout' | 'clearTimeout'>,
    /** The monotonic clock whose grid idle ticks fall on; none: idle ticks are idleMaxMs apart. */
    private readonly clock?: Clock,
  ) {
    if (!(baseMs > 0) || !(idleMaxMs >= baseMs)) throw new RangeError(`tick period ${baseMs} ms, idle bound ${idleMaxMs} ms: need 0 < period <= bound`);
    this.delayMs = baseMs;
  }

  start(): void {
    this.arm(this.baseMs);
  }

  stop(): void {
    this.stopped = true;
    this.timers.clearTimeout(this.timer);
  }

  /** The current wait between ticks (status, tests). */
  get periodMs(): number {
    return this.delayMs;
  }

  /** Work appeared: tick within one base period. Cheap when not stretched (a compare). */
  wake(): void {
    if (this.running) {
      this.woken = true;
      return;
    }
    if (this.delayMs === this.baseMs || this.stopped) return;
    this.delayMs = this.baseMs;
    this.arm(this.baseMs);
  }

  /** The tick started (the owner calls it, then runs the duty, then ended()). */
  began(): void {
    this.running = true;
    this.woken = false;
  }

  /** The tick ended with `r`: choose the next wait and arm it. */
  ended(r: TickResult): void {
    this.running = false;
    if (this.stopped) return;
    if (this.woken || r === undefined) this.delayMs = this.baseMs;
    else if (r === 'idle') this.delayMs = Math.min(this.idleMaxMs, this.delayMs * 2);
    else this.delayMs = Math.min(this.idleMaxMs, Math.max(this.baseMs, r.inMs));
    this.woken = false;
    this.arm(this.delayMs === this.idleMaxMs && this.delayMs > this.baseMs && this.clock ? gridDelayMs(this.clock.now(), this.idleMaxMs) : this.delayMs);
  }

  private arm(ms: number): void {
    this.timers.clearTimeout(this.timer);
    if (this.stopped) return;
    this.timer = this.timers.setTimeout(this.run, ms);
  }
}
