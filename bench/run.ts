// The benchmark harness: `npm run bench -- [name ...]` (default: all). Each benchmark module exports
// `run(): Promise<Row[]>`; the harness shows progress, prints the table and writes JSON + SVG into
// bench/results/. Timings on a shared 2-core machine are noisy: compare rows of one run as ratios.
import { progress, report, type PlotSpec, type Row } from './report.js';

interface Bench {
  title: string;
  module: string;
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
  ycsb: {
    title: 'YCSB on a local 3-node cluster per replication mode: ops/s, PUT/GET latency (µs), modelled DLWA',
    module: './ycsb.bench.js',
    plot: { label: (r) => `${r.mode} ${r.workload} ${r.keys} ${r.size}`, value: 'opsPerSec', unit: 'ops/s' },
  },
};

async function main(): Promise<void> {
  // Flags (--quick, ...) are for the benchmarks themselves, which read process.argv.
  const asked = process.argv.slice(2).filter((a) => !a.startsWith('--'));
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
    const mod = (await import(b.module)) as { run: () => Promise<Row[]> };
    const rows = await mod.run();
    report(name, b.title, rows, b.plot, b.columns);
    progress(`${name} done`, ++i, names.length);
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
