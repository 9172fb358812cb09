// YCSB on a local 3-node ROWAN-KV cluster (ROWAN §6.1, §6.3, Figures 9-10, Table 2), one fresh
// cluster per replication mode: rowan always; rpc / rwrite / batch / share / tailwind / erda / asymnvm when `rowan cluster` has
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
// --gc (harness name ycsb-gc; `ycsb --gc` is an alias): Rowan-KV's Load A and A (Zipfian 0.99, ZippyDB)
// with vs without GC pressure, runGc() below: the same key count and cells on fresh clusters with
//   - the big pools above (--big-pool-mib, default 768) and the clean actors idle (gc.liveThresholdPercent
//     0): no garbage collection at all;
//   - the big pools with GC as configured: the clean actors still clean every Committed segment under the
//     live threshold (they do not wait for the pool to fill), but never for lack of room;
//   - small pools (--pool-mib=N, default 8 = 32 segments of --segment-kib=256, the launcher's smallest
//     pool) where the clean actors must reclaim continuously for the writes to find free segments; with
//     the default 20,000 keys (~2.4 MiB of entries per node) the pool turns over several times per run.
// --rounds=R alternates the three R times (noise). Per cell: ops/s, latencies, what GC reclaimed (from
// the nodes' status), and the throughput ratio to the big pools with GC.
//
// This machine has 2 cores shared by 3 node processes (each with worker, control, digest and clean
// actors) and the client: absolute numbers are CPU-bound and far below the paper's; compare modes as
// ratios within one run.
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { RowanClient } from '../client/client.js';
import { paper } from '../config/defaults.js';
import { formatTable, progress, recordParams, type Row } from './report.js';
import { availableModes, startCluster } from './ycsb/cluster.js';
import { clusterDlwa } from './ycsb/dlwa.js';
import { readPoolMedia } from '../runtime/optane/media-file.js';
import { POOL_FILE } from '../config/base/files.js';
import { gcDelta, gcSummary, settledGcTotals, watchFreeSegments, withGcRatios } from './ycsb/gc-pressure.js';
import { loadKeys, runCell, workloads, type Workload } from './ycsb/driver.js';
import { CpuWindow } from './ycsb/server-cpu.js';
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
  /** --gc: the GC-pressure comparison (runGc) instead of the mode comparison. */
  gc: boolean;
  /** Pools of the GC-pressure run (MiB per node) and the segment size of both runs. */
  poolMib: number;
  bigPoolMib: number;
  segmentKib: number;
  rounds: number;
}

