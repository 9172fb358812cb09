// `rowan manager --cluster FILE`: the configuration manager (§4.5) in a process of its own -- one
// `manager` actor (actors/manager/) on a pinned thread, under the same runtime as a node (control
// socket, status, SIGTERM). `rowan cluster` starts one before its nodes; nodes started with
// `rowan start --manager host:port` hold their lease with it.
import { mkdirSync } from 'node:fs';
import { SECRET_FILE_ENV, findSecret } from '../config/base/secret.js';
import { dirname, join, resolve } from 'node:path';
import { resolveConfig } from '../config/load.js';
import { configFromEnv } from '../config/env.js';
import { DEFAULT_RESHARDING } from '../actors/manager/manager.js';
import { schedGetaffinity } from '../native/libc.js';
import { createLogger, type LogLevel } from '../config/base/log.js';
import { ErrorCodes, RowanError } from '../config/base/errors.js';
import { startNode } from '../runtime/node.js';
import { loadTls } from '../runtime/net/tls.js';
import { checkTimings, defaultTimings, leaseTiming } from '../config/timings.js';
import { parseDebugPause, type ManagerStart } from '../actors/manager/protocol.js';
import { followLauncher } from './cluster-lifecycle.js';
import { storeSpecOf, type StoreFlags } from './store-flags.js';
import { FileConfigStore } from '../config/store.js';

export interface ManagerOpts extends StoreFlags {
  host: string;
  port: string;
  leaseMs: string;
  renewMs?: string;
  zkSessionMs: string;
  dataDir?: string;
  logLevel?: LogLevel;
  /** false with --no-auto-reshard. */
  autoReshard?: boolean;
  reshardPeriodMs?: string;
  secretFile?: string;
  tlsCert?: string;
  tlsKey?: string;
  tlsCa?: string;
  /** false with --no-auth. */
  auth: boolean;
  /** --debug-pause STEP:MS (fault tests). */
  debugPause?: string;
}

/** The cluster secret nodes must prove to the manager: --secret-file, $ROWAN_SECRET_FILE, or the file
 *  `secret` beside --cluster's file; none is an error unless --no-auth (docs/security.md). */
function managerSecret(o: ManagerOpts): Uint8Array | null {
  if (!o.auth) {
    if (o.secretFile !== undefined) throw new RowanError(ErrorCodes.BAD_ARGUMENT, '--no-auth and --secret-file contradict each other');
    return null;
  }
  const secret = findSecret(o.secretFile, o.cluster);
  if (secret) return secret;
  throw new RowanError(ErrorCodes.BAD_ARGUMENT, `no cluster secret for the manager: give --secret-file FILE (or ${SECRET_FILE_ENV}=FILE; rowan cluster writes DIR/secret), or --no-auth to let anyone hold leases`);
}

function num(name: string, v: string, lo: number, hi: number): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < lo || n > hi) throw new RowanError(ErrorCodes.BAD_ARGUMENT, `--${name}: '${v}' is not an integer in [${lo}, ${hi}]`);
  return n;
}

/** The manager's TLS files: its flags, else ROWAN_TLS_* (as for a node); all empty = TLS off. */
function managerTls(o: ManagerOpts): { cert: string; key: string; ca: string } {
  const f = (flag: string | undefined, env: string) => (flag !== undefined ? resolve(flag) : (process.env[env] ?? ''));
  return { cert: f(o.tlsCert, 'ROWAN_TLS_CERT'), key: f(o.tlsKey, 'ROWAN_TLS_KEY'), ca: f(o.tlsCa, 'ROWAN_TLS_CA') };
}

export async function runManager(o: ManagerOpts): Promise<number> {
  followLauncher();
  const spec = storeSpecOf(o);
  if (!spec) throw new RowanError(ErrorCodes.BAD_ARGUMENT, 'the manager needs --cluster <file> or --zookeeper <host:port>');
  if (!('file' in spec) && o.dataDir === undefined) throw new RowanError(ErrorCodes.BAD_ARGUMENT, 'with --zookeeper, give the manager a --data-dir');
  const clusterFile = 'file' in spec ? spec.file : '';
  // A file that is missing or not a configuration fails here, before a directory or pool is made
  // beside it (the manager's actor reads it again when it starts).
  if (clusterFile !== '') new FileConfigStore(clusterFile).readSync();
  const secret = managerSecret(o);
  const timing = leaseTiming(num('lease-ms', o.leaseMs, defaultTimings.leaseMsMin, defaultTimings.leaseMsMax), o.renewMs === undefined ? undefined : num('renew-ms', o.renewMs, 1, 600_000), undefined, checkTimings(defaultTimings));
  const port = num('port', o.port, 0, 65535);
  const zookeeper = 'file' in spec ? {} : { zookeeper: { connect: spec.zookeeper, path: spec.path }, zkSessionMs: num('zk-session-ms', o.zkSessionMs, 1000, 600_000) };
  const dataDir = resolve(o.dataDir ?? join(dirname(clusterFile), 'manager'));
  mkdirSync(dataDir, { recursive: true });
  // The runtime maps a pool for every process; the manager keeps nothing in it: the smallest one. Its
  // actor may run on every CPU the process may (not pinned to the first, where a node's busy worker
  // may be pinned too): it holds everyone's leases, so it should run wherever a CPU is free first.
  const allowedCores = schedGetaffinity(0);
  const config = resolveConfig({
    dataDir,
    allowedCores,
    env: configFromEnv(process.env),
    flags: {
      roles: [{ role: 'manager', count: 1, cores: allowedCores }], pool: { segmentCount: 8, segmentBytes: 64 * 1024 }, blog: { preallocSegments: 1, batchSegments: 1 }, gc: { reserveSegments: 0 }, tls: managerTls(o),
      ...(o.logLevel ? { logLevel: o.logLevel } : {}),
      ...(o.autoReshard === false || o.reshardPeriodMs !== undefined ? { resharding: { ...(o.autoReshard === false ? { auto: false } : {}), ...(o.reshardPeriodMs !== undefined ? { periodMs: num('reshard-period-ms', o.reshardPeriodMs, 10, 3_600_000) } : {}) } } : {}),
    },
  });
  const r = config.resharding;
  const resharding = { auto: r.auto, periodMs: r.periodMs, overloadPercent: r.overloadPercent, targetPercent: r.targetPercent, copyMoves: r.copyMoves, minTotalOps: DEFAULT_RESHARDING.minTotalOps };
  const debugPause = o.debugPause === undefined ? {} : { debugPause: parseDebugPause(o.debugPause) };
  const start: ManagerStart = { clusterFile, host: o.host, port, ...timing, resharding, ...zookeeper, ...debugPause };
  const log = createLogger(config.logLevel);
  loadTls(config.tls); // a bad file fails here, with its name, not in the actor
  if (secret === null) log.warn('authentication is off (--no-auth): any peer that reaches the manager port may hold or break leases');
  const node = await startNode({
    config,
    log,
    handleSignals: true,
    // Absent rather than null under --no-auth: the node's warning names ports the manager does not have.
    ...(secret !== null ? { secret } : {}),
    app: { prepare: () => {}, payload: (role) => (role === 'manager' ? start : undefined) },
  });
  const code = await node.closed;
  setTimeout(() => process.exit(code), 3000).unref(); // a failover step still sleeping must not hold the exit
  return code;
}
