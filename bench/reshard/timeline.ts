// The resharding timeline plot (Figure 15): throughput per bucket over the run, with vertical marks
// for the hotspot, the overload detected, the move started and finished; below it each node's load as
// the manager saw it and the CPU each process ran. Self-contained SVG.
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

/** Per-node CPU samples (cores) and the quota each node ran under, for the bottom panel. */
export interface CpuPanel {
  cpu: { atMs: number; nodes: Record<string, number | null>; client: number; rest: number | null; linkMbit?: Record<string, number | null> }[];
  /** Each node's quota in cores (a dashed line), or null: none. */
  quota: number | null;
  /** Each node's link limit in Mbit/s (a panel of what each sent, the limit dashed), or null: loopback. */
  linkMbit?: number | null;
}

/** Throughput over time (top) and, when given, each node's load as the manager saw it (middle) and
 *  the cores each node process and the client ran (bottom). */
export function reshardTimelineSvg(title: string, bucketMs: number, buckets: number[], marks: Mark[], loads: { atMs: number; loads: Record<string, number> }[] = [], cpu?: CpuPanel): string {
  const top = throughputPanel(title, bucketMs, buckets, marks);
  const spanMs = buckets.length * bucketMs;
  const panels: string[] = [];
  if (loads.length > 0) {
    const nodes = [...new Set(loads.flatMap((l) => Object.keys(l.loads)))].sort();
    panels.push(linePanel(panels.length + 1, spanMs, marks, {
      heading: 'Load per node as the configuration manager saw it (requests/s as primary + 0.5 x replicated writes as backup)',
      axis: 'time (s); sampled every ~250 ms (each value covers the nodes\' last 500 ms report)',
      unit: (v) => (v >= 1000 ? `${v / 1000}k` : String(v)),
      steps: [100, 200, 500, 1000, 2000, 5000, 10_000, 20_000, 50_000, 100_000],
      lines: nodes.map((n, i) => ({ label: `node ${n}`, color: COLORS[i % COLORS.length]!, points: loads.filter((l) => l.loads[n] !== undefined).map((l) => [l.atMs, l.loads[n]!] as const) })),
    }));
  }
  if (cpu && cpu.cpu.length > 0) {
    const nodes = [...new Set(cpu.cpu.flatMap((c) => Object.keys(c.nodes)))].sort();
    panels.push(linePanel(panels.length + 1, spanMs, marks, {
      heading: `CPU per process, all threads (cores)${cpu.quota !== null ? `; dashed: each node's quota, ${cpu.quota} CPU` : ''}`,
      axis: 'time (s); per 250 ms: /proc/PID/task/*/schedstat (nodes), process.cpuUsage (client), /proc/stat minus both (rest)',
      unit: (v) => String(+v.toFixed(2)),
      steps: [0.1, 0.2, 0.25, 0.5, 1],
      floor: cpu.quota ?? 0,
      level: cpu.quota,
      lines: [
        ...nodes.map((n, i) => ({ label: `node ${n}`, color: COLORS[i % COLORS.length]!, points: cpu.cpu.filter((c) => c.nodes[n] != null).map((c) => [c.atMs, c.nodes[n]!] as const) })),
        { label: 'client', color: '#7f7f7f', points: cpu.cpu.map((c) => [c.atMs, c.client] as const) },
        { label: 'rest (noise)', color: '#bcbd22', points: cpu.cpu.filter((c) => c.rest !== null).map((c) => [c.atMs, c.rest!] as const) },
      ],
    }));
  }
  const limit = cpu?.linkMbit;
  if (cpu && limit != null) {
    const nodes = [...new Set(cpu.cpu.flatMap((c) => Object.keys(c.linkMbit ?? {})))].sort();
    panels.push(linePanel(panels.length + 1, spanMs, marks, {
      heading: `What each node sent on its link (Mbit/s); dashed: its limit, ${limit} Mbit/s`,
      axis: 'time (s); per 250 ms: the tx byte counter of each node\'s eth0 (its network namespace)',
      unit: (v) => String(+v.toFixed(1)),
      steps: [10, 20, 25, 50, 100, 200, 250, 500, 1000],
      floor: limit * 1.2, // the dashed limit below the legend
      level: limit,
      lines: nodes.map((n, i) => ({ label: `node ${n}`, color: COLORS[i % COLORS.length]!, points: cpu.cpu.filter((c) => c.linkMbit?.[n] != null).map((c) => [c.atMs, c.linkMbit![n]!] as const) })),
    }));
  }
  if (panels.length === 0) return top;
  const total = H * (panels.length + 1);
  return top.split(`height="${H}"`).join(`height="${total}"`).replace('</svg>', panels.join('\n') + '\n</svg>');
}

