// `rowan cluster`: a local ROWAN-KV cluster on this machine, the README's main command. It writes (or
// reuses) DIR/cluster.json, the embedded configuration store, starts the configuration manager
// (`rowan manager`, §4.5) and one `rowan start` process per node on 127.0.0.1 with emulated PM under
// DIR/node-N holding a lease with it, prints the endpoints and serves until Ctrl-C, when it stops
// every process (SIGTERM: drain, persist, unmap) and exits. Run it again on the same DIR and the nodes
// cold-start from their pools: everything acknowledged before is served again.
//
// A node that dies is failed over by the manager (its shards move to their backups, the term goes up);
// the launcher keeps running, prints each failover as the configuration file changes, and restarts
// the node with backoff (./cluster-supervise.ts): listed dead, it rejoins with an empty pool and
// re-replication gives it shards again (§4.5 phase 3). A manager that dies is restarted (the nodes'
// manager leases run out meanwhile; they serve on their peer leases while they all reach each other,
// actors/kv/peer-lease.ts).
//
// With --zookeeper HOST:PORT the configuration lives in ZooKeeper only (znode /rowan/NAME/config, NAME
// from --cluster-name): no DIR/cluster.json is written, so there is one truth. DIR/cluster-store.json
// records where it is, so `rowan cluster` on DIR again (with or without --zookeeper) restarts the
// cluster from the znode, and `rowan cluster stop` finds its nodes.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { Option, type Command } from 'commander';
import { logLevels } from '../config/base/log.js';
import { CLIENT_PASSWORD_FILE, SECRET_FILE, writeNewPasswordFile, writeNewSecretFile } from '../config/base/secret.js';
import { loadTls } from '../runtime/net/tls.js';
import { CLUSTER_REPLICATION_MODES, newChecksumSeed, planCluster, type ClusterConfig, type ClusterReplicationMode } from '../config/cluster.js';
import { FileConfigStore, type ConfigStore } from '../config/store.js';
import { ZooKeeperConfigStore } from '../config/zk-store.js';
import { describeStore, type StoreSpec } from '../config/store-spec.js';
import { ZK_FLAG_HELP, ZK_NAME_HELP, storeArgs } from './store-flags.js';
import { STORE_POINTER, readClusterIn, storeFor } from './cluster-store.js';
import { ErrorCodes, RowanError } from '../config/base/errors.js';
import { FABRIC_KINDS, type FabricKind } from '../config/base/fabric-kinds.js';
import { checkNodeFabric } from '../runtime/fabric/check.js';
import { loopbackDevices, type VerbsDevices } from '../runtime/fabric/verbs-devices.js';
import { checkTimings, deadWaitMsFor, defaultTimings, leaseTiming } from '../config/timings.js';
import { describeChange, RestartBackoff, waitListedDead } from './cluster-supervise.js';
import { DETACHED_ENV, detachCluster } from './cluster-detach.js';
import { LAUNCHER_PID_ENV, managerPortOf, metricsPortOf, checkPortsFree, claimClusterDir, closeQuietly, openNodeLog, stopCluster, waitReady } from './cluster-lifecycle.js';

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
  logLevel?: string;
  /** false with --no-auto-reshard (passed to the manager). */
  autoReshard?: boolean;
  indexKeys?: string;
  indexKeysMax?: string;
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

