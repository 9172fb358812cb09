// `rowan cluster`: a local ROWAN-KV cluster on this machine, the README's main command. It writes (or
// reuses) DIR/cluster.json, the embedded configuration store, then runs one `rowan start` process per
// node on 127.0.0.1 with emulated PM under DIR/node-N, prints the endpoints and serves until Ctrl-C,
// when it stops every node (SIGTERM: drain, persist, unmap) and exits. Run it again on the same DIR
// and the nodes cold-start from their pools: everything acknowledged before is served again.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import type { Command } from 'commander';
import { CLUSTER_REPLICATION_MODES, planCluster, type ClusterConfig, type ClusterReplicationMode } from '../config/cluster.js';
import { FileConfigStore } from '../config/store.js';
import { ErrorCodes, RowanError } from '../config/base/errors.js';
import { LAUNCHER_PID_ENV, checkPortsFree, claimClusterDir, closeQuietly, openNodeLog, readLogFrom, stopCluster } from './cluster-lifecycle.js';

export interface ClusterOpts {
  dir: string;
  nodes: string | number;
  shards: string | number;
  replication: string | number;
  replicationMode: string;
  workers: string | number;
  basePort: string | number;
  fabric: string;
  poolMib: string | number;
  segmentKib: string | number;
  indexKeys?: string;
  indexKeysMax?: string;
}

const bin = new URL('../../bin/rowan', import.meta.url).pathname;

function int(name: string, v: string | number, lo: number, hi: number): number {
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
    // RESP (Redis protocol): single-endpoint ports and Redis Cluster ports (actors/worker/resp/).
    resp: {
      ports: Array.from({ length: workers }, (_, w) => base + 200 + id * 10 + w),
      clusterPorts: Array.from({ length: workers }, (_, w) => base + 600 + id * 10 + w),
    },
  }));
  const cluster = planCluster({
    nodes,
    shardCount: int('shards', o.shards, 1, 4096),
    replicationFactor: Math.min(int('replication', o.replication, 1, 16), n),
    replication: o.replicationMode as ClusterReplicationMode,
  });
  return { cluster, fresh: true };
}

function waitReady(child: ChildProcess, logFile: string, from: number, id: number, timeoutMs: number): Promise<void> {
  return new Promise((resolveReady, reject) => {
    const t0 = Date.now();
    const timer = setInterval(() => {
      const text = readLogFrom(logFile, from); // this run's lines only: the log is appended to
      if (text.includes('"msg":"node ready"')) {
        clearInterval(timer);
        resolveReady();
      } else if (child.exitCode !== null || Date.now() - t0 > timeoutMs) {
        clearInterval(timer);
        const last = text.trim().split('\n').slice(-3).join('\n');
        reject(new RowanError(ErrorCodes.ACTOR_FAILED, `node ${id} did not start (see ${logFile}):\n${last}`));
      }
    }, 100);
  });
}

/** Flags that only shape a new cluster: on an existing one they are ignored, and said so. */
const NEW_CLUSTER_FLAGS: [keyof ClusterOpts, string][] = [
  ['nodes', '--nodes'], ['shards', '--shards'], ['replication', '--replication'], ['replicationMode', '--replication-mode'],
  ['workers', '--workers'], ['basePort', '--base-port'], ['fabric', '--fabric'], ['poolMib', '--pool-mib'], ['segmentKib', '--segment-kib'],
];

export async function runCluster(o: ClusterOpts, explicit: ReadonlySet<string> = new Set()): Promise<number> {
  const dir = resolve(o.dir);
  mkdirSync(dir, { recursive: true });
  const { cluster, fresh } = clusterFor(dir, o);
  const file = join(dir, 'cluster.json');
  // Nothing is written before we know the cluster is not running already and every port is free.
  const release = await claimClusterDir(dir, fresh ? null : cluster);
  try {
    await checkPortsFree(cluster);
    return await launch(dir, file, cluster, fresh, o, explicit);
  } finally {
    release();
  }
}

