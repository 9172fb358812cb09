// The benchmark plots' SVG writer (bench/plot/): axes carry ticks (linear and log), every series and
// bar is named once, long labels wrap, and the figures of the known-bad plots show what they claim.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { linearTicks, logTicks } from '../../../bench/plot/axis.js';
import { barChartSvg, lineChartSvg, withFooter } from '../../../bench/plot/svg.js';
import { figures } from '../../../bench/plot/figures.js';
import type { Row } from '../../../bench/report.js';

/** Text of every <text> element, entities decoded. */
function texts(svg: string): string[] {
  return [...svg.matchAll(/<text[^>]*>([^<]*)<\/text>/g)].map((m) => m[1]!.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&amp;/g, '&'));
}

function tickLabels(svg: string): string[] {
  return [...svg.matchAll(/<text[^>]*class="tick"[^>]*>([^<]*)<\/text>/g)].map((m) => m[1]!);
}

test('linear ticks are round steps covering the data; log ticks are decades (with 2 and 5 in a short span)', () => {
  assert.deepEqual(linearTicks(0, 2.48).ticks, [0, 0.5, 1, 1.5, 2, 2.5]);
  assert.deepEqual(linearTicks(0, 23_315_905).ticks, [0, 5e6, 10e6, 15e6, 20e6, 25e6]);
  assert.deepEqual(logTicks(406, 88_140).ticks, [100, 1000, 10_000, 100_000]);
  assert.deepEqual(logTicks(3, 40).ticks, [1, 2, 5, 10, 20, 50, 100]);
  assert.throws(() => logTicks(0, 10), RangeError);
});

test('a line chart has ticks on both axes, axis titles, and a legend naming each series once', () => {
  const svg = lineChartSvg({
    title: 'cost by size',
    x: { label: 'bytes', log: true, ticks: [64, 256, 1024, 4096] },
    y: { label: 'ns per persist', log: true },
    panels: [
      { series: [{ name: 'pagecache', points: [[64, 500], [256, 700], [1024, 1500], [4096, 4000]] }, { name: 'msync', points: [[64, 70_000], [256, 71_000], [1024, 80_000], [4096, 90_000]] }] },
    ],
  });
  const ticks = tickLabels(svg);
  for (const t of ['64', '256', '1,024', '4,096', '100', '1,000', '10k', '100k']) assert.ok(ticks.includes(t), `tick ${t} in ${ticks.join(' ')}`);
  const t = texts(svg);
  assert.ok(t.includes('bytes (log scale)'));
  assert.ok(t.includes('ns per persist (log scale)'));
  assert.equal(t.filter((x) => x === 'pagecache').length, 1);
  assert.equal(t.filter((x) => x === 'msync').length, 1);
  assert.equal((svg.match(/<polyline class="series"/g) ?? []).length, 2, 'one line per series');
  assert.throws(() => lineChartSvg({ title: 't', x: { label: 'x' }, y: { label: 'y' }, panels: [{ series: [{ name: 'a', points: [[1, 1]] }, { name: 'a', points: [[2, 2]] }] }] }), /appears twice/);
});

test('a bar chart has value ticks, wraps long labels, and refuses duplicate labels', () => {
  const long = 'redis-benchmark --cluster -P 16 against a three node cluster, SET with 91 byte values';
  const svg = barChartSvg({ title: 'ops', value: { label: 'ops/s' }, series: ['rowan', 'redis'], bars: [{ label: long, values: [79_100, null] }, { label: 'GET', values: [25_000, 115_000] }] });
  const ticks = tickLabels(svg);
  assert.ok(ticks.length >= 3, `value axis ticks: ${ticks.join(' ')}`);
  assert.ok(ticks.includes('0'));
  const t = texts(svg);
  assert.ok(!t.includes(long), 'the long label is wrapped');
  const at = t.indexOf('redis-benchmark --cluster -P 16 against a');
  assert.ok(at >= 0, t.join('|'));
  assert.equal(t.slice(at, at + 2).join(' '), long, 'its lines make up the label');
  assert.ok(t.includes('no data'), 'a missing value is said, not drawn as zero');
  assert.ok(t.includes('rowan') && t.includes('redis'), 'legend');
  assert.throws(() => barChartSvg({ title: 't', value: { label: 'v' }, series: ['s'], bars: [{ label: 'x', values: [1] }, { label: 'x', values: [2] }] }), /appears twice/);
});

