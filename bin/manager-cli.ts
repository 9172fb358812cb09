// `rowan manager --cluster FILE`: the configuration manager (§4.5) in a process of its own -- one
// `manager` actor (actors/manager/) on a pinned thread, under the same runtime as a node (control
// socket, status, SIGTERM). `rowan cluster` starts one before its nodes; nodes started with
// `rowan start --manager host:port` hold their lease with it.
import { mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { Option, type Command } from 'commander';
import { resolveConfig } from '../config/load.js';
import { schedGetaffinity } from '../native/libc.js';
import { createLogger, logLevels, type LogLevel } from '../config/base/log.js';
import { ErrorCodes, RowanError } from '../config/base/errors.js';
import { startNode } from '../runtime/node.js';
import { DEFAULT_LEASE_MS, leaseTiming } from '../actors/manager/leases.js';
import { DEFAULT_MANAGER_ZK_SESSION_MS } from '../actors/manager/election.js';
import type { ManagerStart } from '../actors/manager/protocol.js';
import { followLauncher } from './cluster-lifecycle.js';
import { addZooKeeperFlags, storeSpecOf, type StoreFlags } from './store-flags.js';

export interface ManagerOpts extends StoreFlags {
  host: string;
  port: string;
  leaseMs: string;
  renewMs?: string;
  zkSessionMs: string;
  dataDir?: string;
  logLevel?: LogLevel;
}

function num(name: string, v: string, lo: number, hi: number): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < lo || n > hi) throw new RowanError(ErrorCodes.BAD_ARGUMENT, `--${name}: '${v}' is not an integer in [${lo}, ${hi}]`);
  return n;
}

export async function runManager(o: ManagerOpts): Promise<number> {
  followLauncher();
  const spec = storeSpecOf(o);
  if (!spec) throw new RowanError(ErrorCodes.BAD_ARGUMENT, 'the manager needs --cluster <file> or --zookeeper <host:port>');
  if (!('file' in spec) && o.dataDir === undefined) throw new RowanError(ErrorCodes.BAD_ARGUMENT, 'with --zookeeper, give the manager a --data-dir');
  const clusterFile = 'file' in spec ? spec.file : '';
  const timing = leaseTiming(num('lease-ms', o.leaseMs, 4, 600_000), o.renewMs === undefined ? undefined : num('renew-ms', o.renewMs, 1, 600_000));
  const start: ManagerStart = { clusterFile, host: o.host, port: num('port', o.port, 0, 65535), ...timing, ...('file' in spec ? {} : { zookeeper: { connect: spec.zookeeper, path: spec.path }, zkSessionMs: num('zk-session-ms', o.zkSessionMs, 1000, 600_000) }) };
  const dataDir = resolve(o.dataDir ?? join(dirname(clusterFile), 'manager'));
  mkdirSync(dataDir, { recursive: true });
  // The runtime maps a pool for every process; the manager keeps nothing in it: the smallest one.
  const config = resolveConfig({
    dataDir,
    allowedCores: schedGetaffinity(0),
    flags: { roles: [{ role: 'manager', count: 1 }], pool: { segmentCount: 8, segmentBytes: 64 * 1024 }, blog: { preallocSegments: 1, batchSegments: 1 }, gc: { reserveSegments: 0 }, ...(o.logLevel ? { logLevel: o.logLevel } : {}) },
  });
  const log = createLogger(config.logLevel);
  const node = await startNode({
    config,
    log,
    handleSignals: true,
    app: { prepare: () => {}, payload: (role) => (role === 'manager' ? start : undefined) },
  });
  const code = await node.closed;
  setTimeout(() => process.exit(code), 3000).unref(); // a failover step still sleeping must not hold the exit
  return code;
}

export function registerManagerCommand(p: Command, run: (f: () => Promise<number>) => () => Promise<void>): void {
  const cmd = p.command('manager')
    .description('run the configuration manager (§4.5): leases for every node of the cluster, failover of a node whose lease expired; with --zookeeper it stores failovers in ZooKeeper, and several managers of one cluster elect one active manager (the others are standbys that take over when it dies); while its ZooKeeper session is lost it stores nothing (failovers wait until the session is back)')
    .option('--cluster <file>', 'the cluster configuration (the embedded store; rowan cluster writes DIR/cluster.json); or --zookeeper');
  addZooKeeperFlags(cmd)
    .option('--host <addr>', 'address to listen on', '127.0.0.1')
    .option('--port <port>', 'port nodes renew their leases on (0 = any free port)', '7090')
    .option('--lease-ms <ms>', 'lease length granted to nodes', String(DEFAULT_LEASE_MS))
    .option('--renew-ms <ms>', 'how often nodes renew (default lease / 5)')
    .option('--zk-session-ms <ms>', 'with --zookeeper: the ZooKeeper session timeout S. Managers elect one active manager; a standby takes over about S after the active one dies, and the active one rides out a ZooKeeper outage of up to 3/4 S (README "ZooKeeper")', String(DEFAULT_MANAGER_ZK_SESSION_MS))
    .addOption(new Option('--log-level <level>', 'log level of the JSON lines on stderr (default: info)').choices(logLevels))
    .option('--data-dir <dir>', "the manager process's runtime directory (default: manager/ next to the cluster file; required with --zookeeper)")
    .action(function (this: Command) {
      return run(() => runManager(this.opts<ManagerOpts>()))();
    });
}