interface LinePanel {
  heading: string;
  axis: string;
  unit: (v: number) => string;
  steps: number[];
  /** The y axis reaches at least this. */
  floor?: number;
  /** A horizontal dashed reference line at this value. */
  level?: number | null;
  lines: { label: string; color: string; points: (readonly [number, number])[] }[];
}

/** Panel `k` (1, 2, ...) below the throughput panel: lines over time on the shared x axis. */
function linePanel(k: number, spanMs: number, marks: Mark[], p: LinePanel): string {
  const off = k * H;
  const vmax = Math.max(p.floor ?? 0, ...p.lines.flatMap((l) => l.points.map(([, v]) => v)), 1e-9);
  const step = p.steps.find((s) => vmax / s <= 5) ?? p.steps[p.steps.length - 1]! * 2;
  const ymax = Math.ceil(vmax / step) * step;
  const x = (ms: number) => L + (Math.max(0, Math.min(spanMs, ms)) / spanMs) * (W - L - R);
  const y = (v: number) => off + H - B - (v / ymax) * (H - T - B);
  const parts = [`<text x="${L}" y="${off + 22}" font-size="14">${esc(p.heading)}</text>`];
  for (let i = 0; i * step <= ymax + 1e-9; i++) {
    const v = i * step;
    parts.push(`<line x1="${L}" y1="${y(v)}" x2="${W - R}" y2="${y(v)}" stroke="#eee"/>`, `<text x="${L - 6}" y="${y(v) + 4}" text-anchor="end" fill="#555">${p.unit(v)}</text>`);
  }
  for (let ms = 0; ms <= spanMs; ms += 1000) parts.push(`<text x="${x(ms)}" y="${off + H - B + 18}" text-anchor="middle" fill="#555">${ms / 1000}</text>`);
  parts.push(`<line x1="${L}" y1="${off + H - B}" x2="${W - R}" y2="${off + H - B}" stroke="#333"/>`, `<line x1="${L}" y1="${off + T}" x2="${L}" y2="${off + H - B}" stroke="#333"/>`);
  parts.push(`<text x="${(L + W - R) / 2}" y="${off + H - 18}" text-anchor="middle" fill="#333">${esc(p.axis)}</text>`);
  if (p.level != null) parts.push(`<line x1="${L}" y1="${y(p.level)}" x2="${W - R}" y2="${y(p.level)}" stroke="#000" stroke-dasharray="6 4"/>`);
  p.lines.forEach((l, i) => {
    const pts = l.points.filter(([ms]) => ms >= 0 && ms <= spanMs).map(([ms, v]) => `${x(ms).toFixed(1)},${y(v).toFixed(1)}`).join(' ');
    parts.push(`<polyline fill="none" stroke="${l.color}" stroke-width="2" points="${pts}"/>`);
    parts.push(`<text x="${W - R - 80}" y="${off + T + 14 * i}" fill="${l.color}">${esc(l.label)}</text>`);
  });
  for (const m of marks) parts.push(`<line x1="${x(m.atMs)}" y1="${off + T}" x2="${x(m.atMs)}" y2="${off + H - B}" stroke="${m.color}" stroke-dasharray="4 3"/>`);
  return parts.join('\n');
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
