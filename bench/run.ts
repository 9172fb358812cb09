// The benchmark harness: `npm run bench -- [name ...]` (default: all). Each benchmark module exports
// `run(): Promise<Row[]>`; the harness shows progress, prints the table and writes JSON + SVG into
// bench/results/. Timings on a shared 2-core machine are noisy: compare rows of one run as ratios.
import { progress, report, type PlotSpec, type Row } from './report.js';

interface Bench {
  title: string;
  module: string;
  /** The module's export to call (default `run`). */
  fn?: string;
  plot: PlotSpec;
  columns?: string[];
}

const benches: Record<string, Bench> = {
  'pmem2-persist': {
    title: 'libpmem2 persist cost per call, by persistence mode and length',
    module: './pmem2-persist.bench.js',
    plot: { label: (r) => `${r.mode} ${r.bytes} B`, value: 'nsPerOp', unit: 'ns per persist', log: true },
  },
  log: {
    title: 'log append+persist per entry and scan rate',
    module: './log.bench.js',
    plot: { label: (r) => String(r.name), value: 'nsPerOp', unit: 'ns per op', log: true },
  },
  index: {
    title: 'shard index get/upsert throughput',
    module: './index.bench.js',
    plot: { label: (r) => `${r.name} x${r.threads}`, value: 'opsPerSec', unit: 'ops/s' },
  },
  dlwa: {
    title: 'modelled DLWA: separate logs (rwrite) vs one merged log (Rowan), 64/128 B writes',
    module: './dlwa.bench.js',
    plot: { label: (r) => `${r.writeBytes} B x${r.streams}`, value: ['rwriteDlwa', 'rowanDlwa'], unit: 'DLWA (media/request bytes)' },
  },
  ring: {
    title: 'SAB ring vs postMessage between two pinned actors',
    module: './ring.bench.js',
    plot: { label: (r) => `${r.name} batch ${r.batch}`, value: 'msgsPerSec', unit: 'messages/s' },
  },
  rowan: {
    title: 'Rowan vs rwrite/share/batch: modelled DLWA by write size and concurrent streams (writes/s in the table)',
    module: './rowan.bench.js',
    plot: { label: (r) => `${r.fabric} ${r.mode} ${r.api} ${r.bytes} B x${r.streams} d${r.depth}`, value: 'dlwa', unit: 'DLWA (media/request bytes)' },
  },
  gc: {
    title: 'garbage collection throughput: one Cleaner on Committed segments by value size and live share',
    module: './gc.bench.js',
    plot: { label: (r) => `${r.valueBytes} B values, ${r.livePct} % live`, value: 'reclaimMBps', unit: 'MB reclaimed per second of cleaning' },
  },
  ycsb: {
    title: 'YCSB on a local 3-node cluster per replication mode: ops/s, PUT/GET latency (µs), modelled DLWA',
    module: './ycsb.bench.js',
    plot: { label: (r) => `${r.mode} ${r.workload} ${r.keys} ${r.size}`, value: 'opsPerSec', unit: 'ops/s' },
  },
  coldstart: {
    title: 'cold start of one node: objects/s rebuilding the indexes from the pool, by objects and threads (phases: meta table, one-thread scan pass, rebuild)',
    module: './coldstart.bench.js',
    plot: { label: (r) => `${r.objects} objects, ${r.threads} thread(s)`, value: 'objectsPerSec', unit: 'objects/s' },
    columns: ['objects', 'threads', 'segments', 'metaMs', 'scanMs', 'rebuildMs', 'indexMs', 'totalMs', 'objectsPerSec'],
  },
  failover: {
    title: 'failover (Figure 14): ms after a primary is SIGKILLed under YCSB A until detected / committed / promoted / every shard served, p50 and p99',
    module: './failover.bench.js',
    plot: { label: (r) => String(r.phase), value: ['afterKillP50Ms', 'afterKillP99Ms'], unit: 'ms after the kill' },
  },
  redis: {
    title: 'Redis front end vs Redis 7 (primary + 2 replicas, AOF): same clients, ops/s and latency (ms); ratios rowan / Redis',
    module: './redis.bench.js',
    plot: { label: (r) => `${r.system} | ${r.client} ${r.test}`, value: 'opsPerSec', unit: 'ops/s' },
    columns: ['system', 'client', 'test', 'opsPerSec', 'p50ms', 'p99ms', 'errors', 'vsRedis', 'vsRedisSetWait2'],
  },
  reshard: {
    title: 'dynamic resharding (Figure 15): 95 % GET on 3 nodes, a hotspot on one shard at 3 s; ops/s before, during and after the move (timeline in reshard-timeline.svg)',
    module: './reshard.bench.js',
    plot: { label: (r) => `moved ${r.moved}`, value: ['opsPerSecBefore', 'opsPerSecHotspot', 'opsPerSecAfter'], unit: 'ops/s' },
    columns: ['hotspotMs', 'detectedAfterMs', 'moved', 'moveMs', 'handoverMs', 'objectsHandedOver', 'objectsCopied', 'blogEntriesApplied', 'opsPerSecBefore', 'opsPerSecHotspot', 'opsPerSecAfter', 'errors'],
  },
  'ycsb-gc': {
    title: 'YCSB Load A / A on Rowan-KV with big pools vs small pools under GC pressure: ops/s, latency (µs), segments reclaimed',
    module: './ycsb.bench.js',
    fn: 'runGc',
    plot: { label: (r) => `${r.workload} ${r.pool} pool, round ${r.round}`, value: 'opsPerSec', unit: 'ops/s' },
    columns: ['pool', 'round', 'workload', 'opsPerSec', 'ratio', 'putP50us', 'putP99us', 'getP50us', 'getP99us', 'errors',
      'gcSegments', 'gcMB', 'gcCopiedMB', 'gcBusyMs', 'pmFull', 'minFreeSegs', 'freeSegsAfter', 'loadOpsPerSec'],
  },
};

async function main(): Promise<void> {
  // Flags (--quick, ...) are for the benchmarks themselves, which read process.argv.
  // `ycsb --gc` is another name for ycsb-gc, so its results do not overwrite ycsb.json.
  const gcFlag = process.argv.includes('--gc');
  const asked = process.argv
    .slice(2)
    .filter((a) => !a.startsWith('--'))
    .map((n) => (n === 'ycsb' && gcFlag ? 'ycsb-gc' : n));
  const unknown = asked.filter((n) => !(n in benches));
  if (unknown.length) {
    console.error(`bench: unknown benchmark(s): ${unknown.join(', ')}; known: ${Object.keys(benches).join(', ')}`);
    process.exit(2);
  }
  const names = asked.length ? asked : Object.keys(benches);
  let i = 0;
  for (const name of names) {
    const b = benches[name]!;
    progress(`${name}: ${b.title}`, i, names.length);
    const mod = (await import(b.module)) as Record<string, () => Promise<Row[]>>;
    const rows = await mod[b.fn ?? 'run']!();
    report(name, b.title, rows, b.plot, b.columns);
    progress(`${name} done`, ++i, names.length);
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
