// `rowan cluster`: a local ROWAN-KV cluster on this machine, the README's main command. It writes (or
// reuses) DIR/cluster.json, the embedded configuration store, starts the configuration manager
// (`rowan manager`, §4.5) and one `rowan start` process per node on 127.0.0.1 with emulated PM under
// DIR/node-N holding a lease with it, prints the endpoints and serves until Ctrl-C, when it stops
// every process (SIGTERM: drain, persist, unmap) and exits. Run it again on the same DIR and the nodes
// cold-start from their pools: everything acknowledged before is served again.
//
// A node that dies is failed over by the manager (its shards move to their backups, the term goes up);
// the launcher keeps running and prints each failover as the configuration file changes. A manager
// that dies is restarted (the nodes' leases run out meanwhile: no node serves without a manager).
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import type { Command } from 'commander';
import { CLUSTER_REPLICATION_MODES, planCluster, type ClusterConfig, type ClusterReplicationMode } from '../config/cluster.js';
import { FileConfigStore } from '../config/store.js';
import { ErrorCodes, RowanError } from '../config/base/errors.js';
import { DEFAULT_LEASE_MS } from '../actors/manager/leases.js';

export interface ClusterOpts {
  dir: string;
  nodes: string;
  shards: string;
  replication: string;
  replicationMode: string;
  workers: string;
  basePort: string;
  fabric: string;
  poolMib: string;
  segmentKib: string;
  leaseMs: string;
}

const bin = new URL('../../bin/rowan', import.meta.url).pathname;

/** The manager listens on base + MANAGER_PORT_OFFSET (nodes on base + 10N + w, NICs on base + 500 + N). */
export const MANAGER_PORT_OFFSET = 490;

function int(name: string, v: string, lo: number, hi: number): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < lo || n > hi) throw new RowanError(ErrorCodes.BAD_ARGUMENT, `--${name}: '${v}' is not an integer in [${lo}, ${hi}]`);
  return n;
}

/** The cluster in DIR: the stored one if there is one (a restart), else a new plan. */
function clusterFor(dir: string, o: ClusterOpts): { cluster: ClusterConfig; fresh: boolean } {
  const file = join(dir, 'cluster.json');
  if (existsSync(file)) return { cluster: new FileConfigStore(file).readSync(), fresh: false };
  if (!(CLUSTER_REPLICATION_MODES as readonly string[]).includes(o.replicationMode)) {
    throw new RowanError(ErrorCodes.BAD_ARGUMENT, `--replication-mode: '${o.replicationMode}' (${CLUSTER_REPLICATION_MODES.join('|')})`);
  }
  const n = int('nodes', o.nodes, 1, 16);
  const workers = int('workers', o.workers, 1, 8);
  const base = int('base-port', o.basePort, 1024, 60000);
  if (o.fabric !== 'shm' && o.fabric !== 'tcp') throw new RowanError(ErrorCodes.BAD_ARGUMENT, `--fabric: '${o.fabric}' (shm|tcp)`);
  const nodes = Array.from({ length: n }, (_, id) => ({
    id,
    host: '127.0.0.1',
    dataDir: join(dir, `node-${id}`),
    workerPorts: Array.from({ length: workers }, (_, w) => base + id * 10 + w),
    fabric: { kind: o.fabric as 'shm' | 'tcp', host: '127.0.0.1', port: base + 500 + id },
  }));
  const cluster = planCluster({
    nodes,
    shardCount: int('shards', o.shards, 1, 4096),
    replicationFactor: Math.min(int('replication', o.replication, 1, 16), n),
    replication: o.replicationMode as ClusterReplicationMode,
  });
  return { cluster, fresh: true };
}

function waitReady(child: ChildProcess, logFile: string, id: number, timeoutMs: number, from = 0): Promise<void> {
  return new Promise((resolveReady, reject) => {
    const t0 = Date.now();
    const timer = setInterval(() => {
      const text = existsSync(logFile) ? readFileSync(logFile, 'utf8').slice(from) : '';
      if (text.includes('"msg":"node ready"')) {
        clearInterval(timer);
        resolveReady();
      } else if (child.exitCode !== null || Date.now() - t0 > timeoutMs) {
        clearInterval(timer);
        const last = text.trim().split('\n').slice(-3).join('\n');
        reject(new RowanError(ErrorCodes.ACTOR_FAILED, `${id < 0 ? 'the manager' : `node ${id}`} did not start (see ${logFile}):\n${last}`));
      }
    }, 100);
  });
}

