// What keeps `rowan cluster` from leaving a mess: one launcher per cluster directory (DIR/launcher.pid),
// every port checked before anything is written, node logs appended (and rotated by size) rather than
// truncated, and `rowan cluster stop`. Nodes die with their launcher on their own side (rowan start
// sets PR_SET_PDEATHSIG when ROWAN_LAUNCHER_PID is in its environment, bin/cli.ts).
import { closeSync, existsSync, openSync, readFileSync, renameSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { constants } from 'node:os';
import { join } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import type { ClusterConfig } from '../config/cluster.js';
import { ErrorCodes, RowanError } from '../config/base/errors.js';
import { probeSocket, requestControl, socketPath } from '../runtime/endpoint.js';
import { setParentDeathSignal } from '../native/libc.js';

export const LAUNCHER_PID_FILE = 'launcher.pid';
/** Set by `rowan cluster` in its nodes' environment: the launcher's pid (rowan start follows it). */
export const LAUNCHER_PID_ENV = 'ROWAN_LAUNCHER_PID';
/** A node log longer than this when the launcher starts is moved to node-N.log.1 (one generation kept). */
export const NODE_LOG_ROTATE_BYTES = 64 * 1024 * 1024;

/** A node or manager started by a launcher stops (SIGTERM: drain) when the launcher dies, however it dies. */
export function followLauncher(): void {
  const pid = process.env[LAUNCHER_PID_ENV];
  if (pid === undefined) return;
  setParentDeathSignal(constants.signals.SIGTERM);
  // The launcher may have died before the line above: then no signal will come.
  if (String(process.ppid) !== pid) throw new RowanError(ErrorCodes.NODE_NOT_RUNNING, `the launcher (pid ${pid}) is gone; not starting`);
}

function procState(pid: number): string {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  } catch {
    return '-';
  }
}

export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  // An exited process its parent has not reaped yet (a zombie) still answers kill(0): it is gone.
  const state = procState(pid);
  return state !== 'Z' && state !== '-';
}

/** The pid of a live launcher of DIR, or null (a pid file left by a launcher that died is stale). */
export function runningLauncher(dir: string): number | null {
  const file = join(dir, LAUNCHER_PID_FILE);
  if (!existsSync(file)) return null;
  const pid = Number(readFileSync(file, 'utf8').trim());
  if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid || !processAlive(pid)) return null;
  // A recycled pid of an unrelated process does not count: a launcher's command line names rowan cluster.
  try {
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    if (!cmdline.includes('cluster')) return null;
  } catch {
    return null;
  }
  return pid;
}

/**
 * Refuse to launch a cluster that is running already (its launcher, or any node answering on its
 * control socket), before anything is opened or written. Then claim DIR for this launcher.
 */
export async function claimClusterDir(dir: string, cluster: ClusterConfig | null): Promise<() => void> {
  const other = runningLauncher(dir);
  if (other !== null) throw new RowanError(ErrorCodes.DATA_DIR, `a launcher (pid ${other}) is already running the cluster in ${dir}; rowan cluster stop --dir ${dir} stops it`);
  for (const n of cluster?.nodes ?? []) {
    if ((await probeSocket(socketPath(n.dataDir))) === 'live')
      throw new RowanError(ErrorCodes.DATA_DIR, `node ${n.id} of ${dir} is running already (${socketPath(n.dataDir)} answers); stop it first`);
  }
  const file = join(dir, LAUNCHER_PID_FILE);
  writeFileSync(file, `${process.pid}\n`);
  return () => {
    try {
      if (readFileSync(file, 'utf8').trim() === String(process.pid)) unlinkSync(file);
    } catch {
      // gone already
    }
  };
}

/** --base-port of a cluster `rowan cluster` made: node N's first client port is base + 10N (node 0
 *  may have been decommissioned: any node tells). */
export function basePortOf(cluster: ClusterConfig): number {
  const n = cluster.nodes[0]!;
  return n.workerPorts[0]! - 10 * n.id;
}

/** Node `id`'s metrics port: base + 800 + id (see --base-port). */
export function metricsPortOf(cluster: ClusterConfig, id: number): number {
  return basePortOf(cluster) + 800 + id;
}

/** The configuration manager's port under `rowan cluster`: base + 490. */
export function managerPortOf(cluster: ClusterConfig): number {
  return basePortOf(cluster) + 490;
}

/** Every TCP port the manager and the nodes of `cluster` will listen on. */
export function clusterPorts(cluster: ClusterConfig): { host: string; port: number; what: string }[] {
  return [{ host: '127.0.0.1', port: managerPortOf(cluster), what: 'configuration manager port' }, ...cluster.nodes.flatMap((n) => [
    ...n.workerPorts.map((port) => ({ host: n.host, port, what: `node ${n.id} client port` })),
    ...(n.fabric.kind === 'tcp' ? [{ host: n.fabric.host, port: n.fabric.port, what: `node ${n.id} nic port` }] : []),
    ...(n.fabric.kind === 'verbs' ? [{ host: n.fabric.host, port: n.fabric.port, what: `node ${n.id} verbs side-channel port` }] : []),
    ...(n.resp?.ports ?? []).map((port) => ({ host: n.host, port, what: `node ${n.id} RESP port` })),
    ...(n.resp?.clusterPorts ?? []).map((port) => ({ host: n.host, port, what: `node ${n.id} RESP cluster port` })),
    { host: '127.0.0.1', port: metricsPortOf(cluster, n.id), what: `node ${n.id} metrics port` },
  ])];
}

