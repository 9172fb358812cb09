// YCSB on a local 3-node ROWAN-KV cluster (ROWAN §6.1, §6.3, Figures 9-10, Table 2), one fresh
// cluster per replication mode: rowan always; rpc / rwrite / batch / share when `rowan cluster` has
// --replication-mode. Per mode: load N keys with ZippyDB-sized objects, then run each cell (workload x
// key distribution x object sizes) for a fixed duration with a closed loop of C concurrent requests
// from this process, reporting ops/s and PUT / GET latency p50 / p99 (µs). After the last cell the
// cluster is stopped and its DLWA modelled from what landed in each node's pool (bench/ycsb/dlwa.ts);
// that is one number per mode (over the whole run, load included), repeated on each of its rows.
//
// Cells: Load A (100 % PUT) and A (50 %) with Zipfian 0.99 keys and ZippyDB sizes; without --quick
// also B (5 %) and C (0 %), uniform-key Load A and A, and A with UP2X and UDB sizes.
// Flags: --quick, --keys=N, --duration=ms, --concurrency=C, --workers=W (per node, default 1),
// --modes=rowan,rpc,...
// Through the harness: node dist/bench/run.js ycsb [--quick]. Alone: node dist/bench/ycsb.bench.js.
//
// This machine has 2 cores shared by 3 node processes (each with worker, control, digest and clean
// actors) and the client: absolute numbers are CPU-bound and far below the paper's; compare modes as
// ratios within one run.
import { readFileSync, rmSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { RowanClient } from '../actors/client/client.js';
import { formatTable, progress, type Row } from './report.js';
import { availableModes, startCluster } from './ycsb/cluster.js';
import { clusterDlwa } from './ycsb/dlwa.js';
import { loadKeys, runCell, workloads, type Workload } from './ycsb/driver.js';
import { sizeDists, valueSizeSampler, type SizeDist } from './ycsb/sizes.js';
import { mulberry32, UniformChooser, ZipfianChooser, type KeyChooser } from './ycsb/zipfian.js';

export interface YcsbOptions {
  quick: boolean;
  keys: number;
  durationMs: number;
  warmupMs: number;
  concurrency: number;
  /** Worker actors per node (rowan cluster --workers). */
  workers: number;
  modes: string[] | null;
}

interface CellDef {
  workload: Workload;
  dist: 'zipfian' | 'uniform';
  size: SizeDist;
}

export function parseYcsbOptions(argv: string[]): YcsbOptions {
  const flag = (name: string) => argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1];
  const quick = argv.includes('--quick') || process.env.ROWAN_BENCH_QUICK === '1';
  const num = (name: string, d: number) => {
    const v = Number(flag(name) ?? d);
    if (!Number.isFinite(v) || v <= 0) throw new Error(`ycsb: --${name} wants a positive number`);
    return v;
  };
  return {
    quick,
    keys: Math.floor(num('keys', quick ? 5_000 : 20_000)),
    durationMs: num('duration', quick ? 1_500 : 3_000),
    warmupMs: quick ? 300 : 500,
    concurrency: Math.floor(num('concurrency', 64)),
    workers: Math.floor(num('workers', 1)),
    modes: flag('modes')?.split(',').filter(Boolean) ?? null,
  };
}

function cellsOf(o: YcsbOptions): CellDef[] {
  const z = sizeDists.zippydb;
  const cells: CellDef[] = [
    { workload: workloads.loada, dist: 'zipfian', size: z },
    { workload: workloads.a, dist: 'zipfian', size: z },
  ];
  if (o.quick) return cells;
  cells.push(
    { workload: workloads.b, dist: 'zipfian', size: z },
    { workload: workloads.c, dist: 'zipfian', size: z },
    { workload: workloads.loada, dist: 'uniform', size: z },
    { workload: workloads.a, dist: 'uniform', size: z },
    { workload: workloads.a, dist: 'zipfian', size: sizeDists.up2x },
    { workload: workloads.a, dist: 'zipfian', size: sizeDists.udb },
  );
  return cells;
}

function round(v: number | null, digits = 0): number | null {
  if (v === null || !Number.isFinite(v)) return null;
  const f = 10 ** digits;
  return Math.round(v * f) / f;
}