export async function runCluster(o: ClusterOpts): Promise<number> {
  const dir = resolve(o.dir);
  mkdirSync(dir, { recursive: true });
  const { cluster, fresh } = clusterFor(dir, o);
  const file = join(dir, 'cluster.json');
  if (fresh) await new FileConfigStore(file).write(cluster, null);
  // The node config (pool size) is fixed when the cluster is made: a restart must map the same pools.
  const nodeConfig = join(dir, 'node-config.json');
  if (fresh || !existsSync(nodeConfig)) {
    const segmentBytes = int('segment-kib', o.segmentKib, 64, 4096) * 1024;
    if ((segmentBytes & (segmentBytes - 1)) !== 0) throw new RowanError(ErrorCodes.BAD_ARGUMENT, `--segment-kib: '${o.segmentKib}' is not a power of two`);
    const poolSegments = Math.max(8, Math.floor((int('pool-mib', o.poolMib, 8, 4096) * 1024 * 1024) / segmentBytes));
    writeFileSync(nodeConfig, JSON.stringify({ pool: { segmentCount: poolSegments, segmentBytes } }, null, 2) + '\n');
  }
  console.log(`${fresh ? 'new' : 'existing'} cluster in ${dir}: ${cluster.nodes.length} nodes, ${cluster.shardCount} shards, replication ${cluster.replicationFactor} (${cluster.replication}), term ${cluster.term}`);
  if (!fresh && o.replicationMode !== cluster.replication) {
    console.log(`note: --replication-mode ${o.replicationMode} ignored; the stored cluster replicates with ${cluster.replication}`);
  }

  const children = new Map<number, ChildProcess>();
  let manager: ChildProcess | null = null;
  let stopping = false;
  let wake: () => void = () => {};
  // The manager stops first: nodes that drain and close their lease connections must not look like
  // failures (it would fail them over and a restart would find them dead).
  const stopAll = () => {
    if (stopping) return;
    stopping = true;
    console.log('stopping the cluster ...');
    const nodes = () => {
      for (const c of children.values()) if (c.exitCode === null && c.signalCode === null) c.kill('SIGTERM');
      wake();
    };
    const m = manager;
    if (!m || m.exitCode !== null || m.signalCode !== null) return nodes();
    const timer = setTimeout(nodes, 5000);
    m.once('exit', () => {
      clearTimeout(timer);
      nodes();
    });
    m.kill('SIGTERM');
  };
  process.once('SIGINT', stopAll);
  process.once('SIGTERM', stopAll);

  const managerPort = int('base-port', o.basePort, 1024, 60000) + MANAGER_PORT_OFFSET;
  const startManager = async (): Promise<void> => {
    const logFile = join(dir, 'manager.log');
    const out = openSync(logFile, 'a');
    const args = [bin, 'manager', '--cluster', file, '--port', String(managerPort), '--lease-ms', String(int('lease-ms', o.leaseMs, 4, 600_000)), '--data-dir', join(dir, 'manager')];
    manager = spawn(process.execPath, args, { stdio: ['ignore', out, out], detached: true });
    const from = existsSync(logFile) ? readFileSync(logFile, 'utf8').length : 0;
    process.stdout.write(`starting the configuration manager (log ${logFile}) ... `);
    await waitReady(manager, logFile, -1, 60_000, from);
    console.log(`ready on 127.0.0.1:${managerPort}, lease ${o.leaseMs} ms`);
  };
  try {
    await startManager();
  } catch (err) {
    console.log('failed');
    console.error((err as Error).message);
    stopAll();
    return 1;
  }

  const dead = new Set(cluster.dead ?? []);
  for (const n of cluster.nodes) {
    if (dead.has(n.id)) {
      console.log(`node ${n.id} is dead in the stored configuration (term ${cluster.term}); it does not rejoin (re-replication is not built yet)`);
      continue;
    }
    mkdirSync(n.dataDir, { recursive: true });
    const logFile = join(dir, `node-${n.id}.log`);
    const out = openSync(logFile, 'w');
    const args = [bin, 'start', '--data-dir', n.dataDir, '--cluster', file, '--node-id', String(n.id), '--config', nodeConfig,
      '--roles', `worker:${n.workerPorts.length},control,digest,clean`, '--fabric', n.fabric.kind, '--fabric-port', String(n.fabric.port),
      '--manager', `127.0.0.1:${managerPort}`];
    // Own process group: a terminal ^C reaches only this launcher, which stops each node once (SIGTERM).
    const child = spawn(process.execPath, args, { stdio: ['ignore', out, out], detached: true });
    children.set(n.id, child);
    process.stdout.write(`starting node ${n.id} (log ${logFile}) ... `);
    try {
      await waitReady(child, logFile, n.id, 120_000);
    } catch (err) {
      console.log('failed');
      console.error((err as Error).message);
      stopAll();
      return 1;
    }
    console.log(`ready (pid ${child.pid}): clients on ${n.workerPorts.map((p) => `${n.host}:${p}`).join(', ')}`);
  }
  // The command as this user can type it: bin/rowan from the checkout (rowan is not on PATH).
  const rel = relative(process.cwd(), bin);
  const cmd = rel.startsWith('..') ? bin : rel;
  console.log(`\nserving. Try:\n  ${cmd} put hello world --cluster ${file}\n  ${cmd} get hello --cluster ${file}\n  ${cmd} status --cluster ${file}\nCtrl-C stops the cluster; running this again on ${dir} restarts it with its data.`);

  // Keep going when a node dies: report it, and report the failovers as the stored configuration moves.
  let codes = 0;
  for (const [id, c] of children) {
    c.once('exit', (code, signal) => {
      if (code !== 0) codes++;
      if (!stopping) console.log(`node ${id} (pid ${c.pid}) exited (${signal ?? `code ${code}`}); the configuration manager fails it over`);
      wake();
    });
  }
  const watchManager = (m: ChildProcess) =>
    m.once('exit', (code, signal) => {
      if (stopping) return wake();
      console.log(`the configuration manager exited (${signal ?? `code ${code}`}); restarting it`);
      startManager().then(() => watchManager(manager!), (err: Error) => {
        console.error(`cannot restart the configuration manager: ${err.message}`);
        stopAll();
      });
    });
  watchManager(manager!);
  let seen = cluster;
  const watch = setInterval(() => {
    let now: ClusterConfig;
    try {
      now = new FileConfigStore(file).readSync();
    } catch {
      return; // being replaced: next time
    }
    if (now.term === seen.term) return;
    console.log(describeChange(seen, now));
    seen = now;
  }, 50);
  const alive = () => [...children.values()].some((c) => c.exitCode === null && c.signalCode === null);
  while (alive() || (stopping && manager !== null && (manager as ChildProcess).exitCode === null && (manager as ChildProcess).signalCode === null)) {
    await new Promise<void>((r) => {
      wake = r;
      setTimeout(r, 1000).unref();
    });
  }
  clearInterval(watch);
  if (!stopping) {
    console.error('every node has exited; stopping the configuration manager');
    stopAll();
    return 1;
  }
  console.log(codes ? `cluster stopped; ${codes} node(s) exited non-zero (see the node logs)` : 'cluster stopped');
  return codes ? 1 : 0;
}

