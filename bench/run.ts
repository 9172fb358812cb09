// The benchmark harness: `npm run bench -- [name ...] [--flags]` (default: all; --help lists them).
// Each benchmark module exports `run(): Promise<Row[]>`; the harness shows progress, prints the table
// and writes bench/results/<name>.json (rows, git commit, parameters, machine, load average at start
// and end) and the benchmark's plots (bench/plot/figures.ts). `--replot` redraws the plots from the
// JSON already there without running anything. Timings on a shared 2-core machine are noisy: compare
// rows of one run as ratios.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { figures } from './plot/figures.js';
import { finishRun, progress, report, resultsDir, runFooter, startRun, writeFigures, type Figure, type ResultFile, type RunMeta, type Row } from './report.js';
import { withFooter } from './plot/svg.js';
import { timelineOf, type RunsFile } from './failover/timeline.js';

interface Bench {
  title: string;
  module: string;
  /** The module's export to call (default `run`). */
  fn?: string;
  columns?: string[];
  /** Its flags (besides --quick where it says so), for --help. */
  flags: string;
  /** Roughly how long it took with the defaults here (bench/results/<name>.json: run.startedAt/finishedAt). */
  takes: string;
}

const benches: Record<string, Bench> = {
  'pmem2-persist': {
    title: 'persist cost per call, by persistence mode, back end (libpmem2, libc) and length',
    module: './pmem2-persist.bench.js',
    flags: '',
    takes: '~5 s',
  },
  log: {
    title: 'log append+persist cost per entry by entry size and persistence mode, and scan rate',
    module: './log.bench.js',
    flags: '',
    takes: '~10 s',
  },
  index: {
    title: 'shard index get/upsert throughput, 1 and 2 threads',
    module: './index.bench.js',
    flags: '',
    takes: '~10 s',
  },
  dlwa: {
    title: 'modelled DLWA: separate logs (rwrite) vs one merged log (Rowan), 64/128 B writes, 1..144 streams',
    module: './dlwa.bench.js',
    flags: '',
    takes: '~1 s',
  },
  ring: {
    title: 'SAB ring vs postMessage between two pinned actors',
    module: './ring.bench.js',
    flags: '',
    takes: '~1 s',
  },
  rowan: {
    title: 'Rowan vs rwrite/share/batch: writes/s, latency and modelled DLWA by write size and concurrent streams',
    module: './rowan.bench.js',
    flags: '--quick (~30 s) --duration=ms --streams=1,8,36,72,144 --sizes=64,128 --modes=rowan,rwrite,share,batch --depth=N --deep-depth=N --no-tcp --no-burst --retries=N --media-mbps=N (the Optane media model on, N MB/s per DIMM) --sender-threads=N (2) --warm-up (every cell once, unmeasured, first) --hold-per-write (Rowan over shm also with a hold per write, the landing before issue 29)',
    takes: '~3 min',
  },
  gc: {
    title: 'garbage collection throughput: one Cleaner on Committed segments by value size and live share',
    module: './gc.bench.js',
    flags: '--quick (32 segments, 1 rep) --reps=N --segments=N',
    takes: '~1 min',
  },
  ycsb: {
    title: 'YCSB on a local 3-node cluster per replication mode: ops/s, PUT/GET latency (µs), modelled DLWA',
    module: './ycsb.bench.js',
    columns: ['mode', 'workload', 'keys', 'size', 'opsPerSec', 'putP50us', 'putP99us', 'getP50us', 'getP99us', 'errors', 'loadOpsPerSec', 'dlwa', 'pmWrites', 'logsPerNode'],
    flags: '--quick (~1 min) --keys=N --duration=ms --concurrency=C --workers=W --modes=rowan,rpc,rwrite,batch,share,tailwind --gc (= ycsb-gc)',
    takes: '~5 min',
  },
  coldstart: {
    title: 'cold start of one node: objects/s rebuilding the indexes from the pool, by objects and threads (phases: meta table, one-thread scan pass, rebuild)',
    module: './coldstart.bench.js',
    columns: ['objects', 'threads', 'segments', 'metaMs', 'scanMs', 'rebuildMs', 'indexMs', 'totalMs', 'objectsPerSec'],
    flags: '--quick (200 k objects) --threads=N',
    takes: '~40 s',
  },
  failover: {
    title: 'failover (Figure 14): ms after a primary is SIGKILLed under YCSB A until detected / committed / promoted / every shard served, p50 and p99',
    module: './failover.bench.js',
    flags: '--quick (3 kills) --kills=N (default 20) --lease-ms=ms (default: the default lease)',
    takes: '~5 min',
  },
  'lease-soak': {
    title: 'lease soak (issue 26): a 3-node cluster beside a CPU hog under a light load for 10 minutes; renewal gaps over half a lease, lapsed leases and failovers per node',
    module: './lease-soak.bench.js',
    columns: ['node', 'leaseMs', 'seconds', 'renewGaps', 'maxGapMs', 'lapses', 'maxLapsedMs', 'failovers', 'ops', 'errors', 'firstError', 'loadAvgEnd'],
    flags: '--quick (60 s) --duration=ms (600000) --hogs=N (1 shell busy loop) --lease-ms=ms (default: the default lease)',
    takes: '~10.5 min',
  },
  redis: {
    title: 'Redis front end vs Redis 7 (primary + 2 replicas, AOF): same clients over 10..500 connections, ops/s, latency (ms), server CPU µs/op and idle cores from /proc; ratios rowan / Redis',
    module: './redis.bench.js',
    columns: ['system', 'client', 'clients', 'inFlight', 'test', 'seconds', 'opsPerSec', 'p50ms', 'p99ms', 'p999ms', 'cpuUsPerOp', 'serverCores', 'errors', 'vsRedis', 'cpuVsRedis', 'vsRedisSetWait2', 'cpuVsSetWait2', 'retries'],
    flags: '--quick (~5 min) --lease-ms=ms (rowan\'s lease, default 2000; the launcher\'s is 200); needs redis-server and redis-tools',
    takes: '~10 min',
  },
  idle: {
    title: 'an idle 3-node cluster (issue 26): cores and wakeups/s per process and thread from /proc over 30 s, beside the lease\'s message pattern alone (on Node\'s event loop; in blocking system calls)',
    module: './idle.bench.js',
    columns: ['system', 'process', 'thread', 'threads', 'seconds', 'cores', 'wakeupsPerSec'],
    flags: '--quick (10 s window)',
    takes: '~2.5 min',
  },
  reshard: {
    title: 'dynamic resharding (Figure 15): 95 % GET on 3 nodes, a hotspot on one shard at 3 s; ops/s before, during and after the move (timeline in reshard-timeline.svg)',
    module: './reshard.bench.js',
    columns: ['nodes', 'detectedAfterMs', 'moved', 'moveMs', 'objectsHandedOver', 'objectsPerSec', 'objectsCopied', 'copyMs', 'copiedObjectsPerSec', 'blogEntriesApplied', 'opsPerSecBefore', 'opsPerSecHotspot', 'opsPerSecAfter', 'hotspotVsBefore', 'afterVsHotspot', 'cpuHotNode', 'linkMbitHotNode', 'cpuRestOfMachine', 'errors'],
    flags: '--nodes=N (3; more than the 3 replicas: the node whose load goes to the hot shard holds no replica of it, copy moves are on, and the manager copies the shard to it) --link-mbit=M (180: each node in a network namespace whose link sends M Mbit/s, tcp fabric; 0: all on loopback, shm fabric) --duration=ms (15000; 10000 on loopback) --hotspot=ms (3000) --warmup=ms (3000; load not counted) --keys=N (4000; 30000) --value-bytes=B (16384; 100) --rate=N (3000; 45000 ops/s offered, open loop; 0: closed loop of --concurrency) --concurrency=C (48) --node-queue=N (48; outstanding per node, more arrivals are shed) --workers=W (1; more only on loopback) --shards=S (12) --period=ms (500) --lease-ms=ms (2000) --node-cpu=C (a cgroup CPU quota per node: none; 0.2 on loopback; 0: none) --quota-period=ms (10; the quota\'s CFS period)',
    takes: '~1 min',
  },
  'reshard-copy': {
    title: 'dynamic resharding (Figure 15 as in the paper): reshard on 4 nodes, 3 replicas -- the hot shard is copied to the node holding no replica of it (resharding.copyMoves); copy time, objects/s, ops/s before, during and after (timeline in reshard-copy-timeline.svg)',
    module: './reshard.bench.js',
    fn: 'runCopy',
    columns: ['nodes', 'detectedAfterMs', 'moved', 'moveMs', 'objectsCopied', 'copiedMB', 'copyMs', 'copiedObjectsPerSec', 'handoverMs', 'opsPerSecBefore', 'opsPerSecHotspot', 'opsPerSecAfter', 'hotspotVsBefore', 'afterVsHotspot', 'cpuHotNode', 'linkMbitHotNode', 'linkMbitTargetNode', 'errors'],
    flags: 'those of reshard (--nodes=N: 4)',
    takes: '~1 min',
  },
  rereplicate: {
    title: 're-replication (issue 28): a node made a full replica again, per shard copy -- a full copy (pool removed) and an incremental one after an absence (pool kept): MB/s and objects/s',
    module: './rereplicate.bench.js',
    columns: ['copy', 'copies', 'entriesPerCopy', 'movedMBPerCopy', 'shardMB', 'msP50', 'msMax', 'movedMBpsPerCopy', 'objectsPerSecPerCopy', 'shardMBpsPerCopy', 'allCopiesMBps', 'cpuCopierS', 'cpuTargetS', 'cpuSourceWorkersS', 'cpuAllNodesS', 'copierUsPerObject', 'writtenWhileAwayMB'],
    flags: '--quick (16 MB, 5 s away) --mb=N (64) --value-bytes=B (1000) --absence-ms=ms (10000)',
    takes: '~1 min',
  },
  copymove: {
    title: 'copy move (issue 28, Figure 15 with a target holding no replica): one shard\'s primary moved to a node holding none under load -- objects and MB copied, copy time, objects/s, MB/s, throughput before/during/after',
    module: './copymove.bench.js',
    columns: ['moved', 'objects', 'copiedMB', 'copyMs', 'objectsPerSec', 'copyMBps', 'moveMs', 'handoverMs', 'opsBefore', 'opsDuring', 'opsAfter', 'sourceWorkerCpuS', 'targetMigrationCpuS', 'targetMigrationUsPerObject'],
    flags: '--quick (50,000 objects) --keys=N (200000) --value-bytes=B (100) --loops=N (8)',
    takes: '~1 min',
  },
  copybatch: {
    title: 'copy batches (issue 28): a shard copy\'s CPU per object on the primary (walk) and the new backup (verify, land and index), v2 vs packed batches in one process and one run',
    module: './copybatch.bench.js',
    columns: ['format', 'valueBytes', 'rep', 'objects', 'MB', 'readUs', 'verifyUs', 'landIndexUs', 'targetUs', 'objectsPerCoreSec', 'MBpsPerCore', 'wallMs', 'wallObjectsPerSec', 'loadAvg'],
    flags: '--quick (50,000 objects, 2 reps) --keys=N (200000) --reps=N (3)',
    takes: '~1 min',
  },
  expiry: {
    title: 'expiry under load (issue 27): N keys expire while GET/SET streams run; their p99 vs a run without expiry, and the time until the pools are back to baseline',
    module: './expiry.bench.js',
    columns: ['phase', 'keys', 'second', 'seconds', 'opsPerSec', 'p50ms', 'p99ms', 'p999ms', 'errors', 'p99VsNoExpiry', 'p99msFirst15s', 'first15sVsNoExpiry', 'usedSegments', 'usedSegmentsPeak', 'indexItems', 'indexItemsPeak', 'liveMB', 'reclaimed', 'reclaimedAfterS', 'writeKeysPerSec', 'deadlineMarginS', 'requests'],
    flags: '--quick (100 k keys) --keys=N (1000000) --duration=ms (the longest phase 2 waits for the pools to be back to baseline: 600000; quick 180000) --segment-kib=N (256)',
    takes: '~10 min',
  },
  paper: {
    title: "the paper's figures 2, 8, 9/10, 11 and Table 2 with the Optane media model on, and its claims vs ours (also written into the README)",
    module: './paper.bench.js',
    columns: ['figure', 'fig', 'claim', 'paper', 'ours', 'target', 'met', 'model', 'mode', 'bytes', 'streams', 'writesPerSec', 'mediaDlwa', 'p50Us', 'p99Us', 'workload', 'keys', 'size', 'opsPerSec', 'putP50us'],
    flags: '--quick (Load A and A only, 64 B only) --no-ycsb (Figures 2, 8, 11 only)',
    takes: '~10 min',
  },
  'ycsb-gc': {
    title: 'YCSB Load A / A on Rowan-KV with big pools vs small pools under GC pressure: ops/s, latency (µs), segments reclaimed',
    module: './ycsb.bench.js',
    fn: 'runGc',
    columns: ['pool', 'round', 'workload', 'opsPerSec', 'ratio', 'putP50us', 'putP99us', 'getP50us', 'getP99us', 'errors',
      'gcSegments', 'gcMB', 'gcCopiedMB', 'gcBusyMs', 'pmFull', 'minFreeSegs', 'freeSegsAfter', 'loadOpsPerSec'],
    flags: '--quick --keys=N --pool-mib=N (8) --big-pool-mib=N (768) --segment-kib=N (256) --rounds=R (3) --duration=ms --concurrency=C --workers=W',
    takes: '~5 min',
  },
};

