// A fresh local cluster for one benchmark cell group: `rowan cluster` in a temp dir on a random base
// port, waited on until it prints `serving.`, stopped with SIGINT (the launcher then SIGTERMs each
// node: drain, persist, unmap) so its pools can be read back afterwards.
//
// Node settings `rowan cluster` has no flag for (`nodeConfig`, e.g. gc.liveThresholdPercent 0 to keep
// the clean actors idle) go into the node-config.json the launcher writes for a new cluster: the
// cluster is started once empty, stopped, the file amended, and started again on the same directory
// (the launcher keeps an existing node-config.json on a restart).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const bin = new URL('../../../bin/rowan', import.meta.url).pathname;

export interface ClusterSpec {
  mode: string;
  /** Pass --replication-mode (only when the CLI has it). */
  passMode: boolean;
  poolMib: number;
  segmentKib: number;
  workers: number;
  /** --lease-ms (default: the launcher's). */
  leaseMs?: number;
  /** More `rowan cluster` flags (e.g. --no-auto-reshard). */
  extraArgs?: string[];
  /** Merged over the node config the launcher writes (see the header). */
  nodeConfig?: Record<string, unknown>;
}

export interface RunningCluster {
  dir: string;
  file: string;
  basePort: number;
  /**
   * The server processes as the launcher has announced them so far ("node N ready (pid P)",
   * "configuration manager ready on ... (pid P)"; a node it restarted: its latest pid), and the launcher
   * itself (`rowan cluster`, which only supervises).
   */
  pids: () => { nodes: number[]; managers: number[]; launcher: number };
  stop: () => Promise<void>;
}

/** Replication modes `rowan cluster` accepts: rowan always, the rest when --replication-mode exists. */
export function availableModes(): { modes: string[]; passMode: boolean } {
  const r = spawnSync(process.execPath, [bin, 'cluster', '--help'], { encoding: 'utf8' });
  const help = `${r.stdout ?? ''}${r.stderr ?? ''}`;
  if (!help.includes('--replication-mode')) return { modes: ['rowan'], passMode: false };
  const all = ['rowan', 'rpc', 'rwrite', 'batch', 'share',
    'tailwind', 'erda', 'asymnvm'];
  // Keep only modes the help text names (in case some are not there yet).
  const named = all.filter((m) => new RegExp(`\\b${m}\\b`).test(help.slice(help.indexOf('--replication-mode'))));
  return { modes: named.length ? named : ['rowan'], passMode: true };
}

function exited(c: ChildProcess): Promise<number> {
  return new Promise((r) => (c.exitCode !== null || c.signalCode !== null ? r(c.exitCode ?? 1) : c.once('exit', (code) => r(code ?? 1))));
}