/** One line per configuration change: the new term, who died, which shards moved where. */
export function describeChange(before: ClusterConfig, after: ClusterConfig): string {
  const died = (after.dead ?? []).filter((d) => !(before.dead ?? []).includes(d));
  const moved = after.shards.filter((s) => before.shards[s.id]?.primary !== s.primary).map((s) => `${s.id}:${before.shards[s.id]?.primary}->${s.primary}`);
  return `failover: term ${before.term} -> ${after.term}; dead node(s) ${died.join(',') || '-'}; ${moved.length} shard(s) moved${moved.length ? ` (${moved.join(' ')})` : ''}; live nodes ${after.nodes.filter((n) => !(after.dead ?? []).includes(n.id)).map((n) => n.id).join(',')}`;
}

export function registerClusterCommand(p: Command, run: (f: () => Promise<number>) => () => Promise<void>): void {
  p.command('cluster')
    .description('run a local ROWAN-KV cluster: N node processes on 127.0.0.1 with emulated PM under --dir; Ctrl-C stops it, running it again restarts it with its data')
    .option('--dir <dir>', 'cluster directory: cluster.json, node-N/ data dirs, node-N.log', './rowan-cluster')
    .option('--nodes <n>', 'nodes (processes) for a new cluster', '3')
    .option('--shards <n>', 'shards for a new cluster', '48')
    .option('--replication <n>', 'replicas per shard, primary included', '3')
    .option('--replication-mode <mode>', `how primaries replicate to backups, for a new cluster (ROWAN §6.1): ${CLUSTER_REPLICATION_MODES.join('|')}`, 'rowan')
    .option('--workers <n>', 'worker actors (client ports) per node', '1')
    .option('--base-port <port>', 'node N listens on base + 10N + worker; its NIC on base + 500 + N', '7100')
    .option('--fabric <kind>', 'how replication writes reach each node: shm (same host) or tcp (its NIC actor)', 'shm')
    .option('--pool-mib <mib>', 'emulated PM per node, in MiB (a bounded log: clean actors reclaim it; PUTs get ROWAN_ERR_PM_FULL only when it is full of live data)', '128')
    .option('--segment-kib <kib>', 'PM segment size in KiB, a power of two (paper: 4096)', '4096')
    .option('--lease-ms <ms>', 'lease the configuration manager grants; a dead node is failed over after it expires (paper: 10)', String(DEFAULT_LEASE_MS))
    .action(function (this: Command) {
      return run(() => runCluster(this.opts<ClusterOpts>()))();
    });
}