/** Flags some benchmark reads (a misspelt one would otherwise be ignored silently). */
const knownFlags = ['quick', 'help', 'replot', 'duration', 'streams', 'sizes', 'modes', 'depth', 'deep-depth', 'no-tcp', 'no-burst', 'retries', 'reps',
  'segments', 'keys', 'concurrency', 'workers', 'gc', 'threads', 'kills', 'lease-ms', 'pool-mib', 'big-pool-mib', 'segment-kib', 'rounds', 'hotspot', 'shards', 'period', 'node-cpu', 'quota-period', 'warmup', 'rate', 'node-queue', 'value-bytes', 'link-mbit', 'mb', 'absence-ms', 'media-mbps', 'sender-threads', 'no-ycsb', 'warm-up', 'hold-per-write', 'hogs', 'nodes'];

export function usage(): string {
  const w = Math.max(...Object.keys(benches).map((n) => n.length));
  return [
    'usage: npm run bench -- [name ...] [flags]     (no name: every benchmark, in this order)',
    '       npm run bench -- --replot [name ...]     redraw the plots from bench/results/<name>.json, run nothing',
    '',
    'benchmarks (time taken with the defaults on this 2-core machine; a busier one takes longer):',
    ...Object.entries(benches).flatMap(([n, b]) => [`  ${n.padEnd(w)}  ${b.takes.padEnd(7)} ${b.title}`, ...(b.flags ? [`  ${''.padEnd(w)}  ${''.padEnd(7)} flags: ${b.flags}`] : [])]),
    '',
    'Flags go to every benchmark named (--quick shortens each that has it). `ycsb --gc` is ycsb-gc.',
    'Each writes bench/results/<name>.json (rows; git commit and dirty flag; parameters; machine; load',
    'average at start and end) and its plots, bench/results/*.svg.',
  ].join('\n');
}