/** Bind and release each port: one that is taken fails now, naming it, instead of a node timing out. */
export async function checkPortsFree(cluster: ClusterConfig): Promise<void> {
  for (const p of clusterPorts(cluster)) {
    await new Promise<void>((resolvePort, reject) => {
      const s = createServer();
      s.once('error', (err: NodeJS.ErrnoException) =>
        reject(new RowanError(ErrorCodes.BAD_ARGUMENT, `${p.what} ${p.host}:${p.port} is not free (${err.code ?? err.message}); choose another --base-port`)),
      );
      s.listen({ host: p.host, port: p.port, exclusive: true }, () => s.close(() => resolvePort()));
    });
  }
}

/**
 * Open node-N.log for appending, moving a log over NODE_LOG_ROTATE_BYTES to node-N.log.1 first.
 * `from`: where this run's lines start (what came before is an earlier run's, e.g. its "node ready").
 */
export function openNodeLog(file: string, what = 'starting this node'): { fd: number; from: number } {
  try {
    if (statSync(file).size > NODE_LOG_ROTATE_BYTES) renameSync(file, `${file}.1`);
  } catch {
    // no log yet
  }
  const fd = openSync(file, 'a');
  writeFileSync(fd, `--- rowan cluster (pid ${process.pid}) ${what} at ${new Date().toISOString()} ---\n`);
  return { fd, from: statSync(file).size };
}

/** The text of `file` from byte `from` on (this run's part of a node log). */
export function readLogFrom(file: string, from: number): string {
  try {
    return readFileSync(file).subarray(from).toString('utf8');
  } catch {
    return '';
  }
}

export function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // closed already
  }
}

/**
 * `rowan cluster stop`: SIGTERM the launcher (which drains and stops every node) and wait for it; with
 * no launcher, ask every node still answering on its control socket to stop.
 */
export async function stopCluster(dir: string, cluster: ClusterConfig, timeoutMs: number): Promise<string> {
  const pid = runningLauncher(dir);
  if (pid !== null) {
    process.kill(pid, 'SIGTERM');
    const until = Date.now() + timeoutMs;
    while (processAlive(pid)) {
      if (Date.now() > until) throw new RowanError(ErrorCodes.TIMEOUT, `the launcher (pid ${pid}, state ${procState(pid)}) did not stop within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 50));
    }
    return `launcher ${pid} stopped the cluster`;
  }
  let stopped = 0;
  // The manager first (were it to see the nodes go, it would fail them over), then the nodes.
  for (const n of [{ id: -1, dataDir: join(dir, 'manager') }, ...cluster.nodes]) {
    const path = socketPath(n.dataDir);
    if ((await probeSocket(path)) !== 'live') continue;
    await requestControl(path, { op: 'stop' }, timeoutMs);
    const until = Date.now() + timeoutMs;
    while ((await probeSocket(path)) === 'live') {
      if (Date.now() > until) throw new RowanError(ErrorCodes.TIMEOUT, `${n.id < 0 ? 'the configuration manager' : `node ${n.id}`} did not stop within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 50));
    }
    if (n.id >= 0) stopped++;
  }
  return stopped ? `no launcher; ${stopped} node(s) stopped` : 'nothing was running';
}

/**
 * Ready when this run's part of the log says "node ready", or -- with a --log-level that hides info
 * lines -- when the process answers status on its control socket in `dataDir` with its own pid.
 */
export async function waitReady(child: ChildProcess, logFile: string, from: number, id: number, timeoutMs: number, dataDir: string): Promise<void> {
  const t0 = Date.now();
  const answers = async (): Promise<boolean> => {
    try {
      const st = (await requestControl(socketPath(dataDir), { op: 'status' }, 1000)) as { pid?: number };
      return st.pid === child.pid;
    } catch {
      return false;
    }
  };
  for (;;) {
    const text = readLogFrom(logFile, from); // this run's lines only: the log is appended to
    if (text.includes('"msg":"node ready"') || (existsSync(socketPath(dataDir)) && (await answers()))) return;
    if (child.exitCode !== null || child.signalCode !== null || Date.now() - t0 > timeoutMs) {
      const last = text.trim().split('\n').slice(-3).join('\n');
      throw new RowanError(ErrorCodes.ACTOR_FAILED, `${id < 0 ? 'the configuration manager' : `node ${id}`} did not start (see ${logFile}):\n${last}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}
