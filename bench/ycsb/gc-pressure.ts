// YCSB with vs without GC pressure (bench/ycsb.bench.ts --gc): the same cells on a cluster whose pools
// are big enough that cleaning is never needed for room, and on one whose pools are small enough that
// the clean actors must reclaim segments continuously to keep the writes going. This module reads the
// cluster's GC counters (what `rowan status` reports) and puts the two pools' rows side by side.
import type { Row } from '../report.js';
import { collectClusterStatus } from '../../bin/cluster-status.js';

/** Sums over the cluster's nodes of what their clean actors and workers report, plus pool headroom. */
export interface GcTotals {
  segmentsReclaimed: number;
  reclaimedBytes: number;
  copiedBytes: number;
  busyMs: number;
  pmFullRefusals: number;
  /** The fewest free segments any node has. */
  minFreeSegments: number;
  /** Nodes that did not answer the status request. */
  down: number;
}

export async function clusterGcTotals(file: string): Promise<GcTotals> {
  const s = await collectClusterStatus(file);
  const t: GcTotals = { segmentsReclaimed: 0, reclaimedBytes: 0, copiedBytes: 0, busyMs: 0, pmFullRefusals: 0, minFreeSegments: Infinity, down: 0 };
  for (const n of s.nodes) {
    const st = n.status?.storage;
    if (!st) {
      t.down++;
      continue;
    }
    t.segmentsReclaimed += st.gc.segmentsReclaimed;
    t.reclaimedBytes += st.gc.reclaimedBytes;
    t.copiedBytes += st.gc.copiedBytes;
    t.busyMs += st.gc.busyMs;
    t.pmFullRefusals += st.commit.pmFullRefusals;
    const free = (n.status?.pool?.counts as Record<string, number> | undefined)?.free;
    if (typeof free === 'number') t.minFreeSegments = Math.min(t.minFreeSegments, free);
  }
  return t;
}

/**
 * The GC totals once cleaning has caught up: a clean actor publishes its counters only when a run of
 * passes ends (actors/clean/thread.ts), which under steady pressure can be long after the segments were
 * freed. Polls until the reclaimed count holds still for two reads (or `maxMs`).
 */
export async function settledGcTotals(file: string, pollMs = 150, maxMs = 3_000): Promise<GcTotals> {
  const t0 = Date.now();
  let prev = await clusterGcTotals(file);
  for (;;) {
    await new Promise((r) => setTimeout(r, pollMs));
    const cur = await clusterGcTotals(file);
    if (cur.segmentsReclaimed === prev.segmentsReclaimed || Date.now() - t0 > maxMs) return cur;
    prev = cur;
  }
}

/** Samples the fewest free segments on any node every `everyMs` while a cell runs: the headroom the
 *  writers really had (after the cell, cleaning has caught up again). */
export function watchFreeSegments(file: string, everyMs = 250): { stop: () => Promise<number | null> } {
  let min = Infinity;
  let inFlight: Promise<void> = Promise.resolve();
  const sample = () => {
    inFlight = clusterGcTotals(file).then(
      (t) => void (min = Math.min(min, t.minFreeSegments)),
      () => undefined,
    );
  };
  const timer = setInterval(() => void inFlight.then(sample), everyMs);
  return {
    stop: async () => {
      clearInterval(timer);
      await inFlight;
      return Number.isFinite(min) ? min : null;
    },
  };
}

/** What cleaning did between two readings (counters are cumulative per node). */
export function gcDelta(before: GcTotals, after: GcTotals): Row {
  return {
    gcSegments: after.segmentsReclaimed - before.segmentsReclaimed,
    gcMB: round((after.reclaimedBytes - before.reclaimedBytes) / 1e6, 1),
    gcCopiedMB: round((after.copiedBytes - before.copiedBytes) / 1e6, 1),
    gcBusyMs: Math.round(after.busyMs - before.busyMs),
    pmFull: after.pmFullRefusals - before.pmFullRefusals,
    freeSegsAfter: Number.isFinite(after.minFreeSegments) ? after.minFreeSegments : null,
  };
}

function round(v: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(v * f) / f;
}

/** The median of a column over the rows of one pool and workload (null when none has a number). Median,
 *  not mean: on a shared machine one round can be starved by someone else's job. */
export function medianOf(rows: Row[], pool: string, workload: string, col: string): number | null {
  const xs = rows
    .filter((r) => r.pool === pool && r.workload === workload)
    .map((r) => r[col])
    .filter((x): x is number => typeof x === 'number')
    .sort((a, b) => a - b);
  if (xs.length === 0) return null;
  const m = xs.length >> 1;
  return xs.length % 2 ? xs[m]! : (xs[m - 1]! + xs[m]!) / 2;
}

/**
 * Each row gets `ratio`: its opsPerSec over the median opsPerSec of the baseline pool's rows of the same
 * workload (the baseline's own rows included, so its rounds show their spread). Rows are keyed by `pool`
 * and `workload`; a missing or zero baseline gives null.
 */
export function withGcRatios(rows: Row[], baselinePool: string): Row[] {
  return rows.map((r) => {
    const b = medianOf(rows, baselinePool, String(r.workload), 'opsPerSec');
    return { ...r, ratio: typeof r.opsPerSec === 'number' && b ? round(r.opsPerSec / b, 3) : null };
  });
}

/** One line per workload: median throughput of two pools and their ratio, for the console summary. */
export function gcSummary(rows: Row[], baselinePool: string, pressurePool: string): string[] {
  const out: string[] = [];
  for (const w of [...new Set(rows.map((r) => String(r.workload)))]) {
    const b = medianOf(rows, baselinePool, w, 'opsPerSec');
    const p = medianOf(rows, pressurePool, w, 'opsPerSec');
    if (b === null || p === null || b === 0) continue;
    const seg = medianOf(rows, pressurePool, w, 'gcSegments');
    out.push(`${w}, medians: ${pressurePool} ${Math.round(p)} ops/s vs ${baselinePool} ${Math.round(b)} ops/s: ratio ${(p / b).toFixed(2)} ` +
      `(${pressurePool}: ${seg === null ? '-' : Math.round(seg)} segments reclaimed per cell)`);
  }
  return out;
}
