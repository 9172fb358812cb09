// Turning the sender threads' reports into one row: merge their traces by time into the order the
// receiver's memory saw them, and model DLWA on the merged trace.
import { modelDlwa, type DlwaResult } from '../../runtime/optane/xpbuffer.js';
import type { TraceArrays } from './protocol.js';

/** Records of traces within these bins count as concurrent (a turn of 72 writes takes ~0.1 ms). */
export const CONCURRENT_BIN_MS = 0.2;

/**
 * Merge per-thread traces (each in time order) into one, by time: the order the receiver's memory
 * saw the writes in. A trace that hit its cap stops early; the merge stops at the earliest such stop.
 * With `concurrentOnly`, only stretches in which every thread wrote are kept (bins of
 * CONCURRENT_BIN_MS in which each trace has a record): in the paper every stream has a core of its
 * own, while here another job can take a sender thread off its CPU for milliseconds, and the DIMMs
 * would then see half the streams -- an artefact of the shared machine, not of the replication mode.
 */
export function mergeByTime(traces: TraceArrays[], concurrentOnly = false): { addrs: Float64Array; lens: Uint32Array } {
  const live = traces.filter((t) => t.times.length > 0);
  let until = Infinity;
  for (const t of live) if (t.capped) until = Math.min(until, t.times[t.times.length - 1]!);
  const keep = concurrentOnly && live.length > 1 ? concurrentBins(live) : null;
  const total = live.reduce((a, t) => a + t.times.length, 0);
  const addrs = new Float64Array(total);
  const lens = new Uint32Array(total);
  const head = new Array<number>(live.length).fill(0);
  let n = 0;
  for (;;) {
    let best = -1;
    let bestT = Infinity;
    for (let i = 0; i < live.length; i++) {
      const t = live[i]!;
      const h = head[i]!;
      if (h < t.times.length && t.times[h]! < bestT) {
        best = i;
        bestT = t.times[h]!;
      }
    }
    if (best < 0 || bestT > until) break;
    const t = live[best]!;
    const h = head[best]!++;
    if (keep && !keep.has(bestT)) continue;
    addrs[n] = t.addrs[h]!;
    lens[n] = t.lens[h]!;
    n++;
  }
  return { addrs: addrs.subarray(0, n), lens: lens.subarray(0, n) };
}

/** Which times fall in a bin where every trace has at least one record. */
function concurrentBins(live: TraceArrays[]): { has: (t: number) => boolean } {
  const t0 = Math.min(...live.map((t) => t.times[0]!));
  const t1 = Math.max(...live.map((t) => t.times[t.times.length - 1]!));
  const bins = Math.floor((t1 - t0) / CONCURRENT_BIN_MS) + 1;
  const count = new Uint8Array(bins);
  for (const t of live) {
    let last = -1;
    for (let i = 0; i < t.times.length; i++) {
      const b = Math.floor((t.times[i]! - t0) / CONCURRENT_BIN_MS);
      if (b !== last) count[b]!++;
      last = b;
    }
  }
  return { has: (t) => count[Math.floor((t - t0) / CONCURRENT_BIN_MS)] === live.length };
}

export function dlwaOf(traces: TraceArrays[], concurrentOnly = false): DlwaResult & { records: number } {
  const m = mergeByTime(traces, concurrentOnly);
  return { ...modelDlwa(m.addrs, m.lens), records: m.addrs.length };
}