export async function startCluster(s: ClusterSpec, timeoutMs = 120_000): Promise<RunningCluster> {
  const first = await launchOnFreePorts(s, timeoutMs);
  if (!s.nodeConfig) return first;
  await first.stop();
  const file = join(first.dir, 'node-config.json');
  const cfg = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
  writeFileSync(file, JSON.stringify({ ...cfg, ...s.nodeConfig }, null, 2) + '\n');
  // The same ports again (the stored configuration's): one another process took meanwhile is waited out.
  for (let attempt = 1; ; attempt++) {
    try {
      return await launch(s, first.dir, first.basePort, timeoutMs);
    } catch (err) {
      if (attempt >= PORT_ATTEMPTS || !PORT_TAKEN.test((err as Error).message)) throw err;
      process.stderr.write(`ycsb: a port of base ${first.basePort} is in use; starting again in 1 s\n`);
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
}

/** Bound on base ports tried when one of a cluster's ports is taken. */
const PORT_ATTEMPTS = 5;
/** What the launcher says of a port another process holds: found before it writes anything (`is not
 *  free`), or when a node binds it (EADDRINUSE: the port was taken in between). */
const PORT_TAKEN = /is not free|EADDRINUSE/;

/**
 * A new cluster on a random base port, in a new directory; another one if a port is in use (on a
 * shared machine another process may hold one). A directory is not used again: a node that found its
 * port taken did so after the launcher stored the configuration, with that base port in it.
 */
async function launchOnFreePorts(s: ClusterSpec, timeoutMs: number): Promise<RunningCluster> {
  for (let attempt = 1; ; attempt++) {
    // Node n listens on base + 10n + w .. base + 800 + n: keep everything below the kernel's ephemeral
    // range (32768 on), where an outgoing connection could already hold the port.
    const basePort = 10_000 + Math.floor(Math.random() * 2_200) * 10;
    const dir = mkdtempSync(join(tmpdir(), `rowan-ycsb-${s.mode}-`));
    try {
      return await launch(s, dir, basePort, timeoutMs);
    } catch (err) {
      if (attempt >= PORT_ATTEMPTS || !PORT_TAKEN.test((err as Error).message)) throw err; // its dir kept, named in the message
      process.stderr.write(`ycsb: a port of base ${basePort} is in use; trying another base port\n`);
      rmSync(dir, { recursive: true, force: true });
    }
  }
}

async function launch(s: ClusterSpec, dir: string, basePort: number, timeoutMs: number): Promise<RunningCluster> {
  const args = [bin, 'cluster', '--dir', dir, '--base-port', String(basePort), '--pool-mib', String(s.poolMib),
    '--segment-kib', String(s.segmentKib), '--workers', String(s.workers)];
  if (s.passMode) args.push('--replication-mode', s.mode);
  if (s.leaseMs !== undefined) args.push('--lease-ms', String(s.leaseMs));
  args.push(...(s.extraArgs ?? []));
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (out += d));
  await new Promise<void>((resolve, reject) => {
    const t0 = Date.now();
    const timer = setInterval(() => {
      if (out.includes('serving.')) {
        clearInterval(timer);
        resolve();
      } else if (child.exitCode !== null || child.signalCode !== null || Date.now() - t0 > timeoutMs) {
        clearInterval(timer);
        if (child.exitCode === null) child.kill('SIGINT');
        const how = child.exitCode !== null ? `exited ${child.exitCode}` : child.signalCode ? `killed by ${child.signalCode}` : `no 'serving.' within ${timeoutMs} ms`;
        reject(new Error(`rowan cluster (${s.mode}) did not start (${how}, after ${Date.now() - t0} ms; dir ${dir}, base port ${basePort}):\n${out.trim().split('\n').slice(-6).join('\n')}`));
      }
    }, 50);
  });
  let stopped: Promise<void> | null = null;
  const stop = () =>
    (stopped ??= (async () => {
      if (child.exitCode === null) child.kill('SIGINT');
      const t = setTimeout(() => child.exitCode === null && child.kill('SIGKILL'), 30_000);
      const code = await exited(child);
      clearTimeout(t);
      if (code !== 0) process.stderr.write(`ycsb: rowan cluster (${s.mode}) exited ${code}:\n${out.trim().split('\n').slice(-4).join('\n')}\n`);
    })());
  return { dir, file: join(dir, 'cluster.json'), basePort, pids: () => announcedPids(out, child.pid!), stop };
}

/** The pids in the launcher's ready lines: each node's latest, in node id order; the managers'. */
export function announcedPids(out: string, launcher: number): ReturnType<RunningCluster['pids']> {
  const nodes = new Map([...out.matchAll(/^node (\d+) ready \(pid (\d+)\)/gm)].map((m) => [Number(m[1]), Number(m[2])]));
  const managers = [...out.matchAll(/^configuration manager(?: \d+)? ready on \S+ \(pid (\d+)\)/gm)].map((m) => Number(m[1]));
  return { nodes: [...nodes].sort((a, b) => a[0] - b[0]).map(([, pid]) => pid), managers, launcher };
}