/** The pool of one cluster and what to measure besides the cells. */
interface RunSpec {
  poolMib: number;
  segmentKib: number;
  /** Model DLWA from the pools after the run. */
  dlwa: boolean;
  /** Read the GC counters around each cell (the cluster's status). */
  gc: boolean;
  /** Columns put first in every row (which pool, which round). */
  tag: Row;
  /** Node settings `rowan cluster` has no flag for (bench/ycsb/cluster.ts). */
  nodeConfig?: Record<string, unknown>;
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
    gc: argv.includes('--gc'),
    poolMib: Math.floor(num('pool-mib', 8)),
    bigPoolMib: Math.floor(num('big-pool-mib', 768)),
    segmentKib: Math.floor(num('segment-kib', 256)),
    rounds: Math.floor(num('rounds', quick ? 1 : 3)),
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

// The mode comparison's pools: sized for a whole run of every cell at full speed without any cleaning
// (a quiet 2-core machine writes ~300 MiB per node), so GC never has to run for room.
const modeRun: RunSpec = { poolMib: 768, segmentKib: 256, dlwa: true, gc: false, tag: {} };

async function runMode(mode: string, passMode: boolean, o: YcsbOptions, cells: CellDef[], step: () => void, label: (s: string) => void, spec = modeRun): Promise<Row[]> {
  label(`ycsb ${mode}: starting a 3-node cluster (${spec.poolMib} MiB pools)`);
  const cluster = await startCluster({ mode, passMode, poolMib: spec.poolMib, segmentKib: spec.segmentKib, workers: o.workers, ...(spec.nodeConfig ? { nodeConfig: spec.nodeConfig } : {}) });
  const rows: Row[] = [];
  const seed = 0x5eed;
  let client: RowanClient | null = null;
  try {
    client = await RowanClient.connect({ cluster: cluster.file, maxInFlight: o.concurrency * 2, timeoutMs: 20_000 });
    const loadSize = valueSizeSampler(sizeDists.zippydb, mulberry32(seed));
    const nodePids = () => cluster.pids().nodes;
    const loadCpu = new CpuWindow(nodePids);
    loadCpu.edge('start');
    const t0 = performance.now();
    await loadKeys(client, o.keys, o.concurrency, loadSize, (d) => label(`ycsb ${mode}: loaded ${d}/${o.keys} keys`));
    const loadSecs = (performance.now() - t0) / 1000;
    loadCpu.edge('end');
    const loadCpuPerOp = loadCpu.perOp(o.keys);
    step();
    let gcBefore = spec.gc ? await settledGcTotals(cluster.file) : null;
    for (let i = 0; i < cells.length; i++) {
      const c = cells[i]!;
      label(`ycsb ${mode}: ${c.workload.name} ${c.dist} ${c.size.name}`);
      const rand = mulberry32(seed + 17 * (i + 1));
      const keys: KeyChooser = c.dist === 'zipfian' ? new ZipfianChooser(o.keys, 0.99, rand) : new UniformChooser(o.keys, rand);
      const watch = spec.gc ? watchFreeSegments(cluster.file) : null;
      let r: Awaited<ReturnType<typeof runCell>>;
      const cpu = new CpuWindow(nodePids);
      try {
        r = await runCell(client, c.workload, keys, valueSizeSampler(c.size, mulberry32(seed + 31 * (i + 1))), o.concurrency, o.durationMs, o.warmupMs, seed + i, (e) => cpu.edge(e));
      } catch (err) {
        // A failed cell must not leave the sampler's interval running: the process would never exit.
        await watch?.stop();
        throw err;
      }
      const minFreeSegs = await watch?.stop();
      const gcAfter = spec.gc ? await settledGcTotals(cluster.file) : null;
      rows.push({
        ...spec.tag,
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
        // Server CPU (the 3 node processes, every thread) per operation: this cell's window, and the load.
        cpuUsPerOp: cpu.perOp(r.ops)?.total ?? null,
        loadCpuUsPerOp: loadCpuPerOp?.total ?? null,
        cpuUsPerOpTop: cpu.perOp(r.ops)?.byThread ?? null,
        // The latency histograms themselves (encoded HDR, bench/hist.ts): rounds and runs merge exactly.
        putHdr: r.putHist.count ? r.putHist.encode() : null,
        getHdr: r.getHist.count ? r.getHist.encode() : null,
        ...(gcBefore && gcAfter ? { ...gcDelta(gcBefore, gcAfter), minFreeSegs: minFreeSegs ?? null } : {}),
      });
      gcBefore = gcAfter;
      step();
    }
  } finally {
    await client?.close().catch(() => undefined);
    label(`ycsb ${mode}: stopping the cluster`);
    await cluster.stop();
  }
  if (!spec.dlwa) {
    if (process.env.ROWAN_YCSB_KEEP !== '1') rmSync(cluster.dir, { recursive: true, force: true });
    step();
    return rows;
  }
  label(`ycsb ${mode}: modelling DLWA from the pools`);
  let dlwa: number | null = null;
  let writes: number | null = null;
  let logs: number | null = null;
  let media: Row = {};
  try {
    const cfg = JSON.parse(readFileSync(cluster.file, 'utf8')) as { nodes: Array<{ dataDir: string }> };
    media = mediaOf(cfg.nodes.map((n) => n.dataDir));
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
  for (const r of rows) Object.assign(r, { dlwa, pmWrites: writes, logsPerNode: logs }, media);
  return rows;
}

/** With pm.media optane (ROWAN_PM_MEDIA in the environment the nodes inherit): the nodes' models,
 *  summed over the run (load included): DLWA, and the time persists waited for the media. */
function mediaOf(dataDirs: string[]): Row {
  const ms = dataDirs.map((d) => readPoolMedia(join(d, POOL_FILE))).filter((m) => m !== null);
  if (ms.length === 0) return {};
  const req = ms.reduce((a, m) => a + m.requestBytes, 0);
  const med = ms.reduce((a, m) => a + m.mediaBytes, 0);
  return { mediaDlwa: req > 0 ? round(med / req, 4) : null, mediaWaitMs: round(ms.reduce((a, m) => a + m.waitMs, 0), 1), mediaRequestBytes: req };
}

/** Progress over `total` steps: label() names the current one, step() completes one. */
function steps(total: number): { total: number; done: number; label: (s: string) => void; step: () => void } {
  let current = '';
  const p = {
    total,
    done: 0,
    label: (s: string) => {
      current = s;
      progress(s, p.done, total);
    },
    step: () => progress(current, ++p.done, total),
  };
  return p;
}

export async function run(o: YcsbOptions = parseYcsbOptions(process.argv.slice(2))): Promise<Row[]> {
  if (o.gc) return runGc(o);
  recordParams({ ...o, cells: cellsOf(o).map((c) => `${c.workload.name}, ${c.dist}, ${c.size.name}`), poolMib: modeRun.poolMib, segmentKib: modeRun.segmentKib, nodes: 3, shards: 48, replication: 3, fabric: 'shm' });
  const avail = availableModes();
  const modes = o.modes ? o.modes.filter((m) => avail.modes.includes(m)) : avail.modes;
  if (o.modes && modes.length < o.modes.length) process.stderr.write(`ycsb: modes not available here skipped: ${o.modes.filter((m) => !modes.includes(m)).join(', ')}\n`);
  const cells = cellsOf(o);
  const p = steps(modes.length * (cells.length + 2));
  const rows: Row[] = [];
  for (const mode of modes) {
    const before = p.done;
    try {
      rows.push(...(await runMode(mode, avail.passMode, o, cells, p.step, p.label)));
    } catch (err) {
      // One mode failing (a node that would not start, requests that kept failing) must not cost the others.
      const msg = (err as Error).message.split('\n')[0]!;
      process.stderr.write(`ycsb ${mode}: failed, no rows: ${msg}\n`);
      rows.push({ mode, workload: `failed: ${msg.slice(0, 60)}`, keys: null, size: null, opsPerSec: null });
      p.done = before + cells.length + 2;
    }
  }
  progress('ycsb: done', p.total, p.total);
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

/** Load A and A (Zipfian 0.99, ZippyDB) on Rowan-KV with big pools (GC off, GC on) vs small pools under
 *  GC pressure, alternating the three `rounds` times on fresh clusters with one key count (header). */
export async function runGc(o: YcsbOptions = { ...parseYcsbOptions(process.argv.slice(2)), gc: true }): Promise<Row[]> {
  const cells = cellsOf({ ...o, quick: true });
  recordParams({ ...o, cells: cells.map((c) => `${c.workload.name}, ${c.dist}, ${c.size.name}`), nodes: 3, shards: 48, replication: 3, fabric: 'shm' });
  const big = `${o.bigPoolMib} MiB`;
  const small = `${o.poolMib} MiB`;
  const off = `${big}, gc off`;
  const specs: { mib: number; name: string; nodeConfig?: Record<string, unknown> }[] = [
    { mib: o.bigPoolMib, name: off, nodeConfig: { gc: { liveThresholdPercent: 0 } } },
    // The same start for every variant (create, stop, write the setting, restart): a restarted cluster
    // runs on pool pages its first start already touched, which alone moved throughput by 1.2-1.5x when
    // only the GC-off cluster was restarted.
    { mib: o.bigPoolMib, name: big, nodeConfig: { gc: { liveThresholdPercent: paper.gcLiveThresholdPercent } } },
    { mib: o.poolMib, name: small, nodeConfig: { gc: { liveThresholdPercent: paper.gcLiveThresholdPercent } } },
  ];
  const p = steps(o.rounds * specs.length * (cells.length + 2));
  const rows: Row[] = [];
  for (let round = 1; round <= o.rounds; round++) {
    for (const { mib, name, nodeConfig } of specs) {
      const spec: RunSpec = { poolMib: mib, segmentKib: o.segmentKib, dlwa: false, gc: true, tag: { pool: name, round }, ...(nodeConfig ? { nodeConfig } : {}) };
      const before = p.done;
      try {
        rows.push(...(await runMode('rowan', false, o, cells, p.step, (s) => p.label(`${s} [${name}, round ${round}]`), spec)));
      } catch (err) {
        const msg = (err as Error).message.split('\n')[0]!;
        process.stderr.write(`ycsb --gc ${name} round ${round}: failed, no rows: ${msg}\n`);
        rows.push({ pool: name, round, mode: 'rowan', workload: `failed: ${msg.slice(0, 60)}`, opsPerSec: null });
        p.done = before + cells.length + 2;
      }
    }
  }
  progress('ycsb --gc: done', p.total, p.total);
  console.log(
    `\nycsb --gc: rowan, 3 nodes x ${o.workers} worker(s), 48 shards, replication 3, shm fabric, ${o.segmentKib} KiB segments, pools of ` +
      `${big} (GC off / on) vs ${small} per node, alternated ${o.rounds} time(s) on fresh clusters; ${o.keys} keys loaded (ZippyDB sizes, ` +
      `~${((o.keys * 128) / 2 ** 20).toFixed(1)} MiB of entries per node, every node holds every shard), then per cell ${o.warmupMs} ms ` +
      `warm-up + ${o.durationMs} ms measured, closed loop of ${o.concurrency}. gc* columns: summed over the nodes from their status, ` +
      `before the cell to after it once cleaning settled; minFreeSegs: fewest free segments on any node, sampled every 250 ms ` +
      `during the cell (freeSegsAfter: once settled). ratio: ops/s over the median of the ${big} (GC on) rows for the workload.`,
  );
  const out = withGcRatios(rows, big);
  for (const line of [...gcSummary(out, big, small), ...gcSummary(out, big, off)]) console.log(line);
  return out;
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
          `${ratio(o.putP50us, r.putP50us)}x (>1: rowan lower), server CPU per op ${mode}/rowan ${ratio(o.cpuUsPerOp, r.cpuUsPerOp)}x ` +
          `(>1: rowan cheaper; ${r.cpuUsPerOpTop ?? '-'} vs ${o.cpuUsPerOpTop ?? '-'} µs), DLWA ${r.dlwa ?? '-'} vs ${o.dlwa ?? '-'}`,
      );
    }
  }
  return out;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const rows = await run();
  console.log(formatTable(rows, Object.keys(rows[0] ?? {}).filter((c) => !c.endsWith('Hdr'))));
}
