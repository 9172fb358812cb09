// The plots of `npm run bench -- paper` (bench/paper.bench.ts): one per paper figure it regenerates,
// from the rows it tagged with their figure.
import type { Figure, Row } from '../report.js';
import { barChartSvg } from './svg.js';

type Rows = Row[];
const num = (r: Row | undefined, c: string): number | null => (r && typeof r[c] === 'number' && Number.isFinite(r[c]) ? (r[c] as number) : null);
const MODES = ['rowan', 'rwrite', 'share', 'batch', 'rpc'];

function fig8(rows: Rows): Figure[] {
  const micro = rows.filter((r) => r.figure === '8');
  if (!micro.length) return [];
  const sizes = [...new Set(micro.map((r) => r.bytes as number))].sort((a, b) => a - b);
  const cell = (model: string, mode: string, b: number) => micro.find((r) => r.model === model && r.mode === mode && r.bytes === b);
  const bars = sizes.flatMap((b) =>
    MODES.filter((m) => cell('on', m, b)).map((m) => ({
      label: `${m}, ${b} B (model DLWA ${num(cell('on', m, b), 'mediaDlwa') ?? '-'})`,
      values: [num(cell('off', m, b), 'writesPerSec'), num(cell('on', m, b), 'writesPerSec')].map((v) => (v === null ? null : v / 1e6)),
    })),
  );
  return [{
    file: 'paper-fig8.svg',
    svg: barChartSvg({
      title: 'Figure 8: 144 concurrent write streams into one receiver, writes/s without and with the Optane media model',
      notes: ['shm fabric, one sender thread, one write in flight per stream; media bandwidth scaled to 1.72 x Rowan\'s no-model request rate (paper §6.2: 6 GB/s media vs 3.49 GB/s of Rowan requests); label: DLWA the model counted'],
      value: { label: 'M writes/s', log: true },
      series: ['no model', 'Optane media model'],
      bars,
    }),
  }];
}

function fig11(rows: Rows): Figure[] {
  const on = rows.filter((r) => r.figure === '8' && r.model === 'on' && num(r, 'p50Us') !== null);
  if (!on.length) return [];
  return [{
    file: 'paper-fig11.svg',
    svg: barChartSvg({
      title: 'Figure 11 (microbenchmark stand-in): persist latency, issue to ack, with the Optane media model',
      notes: ['the paper measures remote persistence under YCSB A (Rowan 6.6 µs median, rwrite 11.5 µs); here the microbenchmark\'s 144-stream cells, every 4th write sampled'],
      value: { label: 'µs', log: true },
      series: ['p50', 'p99'],
      bars: on.map((r) => ({ label: `${r.mode}, ${r.bytes} B`, values: [num(r, 'p50Us'), num(r, 'p99Us')] })),
    }),
  }];
}

function fig9(rows: Rows): Figure[] {
  const y = rows.filter((r) => r.figure === '9' && typeof r.opsPerSec === 'number');
  if (!y.length) return [];
  const label = (r: Row) => `${r.workload}, ${r.keys}, ${r.size}`;
  const cells = [...new Set(y.map(label))];
  const modes = MODES.filter((m) => y.some((r) => r.mode === m));
  const value = (l: string, m: string, c: string) => num(y.find((r) => label(r) === l && r.mode === m), c);
  return [
    {
      file: 'paper-fig9.svg',
      svg: barChartSvg({
        title: 'Figure 9 / Table 2: YCSB ops/s per replication mode, every node on the Optane media model',
        notes: ['3 nodes x 1 worker on 2 cores, closed loop of 64 requests; media bandwidth per DIMM scaled to 1.72 x Rowan-KV\'s request bandwidth per node'],
        value: { label: 'ops/s' },
        series: modes,
        bars: cells.map((l) => ({ label: l, values: modes.map((m) => value(l, m, 'opsPerSec')) })),
      }),
    },
    {
      file: 'paper-fig9-put-latency.svg',
      svg: barChartSvg({
        title: 'Figure 9: YCSB median PUT latency per replication mode, Optane media model on',
        value: { label: 'median PUT latency, µs' },
        series: modes,
        bars: cells.filter((l) => !l.startsWith('C')).map((l) => ({ label: l, values: modes.map((m) => value(l, m, 'putP50us')) })),
      }),
    },
    {
      file: 'paper-fig10.svg',
      svg: barChartSvg({
        title: 'Figure 10: DLWA per replication mode under YCSB, from the nodes\' media models (whole run, load included)',
        value: { label: 'DLWA (media bytes / request bytes)', min: 0 },
        valueDigits: 4,
        series: ['DLWA'],
        bars: modes.map((m) => ({ label: m, values: [num(y.find((r) => r.mode === m), 'mediaDlwa')] })),
      }),
    },
  ];
}

export function paperFigures(rows: Rows, dlwaFigure: (rows: Rows) => Figure[]): Figure[] {
  const fig2 = dlwaFigure(rows.filter((r) => r.figure === '2')).map((f) => ({ file: 'paper-fig2.svg', svg: f.svg.replace('modelled DLWA against', 'Figure 2: modelled DLWA against') }));
  return [...fig2, ...fig8(rows), ...fig11(rows), ...fig9(rows)];
}