async function runMode(mode: string, passMode: boolean, o: YcsbOptions, cells: CellDef[], step: () => void, label: (s: string) => void): Promise<Row[]> {
  label(`ycsb ${mode}: starting a 3-node cluster`);
  // No garbage collection yet (commit tracking and clean actors come later), so a pool only fills: size
  // it for a whole run of every cell at full speed (a quiet 2-core machine writes ~300 MiB per node).
  const cluster = await startCluster({ mode, passMode, poolMib: 768, segmentKib: 256, workers: o.workers });
  const rows: Row[] = [];
  const seed = 0x5eed;
  let client: RowanClient | null = null;
  try {
    client = await RowanClient.connect({ cluster: cluster.file, maxInFlight: o.concurrency * 2, timeoutMs: 20_000 });
    const loadSize = valueSizeSampler(sizeDists.zippydb, mulberry32(seed));
    const t0 = performance.now();
    await loadKeys(client, o.keys, o.concurrency, loadSize, (d) => label(`ycsb ${mode}: loaded ${d}/${o.keys} keys`));
    const loadSecs = (performance.now() - t0) / 1000;
    step();
    for (let i = 0; i < cells.length; i++) {
      const c = cells[i]!;
      label(`ycsb ${mode}: ${c.workload.name} ${c.dist} ${c.size.name}`);
      const rand = mulberry32(seed + 17 * (i + 1));
      const keys: KeyChooser = c.dist === 'zipfian' ? new ZipfianChooser(o.keys, 0.99, rand) : new UniformChooser(o.keys, rand);
      const r = await runCell(client, c.workload, keys, valueSizeSampler(c.size, mulberry32(seed + 31 * (i + 1))), o.concurrency, o.durationMs, o.warmupMs, seed + i);
      rows.push({
        mode,
        workload: c.workload.name,
        keys: c.dist,
        size: c.size.name,
        opsPerSec: Math.round(r.ops / r.seconds),
        putP50us: round(r.putP50),
        putP99us: round(r.putP99),
        getP50us: round(r.getP50),
        getP99us: round(r.getP99),
        errors: r.errors,
        loadOpsPerSec: Math.round(o.keys / loadSecs),
      });
      step();
    }
  } finally {
    await client?.close().catch(() => undefined);
    label(`ycsb ${mode}: stopping the cluster`);
    await cluster.stop();
  }
  label(`ycsb ${mode}: modelling DLWA from the pools`);
  let dlwa: number | null = null;
  let writes: number | null = null;
  let logs: number | null = null;
  try {
    const cfg = JSON.parse(readFileSync(cluster.file, 'utf8')) as { nodes: Array<{ dataDir: string }> };
    const d = clusterDlwa(cfg.nodes.map((n) => n.dataDir));
    dlwa = round(d.dlwa, 4);
    writes = d.writes;
    logs = d.logs;
    process.stderr.write(`ycsb ${mode}: DLWA per node ${d.nodes.map((x) => `${x.node}: ${x.dlwa.toFixed(4)} (${x.writes} writes, ${x.segments} segments, ${x.logs} logs)`).join('; ')}\n`);
  } catch (err) {
    process.stderr.write(`ycsb ${mode}: DLWA not modelled: ${(err as Error).message}\n`);
  }
  // The pools are sparse but up to poolMib each: do not leave them behind (ROWAN_YCSB_KEEP=1 keeps them).
  if (process.env.ROWAN_YCSB_KEEP !== '1') rmSync(cluster.dir, { recursive: true, force: true });
  step();
  for (const r of rows) Object.assign(r, { dlwa, pmWrites: writes, logsPerNode: logs });
  return rows;
}

export async function run(o: YcsbOptions = parseYcsbOptions(process.argv.slice(2))): Promise<Row[]> {
  const avail = availableModes();
  const modes = o.modes ? o.modes.filter((m) => avail.modes.includes(m)) : avail.modes;
  if (o.modes && modes.length < o.modes.length) process.stderr.write(`ycsb: modes not available here skipped: ${o.modes.filter((m) => !modes.includes(m)).join(', ')}\n`);
  const cells = cellsOf(o);
  const total = modes.length * (cells.length + 2);
  let done = 0;
  let current = '';
  const label = (s: string) => {
    current = s;
    progress(s, done, total);
  };
  const step = () => progress(current, ++done, total);
  const rows: Row[] = [];
  for (const mode of modes) {
    const before = done;
    try {
      rows.push(...(await runMode(mode, avail.passMode, o, cells, step, label)));
    } catch (err) {
      // One mode failing (a node that would not start, requests that kept failing) must not cost the others.
      const msg = (err as Error).message.split('\n')[0]!;
      process.stderr.write(`ycsb ${mode}: failed, no rows: ${msg}\n`);
      rows.push({ mode, workload: `failed: ${msg.slice(0, 60)}`, keys: null, size: null, opsPerSec: null });
      done = before + cells.length + 2;
    }
  }
  progress('ycsb: done', total, total);
  console.log(
    `\nycsb: modes ${modes.join(', ')}${avail.passMode ? '' : ' (rowan cluster has no --replication-mode here)'}; ` +
      `3 nodes x ${o.workers} worker(s), 48 shards, replication 3, shm fabric; ${o.keys} keys loaded (ZippyDB sizes), then per cell ` +
      `${o.warmupMs} ms warm-up + ${o.durationMs} ms measured, closed loop of ${o.concurrency} requests from one client ` +
      `process. Objects: 16 B key + value, sizes a two-piece uniform mixture with the paper's mean (bench/ycsb/sizes.ts). ` +
      `dlwa: per mode over the whole run, XPBuffer model on each node's PM writes reconstructed from its pool after ` +
      `the run (bench/ycsb/dlwa.ts), media/request bytes summed over the 3 nodes.`,
  );
  for (const line of comparisons(rows)) console.log(line);
  return rows;
}

/** Rowan-KV against each other mode on the paper's headline cells (§6.3: ZippyDB, Zipfian 0.99). */
export function comparisons(rows: Row[]): string[] {
  const out: string[] = [];
  const cell = (mode: string, w: string) => rows.find((r) => r.mode === mode && r.workload === w && r.keys === 'zipfian' && r.size === 'ZippyDB');
  const ratio = (a: unknown, b: unknown) => (typeof a === 'number' && typeof b === 'number' && b > 0 ? (a / b).toFixed(2) : '-');
  for (const mode of [...new Set(rows.map((r) => String(r.mode)))].filter((m) => m !== 'rowan')) {
    for (const w of ['Load A', 'A']) {
      const r = cell('rowan', w);
      const o = cell(mode, w);
      if (!r || !o) continue;
      out.push(
        `rowan vs ${mode}, ${w}: throughput rowan/${mode} ${ratio(r.opsPerSec, o.opsPerSec)}x, median PUT latency ${mode}/rowan ` +
          `${ratio(o.putP50us, r.putP50us)}x (>1: rowan lower), ` +
          `DLWA ${r.dlwa ?? '-'} vs ${o.dlwa ?? '-'}`,
      );
    }
  }
  return out;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const rows = await run();
  console.log(formatTable(rows));
}
