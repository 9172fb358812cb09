// The resharding benchmark's clusters (../reshard.bench.ts): three nodes on loopback started by
// `rowan cluster` (the shm fabric), or each node on a host of its own -- a network namespace whose link
// sends at most a given Mbit/s -- started like the partition tests' cluster (tcp fabric). Both with
// automatic resharding on, reporting per resharding period; the manager's log holds the move events.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MANAGER_PORT, NetnsCluster } from '../../test/fixtures/netns-cluster.js';
import { netnsUnavailable } from '../../test/fixtures/netns.js';

const bin = new URL('../../../bin/rowan', import.meta.url).pathname;

export interface Cluster {
  dir: string;
  file: string;
  /** The manager's address (the netns cluster's is on its own host). */
  manager: { host: string; port: number } | undefined;
  /** How the nodes are networked (loopback, or namespaces with shaped links). */
  network: string;
  /** Each node's link: its limit (Mbit/s) and the bytes it has sent so far, by node index; null on loopback. */
  links: { mbit: number; txBytes: () => (number | null)[] } | null;
  /** The node processes' pids (from the launcher's "node N ready (pid P)" lines), and their node ids. */
  pids: number[];
  ids: number[];
  stop(): Promise<void>;
}

/** The manager's resharding settings the benchmark runs with: its period, and copy moves (a target
 *  holding no replica of the hot shard) when the cluster has more nodes than replicas. */
function reshardingEnv(periodMs: number, copyMoves: boolean): Record<string, string> {
  return { ROWAN_RESHARDING_PERIOD_MS: String(periodMs), ...(copyMoves ? { ROWAN_RESHARDING_COPY_MOVES: 'true' } : {}) };
}

export async function startCluster(shards: number, workers: number, periodMs: number, leaseMs: number, poolMib: number, nodes = 3, copyMoves = false): Promise<Cluster> {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-reshard-bench-'));
  const base = 10_000 + Math.floor(Math.random() * 220) * 100;
  const child = spawn(process.execPath, [bin, 'cluster', '--dir', dir, '--base-port', String(base), '--nodes', String(nodes), '--shards', String(shards), '--workers', String(workers), '--pool-mib', String(poolMib), '--lease-ms', String(leaseMs)], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...reshardingEnv(periodMs, copyMoves) },
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const t0 = Date.now();
  while (!out.includes('serving.')) {
    if (child.exitCode !== null || Date.now() - t0 > 120_000) throw new Error(`rowan cluster did not start:\n${out}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  const ready = [...out.matchAll(/node (\d+) ready \(pid (\d+)\)/g)].map((m) => ({ id: Number(m[1]), pid: Number(m[2]) })).sort((a, b) => a.id - b.id);
  return {
    dir,
    file: join(dir, 'cluster.json'),
    manager: undefined,
    network: 'loopback, shm fabric',
    links: null,
    pids: ready.map((r) => r.pid),
    ids: ready.map((r) => r.id),
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGINT');
      await new Promise((r) => (child.exitCode !== null ? r(null) : child.once('exit', r)));
    },
  };
}

/**
 * The same cluster with each node on a host of its own (a network namespace, test/fixtures/netns.ts)
 * whose link sends at most `mbit` Mbit/s (tc tbf on its eth0): a server's NIC, a per-node resource that
 * the three nodes here do not share, unlike this machine's 2 cores. Replication runs over the tcp fabric,
 * so backup writes cross the links too. This process reaches the hosts through the lab's root link.
 */
export async function startNetnsCluster(shards: number, periodMs: number, leaseMs: number, poolMib: number, mbit: number, nodes = 3, copyMoves = false): Promise<Cluster> {
  const why = netnsUnavailable();
  if (why !== null) throw new Error(`a node per network namespace is not possible here (${why}); --link-mbit=0 runs the nodes on loopback`);
  const dir = mkdtempSync(join(tmpdir(), 'rowan-reshard-bench-'));
  const segmentBytes = 4 << 20;
  const c = await NetnsCluster.start({
    dir, nodes, replication: 3, shards, leaseMs, clients: [], autoReshard: true, fileStore: true,
    pool: { segmentCount: Math.ceil((poolMib << 20) / segmentBytes), segmentBytes },
    env: reshardingEnv(periodMs, copyMoves),
  });
  c.lab.rootLink();
  const ids = Array.from({ length: nodes }, (_, id) => id);
  for (const id of ids) c.lab.shape(`n${id}`, mbit);
  return {
    dir,
    file: c.file,
    manager: { host: c.addr('cm'), port: MANAGER_PORT },
    network: `a network namespace per node, each sending at most ${mbit} Mbit/s (tc tbf), tcp fabric`,
    links: { mbit, txBytes: () => ids.map((id) => c.lab.txBytes(`n${id}`)) },
    pids: ids.map((id) => c.procs.get(id)!.pid!),
    ids,
    stop: () => c.destroy(),
  };
}

export function managerEvents(dir: string): Record<string, unknown>[] {
  return readFileSync(join(dir, 'manager.log'), 'utf8').split('\n').filter((l) => l.startsWith('{') && l.includes('"event"')).map((l) => JSON.parse(l) as Record<string, unknown>);
}
