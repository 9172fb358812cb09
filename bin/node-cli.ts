// `rowan start`, `rowan status` and `rowan stop`: what they do (their flags are defined in ./cli.ts).
// A module of its own, imported when one of them runs, so that the other commands' processes (the
// cluster launcher, the configuration manager, the client commands) do not load a node's module graph.
import { followLauncher } from './cluster-lifecycle.js';
import type { NodeKvOptions } from '../actors/node/node-application.js';
import { defaultLimits } from '../config/limits.js';
import { existsSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { discardUnusablePool } from '../runtime/pool-hook.js';
import { CLIENT_PASSWORD_FILE, CLIENT_PASSWORD_FILE_ENV, SECRET_FILE, SECRET_FILE_ENV, passwordText, readPasswordFile, readSecretFile, secretHex } from '../config/base/secret.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { loadConfigFile, resolveConfig } from '../config/load.js';
import { configFromEnv } from '../config/env.js';
import type { ConfigInput, RowanConfig } from '../config/model.js';
import type { FabricKind } from '../config/base/fabric-kinds.js';
import { formatCpuList, parseCpuList, parseRoles } from '../config/parse.js';
import { schedGetaffinity } from '../native/libc.js';
import { probeSocket, requestControl, socketPath } from '../runtime/endpoint.js';
import { kvApplication } from '../actors/node/node-application.js';
import { collectClusterStatus, formatClusterStatus, readClusterAndManagers } from './cluster-status.js';
import { describeLauncher, launcherOf } from './cluster-detach.js';
import { readClusterIn } from './cluster-store.js';
import { ErrorCodes, RowanError } from '../config/base/errors.js';
import { createLogger, type LogLevel } from '../config/base/log.js';
import { startNode } from '../runtime/node.js';
import { LOOPBACK_RETRY_MS_MIN, loopbackDevices } from '../runtime/fabric/verbs-devices.js';
import { loadTls } from '../runtime/net/tls.js';
import type { NodeStatus } from '../runtime/status.js';
import { formatStatus } from './status-format.js';
import { storeSpecOf, type StoreFlags } from './store-flags.js';
import { describeStore, readStoreOnce } from '../config/store-spec.js';
import { FileConfigStore } from '../config/store.js';

const EXIT_OK = 0;
const EXIT_FAILED = 1;

/** Test seam: swap a role's thread entry while keeping the whole CLI path (fixtures only). */
export interface CliExtras {
  entries?: Partial<Record<string, URL>>;
}

export interface StartOpts extends StoreFlags {
  dataDir: string;
  roles?: string;
  cores?: string;
  threads?: string;
  config?: string;
  persistence?: string;
  logLevel?: LogLevel;
  fabric?: string;
  fabricPort?: string;
  remoteSegmentsMax?: string;
  nodeId?: string;
  manager?: string;
  indexKeys?: string;
  indexKeysMax?: string;
  metricsPort?: string;
  rejoin?: boolean;
  secretFile?: string;
  clientPasswordFile?: string;
  tlsCert?: string;
  tlsKey?: string;
  tlsCa?: string;
  /** false with --no-auth. */
  auth: boolean;
  /** Hidden developer flag: the loopback RNIC instead of libibverbs (runtime/fabric/verbs-devices.ts). */
  verbsLoopback?: string;
}

interface Credentials {
  secret: Uint8Array | null;
  clientPassword: Uint8Array | null;
}

/**
 * The cluster secret the node demands of peers and proves to them, and the client password it demands
 * of clients (docs/security.md): each from its flag, else its config key (file or ROWAN_*
 * environment: secretFile, clientPasswordFile), else the file beside --cluster's file. A missing one
 * is an error unless --no-auth says to serve unauthenticated (both null).
 */
function nodeCredentials(o: StartOpts, config: RowanConfig): Credentials {
  if (!o.auth) {
    if (o.secretFile !== undefined || o.clientPasswordFile !== undefined)
      throw new RowanError(ErrorCodes.BAD_ARGUMENT, `--no-auth and ${o.secretFile !== undefined ? '--secret-file' : '--client-password-file'} contradict each other`);
    return { secret: null, clientPassword: null };
  }
  const find = (flag: string | undefined, configured: string, name: string): string | null => {
    const file = flag ?? configured;
    if (file !== '') return resolve(file);
    if (o.cluster === undefined) return null;
    const beside = join(dirname(resolve(o.cluster)), name);
    return existsSync(beside) ? beside : null;
  };
  const secretFile = find(o.secretFile, config.secretFile, SECRET_FILE);
  if (secretFile === null)
    throw new RowanError(
      ErrorCodes.BAD_ARGUMENT,
      `no cluster secret: give --secret-file FILE (or ${SECRET_FILE_ENV}=FILE; rowan cluster writes DIR/secret, or create one: head -c 32 /dev/urandom | xxd -p -c 64 > FILE; chmod 600 FILE), or --no-auth to serve unauthenticated`,
    );
  const passwordFile = find(o.clientPasswordFile, config.clientPasswordFile, CLIENT_PASSWORD_FILE);
  if (passwordFile === null)
    throw new RowanError(
      ErrorCodes.BAD_ARGUMENT,
      `no client password: give --client-password-file FILE (or ${CLIENT_PASSWORD_FILE_ENV}=FILE; rowan cluster writes DIR/client-password, or create one like the secret, in another file), or --no-auth to serve unauthenticated`,
    );
  const c = { secret: readSecretFile(secretFile), clientPassword: readPasswordFile(passwordFile) };
  // The same bytes in both would let every client act as a node, which is what the split prevents.
  if (passwordText(c.clientPassword).toLowerCase() === secretHex(c.secret))
    throw new RowanError(ErrorCodes.BAD_CONFIG, `the client password in ${passwordFile} is the cluster secret: clients would hold the nodes' credential; make a new one (rm ${passwordFile}; rowan cluster makes one, or head -c 32 /dev/urandom | xxd -p -c 64 > FILE)`);
  return c;
}

/** --cluster FILE (or --zookeeper) --node-id N: serve ROWAN-KV as that node of the cluster (both or neither). */
async function clusterFlags(o: StartOpts): Promise<NodeKvOptions | null> {
  const spec = storeSpecOf(o);
  if (spec === null && o.nodeId === undefined) return null;
  if (spec === null || o.nodeId === undefined)
    throw new RowanError(ErrorCodes.BAD_ARGUMENT, '--cluster (or --zookeeper) and --node-id go together');
  const nodeId = Number(o.nodeId);
  if (!Number.isInteger(nodeId) || nodeId < 0 || nodeId > 1023)
    throw new RowanError(ErrorCodes.BAD_ARGUMENT, `--node-id: '${o.nodeId}' is not a node id (0-1023)`);
  const keys = (flag: string, v: string | undefined, dflt: number): number => {
    if (v === undefined) return dflt;
    const n = Number(v);
    if (!Number.isInteger(n) || n < 1 || n > 2 ** 28) throw new RowanError(ErrorCodes.BAD_ARGUMENT, `${flag}: '${v}' is not a key count in [1, 2^28]`);
    return n;
  };
  const keysPerShard = keys('--index-keys', o.indexKeys, defaultLimits.indexKeysPerShard);
  const keysPerShardMax = keys('--index-keys-max', o.indexKeysMax, Math.max(keysPerShard, defaultLimits.indexKeysPerShardMax));
  if (keysPerShardMax < keysPerShard) throw new RowanError(ErrorCodes.BAD_ARGUMENT, `--index-keys-max ${keysPerShardMax} is below --index-keys ${keysPerShard}`);
  // A primary keeps indexHeadroomBuckets overflow buckets free (refusing new keys below it): the
  // maximum must leave room for at least as many again.
  const keysMin = 2 * defaultLimits.indexHeadroomBuckets * (defaultLimits.indexBucketItems - 1);
  if (keysPerShardMax < keysMin) throw new RowanError(ErrorCodes.BAD_ARGUMENT, `--index-keys-max ${keysPerShardMax} is below ${keysMin}, the least that leaves room for the index headroom`);
  if (o.rejoin && o.manager === undefined) throw new RowanError(ErrorCodes.BAD_ARGUMENT, '--rejoin asks a configuration manager (--manager) to take the node back');
  // ZooKeeper is read here, once, at cold start (§4.7); later configurations come from the manager.
  const stored = 'file' in spec ? {} : { cluster: await readStoreOnce(spec) };
  return { clusterFile: describeStore(spec), ...stored, nodeId, keysPerShard, keysPerShardMax, ...(o.manager !== undefined ? { manager: o.manager } : {}), ...(o.rejoin ? { rejoin: true } : {}) };
}


/**
 * A cluster node's NIC listens where the cluster configuration says peers reach it (its entry's
 * `fabric.host`), not on the default 127.0.0.1: on hosts with their own addresses (README
 * "Partitions": one network namespace per node) a NIC on loopback is unreachable. The cluster's
 * address sits under the config file's own `fabric.host`, so a file, ROWAN_FABRIC_HOST or a flag
 * still wins.
 */
function withClusterFabricHost(file: ConfigInput | undefined, kv: NodeKvOptions | null): ConfigInput | undefined {
  if (kv === null) return file;
  const cluster = kv.cluster ?? (existsSync(kv.clusterFile) ? new FileConfigStore(kv.clusterFile).readSync() : undefined);
  const me = cluster?.nodes.find((n) => n.id === kv.nodeId);
  if (me === undefined) return file; // node-kv reports the missing file or node with its own error
  return { ...file, fabric: { host: me.fabric.host, ...file?.fabric } };
}

function metricsPort(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new RowanError(ErrorCodes.BAD_ARGUMENT, `--metrics-port: '${v}' is not a port (0-65535)`);
  return n;
}

export async function start(o: StartOpts, extras: CliExtras): Promise<number> {
  followLauncher();
  const allowed = schedGetaffinity(0);
  const flags: ConfigInput = {};
  if (o.roles !== undefined) flags.roles = parseRoles(o.roles, '--roles');
  if (o.cores !== undefined) {
    const cores = parseCpuList(o.cores, '--cores');
    const missing = cores.filter((c) => !allowed.includes(c));
    if (missing.length)
      throw new RowanError(
        ErrorCodes.BAD_ARGUMENT,
        `--cores: CPU ${formatCpuList(missing)} is not available to this process (allowed: ${formatCpuList(allowed)})`,
      );
    flags.cores = cores;
  }
  if (o.threads !== undefined) flags.runtime = { threads: o.threads as RowanConfig['runtime']['threads'] };
  if (o.persistence !== undefined) flags.persistence = o.persistence as ConfigInput['persistence'];
  if (o.logLevel !== undefined) flags.logLevel = o.logLevel;
  if (o.fabric !== undefined || o.fabricPort !== undefined || o.remoteSegmentsMax !== undefined) {
    const port = o.fabricPort === undefined ? undefined : Number(o.fabricPort);
    if (port !== undefined && !(Number.isInteger(port) && port >= 0 && port <= 65535))
      throw new RowanError(ErrorCodes.BAD_ARGUMENT, `--fabric-port: '${o.fabricPort}' is not a port (0-65535; 0 = any free port)`);
    const quota = o.remoteSegmentsMax === undefined ? undefined : Number(o.remoteSegmentsMax);
    if (quota !== undefined && !(Number.isInteger(quota) && quota >= 1))
      throw new RowanError(ErrorCodes.BAD_ARGUMENT, `--remote-segments-max: '${o.remoteSegmentsMax}' is not a segment count (1 or more)`);
    flags.fabric = { ...(o.fabric !== undefined ? { kind: o.fabric as FabricKind } : {}), ...(port !== undefined ? { port } : {}), ...(quota !== undefined ? { remoteSegmentsMax: quota } : {}) };
  }
  if (o.tlsCert !== undefined || o.tlsKey !== undefined || o.tlsCa !== undefined)
    flags.tls = { ...(o.tlsCert !== undefined ? { cert: resolve(o.tlsCert) } : {}), ...(o.tlsKey !== undefined ? { key: resolve(o.tlsKey) } : {}), ...(o.tlsCa !== undefined ? { ca: resolve(o.tlsCa) } : {}) };
  const kv = await clusterFlags(o);
  const file = withClusterFabricHost(o.config === undefined ? undefined : loadConfigFile(o.config), kv);
  const config = resolveConfig({ dataDir: resolve(o.dataDir), allowedCores: allowed, env: configFromEnv(process.env), flags, ...(file ? { file } : {}) });
  const log = createLogger(config.logLevel);
  const { secret, clientPassword } = nodeCredentials(o, config);
  const tls = loadTls(config.tls); // read here first: a bad file fails the start, not an actor
  if (tls) log.info({ cert: config.tls.cert, ca: config.tls.ca }, 'TLS on every client, Redis, fabric and manager connection (peers: mutual TLS)');
  // A failed-over node rejoins with the pool it kept, reconciled shard by shard before any of it counts
  // (actors/migration/reconcile.ts); a pool that does not open is removed and the node starts empty.
  if (kv?.rejoin) {
    const why = discardUnusablePool(config);
    if (why !== null) log.warn({ reason: why }, `rejoin: the pool is unusable (${why}); removed, starting empty (every shard is copied in full)`);
  }
  const verbsDevices = o.verbsLoopback !== undefined ? loopbackDevices(o.verbsLoopback) : undefined;
  if (verbsDevices) log.warn({ dir: o.verbsLoopback }, 'verbs devices: the loopback RNIC (a software device for tests), not libibverbs');
  // Its round trip is an event-loop hop between processes (milliseconds), not an RNIC's microseconds:
  // under the paper's 1 ms bound every attempt comes back late and is re-issued until it times out.
  if (verbsDevices && config.fabric.kind === 'verbs' && config.replication.retryMs < LOOPBACK_RETRY_MS_MIN) {
    log.warn({ retryMs: config.replication.retryMs }, `the loopback RNIC needs a replication retry bound of at least ${LOOPBACK_RETRY_MS_MIN} ms (ROWAN_REPLICATION_RETRY_MS, with ROWAN_BLOG_USED_GRACE_MS above it): writes under this one are re-issued until they time out`);
  }
  const node = await startNode({ config, log, handleSignals: true, secret, clientPassword, ...(verbsDevices ? { verbsDevices } : {}), ...(extras.entries ? { entries: extras.entries } : {}), ...(kv ? { app: kvApplication({ ...kv, secret, tls, loadPeriodMs: config.resharding.periodMs }, config.dataDir) } : {}), ...(o.metricsPort !== undefined ? { metrics: { host: '127.0.0.1', port: metricsPort(o.metricsPort) } } : {}) });
  const code = await node.closed;
  // Everything was stopped; if some handle still keeps the loop alive, say so and leave anyway.
  setTimeout(() => {
    log.warn('event loop still busy after shutdown; exiting');
    process.exit(code);
  }, 3000).unref();
  return code;
}

function existingDataDir(dir: string): string {
  const abs = resolve(dir);
  let isDir = false;
  try {
    isDir = statSync(abs).isDirectory();
  } catch {
    throw new RowanError(ErrorCodes.DATA_DIR, `data dir ${abs} does not exist`);
  }
  if (!isDir) throw new RowanError(ErrorCodes.DATA_DIR, `data dir ${abs} is not a directory`);
  return abs;
}

export async function status(o: StoreFlags & { dataDir?: string; dir?: string; json?: boolean }): Promise<number> {
  if (o.dir !== undefined && (o.cluster !== undefined || o.zookeeper !== undefined || o.dataDir !== undefined))
    throw new RowanError(ErrorCodes.BAD_ARGUMENT, 'give --dir DIR (a rowan cluster directory) alone, without --cluster, --zookeeper or --data-dir');
  const spec = storeSpecOf(o);
  // The launcher is looked for in the cluster directory: --dir, or the directory of --cluster's file.
  const clusterDir = o.dir !== undefined ? resolve(o.dir) : spec !== null && 'file' in spec ? dirname(spec.file) : null;
  if (spec !== null || o.dir !== undefined) {
    const { cluster, managers } = o.dir !== undefined ? { cluster: await readClusterIn(resolve(o.dir)), managers: null } : await readClusterAndManagers(spec!);
    const cs = await collectClusterStatus(cluster, managers, clusterDir !== null ? join(clusterDir, 'cluster.json') : undefined);
    const launcher = clusterDir !== null ? launcherOf(clusterDir) : null;
    if (o.json) process.stdout.write(JSON.stringify({ ...cs, launcher }, null, 2) + '\n');
    else process.stdout.write((clusterDir !== null ? describeLauncher(clusterDir) + '\n' : '') + formatClusterStatus(cs) + '\n');
    return cs.nodes.every((n) => n.status) ? EXIT_OK : EXIT_FAILED;
  }
  if (o.dataDir === undefined) throw new RowanError(ErrorCodes.BAD_ARGUMENT, 'status needs --data-dir DIR (one node), or --dir DIR (a rowan cluster directory), --cluster FILE or --zookeeper HOST:PORT (all nodes)');
  const s = (await requestControl(socketPath(existingDataDir(o.dataDir)), { op: 'status' })) as NodeStatus;
  process.stdout.write(o.json ? JSON.stringify(s, null, 2) + '\n' : formatStatus(s) + '\n');
  return EXIT_OK;
}

export async function stop(o: { dataDir: string; timeout: string }): Promise<number> {
  const path = socketPath(existingDataDir(o.dataDir));
  const timeoutMs = Number(o.timeout);
  if (!Number.isInteger(timeoutMs) || timeoutMs < 1) throw new RowanError(ErrorCodes.BAD_ARGUMENT, `--timeout: '${o.timeout}' is not a positive integer`);
  const r = (await requestControl(path, { op: 'stop' })) as { pid: number };
  // The node removes its socket once every actor is stopped; bounded by --timeout.
  for (let waited = 0; waited < timeoutMs; waited += 50) {
    if ((await probeSocket(path)) !== 'live') {
      process.stdout.write(`rowan: node pid ${r.pid} stopped\n`);
      return EXIT_OK;
    }
    await sleep(50);
  }
  process.stderr.write(`rowan: node pid ${r.pid} still running after ${timeoutMs} ms\n`);
  return EXIT_FAILED;
}
