// A small self-contained SVG writer for the benchmark plots (no plotting dependency, no canvas):
//   - lineChartSvg: one or more panels side by side, each with both axes ticked and labelled (linear or
//     log; the panels share the value axis unless one has its own), one polyline with point markers per
//     series, a legend naming every series;
//   - barChartSvg: horizontal bars, one row per label (wrapped over lines when long), several series
//     as grouped bars with a legend, a value axis with ticks and grid lines (linear or log).
// Both refuse what would make an unreadable picture: duplicate bar labels or series names throw.
import { fmtNum, scaleOf, type AxisSpec } from './axis.js';

export const palette = ['#3b6ea8', '#d9822b', '#5a9e4b', '#a8453b', '#7b5ea7', '#8c6d31', '#d16ba5', '#4b9fa8', '#777777', '#b5a000'];
/** Dash patterns combined with the colours once there are more series than colours. */
const dashes = ['', '6 3', '2 3', '8 3 2 3'];

export function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** Words of `s` in lines of at most `width` characters (a longer word gets a line of its own). */
export function wrapWords(s: string, width: number): string[] {
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

function assertUnique(what: string, names: string[]): void {
  const seen = new Set<string>();
  for (const n of names) {
    if (seen.has(n)) throw new Error(`plot: ${what} "${n}" appears twice; each must identify one thing`);
    seen.add(n);
  }
}

/** Title (wrapped) and notes (smaller, wrapped) at the top; returns the SVG and the height used. */
function header(title: string, notes: string[], width: number): { svg: string[]; height: number } {
  const out: string[] = [];
  let y = 22;
  for (const t of wrapWords(title, Math.floor((width - 20) / 9.3))) {
    out.push(`<text x="10" y="${y}" font-size="15" font-weight="bold">${esc(t)}</text>`);
    y += 19;
  }
  for (const n of notes)
    for (const t of wrapWords(n, Math.floor((width - 20) / 6.3))) {
      out.push(`<text x="10" y="${y - 2}" font-size="11" fill="#444">${esc(t)}</text>`);
      y += 14;
    }
  return { svg: out, height: y };
}

function svgDoc(width: number, height: number, body: string[]): string {
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${Math.ceil(height)}" viewBox="0 0 ${width} ${Math.ceil(height)}" font-family="sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    ...body,
    `</svg>`,
    '',
  ].join('\n');
}

/** Legend entries in columns across `width`, starting at y; returns the SVG and the height used. */
function legend(names: string[], x0: number, y: number, width: number, swatch: (i: number, x: number, y: number) => string): { svg: string[]; height: number } {
  const colW = Math.min(width, Math.max(140, 40 + 7 * Math.max(...names.map((n) => n.length))));
  const perRow = Math.max(1, Math.floor(width / colW));
  const out = names.map((n, i) => {
    const x = x0 + (i % perRow) * colW;
    const yy = y + Math.floor(i / perRow) * 18;
    return `${swatch(i, x, yy)}<text x="${x + 26}" y="${yy + 10}">${esc(n)}</text>`;
  });
  return { svg: out, height: Math.ceil(names.length / perRow) * 18 };
}

export interface Series {
  name: string;
  points: Array<[number, number]>;
  /**
   * Its colour and dash pattern, when the figure pairs series (a colour per system, a dash per test);
   * otherwise they follow the series' order in the legend.
   */
  style?: { color: string; dash?: string };
}

export interface LinePanel {
  /** Panel heading when a figure has several panels ("64 B writes"). */
  title?: string;
  series: Series[];
  /** Its own value axis (a figure whose panels plot different quantities); the chart's y otherwise. */
  y?: AxisSpec;
}

export interface LineChart {
  title: string;
  notes?: string[];
  x: AxisSpec;
  y: AxisSpec;
  panels: LinePanel[];
}

const PW = 520; // panel width
const PH = 330; // panel height
const PL = 72; // panel's left margin (y tick labels and axis title)
const PB = 46; // panel's bottom margin (x tick labels and axis title)
const PT = 24; // panel's top margin (panel heading)

