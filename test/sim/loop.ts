// The simulator's event loop: simulated time (a ManualClock every component reads) and one queue of
// events ordered by (time, insertion order). Nothing runs unless the loop runs it, so a run is a pure
// function of its seed. Real code of the store is async (KvWorker awaits its replication writes): after
// an event that may have settled a promise the loop lets every queued microtask run (one setImmediate
// turn, which no other source of work shares) before it takes the next event, so continuations run at
// the simulated instant their promise settled, in an order fixed by the program.
import { ManualClock } from '../../config/base/clock.js';
import type { TraceHash } from './trace.js';

interface SimEvent {
  at: number;
  seq: number;
  /** Trace record: kind, node, key/outcome... (hashed when the event runs). */
  what: (string | number)[];
  fn: () => void;
  /** The event may settle a promise: drain microtasks after it. */
  async: boolean;
}

export class EventLoop {
  readonly clock = new ManualClock(0);
  private heap: SimEvent[] = [];
  private seq = 0;
  executed = 0;

  constructor(private readonly trace: TraceHash) {}

  now(): number {
    return this.clock.now();
  }

  /** Run `fn` `delayMs` from now. `async`: it may settle promises (drain microtasks after it). */
  at(delayMs: number, what: (string | number)[], fn: () => void, async = false): void {
    const e: SimEvent = { at: this.now() + Math.max(0, delayMs), seq: this.seq++, what, fn, async };
    this.push(e);
  }

  /** A promise that resolves `ms` of simulated time from now. */
  sleep(ms: number, what: (string | number)[] = ['sleep']): Promise<void> {
    return new Promise((r) => this.at(ms, what, r, true));
  }

  get pending(): number {
    return this.heap.length;
  }

  /** Run events until none is left before `untilMs` (or `stop()` returns true after an event). */
  async run(untilMs: number, stop?: () => boolean): Promise<void> {
    while (this.heap.length > 0 && this.heap[0]!.at <= untilMs) {
      const e = this.pop();
      this.clock.advance(e.at - this.clock.now());
      this.trace.add(e.at.toFixed(3), ...e.what);
      this.executed++;
      e.fn();
      if (e.async) await drainMicrotasks();
      if (stop?.()) return;
    }
    if (this.clock.now() < untilMs) this.clock.advance(untilMs - this.clock.now());
  }

  private push(e: SimEvent): void {
    const h = this.heap;
    h.push(e);
    let i = h.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!before(h[i]!, h[p]!)) break;
      [h[i], h[p]] = [h[p]!, h[i]!];
      i = p;
    }
  }

  private pop(): SimEvent {
    const h = this.heap;
    const top = h[0]!;
    const last = h.pop()!;
    if (h.length > 0) {
      h[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < h.length && before(h[l]!, h[m]!)) m = l;
        if (r < h.length && before(h[r]!, h[m]!)) m = r;
        if (m === i) break;
        [h[i], h[m]] = [h[m]!, h[i]!];
        i = m;
      }
    }
    return top;
  }
}

function before(a: SimEvent, b: SimEvent): boolean {
  return a.at < b.at || (a.at === b.at && a.seq < b.seq);
}

/** Let every queued microtask (and those they queue) run. */
export function drainMicrotasks(): Promise<void> {
  return new Promise((r) => setImmediate(r));
}
