// Server CPU per operation of a YCSB cell (issue 29: what Rowan-KV's path costs beside the baselines'):
// utime + stime of every thread of the node processes (/proc, ../idle/threads.ts) over the cell's
// recorded window or the load phase, divided by the operations completed in it; in total and by thread
// name (worker.0, digest, control, ...: the actors name their threads), summed over the nodes.
import { markThreads, threadUse, type ProcMark } from '../idle/threads.js';

/** Reads taken at the two edges of a window. */
export class CpuWindow {
  private a: ProcMark | null = null;
  private b: ProcMark | null = null;

  constructor(private readonly pids: () => readonly number[]) {}

  edge(e: 'start' | 'end'): void {
    if (e === 'start') this.a = markThreads(this.pids());
    else this.b = markThreads(this.pids());
  }

  /** CPU µs per operation over the window, total and its five busiest thread names; null without both reads. */
  perOp(ops: number): { total: number; byThread: string } | null {
    if (!this.a || !this.b || ops <= 0) return null;
    const by = new Map<string, number>();
    // sec = 1: `cores` is then the CPU seconds the thread ran in the window.
    for (const u of threadUse(this.a, this.b, 1)) by.set(u.thread, (by.get(u.thread) ?? 0) + u.cores);
    const us = (cpuSec: number) => (cpuSec * 1e6) / ops;
    const total = [...by.values()].reduce((x, y) => x + y, 0);
    const top = [...by].sort((x, y) => y[1] - x[1]).slice(0, 5);
    return { total: Math.round(us(total)), byThread: top.map(([n, s]) => `${n} ${Math.round(us(s))}`).join(', ') };
  }
}