export function lineChartSvg(c: LineChart): string {
  const names = [...new Set(c.panels.flatMap((p) => p.series.map((s) => s.name)))];
  for (const p of c.panels) assertUnique('series', p.series.map((s) => s.name));
  const finite = (ss: Series[]) => ss.flatMap((s) => s.points).filter(([x, y]) => Number.isFinite(x) && Number.isFinite(y));
  const pts = finite(c.panels.flatMap((p) => p.series));
  if (pts.length === 0) throw new Error(`plot "${c.title}": no points to draw`);
  const xs = scaleOf(pts.map((p) => p[0]), c.x);
  // Panels without an axis of their own share one scale over all of them, so they compare by eye.
  const shared = scaleOf(finite(c.panels.filter((p) => !p.y).flatMap((p) => p.series)).map((p) => p[1]), c.y);
  const width = c.panels.length * (PW + 10) + 20;
  const head = header(c.title, c.notes ?? [], width);
  const body = [...head.svg];
  const given = new Map(c.panels.flatMap((p) => p.series.filter((s) => s.style).map((s) => [s.name, s.style!] as const)));
  const style = (name: string) => {
    const s = given.get(name);
    if (s) return { color: s.color, dash: s.dash ?? '' };
    const i = names.indexOf(name);
    return { color: palette[i % palette.length]!, dash: dashes[Math.floor(i / palette.length) % dashes.length]! };
  };
  const top = head.height + 4;
  c.panels.forEach((p, pi) => {
    const ox = 10 + pi * (PW + 10);
    const x0 = ox + PL;
    const x1 = ox + PW - 10;
    const y0 = top + PT;
    const y1 = top + PH - PB;
    const yAxis = p.y ?? c.y;
    const ys = p.y ? scaleOf(finite(p.series).map((q) => q[1]), p.y) : shared;
    const X = (v: number) => x0 + xs.at(v) * (x1 - x0);
    const Y = (v: number) => y1 - ys.at(v) * (y1 - y0);
    if (p.title) body.push(`<text x="${(x0 + x1) / 2}" y="${top + 14}" text-anchor="middle" font-weight="bold">${esc(p.title)}</text>`);
    for (const t of ys.ticks) {
      body.push(`<line x1="${x0}" y1="${Y(t).toFixed(1)}" x2="${x1}" y2="${Y(t).toFixed(1)}" stroke="#e4e4e4"/>`);
      body.push(`<line x1="${x0 - 4}" y1="${Y(t).toFixed(1)}" x2="${x0}" y2="${Y(t).toFixed(1)}" stroke="#333"/>`);
      body.push(`<text x="${x0 - 7}" y="${(Y(t) + 4).toFixed(1)}" text-anchor="end" class="tick">${esc(fmtNum(t))}</text>`);
    }
    for (const t of xs.ticks) {
      body.push(`<line x1="${X(t).toFixed(1)}" y1="${y1}" x2="${X(t).toFixed(1)}" y2="${y1 + 4}" stroke="#333"/>`);
      body.push(`<text x="${X(t).toFixed(1)}" y="${y1 + 17}" text-anchor="middle" class="tick">${esc(fmtNum(t))}</text>`);
    }
    body.push(`<polyline fill="none" stroke="#333" points="${x0},${y0} ${x0},${y1} ${x1},${y1}"/>`);
    body.push(`<text x="${(x0 + x1) / 2}" y="${y1 + 36}" text-anchor="middle">${esc(c.x.label)}${c.x.log ? ' (log scale)' : ''}</text>`);
    const ym = (y0 + y1) / 2;
    body.push(`<text x="${ox + 14}" y="${ym}" text-anchor="middle" transform="rotate(-90 ${ox + 14} ${ym})">${esc(yAxis.label)}${yAxis.log ? ' (log scale)' : ''}</text>`);
    for (const s of p.series) {
      const { color, dash } = style(s.name);
      const ok = s.points.filter(([x, y]) => Number.isFinite(x) && Number.isFinite(y) && (!c.x.log || x > 0) && (!yAxis.log || y > 0)).sort((a, b) => a[0] - b[0]);
      if (ok.length > 1)
        body.push(`<polyline class="series" fill="none" stroke="${color}" stroke-width="2"${dash ? ` stroke-dasharray="${dash}"` : ''} points="${ok.map(([x, y]) => `${X(x).toFixed(1)},${Y(y).toFixed(1)}`).join(' ')}"><title>${esc(s.name)}</title></polyline>`);
      for (const [x, y] of ok) body.push(`<circle cx="${X(x).toFixed(1)}" cy="${Y(y).toFixed(1)}" r="3" fill="${color}"><title>${esc(`${s.name}: ${fmtNum(x)}, ${fmtNum(y)}`)}</title></circle>`);
    }
  });
  const lg = legend(names, 20, top + PH + 4, width - 30, (i, x, y) => {
    const { color, dash } = style(names[i]!);
    return `<line x1="${x}" y1="${y + 6}" x2="${x + 20}" y2="${y + 6}" stroke="${color}" stroke-width="2"${dash ? ` stroke-dasharray="${dash}"` : ''}/><circle cx="${x + 10}" cy="${y + 6}" r="3" fill="${color}"/>`;
  });
  body.push(...lg.svg);
  return svgDoc(width, top + PH + 8 + lg.height, body);
}

export interface Bar {
  label: string;
  /** One value per series (null: no bar). */
  values: Array<number | null>;
}

export interface BarChart {
  title: string;
  notes?: string[];
  /** The value axis, with its unit. */
  value: AxisSpec;
  /** Series names, one per value of each bar (one series: no legend). */
  series: string[];
  bars: Bar[];
  /** Significant digits of the value printed at each bar (default: fmtNum's 3); DLWA near 1 needs 5. */
  valueDigits?: number;
}

