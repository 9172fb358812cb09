// Garbage-collection throughput (§4.4), in one process and deterministic: a pool of 256 x 256 KiB
// segments (pagecache mode, temp dir) is filled through t-logs so that its Committed segments hold a
// chosen share of live entries (bench/gc/fixture.ts), then one Cleaner (actors/clean/gc.ts, the clean
// actor's logic, default segments per pass and the paper's 75 % threshold) runs pass() until no
// candidate is left. Nothing else touches the pool, so the read-epoch wait is immediate: this is the
// cleaner's own cost (scan, index probes, copies with persists, index CAS, freeing).
//
// Per cell (value size x live share): segments reclaimed, MB reclaimed per second of cleaning (segment
// bytes freed / wall time of the passes), MB of live entries copied per second, entries relocated per
// second; statusMBps is the rate per CPU-second from the cleaner's busyUs (thread CPU time), i.e. what `rowan status` reports as
// mbPerBusySecond. Each cell runs `reps` times on a fresh pool and reports the median rate; after every
// run each key must read back its newest value (verifyGcFixture), so a broken GC cannot look fast.
// Flags: --quick (32 segments, 1 rep), --reps=N, --segments=N (phase-1 segments per run, max 126).
// Through the harness: npm run bench -- gc [--quick]. Alone: node dist/bench/gc.bench.js.
import { pathToFileURL } from 'node:url';
import { Cleaner } from '../actors/clean/gc.js';
import { defaultLimits } from '../config/limits.js';
import { paper } from '../config/defaults.js';
import { createGcFixture, verifyGcFixture } from './gc/fixture.js';
import { formatTable, progress, recordParams, type Row } from './report.js';

const POOL_SEGMENTS = 256;
const SEGMENT_BYTES = 256 * 1024;
const VALUE_BYTES = [64, 256, 1024];
const LIVE_SHARES = [0, 0.25, 0.5, 0.7];

interface GcBenchOptions {
  segments: number;
  reps: number;
}

function parse(argv: string[]): GcBenchOptions {
  const flag = (name: string) => argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1];
  const quick = argv.includes('--quick') || process.env.ROWAN_BENCH_QUICK === '1';
  const int = (name: string, d: number, max: number) => {
    const v = Number(flag(name) ?? d);
    if (!Number.isInteger(v) || v <= 0 || v > max) throw new Error(`gc bench: --${name} wants an integer in 1..${max}`);
    return v;
  };
  return { segments: int('segments', quick ? 32 : 96, (POOL_SEGMENTS - 4) / 2), reps: int('reps', quick ? 1 : 3, 50) };
}

interface RunResult {
  segments: number;
  seconds: number;
  busySeconds: number;
  reclaimedBytes: number;
  copiedBytes: number;
  copiedEntries: number;
  passes: number;
  liveMeasured: number;
  entryBytes: number;
}

/** Fill a fresh pool, clean it to the end, verify; the fill is not timed. */
async function runOnce(valueBytes: number, liveShare: number, segments: number): Promise<RunResult> {
  const f = createGcFixture({ poolSegments: POOL_SEGMENTS, segmentBytes: SEGMENT_BYTES, segments, valueBytes, liveShare });
  try {
    const cleaner = new Cleaner({ pool: f.pool, shared: f.shared, limits: defaultLimits, id: 0, count: 1, liveThresholdPercent: paper.gcLiveThresholdPercent });
    const picks = cleaner.candidates();
    const want = new Set(f.filled);
    if (picks.length !== f.filled.length || picks.some((c) => !want.has(c.segment))) {
      throw new Error(`gc bench: ${picks.length} candidates, expected the ${f.filled.length} filled segments (live share ${liveShare}, ${valueBytes} B)`);
    }
    const liveMeasured = picks.reduce((a, c) => a + c.live, 0) / (picks.length * SEGMENT_BYTES);
    const t0 = performance.now();
    while (cleaner.pass() > 0);
    const seconds = (performance.now() - t0) / 1000;
    const left = cleaner.candidates().length;
    const s = cleaner.stats;
    if (left > 0 || s.segments !== f.filled.length) {
      throw new Error(`gc bench: cleaning stopped with ${left} candidates left, ${s.segments} of ${f.filled.length} freed (aborted ${s.aborted}, pinned ${s.pinned})`);
    }
    verifyGcFixture(f, f.filled);
    return {
      segments: s.segments,
      seconds,
      busySeconds: s.busyUs / 1e6,
      reclaimedBytes: s.reclaimedBytes,
      copiedBytes: s.copiedBytes,
      copiedEntries: s.copiedEntries,
      passes: s.passes,
      liveMeasured,
      entryBytes: f.entryBytes,
    };
  } finally {
    f.close();
  }
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

export async function run(o: GcBenchOptions = parse(process.argv.slice(2))): Promise<Row[]> {
  recordParams({ ...o, poolSegments: POOL_SEGMENTS, segmentBytes: SEGMENT_BYTES, valueBytes: VALUE_BYTES, liveShares: LIVE_SHARES, liveThresholdPercent: paper.gcLiveThresholdPercent });
  const rows: Row[] = [];
  const total = VALUE_BYTES.length * LIVE_SHARES.length;
  let done = 0;
  for (const valueBytes of VALUE_BYTES) {
    for (const liveShare of LIVE_SHARES) {
      progress(`gc: ${valueBytes} B values, ${liveShare * 100} % live`, done, total);
      const runs: RunResult[] = [];
      for (let r = 0; r < o.reps; r++) runs.push(await runOnce(valueBytes, liveShare, o.segments));
      // The median run by wall time; its own counts go with it.
      const m = runs.find((x) => x.seconds === median(runs.map((y) => y.seconds)))!;
      const mb = (b: number) => b / 1e6;
      rows.push({
        valueBytes,
        entryBytes: m.entryBytes,
        livePct: liveShare * 100,
        liveMeasuredPct: Math.round(m.liveMeasured * 1000) / 10,
        segments: m.segments,
        passes: m.passes,
        reclaimedMB: Math.round(mb(m.reclaimedBytes) * 10) / 10,
        ms: Math.round(m.seconds * 10_000) / 10,
        reclaimMBps: Math.round(mb(m.reclaimedBytes) / m.seconds),
        copyMBps: Math.round(mb(m.copiedBytes) / m.seconds),
        relocatedPerSec: Math.round(m.copiedEntries / m.seconds),
        statusMBps: m.busySeconds > 0 ? Math.round(mb(m.reclaimedBytes) / m.busySeconds) : null,
        reps: o.reps,
      });
      progress(`gc: ${valueBytes} B values, ${liveShare * 100} % live`, ++done, total);
    }
  }
  console.log(
    `\ngc: one Cleaner, ${POOL_SEGMENTS} x ${SEGMENT_BYTES / 1024} KiB pool (pagecache), ${o.segments} Committed segments per run at the ` +
      `given live share, 16 B keys; threshold ${paper.gcLiveThresholdPercent} %, default segments per pass; median of ${o.reps} run(s) by ` +
      `wall time; every key verified at its newest value after each run. reclaimMBps = segment bytes freed / wall time of the passes.`,
  );
  return rows;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const rows = await run();
  console.log(formatTable(rows));
}
