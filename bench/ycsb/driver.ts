// The load driver: a closed loop of C concurrent requests from this process through one RowanClient
// (each of C loops issues a request, awaits its reply, issues the next) for a fixed duration; records
// every request's latency (µs, high-resolution clock) separately for PUT and GET, in HDR histograms.
import type { RowanClient } from '../../client/client.js';
import { LatencyHistogram } from '../hist.js';
import { keyOf, mulberry32, type KeyChooser } from './zipfian.js';

export interface Workload {
  name: string;
  /** Fraction of requests that are PUTs (Load A 1, A 0.5, B 0.05, C 0). */
  putFraction: number;
}

export const workloads: Record<'loada' | 'a' | 'b' | 'c', Workload> = {
  loada: { name: 'Load A', putFraction: 1 },
  a: { name: 'A', putFraction: 0.5 },
  b: { name: 'B', putFraction: 0.05 },
  c: { name: 'C', putFraction: 0 },
};

export interface CellResult {
  ops: number;
  puts: number;
  gets: number;
  errors: number;
  seconds: number;
  putP50: number | null;
  putP99: number | null;
  getP50: number | null;
  getP99: number | null;
  /** The latency histograms themselves (mergeable across cells, clients or processes). */
  putHist: LatencyHistogram;
  getHist: LatencyHistogram;
}

/** Value bytes: a shared random buffer, sliced to the drawn size (contents do not matter). */
const VALUE_POOL = (() => {
  const b = Buffer.alloc(4096);
  const r = mulberry32(7);
  for (let i = 0; i < b.length; i++) b[i] = 33 + Math.floor(r() * 90);
  return b;
})();

export function valueOf(size: number, salt: number): Uint8Array {
  const off = salt % (VALUE_POOL.length - size);
  return VALUE_POOL.subarray(off, off + size);
}


/** Load keys [0, n) once each, C at a time; `onProgress` gets the count now and then. */
export async function loadKeys(
  c: RowanClient,
  n: number,
  concurrency: number,
  valueSize: () => number,
  onProgress?: (done: number) => void,
): Promise<void> {
  let next = 0;
  let done = 0;
  const loop = async () => {
    for (;;) {
      const id = next++;
      if (id >= n) return;
      await c.put(keyOf(id), valueOf(valueSize(), id));
      if (++done % 2000 === 0) onProgress?.(done);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, loop));
}

/** Run one workload for `durationMs` after `warmupMs` of unrecorded requests; `onWindow` is called as
 *  the recorded window starts and as it ends (to read the servers' CPU over it). */
export async function runCell(
  c: RowanClient,
  w: Workload,
  keys: KeyChooser,
  valueSize: () => number,
  concurrency: number,
  durationMs: number,
  warmupMs: number,
  seed: number,
  onWindow?: (edge: 'start' | 'end') => void,
): Promise<CellResult> {
  const rand = mulberry32(seed);
  const putLat = LatencyHistogram.create();
  const getLat = LatencyHistogram.create();
  let errors = 0;
  let firstError: unknown = null;
  const t0 = performance.now();
  const recordFrom = t0 + warmupMs;
  const end = recordFrom + durationMs;
  let salt = seed;
  const edges = onWindow ? [setTimeout(() => onWindow('start'), warmupMs), setTimeout(() => onWindow('end'), warmupMs + durationMs)] : [];
  const loop = async () => {
    for (;;) {
      const start = performance.now();
      if (start >= end) return;
      const key = keyOf(keys.next());
      const isPut = rand() < w.putFraction;
      try {
        if (isPut) await c.put(key, valueOf(valueSize(), salt++));
        else await c.get(key);
      } catch (err) {
        errors++;
        firstError ??= err;
        if (errors > 1000) throw err;
        continue;
      }
      const stop = performance.now();
      if (start >= recordFrom && stop <= end) (isPut ? putLat : getLat).recordUs((stop - start) * 1000);
    }
  };
  try {
    await Promise.all(Array.from({ length: concurrency }, loop));
  } finally {
    for (const t of edges) clearTimeout(t);
  }
  if (firstError) process.stderr.write(`ycsb: ${errors} request(s) failed in ${w.name}; first: ${(firstError as Error).message}\n`);
  const seconds = durationMs / 1000;
  return {
    ops: putLat.count + getLat.count,
    puts: putLat.count,
    gets: getLat.count,
    errors,
    seconds,
    putP50: putLat.percentileUs(50),
    putP99: putLat.percentileUs(99),
    getP50: getLat.percentileUs(50),
    getP99: getLat.percentileUs(99),
    putHist: putLat,
    getHist: getLat,
  };
}
