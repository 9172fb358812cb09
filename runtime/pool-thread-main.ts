// The entry of one pool helper thread (./pool-threads.ts): map the pool, run the application's
// onPoolThread, post its result (or error), unmap.
import { parentPort, workerData } from 'node:worker_threads';
import type { PersistMode } from '../native/pmem2.js';
import { Pool } from '../shm/pool.js';

const d = workerData as { poolPath: string; mode: PersistMode; module: string; payload: unknown };
const port = parentPort!;

async function main(): Promise<void> {
  const pool = Pool.open(d.poolPath, { mode: d.mode });
  let r: unknown;
  try {
    const mod = (await import(d.module)) as { onPoolThread: (pool: Pool, payload: unknown, report: (p: unknown) => void) => unknown };
    r = await mod.onPoolThread(pool, d.payload, (p) => port.postMessage({ t: 'progress', p }));
  } catch (err) {
    pool.close();
    throw err;
  }
  // Unmap only when told. libpmem2 keeps a process-wide registry of mappings: a node whose helper
  // thread unmapped while another thread mapped failed that map with EEXIST (seen once in the kill
  // test; an address reused before it left the registry, we believe). So the caller lets every thread
  // finish mapping and working first, then has them all unmap before any actor maps the pool.
  port.postMessage({ t: 'done', r });
  await new Promise<void>((resolve) => port.once('message', () => resolve()));
  pool.close();
}

main().catch((err: unknown) => {
  const e = err as { name?: string; message?: string; code?: string };
  port.postMessage({ t: 'error', e: { name: e.name ?? 'Error', message: e.message ?? String(err), ...(e.code ? { code: e.code } : {}) } });
});
