// The main thread's handle on the benchmark's sender threads (bench/rowan/sender-thread.ts): start
// them (one startup message, a READY reply), hand each its part of a cell, start them together once
// all have prepared, collect the results, and pass regions they retire to the receiver as they arrive.
import { Worker } from 'node:worker_threads';
import type { CellResult, CellSpec, FromSender, SenderInit } from './protocol.js';

const script = new URL('./sender-thread.js', import.meta.url);

export class SenderThreads {
  private constructor(
    private readonly workers: Worker[],
    private readonly onRetired: (segments: number[]) => void,
  ) {}

  /**
   * Start the threads one after another: each maps the receiver's pool and queue before its READY,
   * so no two threads load the native library and map at the same moment.
   */
  static async start(n: number, init: Omit<SenderInit, 'thread'>, onRetired: (segments: number[]) => void): Promise<SenderThreads> {
    const workers: Worker[] = [];
    for (let thread = 0; thread < n; thread++) {
      const w = new Worker(script, { workerData: { ...init, thread } satisfies SenderInit });
      workers.push(
        await new Promise<Worker>((resolve, reject) => {
          w.once('error', reject);
          w.once('message', (m: FromSender) => (m.type === 'ready' ? resolve(w) : reject(new Error(`sender ${thread}: ${JSON.stringify(m)}`))));
        }),
      );
    }
    return new SenderThreads(workers, onRetired);
  }

  get count(): number {
    return this.workers.length;
  }

  /**
   * Run one cell: parts[i] goes to thread i (null: that thread sits this cell out). Every thread
   * prepares its streams first; then all start together `startDelayMs` after the last is ready.
   */
  async run(parts: Array<CellSpec | null>, timeoutMs: number, startDelayMs = 20, onGo?: () => void): Promise<CellResult[]> {
    const active = parts.flatMap((cell, i) => (cell ? [{ w: this.workers[i]!, cell }] : []));
    let ready = 0;
    let release!: () => void;
    const allPrepared = new Promise<void>((r) => (release = r));
    const onPrepared = () => {
      if (++ready === active.length) release();
    };
    const jobs = active.map(({ w, cell }) => this.one(w, cell, timeoutMs, onPrepared));
    await Promise.race([allPrepared, Promise.all(jobs)]);
    const startAt = Date.now() + startDelayMs;
    onGo?.();
    for (const { w } of active) w.postMessage({ type: 'go', startAt });
    return Promise.all(jobs);
  }

  async close(): Promise<void> {
    await Promise.all(
      this.workers.map(
        (w) =>
          new Promise<void>((resolve) => {
            w.once('exit', () => resolve());
            w.postMessage({ type: 'exit' });
          }),
      ),
    );
  }

  private one(w: Worker, cell: CellSpec, timeoutMs: number, onPrepared: () => void): Promise<CellResult> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        w.off('message', onMessage);
        reject(new Error(`sender cell did not finish within ${timeoutMs} ms`));
      }, timeoutMs);
      const onMessage = (m: FromSender): void => {
        if (m.type === 'retired') return this.onRetired(m.segments);
        if (m.type === 'prepared') return onPrepared();
        if (m.type === 'ready') return;
        clearTimeout(timer);
        w.off('message', onMessage);
        if (m.type === 'result') resolve(m.result);
        else reject(new Error(`sender thread failed: ${m.code}: ${m.message}`));
      };
      w.on('message', onMessage);
      w.postMessage({ type: 'cell', cell });
    });
  }
}
