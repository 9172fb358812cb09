// Axis scales and ticks for the benchmark plots: linear axes get "nice" ticks (1, 2, 5 x 10^k steps),
// log axes a tick per decade (with 2 and 5 between them when the data spans less than two decades),
// and a sweep axis may put its ticks exactly at the swept values (streams 1, 8, 36, 72, 144).

export interface AxisSpec {
  /** The axis title, with its unit: "DLWA (media bytes / request bytes)". */
  label: string;
  log?: boolean;
  /** Ticks at exactly these values (a sweep's points) instead of computed ones. */
  ticks?: number[];
  /** Linear axes start at 0 unless this says otherwise (a DLWA axis may start at 1). */
  min?: number;
  max?: number;
}

export interface Scale {
  /** Value -> 0..1 along the axis. */
  at(v: number): number;
  ticks: number[];
  lo: number;
  hi: number;
  log: boolean;
}

/** The smallest 1, 2 or 5 x 10^k not below x. */
function niceStep(x: number): number {
  const p = 10 ** Math.floor(Math.log10(x));
  for (const m of [1, 2, 5, 10]) if (m * p >= x * 0.999999) return m * p;
  return 10 * p;
}

export function linearTicks(lo: number, hi: number, count = 5): { lo: number; hi: number; ticks: number[] } {
  if (!(hi > lo)) hi = lo + (lo === 0 ? 1 : Math.abs(lo));
  const step = niceStep((hi - lo) / count);
  const a = Math.floor(lo / step + 1e-9) * step;
  const b = Math.ceil(hi / step - 1e-9) * step;
  const ticks: number[] = [];
  for (let t = a; t <= b + step * 1e-6; t += step) ticks.push(Number(t.toPrecision(12)));
  return { lo: a, hi: b, ticks };
}

export function logTicks(lo: number, hi: number): { lo: number; hi: number; ticks: number[] } {
  if (!(lo > 0)) throw new RangeError(`a log axis needs positive values (smallest ${lo})`);
  const d0 = Math.floor(Math.log10(lo) + 1e-9);
  let d1 = Math.ceil(Math.log10(hi) - 1e-9);
  if (d1 === d0) d1++;
  const ticks: number[] = [];
  const fine = d1 - d0 <= 2;
  for (let d = d0; d <= d1; d++) {
    for (const m of fine ? [1, 2, 5] : [1]) {
      const t = Number((m * 10 ** d).toPrecision(12));
      if (t <= 10 ** d1 * 1.000001) ticks.push(t);
    }
  }
  return { lo: 10 ** d0, hi: 10 ** d1, ticks };
}

/** A scale over the values `vs` as `spec` asks. */
export function scaleOf(vs: number[], spec: AxisSpec): Scale {
  const finite = vs.filter((v) => Number.isFinite(v) && (!spec.log || v > 0));
  const dataLo = finite.length ? Math.min(...finite) : spec.log ? 1 : 0;
  const dataHi = finite.length ? Math.max(...finite) : 1;
  if (spec.log) {
    const t = logTicks(spec.min ?? Math.min(dataLo, ...(spec.ticks ?? [])), spec.max ?? Math.max(dataHi, ...(spec.ticks ?? [])));
    const lo = spec.ticks ? Math.min(...spec.ticks, dataLo) : t.lo;
    const hi = spec.ticks ? Math.max(...spec.ticks, dataHi) : t.hi;
    const l0 = Math.log10(lo);
    const span = Math.log10(hi) - l0 || 1;
    return { at: (v) => (Math.log10(v) - l0) / span, ticks: spec.ticks ?? t.ticks, lo, hi, log: true };
  }
  const lo0 = spec.min ?? Math.min(0, dataLo);
  const hi0 = spec.max ?? dataHi;
  const t = spec.ticks ? { lo: Math.min(lo0, ...spec.ticks), hi: Math.max(hi0, ...spec.ticks), ticks: spec.ticks } : linearTicks(lo0, hi0);
  const span = t.hi - t.lo || 1;
  return { at: (v) => (v - t.lo) / span, ticks: t.ticks, lo: t.lo, hi: t.hi, log: false };
}

/** A tick or value label: 1,500 / 25k / 1.2M / 0.05. */
export function fmtNum(v: number): string {
  if (!Number.isFinite(v)) return String(v);
  const a = Math.abs(v);
  if (a >= 1e9) return `${trim(v / 1e9)}G`;
  if (a >= 1e6) return `${trim(v / 1e6)}M`;
  if (a >= 1e4) return `${trim(v / 1e3)}k`;
  if (a >= 100 || Number.isInteger(v)) return Math.round(v).toLocaleString('en-US');
  return Number(v.toPrecision(3)).toString();
}

function trim(x: number): string {
  return Number(x.toPrecision(3)).toString();
}
