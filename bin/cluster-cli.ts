// `rowan cluster`: a local ROWAN-KV cluster on this machine, the README's main command. It writes (or
// reuses) DIR/cluster.json, the embedded configuration store, starts the configuration manager
// (`rowan manager`, §4.5) and one `rowan start` process per node on 127.0.0.1 with emulated PM under
// DIR/node-N holding a lease with it, prints the endpoints and serves until Ctrl-C, when it stops
// every process (SIGTERM: drain, persist, unmap) and exits. Run it again on the same DIR and the nodes
// cold-start from their pools: everything acknowledged before is served again.
//
// A node that dies is failed over by the manager (its shards move to their backups, the term goes up);
// the launcher keeps running, prints each failover as the configuration file changes, and restarts
// the node with backoff (./cluster-supervise.ts): listed dead, it rejoins with the pool it kept and
// re-replication gives it shards again (§4.5 phase 3). A manager that dies is restarted (the nodes'
// manager leases run out meanwhile; they serve on their peer leases while they all reach each other,
// actors/shared/peer-lease.ts).
//
// With --zookeeper HOST:PORT the configuration lives in ZooKeeper only (znode /rowan/NAME/config, NAME
// from --cluster-name): no DIR/cluster.json is written, so there is one truth. DIR/cluster-store.json
// records where it is, so `rowan cluster` on DIR again (with or without --zookeeper) restarts the
// cluster from the znode, and `rowan cluster stop` finds its nodes.
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Option, type Command } from 'commander';
import { logLevels } from '../config/base/log.js';
import { threadPolicies } from '../config/model.js';
import { loadTls } from '../runtime/net/tls.js';
import { CLUSTER_REPLICATION_MODES, newChecksumSeed, planCluster, type ClusterConfig, type ClusterReplicationMode } from '../config/cluster.js';
import { FileConfigStore, type ConfigStore } from '../config/store.js';
import type { ZooKeeperConfigStore } from '../config/zk-store.js';
import type { StoreSpec } from '../config/store-spec.js';
import { ZK_FLAG_HELP, ZK_NAME_HELP } from './store-flags.js';
import { STORE_POINTER, readClusterIn, storeFor } from './cluster-store.js';
import { ErrorCodes, RowanError } from '../config/base/errors.js';
import { FABRIC_KINDS, type FabricKind } from '../config/base/fabric-kinds.js';
import { checkNodeFabric } from '../runtime/fabric/check.js';
import { loopbackDevices, type VerbsDevices } from '../runtime/fabric/verbs-devices.js';
import { defaultTimings } from '../config/timings.js';
import { describeChange } from './cluster-supervise.js';
import { DETACHED_ENV, detachCluster } from './cluster-detach.js';
import { parseDebugPause } from '../actors/manager/protocol.js';
import { checkPortsFree, claimClusterDir, stopCluster } from './cluster-lifecycle.js';
import { ClusterLauncher, type LaunchPlan } from './cluster-launcher.js';

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
  leaseMs: string | number;
  renewMs?: string;
  logLevel?: string;
  /** false with --no-auto-reshard (passed to the manager). */
  autoReshard?: boolean;
  indexKeys?: string;
  indexKeysMax?: string;
  threads?: string;
  zookeeper?: string;
  clusterName?: string;
  /** Configuration managers: 1, or with --zookeeper an active one and standbys (actors/manager/election.ts). */
  managers?: string | number;
  zkSessionMs?: string;
  /** false (--no-restart): a node that dies stays down, as before supervision. */
  restart?: boolean;
  /** --detach: run the launcher in the background (./cluster-detach.ts). */
  detach?: boolean;
  /** TLS for every node and the manager (one certificate for the local cluster, docs/security.md). */
  tlsCert?: string;
  tlsKey?: string;
  tlsCa?: string;
  /** --debug-pause STEP:MS, passed to the managers (fault tests). */
  debugPause?: string;
  /** Hidden developer flag: nodes run --fabric verbs over the loopback RNIC in this directory. */
  verbsLoopback?: string;
}

/** --tls-cert/--tls-key/--tls-ca as given (absolute), for the nodes' and the manager's command lines. */
function tlsArgs(o: ClusterOpts): string[] {
  const given = [o.tlsCert, o.tlsKey, o.tlsCa].filter((f) => f !== undefined).length;
  if (given === 0) return [];
  if (given !== 3) throw new RowanError(ErrorCodes.BAD_ARGUMENT, '--tls-cert, --tls-key and --tls-ca go together');
  const files = { cert: resolve(o.tlsCert!), key: resolve(o.tlsKey!), ca: resolve(o.tlsCa!) };
  loadTls(files); // unreadable, non-PEM or world-readable key: said here, not by every node
  return ['--tls-cert', files.cert, '--tls-key', files.key, '--tls-ca', files.ca];
}