const LABEL_W = 300; // label column
const LABEL_CHARS = 46; // characters per label line at 12 px
const PLOT_W = 540;
const BAR_H = 14;

export function barChartSvg(c: BarChart): string {
  assertUnique('bar label', c.bars.map((b) => b.label));
  assertUnique('series', c.series);
  for (const b of c.bars) if (b.values.length !== c.series.length) throw new Error(`plot "${c.title}": bar "${b.label}" has ${b.values.length} values for ${c.series.length} series`);
  const vals = c.bars.flatMap((b) => b.values).filter((v): v is number => v !== null && Number.isFinite(v) && (!c.value.log || v > 0));
  if (vals.length === 0) throw new Error(`plot "${c.title}": no values to draw`);
  const sc = scaleOf(vals, c.value);
  const width = LABEL_W + PLOT_W + 90;
  const head = header(c.title, c.notes ?? [], width);
  const body = [...head.svg];
  let y = head.height + 2;
  if (c.series.length > 1) {
    const lg = legend(c.series, LABEL_W, y, PLOT_W, (i, x, yy) => `<rect x="${x + 4}" y="${yy}" width="14" height="12" fill="${palette[i % palette.length]}"/>`);
    body.push(...lg.svg);
    y += lg.height + 4;
  }
  const x0 = LABEL_W;
  const x1 = LABEL_W + PLOT_W;
  const X = (v: number) => x0 + Math.max(0, sc.at(v)) * (x1 - x0);
  const plotTop = y;
  const rows: string[] = [];
  for (const b of c.bars) {
    const lines = wrapWords(b.label, LABEL_CHARS);
    const rowH = Math.max(lines.length * 14, c.series.length * BAR_H) + 8;
    const ly = y + rowH / 2 - (lines.length * 14) / 2 + 11;
    lines.forEach((l, i) => rows.push(`<text x="${x0 - 8}" y="${ly + i * 14}" text-anchor="end">${esc(l)}</text>`));
    const by = y + 4 + (rowH - 8 - c.series.length * BAR_H) / 2;
    b.values.forEach((v, si) => {
      const yy = by + si * BAR_H;
      if (v === null || !Number.isFinite(v) || (c.value.log && v <= 0)) {
        rows.push(`<text x="${x0 + 4}" y="${yy + BAR_H - 3}" fill="#888" font-size="11">no data</text>`);
        return;
      }
      const w = Math.max(1, X(v) - x0);
      rows.push(`<rect x="${x0}" y="${yy}" width="${w.toFixed(1)}" height="${BAR_H - 2}" fill="${palette[si % palette.length]}"><title>${esc(`${b.label}, ${c.series[si]}: ${fmtNum(v)}`)}</title></rect>`);
      const shown = c.valueDigits ? Number(v.toPrecision(c.valueDigits)).toString() : fmtNum(v);
      rows.push(`<text x="${(x0 + w + 4).toFixed(1)}" y="${yy + BAR_H - 4}" font-size="11">${esc(shown)}</text>`);
    });
    y += rowH;
  }
  const plotBottom = y;
  for (const t of sc.ticks) {
    const tx = X(t).toFixed(1);
    body.push(`<line x1="${tx}" y1="${plotTop}" x2="${tx}" y2="${plotBottom}" stroke="#e4e4e4"/>`);
    body.push(`<line x1="${tx}" y1="${plotBottom}" x2="${tx}" y2="${plotBottom + 4}" stroke="#333"/>`);
    body.push(`<text x="${tx}" y="${plotBottom + 17}" text-anchor="middle" class="tick">${esc(fmtNum(t))}</text>`);
  }
  body.push(...rows);
  body.push(`<polyline fill="none" stroke="#333" points="${x0},${plotTop} ${x0},${plotBottom} ${x1},${plotBottom}"/>`);
  body.push(`<text x="${(x0 + x1) / 2}" y="${plotBottom + 36}" text-anchor="middle">${esc(c.value.label)}${c.value.log ? ' (log scale)' : ''}</text>`);
  return svgDoc(width, plotBottom + 48, body);
}

/** `svg` with one more line of small grey text at the bottom (what run produced the plot). */
export function withFooter(svg: string, text: string): string {
  const m = /^<svg [^>]*width="(\d+)" height="(\d+)" viewBox="0 0 \d+ \d+"/.exec(svg);
  if (!m) throw new Error('withFooter: not an SVG of this writer');
  const w = Number(m[1]);
  const h = Number(m[2]);
  const lines = wrapWords(text, Math.floor((w - 20) / 6));
  const h2 = h + lines.length * 14 + 4;
  const foot = lines.map((l, i) => `<text x="10" y="${h + 12 + i * 14}" font-size="10" fill="#777">${esc(l)}</text>`).join('\n');
  return svg
    .replace(`width="${w}" height="${h}" viewBox="0 0 ${w} ${h}"`, `width="${w}" height="${h2}" viewBox="0 0 ${w} ${h2}"`)
    .replace(/<\/svg>\n?$/, `${foot}\n</svg>\n`);
}
