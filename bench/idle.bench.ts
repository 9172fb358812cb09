// `npm run bench -- idle [--quick]`: what an idle cluster costs (issue 26: "no work without work",
// at most 0.02 cores for 3 nodes). A fresh `rowan cluster` (3 nodes, the launcher's defaults: the
// 100 ms lease, renewed every 20 ms) is started, left to settle, and every thread of the launcher,
// the manager and the nodes is read from /proc over a window (./idle/threads.ts): cores (utime +
// stime) and wakeups per second (voluntary context switches), per process and per thread.
// In the same run, for the ratios: the lease's message pattern alone (./idle/lease-pattern.ts: three
// processes sending a 12-byte frame every renew period to a fourth that answers each with 40 bytes),
// once on Node's event loop (net.Socket, setInterval: how rowan carries the lease today) and once in
// blocking loops of system calls (poll, read, write, clock_nanosleep through koffi: no event loop).
import { spawn, type ChildProcess } from 'node:child_process';
import { defaultTimings, leaseTiming } from '../config/timings.js';
import { recordParams, type Row } from './report.js';
import { startCluster } from './ycsb/cluster.js';
import { measureThreads, type ThreadUse } from './idle/threads.js';

const quick = process.argv.includes('--quick');
/** After `serving.`: the start's work (cold start, first configuration round, JIT) is over by then. */
const SETTLE_MS = quick ? 5_000 : 10_000;
/** The measured window (issue 26: at least 30 s). */
const WINDOW_MS = quick ? 10_000 : 30_000;
const pattern = new URL('./idle/lease-pattern.js', import.meta.url).pathname;

function round(x: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

function rowsOf(system: string, roles: Map<number, string>, use: ThreadUse[], sec: number): Row[] {
  const rows: Row[] = use
    .filter((u) => u.cores > 0 || u.wakeupsPerSec >= 0.5)
    .sort((a, b) => (roles.get(a.pid) ?? '').localeCompare(roles.get(b.pid) ?? '') || b.cores - a.cores)
    .map((u) => ({ system, process: roles.get(u.pid) ?? String(u.pid), thread: u.thread, threads: u.threads, seconds: round(sec, 1), cores: round(u.cores, 4), wakeupsPerSec: round(u.wakeupsPerSec, 1) }));
  for (const [pid, role] of roles) {
    const mine = use.filter((u) => u.pid === pid);
    rows.push({ system, process: role, thread: '(all)', threads: mine.reduce((s, u) => s + u.threads, 0), seconds: round(sec, 1), cores: round(mine.reduce((s, u) => s + u.cores, 0), 4), wakeupsPerSec: round(mine.reduce((s, u) => s + u.wakeupsPerSec, 0), 1) });
  }
  rows.push({ system, process: '(all)', thread: '(all)', threads: use.reduce((s, u) => s + u.threads, 0), seconds: round(sec, 1), cores: round(use.reduce((s, u) => s + u.cores, 0), 4), wakeupsPerSec: round(use.reduce((s, u) => s + u.wakeupsPerSec, 0), 1) });
  return rows;
}

async function idleCluster(): Promise<Row[]> {
  const c = await startCluster({ mode: 'rowan', passMode: false, poolMib: 128, segmentKib: 4096, workers: 1 });
  try {
    await new Promise((r) => setTimeout(r, SETTLE_MS));
    const p = c.pids();
    const roles = new Map<number, string>([[p.launcher, 'launcher'], ...p.managers.map((pid, i): [number, string] => [pid, p.managers.length > 1 ? `manager ${i}` : 'manager']), ...p.nodes.map((pid, i): [number, string] => [pid, `node ${i}`])]);
    const { use, sec } = await measureThreads([...roles.keys()], WINDOW_MS);
    return rowsOf('rowan cluster', roles, use, sec);
  } finally {
    await c.stop();
  }
}

function started(args: string[]): ChildProcess {
  return spawn(process.execPath, [pattern, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
}

const NODES = 3;

/** The lease pattern alone: a server and three clients at the cluster's renew period, on Node's
 *  event loop or (`raw`) in blocking loops of system calls. */
async function leasePattern(renewMs: number, raw: boolean): Promise<Row[]> {
  const port = 10_000 + Math.floor(Math.random() * 20_000);
  const server = started(raw ? ['raw-server', String(port), String(NODES)] : ['server', String(port)]);
  const clients: ChildProcess[] = [];
  try {
    await new Promise<void>((resolve, reject) => {
      server.stdout!.once('data', () => resolve());
      server.once('exit', (code) => reject(new Error(`lease-pattern server exited ${code} (port ${port} taken?)`)));
    });
    for (let i = 0; i < NODES; i++) clients.push(started([raw ? 'raw-client' : 'client', String(port), String(renewMs)]));
    await new Promise((r) => setTimeout(r, SETTLE_MS / 5));
    const roles = new Map<number, string>([[server.pid!, 'server (the manager)'], ...clients.map((c, i): [number, string] => [c.pid!, `client ${i} (a node)`])]);
    const { use, sec } = await measureThreads([...roles.keys()], WINDOW_MS);
    return rowsOf(`lease pattern alone (${raw ? 'blocking system calls' : 'Node event loop'}, renew every ${renewMs} ms)`, roles, use, sec);
  } finally {
    for (const c of [...clients, server]) c.kill('SIGTERM');
  }
}

export async function run(): Promise<Row[]> {
  const renewMs = leaseTiming(defaultTimings.leaseMs).renewMs;
  recordParams({ settleMs: SETTLE_MS, windowMs: WINDOW_MS, leaseMs: defaultTimings.leaseMs, renewMs });
  const cluster = await idleCluster();
  const onLoop = await leasePattern(renewMs, false);
  const blocking = await leasePattern(renewMs, true);
  const total = (rows: Row[]) => rows.find((r) => r.process === '(all)')!.cores as number;
  const ratio = (name: string, a: Row[], b: Row[]): Row => ({ system: name, process: '(all)', thread: '(all)', threads: null, seconds: null, cores: total(b) > 0 ? round(total(a) / total(b), 2) : null, wakeupsPerSec: null });
  return [...cluster, ...onLoop, ...blocking, ratio('ratio: rowan cluster / lease pattern on the event loop', cluster, onLoop), ratio('ratio: lease pattern, event loop / blocking system calls', onLoop, blocking)];
}
