// The failover timeline plot (Figure 14): throughput per 2 ms bucket around the kill, one faint line
// per run and the median run bold, with the median marks for failure detected, configuration
// committed and promotion finished.
import { fmtNum, linearTicks } from '../plot/axis.js';

export interface Run {
  /** Completed operations per bucket, bucket 0 starting KILL_AT_MS before the kill. */
  buckets: number[];
  marks: Record<string, number>;
}

const W = 900;
const H = 380;
const L = 70;
const R = 20;
const T = 50;
const B = 50;

export function timelineSvg(title: string, runs: Run[], bucketMs: number, killAtMs: number, median: Run, markP50: Record<string, number>): string {
  const n = Math.max(...runs.map((r) => r.buckets.length));
  const spanMs = n * bucketMs;
  const perSec = (ops: number) => (ops * 1000) / bucketMs;
  // Round ticks (0, 10k, 20k, ...) up to the first one above the highest bucket.
  const yt = linearTicks(0, Math.max(1, ...runs.flatMap((r) => r.buckets.map(perSec))));
  const ymax = yt.hi;
  const x = (ms: number) => L + (ms / spanMs) * (W - L - R);
  const y = (v: number) => H - B - (v / ymax) * (H - T - B);
  const line = (r: Run, style: string) =>
    `<polyline fill="none" ${style} points="${r.buckets.map((b, i) => `${x(i * bucketMs).toFixed(1)},${y(perSec(b)).toFixed(1)}`).join(' ')}"/>`;
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${L}" y="18" font-size="14" font-weight="bold">${title.replace(/&/g, '&amp;').replace(/</g, '&lt;')}</text>`,
    `<line x1="${L}" y1="${H - B}" x2="${W - R}" y2="${H - B}" stroke="#333"/>`,
    `<line x1="${L}" y1="${T}" x2="${L}" y2="${H - B}" stroke="#333"/>`,
  ];
  for (const v of yt.ticks) {
    parts.push(`<text x="${L - 6}" y="${y(v) + 4}" text-anchor="end" fill="#555">${fmtNum(v)}</text>`);
    parts.push(`<line x1="${L}" y1="${y(v)}" x2="${W - R}" y2="${y(v)}" stroke="#eee"/>`);
  }
  const step = spanMs > 600 ? 100 : 50;
  for (let ms = 0; ms <= spanMs; ms += step) parts.push(`<line x1="${x(ms)}" y1="${H - B}" x2="${x(ms)}" y2="${H - B + 4}" stroke="#333"/><text x="${x(ms)}" y="${H - B + 16}" text-anchor="middle" fill="#555">${ms}</text>`);
  parts.push(`<text x="${(L + W - R) / 2}" y="${H - 12}" text-anchor="middle" fill="#333">time (ms), ${bucketMs} ms buckets; node SIGKILLed at ${killAtMs} ms</text>`);
  parts.push(`<text x="16" y="${(T + H - B) / 2}" transform="rotate(-90 16 ${(T + H - B) / 2})" text-anchor="middle" fill="#333">ops/s</text>`);
  for (const r of runs) if (r !== median) parts.push(line(r, 'stroke="#9bb" stroke-width="0.6" opacity="0.5"'));
  parts.push(line(median, 'stroke="#06c" stroke-width="1.6"'));
  const colors: Record<string, string> = { kill: '#000', detected: '#c60', committed: '#c00', promoted: '#080', served: '#808' };
  let row = 0;
  for (const [name, at] of Object.entries({ kill: 0, ...markP50 })) {
    const px = x(killAtMs + at);
    parts.push(`<line x1="${px}" y1="${T}" x2="${px}" y2="${H - B}" stroke="${colors[name] ?? '#555'}" stroke-dasharray="4 3"/>`);
    // Near the right edge the label goes left of its line, so it is not cut off.
    const left = px > W - R - 160;
    parts.push(`<text x="${left ? px - 3 : px + 3}" y="${T + 12 + 14 * row++}"${left ? ' text-anchor="end"' : ''} fill="${colors[name] ?? '#555'}">${name}${name === 'kill' ? '' : ` +${at.toFixed(0)} ms (p50)`}</text>`);
  }
  // Legend: which line is what.
  const lx = W - R - 300;
  parts.push(`<line x1="${lx}" y1="${T - 14}" x2="${lx + 20}" y2="${T - 14}" stroke="#9bb" stroke-width="1.2"/><text x="${lx + 24}" y="${T - 10}" fill="#333">each run (${runs.length})</text>`);
  parts.push(`<line x1="${lx + 110}" y1="${T - 14}" x2="${lx + 130}" y2="${T - 14}" stroke="#06c" stroke-width="1.6"/><text x="${lx + 134}" y="${T - 10}" fill="#333">median run (time to served)</text>`);
  parts.push('</svg>');
  return parts.join('\n');
}

/** What failover.bench.ts leaves in bench/results/failover-runs.json (enough to redraw the timeline). */
export interface RunsFile {
  bucketMs: number;
  killAtMs: number;
  leaseMs: number;
  runs: Run[];
}

const MARKS = ['detected', 'committed', 'promoted', 'served'] as const;

function median(xs: number[]): number {
  const s = xs.filter(Number.isFinite).sort((a, b) => a - b);
  return s.length ? s[Math.floor(s.length / 2)]! : NaN;
}

/** The Figure 14 plot of a set of runs: the median run by time to served drawn bold, median marks. */
export function timelineOf(f: RunsFile): string {
  const byServed = [...f.runs].sort((a, b) => (a.marks['served'] ?? 0) - (b.marks['served'] ?? 0));
  const mid = byServed[Math.floor(byServed.length / 2)]!;
  const marks: Record<string, number> = {};
  for (const m of MARKS) {
    const v = median(f.runs.map((r) => r.marks[m] ?? NaN));
    if (Number.isFinite(v)) marks[m] = v;
  }
  return timelineSvg(`Failover under YCSB A (ZippyDB), ${f.runs.length} kills measured, lease ${f.leaseMs} ms: throughput per ${f.bucketMs} ms`, f.runs, f.bucketMs, f.killAtMs, mid, marks);
}