async function launch(dir: string, file: string, cluster: ClusterConfig, fresh: boolean, o: ClusterOpts, explicit: ReadonlySet<string>): Promise<number> {
  if (fresh) await new FileConfigStore(file).write(cluster, null);
  // The node config (pool size) is fixed when the cluster is made: a restart must map the same pools.
  const nodeConfig = join(dir, 'node-config.json');
  if (fresh || !existsSync(nodeConfig)) {
    const segmentBytes = int('segment-kib', o.segmentKib, 64, 4096) * 1024;
    if ((segmentBytes & (segmentBytes - 1)) !== 0) throw new RowanError(ErrorCodes.BAD_ARGUMENT, `--segment-kib: '${o.segmentKib}' is not a power of two`);
    const poolSegments = Math.floor((int('pool-mib', o.poolMib, 8, 4096) * 1024 * 1024) / segmentBytes);
    if (poolSegments < 8)
      throw new RowanError(ErrorCodes.BAD_ARGUMENT, `--pool-mib ${o.poolMib} holds ${poolSegments} segments of ${segmentBytes / 1024} KiB; a pool needs at least 8 (a smaller --segment-kib, or a larger --pool-mib)`);
    writeFileSync(nodeConfig, JSON.stringify({ pool: { segmentCount: poolSegments, segmentBytes } }, null, 2) + '\n');
  }
  console.log(`${fresh ? 'new' : 'existing'} cluster in ${dir}: ${cluster.nodes.length} nodes, ${cluster.shardCount} shards, replication ${cluster.replicationFactor} (${cluster.replication}), term ${cluster.term}`);
  if (!fresh) {
    const ignored = NEW_CLUSTER_FLAGS.filter(([k]) => explicit.has(k)).map(([, flag]) => flag);
    if (ignored.length > 0) console.log(`warning: ${ignored.join(', ')} ignored: they shape a new cluster, and ${dir} holds one already (delete it to start afresh)`);
  }

  const children: ChildProcess[] = [];
  let stopping = false;
  const stopAll = () => {
    if (stopping) return;
    stopping = true;
    console.log('stopping the cluster ...');
    for (const c of children) if (c.exitCode === null) c.kill('SIGTERM');
  };
  process.once('SIGINT', stopAll);
  process.once('SIGTERM', stopAll);
  process.once('SIGHUP', stopAll); // the terminal closed: stop the nodes rather than leave them running

  // All nodes start at once (each cold-starts its own pool); the launcher reports each as it is ready.
  const starting = cluster.nodes.map((n) => {
    mkdirSync(n.dataDir, { recursive: true });
    const logFile = join(dir, `node-${n.id}.log`);
    const { fd: out, from } = openNodeLog(logFile);
    const args = [bin, 'start', '--data-dir', n.dataDir, '--cluster', file, '--node-id', String(n.id), '--config', nodeConfig,
      '--roles', `worker:${n.workerPorts.length},control,digest,clean`, '--fabric', n.fabric.kind, '--fabric-port', String(n.fabric.port),
      ...(o.indexKeys !== undefined ? ['--index-keys', o.indexKeys] : []), ...(o.indexKeysMax !== undefined ? ['--index-keys-max', o.indexKeysMax] : [])];
    // Own process group: a terminal ^C reaches only this launcher, which stops each node once (SIGTERM).
    // ROWAN_LAUNCHER_PID: the node sets a parent-death signal, so it goes down with this launcher
    // however the launcher dies (SIGKILL included), instead of living on under PID 1.
    const child = spawn(process.execPath, args, { stdio: ['ignore', out, out], detached: true, env: { ...process.env, [LAUNCHER_PID_ENV]: String(process.pid) } });
    closeQuietly(out);
    children.push(child);
    console.log(`starting node ${n.id} (log ${logFile})`);
    return waitReady(child, logFile, from, n.id, 120_000).then(() => {
      const resp = n.resp ? `; redis on ${n.resp.ports.map((p) => `${n.host}:${p}`).join(', ')} (cluster ${n.resp.clusterPorts.join(', ')})` : '';
      console.log(`node ${n.id} ready: clients on ${n.workerPorts.map((p) => `${n.host}:${p}`).join(', ')}${resp}`);
    });
  });
  const started = await Promise.allSettled(starting);
  const failed = started.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed.length > 0) {
    for (const f of failed) console.error((f.reason as Error).message);
    stopAll();
    await Promise.all(children.map((c) => (c.exitCode !== null || c.signalCode !== null ? null : new Promise((r) => c.once('exit', r)))));
    return 1;
  }
  // The command as this user can type it: bin/rowan from the checkout (rowan is not on PATH).
  const rel = relative(process.cwd(), bin);
  const cmd = rel.startsWith('..') ? bin : rel;
  console.log(`\nserving. Try:\n  ${cmd} put hello world --cluster ${file}\n  ${cmd} get hello --cluster ${file}\nCtrl-C stops the cluster; running this again on ${dir} restarts it with its data.`);

  const codes = await Promise.all(children.map((c) => new Promise<number>((r) => (c.exitCode !== null ? r(c.exitCode) : c.once('exit', (code) => r(code ?? 1))))));
  if (!stopping) {
    console.error(`a node exited unexpectedly (codes ${codes.join(', ')}); stopping the rest`);
    stopAll();
    return 1;
  }
  const bad = codes.filter((c) => c !== 0).length;
  console.log(bad ? `cluster stopped; ${bad} node(s) exited non-zero (see the node logs)` : 'cluster stopped');
  return bad ? 1 : 0;
}