/** The benchmark's figures, each with a footer naming the run (an old JSON without a run record: none). */
function drawn(name: string, rows: Row[], run: RunMeta | undefined): Figure[] {
  return figures[name]!(rows).map((f) => (run?.git ? { ...f, svg: withFooter(f.svg, runFooter(run)) } : f));
}

function replot(names: string[]): void {
  for (const name of names) {
    const path = join(resultsDir, `${name}.json`);
    let file: ResultFile;
    try {
      file = JSON.parse(readFileSync(path, 'utf8')) as ResultFile;
    } catch (err) {
      console.error(`bench --replot: ${name}: cannot read ${path}: ${(err as Error).message}`);
      process.exitCode = 1;
      continue;
    }
    try {
      writeFigures(drawn(name, file.rows, file.run));
      // The failover timeline is drawn from every run's buckets, kept beside failover.json.
      if (name === 'failover') {
        const runs = JSON.parse(readFileSync(join(resultsDir, 'failover-runs.json'), 'utf8')) as RunsFile;
        writeFigures([{ file: 'failover-timeline.svg', svg: timelineOf(runs) }]);
      }
    } catch (err) {
      console.error(`bench --replot: ${name}: ${(err as Error).message}`);
      process.exitCode = 1;
    }
  }
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  if (argv.includes('--help') || argv.includes('-h')) {
    console.log(usage());
    return;
  }
  const badFlags = argv.filter((a) => a.startsWith('-') && !knownFlags.includes(a.replace(/^--?/, '').split('=')[0]!));
  if (badFlags.length) {
    console.error(`bench: unknown flag(s): ${badFlags.join(' ')}\n\n${usage()}`);
    process.exit(2);
  }
  // `ycsb --gc` is another name for ycsb-gc, so its results do not overwrite ycsb.json.
  const gcFlag = argv.includes('--gc');
  const asked = argv.filter((a) => !a.startsWith('-')).map((n) => (n === 'ycsb' && gcFlag ? 'ycsb-gc' : n));
  const unknown = asked.filter((n) => !(n in benches));
  if (unknown.length) {
    console.error(`bench: unknown benchmark(s): ${unknown.join(', ')}\n\n${usage()}`);
    process.exit(2);
  }
  const names = asked.length ? asked : Object.keys(benches);
  if (argv.includes('--replot')) return replot(names);
  let i = 0;
  for (const name of names) {
    const b = benches[name]!;
    progress(`${name}: ${b.title}`, i, names.length);
    const meta = startRun(argv);
    const mod = (await import(b.module)) as Record<string, () => Promise<Row[]>>;
    const rows = await mod[b.fn ?? 'run']!();
    const done = finishRun(meta);
    report(name, b.title, rows, done, drawn(name, rows, done), b.columns);
    progress(`${name} done`, ++i, names.length);
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