function verbsDevicesOf(o: ClusterOpts): VerbsDevices | undefined {
  return o.verbsLoopback !== undefined ? loopbackDevices(o.verbsLoopback) : undefined;
}

function int(name: string, v: string | number, lo: number, hi: number): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < lo || n > hi) throw new RowanError(ErrorCodes.BAD_ARGUMENT, `--${name}: '${v}' is not an integer in [${lo}, ${hi}]`);
  return n;
}

/** The cluster in DIR: the stored one if there is one (a restart), else a new plan. */
async function clusterFor(dir: string, o: ClusterOpts, store: ConfigStore): Promise<{ cluster: ClusterConfig; fresh: boolean }> {
  if (store instanceof FileConfigStore) {
    if (existsSync(store.path)) return { cluster: store.readSync(), fresh: false };
  } else {
    const zk = store as ZooKeeperConfigStore;
    const stored = await zk.readIfExists();
    if (stored) {
      const foreign = stored.nodes.find((n) => !n.dataDir.startsWith(dir + '/'));
      if (foreign) throw new RowanError(ErrorCodes.BAD_CONFIG, `the configuration in zk://${zk.connect}${zk.path} is another cluster's (node ${foreign.id} keeps its data in ${foreign.dataDir}, outside ${dir}); give another --cluster-name`);
      return { cluster: stored, fresh: false };
    }
  }
  if (!(CLUSTER_REPLICATION_MODES as readonly string[]).includes(o.replicationMode)) {
    throw new RowanError(ErrorCodes.BAD_ARGUMENT, `--replication-mode: '${o.replicationMode}' (${CLUSTER_REPLICATION_MODES.join('|')})`);
  }
  const n = int('nodes', o.nodes, 1, 16);
  const workers = int('workers', o.workers, 1, 8);
  const base = int('base-port', o.basePort, 1024, 60000);
  if (!(FABRIC_KINDS as readonly string[]).includes(o.fabric)) throw new RowanError(ErrorCodes.BAD_ARGUMENT, `--fabric: '${o.fabric}' (${FABRIC_KINDS.join('|')})`);
  const nodes = Array.from({ length: n }, (_, id) => ({
    id,
    host: '127.0.0.1',
    dataDir: join(dir, `node-${id}`),
    workerPorts: Array.from({ length: workers }, (_, w) => base + id * 10 + w),
    // tcp: the nic's port; verbs: the control actor's side channel (QP endpoints, runtime/fabric/verbs-connect.ts).
    fabric: { kind: o.fabric as FabricKind, host: '127.0.0.1', port: base + 500 + id },
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
    // Keys every log block's checksum (docs/security.md), with or without --no-auth.
    checksumSeed: newChecksumSeed(),
  });
  return { cluster, fresh: true };
}

/** Flags that only shape a new cluster: on an existing one they are ignored, and said so. */
const NEW_CLUSTER_FLAGS: [keyof ClusterOpts, string][] = [
  ['nodes', '--nodes'], ['shards', '--shards'], ['replication', '--replication'], ['replicationMode', '--replication-mode'],
  ['workers', '--workers'], ['basePort', '--base-port'], ['fabric', '--fabric'], ['poolMib', '--pool-mib'], ['segmentKib', '--segment-kib'],
];

export async function runCluster(o: ClusterOpts, explicit: ReadonlySet<string> = new Set()): Promise<number> {
  tlsArgs(o); // half the TLS flags is bad usage, found before anything is made
  if (o.debugPause !== undefined) parseDebugPause(o.debugPause); // likewise a bad --debug-pause
  const dir = resolve(o.dir);
  mkdirSync(dir, { recursive: true });
  const { spec, clusterName } = storeFor(dir, o);
  // Checked before anything is written: standbys need an election, hence ZooKeeper.
  if (int('managers', o.managers ?? 1, 1, 9) > 1 && 'file' in spec) throw new RowanError(ErrorCodes.BAD_ARGUMENT, '--managers above 1 needs --zookeeper: the standby managers are elected through ZooKeeper');
  // The ZooKeeper client is imported only with --zookeeper (a cluster on files does not load it).
  const store: ConfigStore = 'file' in spec ? new FileConfigStore(spec.file) : await (await import('../config/zk-store.js')).ZooKeeperConfigStore.open({ connect: spec.zookeeper, path: spec.path });
  try {
    const { cluster, fresh } = await clusterFor(dir, o, store);
    // Said once, here, not by every node failing to start: no RDMA device, ROWAN_ERR_VERBS_NO_DEVICE.
    if (cluster.nodes.some((n) => n.fabric.kind === 'verbs')) checkNodeFabric('verbs', verbsDevicesOf(o));
    // Nothing is written before we know the cluster is not running already and every port is free.
    const release = await claimClusterDir(dir, fresh ? null : cluster);
    try {
      await checkPortsFree(cluster);
      if (!('file' in spec)) writeFileSync(join(dir, STORE_POINTER), JSON.stringify({ zookeeper: spec.zookeeper, clusterName }, null, 2) + '\n');
      return await new ClusterLauncher(launchPlan(dir, { store, spec, clusterName }, cluster, fresh, o, explicit)).run();
    } finally {
      release();
    }
  } finally {
    if (!(store instanceof FileConfigStore)) (store as ZooKeeperConfigStore).close();
  }
}

interface Stored {
  store: ConfigStore;
  spec: StoreSpec;
  clusterName: string;
}

/** The flags, checked, as the launcher's plan (./cluster-launcher.ts). */
function launchPlan(dir: string, st: Stored, cluster: ClusterConfig, fresh: boolean, o: ClusterOpts, explicit: ReadonlySet<string>): LaunchPlan {
  const pool = () => {
    const segmentBytes = int('segment-kib', o.segmentKib, 64, 4096) * 1024;
    if ((segmentBytes & (segmentBytes - 1)) !== 0) throw new RowanError(ErrorCodes.BAD_ARGUMENT, `--segment-kib: '${o.segmentKib}' is not a power of two`);
    const segmentCount = Math.floor((int('pool-mib', o.poolMib, 8, 4096) * 1024 * 1024) / segmentBytes);
    if (segmentCount < 8)
      throw new RowanError(ErrorCodes.BAD_ARGUMENT, `--pool-mib ${o.poolMib} holds ${segmentCount} segments of ${segmentBytes / 1024} KiB; a pool needs at least 8 (a smaller --segment-kib, or a larger --pool-mib)`);
    return { segmentCount, segmentBytes };
  };
  return {
    dir, ...st, cluster, fresh, pool,
    ignoredFlags: fresh ? [] : NEW_CLUSTER_FLAGS.filter(([k]) => explicit.has(k)).map(([, flag]) => flag),
    managerCount: int('managers', o.managers ?? 1, 1, 9),
    leaseMs: int('lease-ms', o.leaseMs, defaultTimings.leaseMsMin, defaultTimings.leaseMsMax),
    supervise: o.restart !== false,
    tlsArgs: tlsArgs(o),
    tlsCa: o.tlsCa === undefined ? null : resolve(o.tlsCa),
    managerArgs: [
      ...(o.renewMs !== undefined ? ['--renew-ms', String(int('renew-ms', o.renewMs, 1, defaultTimings.leaseMsMax))] : []),
      ...(o.zkSessionMs !== undefined && !('file' in st.spec) ? ['--zk-session-ms', o.zkSessionMs] : []), ...(o.logLevel ? ['--log-level', o.logLevel] : []),
      ...(o.autoReshard === false ? ['--no-auto-reshard'] : []), ...(o.debugPause !== undefined ? ['--debug-pause', o.debugPause] : []),
    ],
    nodeArgs: [
      ...(o.logLevel ? ['--log-level', o.logLevel] : []), ...(o.threads !== undefined ? ['--threads', o.threads] : []),
      ...(o.indexKeys !== undefined ? ['--index-keys', o.indexKeys] : []), ...(o.indexKeysMax !== undefined ? ['--index-keys-max', o.indexKeysMax] : []),
      ...(o.verbsLoopback !== undefined ? ['--verbs-loopback', resolve(o.verbsLoopback)] : []),
    ],
  };
}

export { describeChange };

/** The options of `cmd` given on its command line, as flags again (but those in `skip`). */
function givenFlags(cmd: Command, skip: string[]): string[] {
  const out: string[] = [];
  for (const opt of cmd.options) {
    const key = opt.attributeName();
    if (skip.includes(key) || cmd.getOptionValueSource(key) !== 'cli' || !opt.long) continue;
    const v = cmd.getOptionValue(key) as unknown;
    if (opt.negate || typeof v === 'boolean') out.push(opt.long);
    else out.push(opt.long, String(v));
  }
  return out;
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
    .addOption(new Option('--threads <policy>', 'actors per thread: dedicated = one thread per actor (the paper); shared = the background actors (control, digest, clean, migration, nic) share one thread, each worker keeps its own; auto = shared when the node has fewer cores than actors (each node; default: auto)').choices(threadPolicies))
    .option('--base-port <port>', 'node N listens on base + 10N + worker, RESP on base + 200 + 10N + worker (Redis Cluster: base + 600 + 10N + worker); its NIC on base + 500 + N; metrics on base + 800 + N; the configuration manager on base + 490', asIs, 7100)
    .option('--fabric <kind>', 'how replication writes reach each node: shm (same host), tcp (its NIC actor) or verbs (RDMA: needs a device)', 'shm')
    // Developer flag, hidden from --help: see rowan start --verbs-loopback (docs/running.md).
    .addOption(new Option('--verbs-loopback <dir>', 'developer: --fabric verbs over the loopback RNIC in DIR').hideHelp())
    .option('--pool-mib <mib>', 'emulated PM per node, in MiB (a bounded log: clean actors reclaim it; PUTs get ROWAN_ERR_PM_FULL only when it is full of live data)', asIs, 128)
    .option('--segment-kib <kib>', 'PM segment size in KiB, a power of two (paper: 4096)', asIs, 4096)
    .option('--no-restart', 'leave a node that dies down (default: restart it with backoff; a failed-over node rejoins with the pool it kept and gets replicas again, each reconciled with its primary)')
    .option('--no-auto-reshard', 'the configuration manager moves hot shards only when asked (rowan reshard), not on its own (§4.6)')
    .option('--lease-ms <ms>', 'lease the configuration manager grants; a dead node is failed over after it expires (paper: 10)', asIs, defaultTimings.leaseMs)
    .option('--renew-ms <ms>', 'how often nodes renew their lease (default lease / 5; longer: fewer renewals, most of what an idle cluster spends; shorter: more traffic, but a node then fences itself only after lease - drift - renew ms without a renewal getting through)')
    .addOption(new Option('--log-level <level>', 'log level of the nodes and the configuration manager (their logs: DIR/node-N.log, DIR/manager.log; default: info, or ROWAN_LOG_LEVEL)').choices(logLevels))
    .option('--index-keys <n>', "keys each shard's index is sized for at start (grows on demand; see rowan start --help)")
    .option('--index-keys-max <n>', "most keys one shard's index may grow to (see rowan start --help)")
    .option('--zookeeper <host:port,...>', `${ZK_FLAG_HELP}: a new cluster's configuration is created there, not in DIR/cluster.json; DIR/${STORE_POINTER} remembers it, so running this again on DIR restarts the cluster from ZooKeeper`)
    .option('--cluster-name <name>', ZK_NAME_HELP)
    .option('--managers <n>', 'configuration managers to run; above 1 needs --zookeeper: they elect one active manager, the others stand by and take over when it dies (each on base + 490 + i, log DIR/manager-i.log)', asIs, 1)
    .option('--zk-session-ms <ms>', 'with --zookeeper: the managers\' ZooKeeper session timeout (see rowan manager --help)')
    .option('--tls-cert <file>', 'PEM certificate for every node and the manager (its names must cover 127.0.0.1): TLS on all their ports, mutual between them (with --tls-key, --tls-ca; clients then need --tls-ca)')
    .option('--tls-key <file>', 'PEM private key of --tls-cert, mode 0600')
    .option('--tls-ca <file>', 'PEM CA that signed --tls-cert; clients verify the nodes with it')
    .option('--debug-pause <step:ms>', 'for fault tests, never in production: passed to the configuration managers (see rowan manager --help)')
    .option('--detach', `run in the background: return once the cluster serves, printing its endpoints; the launcher's output goes to DIR/launcher.log, and rowan cluster stop --dir DIR stops it`)
    .action(function (this: Command) {
      const o = this.opts<ClusterOpts>();
      if (o.detach && process.env[DETACHED_ENV] !== '1') {
        // The launcher gets the flags given here again, without --detach (detachCluster adds --dir, absolute).
        return run(() => detachCluster(resolve(o.dir), givenFlags(this, ['detach', 'dir'])))();
      }
      const explicit = new Set(Object.keys(o).filter((k) => this.getOptionValueSource(k) === 'cli'));
      return run(() => runCluster(o, explicit))();
    })
    .command('stop')
    .description('stop the cluster in --dir: its launcher (which drains every node), or the nodes themselves when no launcher runs')
    .option('--timeout <ms>', 'how long to wait', (v) => Number(v), 30_000)
    .action(function (this: Command) {
      // --dir is the cluster command's own option (rowan cluster stop --dir DIR): read it from there.
      const o = this.optsWithGlobals<{ dir: string; timeout: number }>();
      return run(async () => {
        const dir = resolve(o.dir);
        const cluster = await readClusterIn(dir);
        console.log(await stopCluster(dir, cluster, o.timeout));
        return 0;
      })();
    });
}
