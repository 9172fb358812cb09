// Helper threads over the node's pool, for work an application wants spread over the CPUs before any
// actor runs (ROWAN-KV: cold start's log scan, actors/node/recovery-thread.ts). Each thread maps the
// pool file itself (as every actor does: a mapping is per thread), imports the application's module by
// URL -- the runtime does not know the application -- and calls its `onPoolThread(pool, payload,
// report)`; `report` posts progress to the caller. Results come back in payload order once every
// thread has unmapped and exited; the first thread that throws rejects the whole run (the others are
// terminated).
import { Worker } from 'node:worker_threads';
import type { PersistMode } from '../native/pmem2.js';

export interface PoolThreadsOptions<P> {
  poolPath: string;
  mode: PersistMode;
  /** URL (href) of a module exporting onPoolThread(pool, payload, report). */
  module: string;
  /** One thread per payload (structured-cloneable; SharedArrayBuffers are shared). */
  payloads: P[];
  onProgress?: (thread: number, progress: unknown) => void;
}

/** Signature of the application module's export. */
export type OnPoolThread<P, R> = (pool: import('../shm/pool.js').Pool, payload: P, report: (progress: unknown) => void) => R | Promise<R>;

const entry = new URL('./pool-thread-main.js', import.meta.url);

export function runPoolThreads<P, R>(o: PoolThreadsOptions<P>): Promise<R[]> {
  const workers: Worker[] = [];
  const results = new Array<R>(o.payloads.length);
  return new Promise<R[]>((resolve, reject) => {
    const n = o.payloads.length;
    if (n === 0) return resolve([]);
    let done = 0;
    let exited = 0;
    let failed = false;
    const fail = (err: unknown) => {
      if (failed) return;
      failed = true;
      for (const w of workers) void w.terminate();
      reject(err);
    };
    // Resolved once every thread has posted its result and exited (unmapped the pool).
    const settle = () => {
      if (!failed && done === n && exited === n) resolve(results);
    };
    o.payloads.forEach((payload, i) => {
      const w = new Worker(entry, { name: `rowan-pool-thread-${i}`, workerData: { poolPath: o.poolPath, mode: o.mode, module: o.module, payload } });
      workers.push(w);
      let got = false;
      w.on('message', (m: { t: 'progress'; p: unknown } | { t: 'done'; r: R } | { t: 'error'; e: { name: string; message: string; code?: string } }) => {
        if (m.t === 'progress') o.onProgress?.(i, m.p);
        else if (m.t === 'done') {
          results[i] = m.r;
          got = true;
          done++;
          settle();
        } else fail(Object.assign(new Error(m.e.message), m.e));
      });
      w.on('error', fail);
      w.on('exit', (code) => {
        if (!got || code !== 0) fail(new Error(`pool thread ${i} exited (code ${code})${got ? '' : ' without a result'}`));
        exited++;
        settle();
      });
    });
  });
}