const bin = new URL('../../bin/rowan', import.meta.url).pathname;

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
  } else if (store instanceof ZooKeeperConfigStore) {
    const stored = await store.readIfExists();
    if (stored) {
      const foreign = stored.nodes.find((n) => !n.dataDir.startsWith(dir + '/'));
      if (foreign) throw new RowanError(ErrorCodes.BAD_CONFIG, `the configuration in zk://${store.connect}${store.path} is another cluster's (node ${foreign.id} keeps its data in ${foreign.dataDir}, outside ${dir}); give another --cluster-name`);
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
  const dir = resolve(o.dir);
  mkdirSync(dir, { recursive: true });
  const { spec, clusterName } = storeFor(dir, o);
  // Checked before anything is written: standbys need an election, hence ZooKeeper.
  if (int('managers', o.managers ?? 1, 1, 9) > 1 && 'file' in spec) throw new RowanError(ErrorCodes.BAD_ARGUMENT, '--managers above 1 needs --zookeeper: the standby managers are elected through ZooKeeper');
  const store: ConfigStore = 'file' in spec ? new FileConfigStore(spec.file) : await ZooKeeperConfigStore.open({ connect: spec.zookeeper, path: spec.path });
  try {
    const { cluster, fresh } = await clusterFor(dir, o, store);
    // Said once, here, not by every node failing to start: no RDMA device, ROWAN_ERR_VERBS_NO_DEVICE.
    if (cluster.nodes.some((n) => n.fabric.kind === 'verbs')) checkNodeFabric('verbs', verbsDevicesOf(o));
    // Nothing is written before we know the cluster is not running already and every port is free.
    const release = await claimClusterDir(dir, fresh ? null : cluster);
    try {
      await checkPortsFree(cluster);
      if (!('file' in spec)) writeFileSync(join(dir, STORE_POINTER), JSON.stringify({ zookeeper: spec.zookeeper, clusterName }, null, 2) + '\n');
      return await launch(dir, { store, spec, clusterName }, cluster, fresh, o, explicit);
    } finally {
      release();
    }
  } finally {
    if (store instanceof ZooKeeperConfigStore) store.close();
  }
}

interface Stored {
  store: ConfigStore;
  spec: StoreSpec;
  clusterName: string;
}

async function launch(dir: string, st: Stored, cluster: ClusterConfig, fresh: boolean, o: ClusterOpts, explicit: ReadonlySet<string>): Promise<number> {
  const where = storeArgs(st.spec, st.clusterName);
  if (fresh) await st.store.write(cluster, null);
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
  // The cluster secret and the client password (docs/security.md): made with the cluster, mode
  // 0600. Nodes and the manager prove the secret to each other; clients prove the password (rowan
  // put/get/del read it beside cluster.json), which grants no node's rights. A cluster made before
  // either existed gets it now, and is told so: its clients must switch to the password.
  const secretFile = join(dir, SECRET_FILE);
  if (!existsSync(secretFile)) {
    writeNewSecretFile(secretFile);
    if (!fresh) console.log(`this cluster had no secret: generated ${secretFile} (mode 0600); nodes and the manager prove it to each other`);
  }
  const passwordFile = join(dir, CLIENT_PASSWORD_FILE);
  if (!existsSync(passwordFile)) {
    writeNewPasswordFile(passwordFile);
    if (!fresh) console.log(`this cluster had no client password: generated ${passwordFile} (mode 0600); clients and Redis users now need it instead of the cluster secret, which the client and Redis ports no longer accept (redis-cli -a "$(cat ${passwordFile})")`);
  }
  console.log(`${fresh ? 'new' : 'existing'} cluster in ${dir}: ${cluster.nodes.length} nodes, ${cluster.shardCount} shards, replication ${cluster.replicationFactor} (${cluster.replication}), term ${cluster.term}; configuration in ${describeStore(st.spec)}`);
  if (!fresh) {
    const ignored = NEW_CLUSTER_FLAGS.filter(([k]) => explicit.has(k)).map(([, flag]) => flag);
    if (ignored.length > 0) console.log(`warning: ${ignored.join(', ')} ignored: they shape a new cluster, and ${dir} holds one already (delete it to start afresh)`);
  }

  const children = new Map<number, ChildProcess>();
  const managerCount = int('managers', o.managers ?? 1, 1, 9);
  const managers: (ChildProcess | null)[] = Array.from({ length: managerCount }, () => null);
  let stopping = false;
  let wake: () => void = () => {};
  const live = (c: ChildProcess | null): c is ChildProcess => c !== null && c.exitCode === null && c.signalCode === null;
  // The manager stops first: nodes that drain and close their lease connections must not look like
  // failures (it would fail them over, and a restart would find them dead).
  const stopAll = () => {
    if (stopping) return;
    stopping = true;
    console.log('stopping the cluster ...');
    const nodes = () => {
      for (const c of children.values()) if (live(c)) c.kill('SIGTERM');
      wake();
    };
    // Every manager at once: a standby stopping never acts (its election stops first, in its drain).
    const ms = managers.filter(live);
    if (ms.length === 0) return nodes();
    const timer = setTimeout(nodes, 5000);
    let left = ms.length;
    for (const m of ms) {
      m.once('exit', () => {
        if (--left > 0) return;
        clearTimeout(timer);
        nodes();
      });
      m.kill('SIGTERM');
    }
  };
  process.once('SIGINT', stopAll);
  process.once('SIGTERM', stopAll);
  // Under a terminal, SIGHUP means it closed: stop the nodes rather than leave them running. A detached
  // launcher has no terminal, so a SIGHUP is someone else's and does not stop the cluster.
  const detached = process.env[DETACHED_ENV] === '1';
  if (detached) process.on('SIGHUP', () => console.log('SIGHUP ignored: this launcher is detached (rowan cluster stop stops it)'));
  else process.once('SIGHUP', stopAll);
  const launcherEnv = { ...process.env, [LAUNCHER_PID_ENV]: String(process.pid) };

  const managerPort = managerPortOf(cluster);
  const leaseMs = int('lease-ms', o.leaseMs, defaultTimings.leaseMsMin, defaultTimings.leaseMsMax);
  // The manager grants this lease; the supervisor's wait for a dead node to be listed dead derives from it.
  const deadWaitMs = deadWaitMsFor(checkTimings(defaultTimings), leaseTiming(leaseMs));
  // Manager i: port base + 490 + i, log DIR/manager.log (i = 0) or DIR/manager-i.log, runtime dir DIR/manager[-i].
  const suffix = (i: number) => (i === 0 ? '' : `-${i}`);
  const managerAddrs = managers.map((_, i) => `127.0.0.1:${managerPort + i}`).join(',');
  const startManager = async (i: number): Promise<void> => {
    const logFile = join(dir, `manager${suffix(i)}.log`);
    const { fd: out, from } = openNodeLog(logFile);
    const args = [bin, 'manager', ...where, '--port', String(managerPort + i), '--lease-ms', String(leaseMs), '--data-dir', join(dir, `manager${suffix(i)}`), '--secret-file', secretFile, ...tlsArgs(o),
      ...(o.zkSessionMs !== undefined && !('file' in st.spec) ? ['--zk-session-ms', o.zkSessionMs] : []), ...(o.logLevel ? ['--log-level', o.logLevel] : []), ...(o.autoReshard === false ? ['--no-auto-reshard'] : [])];
    // Like a node: its own process group, and down with this launcher however the launcher dies.
    const m = spawn(process.execPath, args, { stdio: ['ignore', out, out], detached: true, env: launcherEnv });
    managers[i] = m;
    closeQuietly(out);
    const which = managerCount > 1 ? `configuration manager ${i}` : 'the configuration manager';
    console.log(`starting ${which} (log ${logFile})`);
    await waitReady(m, logFile, from, -1, 60_000, join(dir, `manager${suffix(i)}`));
    console.log(`${managerCount > 1 ? `configuration manager ${i}` : 'configuration manager'} ready on 127.0.0.1:${managerPort + i} (pid ${m.pid}), lease ${leaseMs} ms${managerCount > 1 ? ' (the elected one serves; the others stand by)' : ''}`);
  };
  try {
    // One after the other: the first becomes the active one (lowest election znode), the rest stand by.
    for (let i = 0; i < managerCount; i++) await startManager(i);
  } catch (err) {
    console.error((err as Error).message);
    stopAll();
    return 1;
  }

  const dead = new Set(cluster.dead ?? []);
  const supervise = o.restart !== false;
  for (const id of dead) console.log(`node ${id} is dead in the stored configuration (term ${cluster.term}); ${supervise ? 'it rejoins with an empty pool (its data is stale)' : 'it stays down (--no-restart)'}`);
  const backoff = new Map<number, RestartBackoff>();
  // rejoin: the node was failed over; `rowan start --rejoin` discards its pool and asks to come back.
  const spawnNode = (n: ClusterConfig['nodes'][number], rejoin: boolean): Promise<void> => {
    mkdirSync(n.dataDir, { recursive: true });
    const logFile = join(dir, `node-${n.id}.log`);
    const { fd: out, from } = openNodeLog(logFile);
    const args = [bin, 'start', '--data-dir', n.dataDir, ...where, '--node-id', String(n.id), '--config', nodeConfig, '--secret-file', secretFile, '--client-password-file', passwordFile, ...tlsArgs(o),
      '--roles', `worker:${n.workerPorts.length},control,digest,clean`, '--fabric', n.fabric.kind, '--fabric-port', String(n.fabric.port),
      '--manager', managerAddrs, '--metrics-port', String(metricsPortOf(cluster, n.id)), ...(o.logLevel ? ['--log-level', o.logLevel] : []),
      ...(o.indexKeys !== undefined ? ['--index-keys', o.indexKeys] : []), ...(o.indexKeysMax !== undefined ? ['--index-keys-max', o.indexKeysMax] : []),
      ...(rejoin ? ['--rejoin'] : []), ...(o.verbsLoopback !== undefined ? ['--verbs-loopback', resolve(o.verbsLoopback)] : [])];
    // Own process group: a terminal ^C reaches only this launcher, which stops each node once (SIGTERM).
    // ROWAN_LAUNCHER_PID: the node sets a parent-death signal, so it goes down with this launcher
    // however the launcher dies (SIGKILL included), instead of living on under PID 1.
    const child = spawn(process.execPath, args, { stdio: ['ignore', out, out], detached: true, env: launcherEnv });
    closeQuietly(out);
    children.set(n.id, child);
    const b = backoff.get(n.id) ?? new RestartBackoff();
    backoff.set(n.id, b);
    b.started(Date.now());
    console.log(`starting node ${n.id}${rejoin ? ' with an empty pool to rejoin' : ''} (log ${logFile})`);
    if (readyToWatch) watchNode(n.id, child);
    return waitReady(child, logFile, from, n.id, 120_000, n.dataDir).then(() => {
      const resp = n.resp ? `; redis on ${n.resp.ports.map((p) => `${n.host}:${p}`).join(', ')} (cluster ${n.resp.clusterPorts.join(', ')})` : '';
      console.log(`node ${n.id} ready (pid ${child.pid}): clients on ${n.workerPorts.map((p) => `${n.host}:${p}`).join(', ')}${resp}; metrics http://${n.host}:${metricsPortOf(cluster, n.id)}/metrics`);
    });
  };
  let codes = 0;
  let readyToWatch = false;
  // Keep going when a node dies: report it, restart it (unless --no-restart), report the configuration changes.
  const watchNode = (id: number, c: ChildProcess): void => {
    c.once('exit', (code, signal) => {
      if (code !== 0) codes++;
      wake();
      if (stopping) return;
      if (!supervise) return console.log(`node ${id} (pid ${c.pid}) exited (${signal ?? `code ${code}`}); the configuration manager fails it over`);
      const ms = backoff.get(id)!.next(Date.now());
      console.log(`node ${id} (pid ${c.pid}) exited (${signal ?? `code ${code}`}); the configuration manager fails it over; restarting it in ${ms} ms`);
      setTimeout(() => {
        if (stopping) return;
        void waitListedDead(st.store, id, () => stopping, deadWaitMs).then((isDead) => {
          if (stopping) return;
          const n = cluster.nodes.find((x) => x.id === id)!;
          console.log(`restarting node ${id}: ${isDead ? 'failed over, it rejoins with an empty pool' : 'not failed over, it restarts with its data'}`);
          spawnNode(n, isDead).catch((err: Error) => console.error(`node ${id} did not come back: ${err.message}`));
        });
      }, ms).unref();
    });
  };
  // All nodes start at once (each cold-starts its own pool); the launcher reports each as it is ready.
  const starting = cluster.nodes.filter((n) => supervise || !dead.has(n.id)).map((n) => spawnNode(n, dead.has(n.id)));
  const started = await Promise.allSettled(starting);
  const failed = started.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed.length > 0) {
    for (const f of failed) console.error((f.reason as Error).message);
    stopAll();
    const all = [...children.values(), ...managers.filter((m): m is ChildProcess => m !== null)];
    await Promise.all(all.map((c) => (live(c) ? new Promise((r) => c.once('exit', r)) : null)));
    return 1;
  }
  // The command as this user can type it: bin/rowan from the checkout (rowan is not on PATH).
  const rel = relative(process.cwd(), bin);
  const cmd = rel.startsWith('..') ? bin : rel;
  // With --cluster the clients find the password beside cluster.json; with ZooKeeper they are told where it is.
  const tlsCa = o.tlsCa === undefined ? null : resolve(o.tlsCa);
  const w = [...where, ...('file' in st.spec ? [] : ['--password-file', passwordFile]), ...(tlsCa ? ['--tls-ca', tlsCa] : [])].join(' ');
  console.log(`\nserving. Try:\n  ${cmd} put hello world ${w}\n  ${cmd} get hello ${w}\n  ${cmd} status ${where.join(' ')}\n  redis-cli ${tlsCa ? `--tls --cacert ${tlsCa} ` : ''}-p ${cluster.nodes[0]?.resp?.ports[0] ?? 0} -a "$(cat ${passwordFile})" get hello\nClients authenticate with the client password in ${passwordFile} (the cluster secret in ${secretFile} is for nodes only).\n${detached ? `${cmd} cluster stop --dir ${dir} stops the cluster` : 'Ctrl-C stops the cluster'}; running this again on ${dir} restarts it with its data.`);

  readyToWatch = true;
  for (const [id, c] of children) watchNode(id, c);
  // A manager that cannot start again (ZooKeeper still unreachable, say) is retried with backoff: the
  // other managers and the nodes go on meanwhile.
  const restartManager = (i: number, which: string, attempt: number): void => {
    startManager(i).then(() => watchManager(i, managers[i]!), (err: Error) => {
      if (stopping) return wake();
      const ms = Math.min(30_000, 1000 * 2 ** attempt);
      console.error(`cannot restart ${which}: ${err.message}; trying again in ${ms} ms`);
      setTimeout(() => {
        if (!stopping) restartManager(i, which, attempt + 1);
      }, ms).unref();
    });
  };
  const watchManager = (i: number, m: ChildProcess) =>
    m.once('exit', (code, signal) => {
      if (stopping) return wake();
      const which = managerCount > 1 ? `configuration manager ${i} (pid ${m.pid})` : 'the configuration manager';
      console.log(`${which} exited (${signal ?? `code ${code}`}); restarting it${managerCount > 1 ? ' (it joins the election as a standby)' : ''}`);
      restartManager(i, which, 0);
    });
  managers.forEach((m, i) => watchManager(i, m!));
  // Poll the store (a file read, or one ZooKeeper getData); an unreadable one (being replaced, no
  // ZooKeeper session) is read again next time.
  let seen = cluster;
  let polling = false;
  const watch = setInterval(() => {
    if (polling) return;
    polling = true;
    st.store.read().then((now) => {
      if (now.term === seen.term) return;
      console.log(describeChange(seen, now));
      seen = now;
    }, () => {}).finally(() => (polling = false));
  }, 'file' in st.spec ? 50 : 100);
  while ((supervise && !stopping) || [...children.values()].some(live) || (stopping && managers.some(live))) {
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
    .option('--base-port <port>', 'node N listens on base + 10N + worker, RESP on base + 200 + 10N + worker (Redis Cluster: base + 600 + 10N + worker); its NIC on base + 500 + N; metrics on base + 800 + N; the configuration manager on base + 490', asIs, 7100)
    .option('--fabric <kind>', 'how replication writes reach each node: shm (same host), tcp (its NIC actor) or verbs (RDMA: needs a device)', 'shm')
    // Developer flag, hidden from --help: see rowan start --verbs-loopback (docs/running.md).
    .addOption(new Option('--verbs-loopback <dir>', 'developer: --fabric verbs over the loopback RNIC in DIR').hideHelp())
    .option('--pool-mib <mib>', 'emulated PM per node, in MiB (a bounded log: clean actors reclaim it; PUTs get ROWAN_ERR_PM_FULL only when it is full of live data)', asIs, 128)
    .option('--segment-kib <kib>', 'PM segment size in KiB, a power of two (paper: 4096)', asIs, 4096)
    .option('--no-restart', 'leave a node that dies down (default: restart it with backoff; a failed-over node rejoins with an empty pool and gets replicas again)')
    .option('--no-auto-reshard', 'the configuration manager moves hot shards only when asked (rowan reshard), not on its own (§4.6)')
    .option('--lease-ms <ms>', 'lease the configuration manager grants; a dead node is failed over after it expires (paper: 10)', asIs, defaultTimings.leaseMs)
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
