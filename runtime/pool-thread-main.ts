// The entry of one pool helper thread (./pool-threads.ts): map the pool, run the application's
// onPoolThread, post its result (or error), unmap.
import { parentPort, workerData } from 'node:worker_threads';
import type { PersistMode } from '../native/pmem2.js';
import { Pool } from '../shm/pool.js';

const d = workerData as { poolPath: string; mode: PersistMode; module: string; payload: unknown };
const port = parentPort!;

async function main(): Promise<void> {
  const pool = Pool.open(d.poolPath, { mode: d.mode });
  try {
    const mod = (await import(d.module)) as { onPoolThread: (pool: Pool, payload: unknown, report: (p: unknown) => void) => unknown };
    const r = await mod.onPoolThread(pool, d.payload, (p) => port.postMessage({ t: 'progress', p }));
    pool.close(); // before the result: the caller goes on to start actors, which map the pool too
    port.postMessage({ t: 'done', r });
  } catch (err) {
    pool.close(); // idempotent
    throw err;
  }
}

main().catch((err: unknown) => {
  const e = err as { name?: string; message?: string; code?: string };
  port.postMessage({ t: 'error', e: { name: e.name ?? 'Error', message: e.message ?? String(err), ...(e.code ? { code: e.code } : {}) } });
});