/** Keep a flag's text as given (int() parses it); the default stays a number so --help prints it as one. */
const asIs = (v: string): string | number => v;

export function registerClusterCommand(p: Command, run: (f: () => Promise<number>) => () => Promise<void>): void {
  p.command('cluster')
    .description('run a local ROWAN-KV cluster: N node processes on 127.0.0.1 with emulated PM under --dir; Ctrl-C stops it, running it again restarts it with its data')
    .option('--dir <dir>', 'cluster directory: cluster.json, node-N/ data dirs, node-N.log', './rowan-cluster')
    .option('--nodes <n>', 'nodes (processes) for a new cluster', asIs, 3)
    .option('--shards <n>', 'shards for a new cluster', asIs, 48)
    .option('--replication <n>', 'replicas per shard, primary included', asIs, 3)
    .option('--replication-mode <mode>', `how primaries replicate to backups, for a new cluster (ROWAN §6.1): ${CLUSTER_REPLICATION_MODES.join('|')}`, 'rowan')
    .option('--workers <n>', 'worker actors (client ports) per node', asIs, 1)
    .option('--base-port <port>', 'node N listens on base + 10N + worker, RESP on base + 200 + 10N + worker (Redis Cluster: base + 600 + 10N + worker); its NIC on base + 500 + N', asIs, 7100)
    .option('--fabric <kind>', 'how replication writes reach each node: shm (same host) or tcp (its NIC actor)', 'shm')
    .option('--pool-mib <mib>', 'emulated PM per node, in MiB (a bounded log: clean actors reclaim it; PUTs get ROWAN_ERR_PM_FULL only when it is full of live data)', asIs, 128)
    .option('--segment-kib <kib>', 'PM segment size in KiB, a power of two (paper: 4096)', asIs, 4096)
    .option('--index-keys <n>', "keys each shard's index is sized for at start (grows on demand; see rowan start --help)")
    .option('--index-keys-max <n>', "most keys one shard's index may grow to (see rowan start --help)")
    .action(function (this: Command) {
      const explicit = new Set(Object.keys(this.opts()).filter((k) => this.getOptionValueSource(k) === 'cli'));
      return run(() => runCluster(this.opts<ClusterOpts>(), explicit))();
    })
    .command('stop')
    .description('stop the cluster in --dir: its launcher (which drains every node), or the nodes themselves when no launcher runs')
    .option('--timeout <ms>', 'how long to wait', (v) => Number(v), 30_000)
    .action(function (this: Command) {
      // --dir is the cluster command's own option (rowan cluster stop --dir DIR): read it from there.
      const o = this.optsWithGlobals<{ dir: string; timeout: number }>();
      return run(async () => {
        const dir = resolve(o.dir);
        const file = join(dir, 'cluster.json');
        if (!existsSync(file)) throw new RowanError(ErrorCodes.BAD_ARGUMENT, `no cluster in ${dir} (${file} is missing)`);
        console.log(await stopCluster(dir, new FileConfigStore(file).readSync(), o.timeout));
        return 0;
      })();
    });
}
