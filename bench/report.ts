// Benchmark reporting: every benchmark prints a table and writes machine-readable JSON and its plots
// (SVG, bench/plot/svg.ts, so no plotting dependency and no native canvas) into bench/results/.
// Each JSON records what the numbers came from: the git commit (and whether the tree was dirty), the
// parameters the run used, and the machine (CPU, cores, memory, Node, load average at start and end:
// this is a shared machine, and a loaded one makes every figure of the run lower).
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';

export type Row = Record<string, string | number | boolean | null>;

export const resultsDir = new URL('../../bench/results/', import.meta.url).pathname;
const repoDir = new URL('../../', import.meta.url).pathname;

export interface Machine {
  cpu: string;
  cores: number;
  memGiB: number;
  node: string;
  platform: string;
}

export function machine(): Machine {
  return {
    cpu: cpus()[0]?.model ?? 'unknown',
    cores: cpus().length,
    memGiB: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    platform: `${process.platform} ${process.arch}`,
  };
}

export interface GitState {
  commit: string | null;
  /** Uncommitted changes to tracked files when the run started (results/ excluded). */
  dirty: boolean | null;
}

export function gitState(dir = repoDir): GitState {
  try {
    const commit = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: dir, encoding: 'utf8' }).trim();
    const status = execFileSync('git', ['status', '--porcelain', '--untracked-files=no', '--', '.', ':!bench/results'], { cwd: dir, encoding: 'utf8' });
    return { commit, dirty: status.trim().length > 0 };
  } catch {
    return { commit: null, dirty: null };
  }
}

/** 1, 5 and 15 minute load averages, two decimals. */
export function load(): number[] {
  return loadavg().map((l) => Math.round(l * 100) / 100);
}

/** What a benchmark run was: when, on what code, on which machine, under what load, with what parameters. */
export interface RunMeta {
  startedAt: string;
  finishedAt?: string;
  git: GitState;
  machine: Machine;
  loadAvgStart: number[];
  loadAvgEnd?: number[];
  /** The flags the harness was given. */
  argv: string[];
  /** What the benchmark says it ran with (recordParams). */
  params: Record<string, unknown>;
}

let currentParams: Record<string, unknown> = {};

/** A benchmark states the parameters it runs with (merged into the run's JSON). */
export function recordParams(p: Record<string, unknown>): void {
  currentParams = { ...currentParams, ...p };
}

export function startRun(argv: string[]): RunMeta {
  currentParams = {};
  return { startedAt: new Date().toISOString(), git: gitState(), machine: machine(), loadAvgStart: load(), argv, params: {} };
}

export function finishRun(m: RunMeta): RunMeta {
  return { ...m, finishedAt: new Date().toISOString(), loadAvgEnd: load(), params: { ...currentParams } };
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

/** One plot file of a benchmark: bench/results/<file>. */
export interface Figure {
  file: string;
  svg: string;
}

/** The JSON a benchmark run leaves: read back by `run.js --replot`. */
export interface ResultFile {
  name: string;
  title: string;
  run: RunMeta;
  rows: Row[];
}

/** One line saying what run a plot comes from: commit, machine, load. */
export function runFooter(m: RunMeta): string {
  const git = m.git.commit ? `${m.git.commit.slice(0, 10)}${m.git.dirty ? ' (uncommitted changes)' : ''}` : 'unknown commit';
  const l = (a?: number[]) => (a ? a[0]!.toFixed(1) : '?');
  return `run ${m.startedAt.slice(0, 16).replace('T', ' ')} UTC, git ${git}; ${m.machine.cores} x ${m.machine.cpu}, Node ${m.machine.node}; ` +
    `load average (1 min) ${l(m.loadAvgStart)} at start, ${l(m.loadAvgEnd)} at end${m.argv.length ? `; arguments ${m.argv.join(' ')}` : ''}`;
}

/** Print the table and write <name>.json and the figures under bench/results/. */
export function report(name: string, title: string, rows: Row[], meta: RunMeta, figures: Figure[], columns?: string[]): void {
  mkdirSync(resultsDir, { recursive: true });
  console.log(`\n== ${title}\n${formatTable(rows, columns)}`);
  const json = join(resultsDir, `${name}.json`);
  const out: ResultFile = { name, title, run: meta, rows };
  writeFileSync(json, JSON.stringify(out, null, 2) + '\n');
  console.log(`results: ${json}`);
  writeFigures(figures);
}

export function writeFigures(figures: Figure[]): void {
  for (const f of figures) {
    const path = join(resultsDir, f.file);
    writeFileSync(path, f.svg);
    console.log(`plot:    ${path}`);
  }
}

/** One progress line on stderr, rewritten in place when stderr is a terminal. */
export function progress(label: string, done: number, total: number): void {
  const msg = `[${done}/${total}] ${label}`;
  if (process.stderr.isTTY) process.stderr.write(`\r${msg}\x1b[K${done === total ? '\n' : ''}`);
  else process.stderr.write(`${msg}\n`);
}