test('rowan.svg is DLWA against streams, one line per mode and fabric, a panel per write size', () => {
  const rows: Row[] = [];
  for (const bytes of [64, 128])
    for (const streams of [1, 8, 36, 72, 144])
      for (const mode of ['rowan', 'rwrite', 'share', 'batch'])
        rows.push({ fabric: 'shm', mode, api: 'write', bytes, streams, depth: 1, writesPerSec: 1000 * streams, dlwa: mode === 'rowan' ? 1 : 1 + streams / 100 });
  const [dlwa, tput] = figures.rowan!(rows);
  assert.equal(dlwa!.file, 'rowan.svg');
  assert.equal(tput!.file, 'rowan-throughput.svg');
  const t = texts(dlwa!.svg);
  assert.ok(t.includes('64 B writes') && t.includes('128 B writes'), 'a panel per size');
  for (const m of ['shm rowan', 'shm rwrite', 'shm share', 'shm batch']) assert.equal(t.filter((x) => x === m).length, 1, `legend names ${m} once`);
  const ticks = tickLabels(dlwa!.svg);
  for (const s of ['1', '8', '36', '72', '144']) assert.ok(ticks.includes(s), `streams tick ${s}`);
  assert.ok(t.some((x) => x.startsWith('DLWA')), 'y axis says DLWA');
  assert.equal((dlwa!.svg.match(/<polyline class="series"/g) ?? []).length, 8, '4 modes x 2 sizes');
});

test('log.svg names each mode and its entry size; index.svg labels are unique', () => {
  const rows: Row[] = [];
  for (const mode of ['dram', 'pagecache', 'msync']) for (const entryBytes of [64, 128, 256, 1024]) rows.push({ name: 'append+persist', mode, entryBytes, nsPerOp: entryBytes * (mode === 'msync' ? 100 : 1), opsPerSec: 1 });
  rows.push({ name: 'scan', mode: 'dram', entryBytes: 128, nsPerOp: 400, opsPerSec: 2_500_000, note: '32768 entries per 4 MiB segment' });
  const svg = figures.log!(rows)[0]!.svg;
  const t = texts(svg);
  for (const m of ['dram', 'pagecache', 'msync']) assert.ok(t.includes(m), `series ${m}`);
  for (const b of ['64', '128', '256', '1,024']) assert.ok(tickLabels(svg).includes(b), `size tick ${b}`);
  assert.ok(t.some((x) => /2,500,000 entries\/s/.test(x)), 'the scan rate is stated');
  const idx = figures.index!([
    { name: 'get', method: 'tinybench, 10000 per call', threads: 1, opsPerSec: 2e6 },
    { name: 'get', method: 'worker_threads, 3000000 each', threads: 1, opsPerSec: 2.1e6 },
    { name: 'get', method: 'worker_threads, 3000000 each', threads: 2, opsPerSec: 4e6 },
  ])[0]!.svg;
  const labels = texts(idx).filter((x) => x.startsWith('get,'));
  assert.equal(new Set(labels).size, labels.length);
});

test('a footer line says which run a plot comes from, and the picture grows to hold it', () => {
  const svg = barChartSvg({ title: 't', value: { label: 'v' }, series: ['s'], bars: [{ label: 'x', values: [1] }] });
  const h = Number(/height="(\d+)"/.exec(svg)![1]);
  const out = withFooter(svg, 'run 2026-11-24 21:09 UTC, git 28c5132373; load average (1 min) 13.3 at start');
  assert.equal(Number(/height="(\d+)"/.exec(out)![1]), h + 18);
  assert.ok(texts(out).includes('run 2026-11-24 21:09 UTC, git 28c5132373; load average (1 min) 13.3 at start'));
  assert.ok(out.trimEnd().endsWith('</svg>'));
});

test('ycsb-gc-latency.svg takes percentiles of every round merged, not of one round', async () => {
  const { LatencyHistogram } = await import('../../../bench/hist.js');
  const round = (from: number) => {
    const h = LatencyHistogram.create();
    for (let i = 0; i < 1000; i++) h.recordUs(from + i);
    return h.encode();
  };
  // Round 1: 100..1099 µs; round 2: 10000..10999 µs. Merged p50 falls at the top of round 1.
  const rows: Row[] = [1, 2].map((r) => ({ pool: '8 MiB', round: r, workload: 'A', opsPerSec: 1000, putHdr: round(r === 1 ? 100 : 10_000), getHdr: null }));
  const figs = figures['ycsb-gc']!(rows);
  const lat = figs.find((f) => f.file === 'ycsb-gc-latency.svg');
  assert.ok(lat, figs.map((f) => f.file).join(' '));
  const values = [...lat.svg.matchAll(/<title>A, 8 MiB pools, (PUT p\d+): ([^<]+)<\/title>/g)].map((m) => `${m[1]} ${m[2]}`);
  // HDR reports a bucket's highest equivalent value at 3 significant digits: 1,099 -> 1,100, 10,989 -> 11k.
  // (Round 1 alone would give p50 ~600 µs, round 2 alone ~10.5k.)
  assert.deepEqual(values, ['PUT p50 1,100', 'PUT p99 11k']);
});
