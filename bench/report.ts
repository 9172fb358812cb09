// Benchmark reporting: every benchmark prints a table, writes machine-readable JSON and a plot
// (SVG, so no plotting dependency and no native canvas). Results land in bench/results/.
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';

export type Row = Record<string, string | number | boolean | null>;

export const resultsDir = new URL('../../bench/results/', import.meta.url).pathname;

export function machine(): Record<string, string | number> {
  return {
    date: new Date().toISOString(),
    node: process.version,
    cpu: cpus()[0]?.model ?? 'unknown',
    cores: cpus().length,
    memGiB: Math.round(totalmem() / 2 ** 30),
  };
}

function fmt(v: Row[string]): string {
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) return String(v);
    if (Number.isInteger(v)) return v.toLocaleString('en-US');
    return Math.abs(v) >= 100 ? Math.round(v).toLocaleString('en-US') : v.toFixed(3);
  }
  return v === null ? '-' : String(v);
}

/** An aligned text table; numbers right-aligned with thousands separators. */
export function formatTable(rows: Row[], columns?: string[]): string {
  if (rows.length === 0) return '(no rows)';
  const cols = columns ?? Object.keys(rows[0]!);
  const cells = rows.map((r) => cols.map((c) => fmt(r[c] ?? null)));
  const width = cols.map((c, i) => Math.max(c.length, ...cells.map((row) => row[i]!.length)));
  const numeric = cols.map((c) => rows.every((r) => typeof r[c] === 'number' || r[c] == null));
  const line = (vals: string[]) =>
    vals.map((v, i) => (numeric[i] ? v.padStart(width[i]!) : v.padEnd(width[i]!))).join('  ');
  return [line(cols), width.map((w) => '-'.repeat(w)).join('  '), ...cells.map(line)].join('\n');
}

export interface PlotSpec {
  /** Builds the bar's label from a row. */
  label: (r: Row) => string;
  /** The numeric column(s) plotted; several columns give grouped bars with a legend. */
  value: string | string[];
  unit: string;
  /** Log scale for values that span orders of magnitude (persist costs per mode, say). */
  log?: boolean;
}

const palette = ['#3b6ea8', '#d9822b', '#5a9e4b', '#a8453b'];

/** A horizontal bar chart as SVG; one bar per row and plotted column. */
/** Words of `s` in lines of at most `width` characters (a longer word gets a line of its own). */
function wrapWords(s: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const w of s.split(' ')) {
    if (line && line.length + 1 + w.length > width) {
      lines.push(line);
      line = w;
    } else line = line ? `${line} ${w}` : w;
  }
  if (line) lines.push(line);
  return lines;
}

export function barChartSvg(title: string, rows: Row[], spec: PlotSpec): string {
  const series = Array.isArray(spec.value) ? spec.value : [spec.value];
  const data = rows.flatMap((r) =>
    series
      .map((col, si) => ({ label: series.length > 1 ? `${spec.label(r)} ${col}` : spec.label(r), v: Number(r[col]), si }))
      .filter((d) => Number.isFinite(d.v) && d.v > 0),
  );
  const barH = 16;
  const gap = 5;
  const left = 320;
  const plotW = 520;
  // A long title wraps (at ~8.5 px per bold 15 px character) instead of running off the picture.
  const titleLines = wrapWords(title, Math.floor((left + plotW + 120) / 8.5));
  const shift = (titleLines.length - 1) * 18;
  const top = 40 + shift + (series.length > 1 ? 18 : 0);
  const h = top + data.length * (barH + gap) + 30;
  const max = Math.max(...data.map((d) => d.v), 1);
  const scale = (v: number) =>
    spec.log ? (Math.log10(v + 1) / Math.log10(max + 1)) * plotW : (v / max) * plotW;
  const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;');
  const legend =
    series.length > 1
      ? series
          .map((c, i) => `<rect x="${10 + i * 160}" y="${32 + shift}" width="12" height="12" fill="${palette[i % palette.length]}"/>` +
            `<text x="${26 + i * 160}" y="${43 + shift}">${esc(c)}</text>`)
          .join('')
      : '';
  const bars = data
    .map((d, i) => {
      const y = top + i * (barH + gap);
      const w = Math.max(1, scale(d.v));
      return (
        `<text x="${left - 8}" y="${y + barH - 4}" text-anchor="end">${esc(d.label)}</text>` +
        `<rect x="${left}" y="${y}" width="${w.toFixed(1)}" height="${barH}" fill="${palette[d.si % palette.length]}"/>` +
        `<text x="${left + w + 6}" y="${y + barH - 4}">${esc(fmt(d.v))}</text>`
      );
    })
    .join('\n');
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${left + plotW + 140}" height="${h}" font-family="sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    ...titleLines.map((t, i) => `<text x="10" y="${22 + i * 18}" font-size="15" font-weight="bold">${esc(t)}</text>`),
    legend,
    `<text x="${left}" y="${h - 8}" fill="#555">${esc(spec.unit)}${spec.log ? ' (log scale)' : ''}</text>`,
    bars,
    `</svg>`,
  ].join('\n');
}

/** Print the table and write <name>.json and <name>.svg under bench/results/. */
export function report(name: string, title: string, rows: Row[], spec: PlotSpec, columns?: string[]): void {
  mkdirSync(resultsDir, { recursive: true });
  console.log(`\n== ${title}\n${formatTable(rows, columns)}`);
  const json = join(resultsDir, `${name}.json`);
  writeFileSync(json, JSON.stringify({ name, title, machine: machine(), rows }, null, 2) + '\n');
  const svg = join(resultsDir, `${name}.svg`);
  writeFileSync(svg, barChartSvg(title, rows, spec));
  console.log(`results: ${json}\nplot:    ${svg}`);
}

/** One progress line on stderr, rewritten in place when stderr is a terminal. */
export function progress(label: string, done: number, total: number): void {
  const msg = `[${done}/${total}] ${label}`;
  if (process.stderr.isTTY) process.stderr.write(`\r${msg}\x1b[K${done === total ? '\n' : ''}`);
  else process.stderr.write(`${msg}\n`);
}
