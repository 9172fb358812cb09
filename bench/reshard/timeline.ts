// The resharding timeline plot (Figure 15): throughput per bucket over the run, with vertical marks
// for the hotspot, the overload detected, the move started and finished. Self-contained SVG.
const W = 960;
const H = 400;
const L = 80;
const R = 30;
const T = 50;
const B = 60;

export interface Mark {
  label: string;
  atMs: number;
  color: string;
}

function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#8c564b'];

/** Throughput over time (top) and, when given, each node's load as the manager saw it (bottom). */
export function reshardTimelineSvg(title: string, bucketMs: number, buckets: number[], marks: Mark[], loads: { atMs: number; loads: Record<string, number> }[] = []): string {
  const top = throughputPanel(title, bucketMs, buckets, marks);
  if (loads.length === 0) return top;
  const spanMs = buckets.length * bucketMs;
  const nodes = [...new Set(loads.flatMap((l) => Object.keys(l.loads)))].sort();
  const lmax = Math.max(1, ...loads.flatMap((l) => Object.values(l.loads)));
  const step = [100, 200, 500, 1000, 2000, 5000, 10_000, 20_000, 50_000].find((s) => lmax / s <= 5) ?? 100_000;
  const ymax = Math.ceil(lmax / step) * step;
  const x = (ms: number) => L + (ms / spanMs) * (W - L - R);
  const y = (v: number) => 2 * H - B - (v / ymax) * (H - T - B);
  const parts = [`<text x="${L}" y="${H + 22}" font-size="14">Load per node as the configuration manager saw it (requests/s as primary + 0.5 x replicated writes as backup)</text>`];
  for (let v = 0; v <= ymax; v += step) {
    parts.push(`<line x1="${L}" y1="${y(v)}" x2="${W - R}" y2="${y(v)}" stroke="#eee"/>`, `<text x="${L - 6}" y="${y(v) + 4}" text-anchor="end" fill="#555">${v >= 1000 ? `${v / 1000}k` : v}</text>`);
  }
  for (let ms = 0; ms <= spanMs; ms += 1000) parts.push(`<text x="${x(ms)}" y="${2 * H - B + 18}" text-anchor="middle" fill="#555">${ms / 1000}</text>`);
  parts.push(`<line x1="${L}" y1="${2 * H - B}" x2="${W - R}" y2="${2 * H - B}" stroke="#333"/>`, `<line x1="${L}" y1="${H + T}" x2="${L}" y2="${2 * H - B}" stroke="#333"/>`);
  parts.push(`<text x="${(L + W - R) / 2}" y="${2 * H - 18}" text-anchor="middle" fill="#333">time (s); sampled every ~250 ms (each value covers the nodes' last 500 ms report)</text>`);
  nodes.forEach((n, i) => {
    const pts = loads.filter((l) => l.loads[n] !== undefined).map((l) => `${x(l.atMs).toFixed(1)},${y(l.loads[n]!).toFixed(1)}`).join(' ');
    parts.push(`<polyline fill="none" stroke="${COLORS[i % COLORS.length]}" stroke-width="2" points="${pts}"/>`);
    parts.push(`<text x="${W - R - 80}" y="${H + T + 14 * i}" fill="${COLORS[i % COLORS.length]}">node ${n}</text>`);
  });
  for (const m of marks) parts.push(`<line x1="${x(m.atMs)}" y1="${H + T}" x2="${x(m.atMs)}" y2="${2 * H - B}" stroke="${m.color}" stroke-dasharray="4 3"/>`);
  return top.split(`height="${H}"`).join(`height="${2 * H}"`).replace('</svg>', parts.join('\n') + '\n</svg>');
}

function throughputPanel(title: string, bucketMs: number, buckets: number[], marks: Mark[]): string {
  const spanMs = buckets.length * bucketMs;
  const perSec = (n: number) => (n * 1000) / bucketMs;
  const top = Math.max(1, ...buckets.map(perSec));
  const stepK = [1, 2, 5, 10, 20, 50, 100].find((s) => (top / 1000) / s <= 6) ?? 100;
  const ymax = Math.ceil(top / 1000 / stepK) * stepK * 1000;
  const x = (ms: number) => L + (ms / spanMs) * (W - L - R);
  const y = (v: number) => H - B - (v / ymax) * (H - T - B);
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${L}" y="22" font-size="14">${esc(title)}</text>`,
  ];
  for (let v = 0; v <= ymax; v += stepK * 1000) {
    parts.push(`<line x1="${L}" y1="${y(v)}" x2="${W - R}" y2="${y(v)}" stroke="#eee"/>`);
    parts.push(`<text x="${L - 6}" y="${y(v) + 4}" text-anchor="end" fill="#555">${v / 1000}k</text>`);
  }
  for (let ms = 0; ms <= spanMs; ms += 1000) {
    parts.push(`<line x1="${x(ms)}" y1="${H - B}" x2="${x(ms)}" y2="${H - B + 5}" stroke="#333"/>`);
    parts.push(`<text x="${x(ms)}" y="${H - B + 18}" text-anchor="middle" fill="#555">${ms / 1000}</text>`);
  }
  parts.push(`<line x1="${L}" y1="${H - B}" x2="${W - R}" y2="${H - B}" stroke="#333"/>`, `<line x1="${L}" y1="${T}" x2="${L}" y2="${H - B}" stroke="#333"/>`);
  parts.push(`<text x="${(L + W - R) / 2}" y="${H - 18}" text-anchor="middle" fill="#333">time (s); throughput per ${bucketMs} ms bucket</text>`);
  parts.push(`<text x="18" y="${(T + H - B) / 2}" text-anchor="middle" fill="#333" transform="rotate(-90 18 ${(T + H - B) / 2})">operations/s (all nodes)</text>`);
  parts.push(`<polyline fill="none" stroke="#1f77b4" stroke-width="2" points="${buckets.map((b, i) => `${x((i + 0.5) * bucketMs).toFixed(1)},${y(perSec(b)).toFixed(1)}`).join(' ')}"/>`);
  marks.forEach((m, i) => {
    parts.push(`<line x1="${x(m.atMs)}" y1="${T}" x2="${x(m.atMs)}" y2="${H - B}" stroke="${m.color}" stroke-dasharray="4 3"/>`);
    parts.push(`<text x="${x(m.atMs) + 4}" y="${T + 12 + 14 * i}" fill="${m.color}">${esc(`${m.label} (${(m.atMs / 1000).toFixed(2)} s)`)}</text>`);
  });
  parts.push('</svg>');
  return parts.join('\n') + '\n';
}
