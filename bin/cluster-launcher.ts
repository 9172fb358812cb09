// The launcher behind `rowan cluster` (./cluster-cli.ts parses the flags into a LaunchPlan): writes the
// node config and the cluster's secret and client password when missing, starts the configuration
// manager(s) and one `rowan start` per node, prints the endpoints, then supervises -- restarting a
// node that dies (with backoff; listed dead, it rejoins with the pool it kept) and a manager that dies,
// printing each configuration change -- until Ctrl-C, SIGTERM, or (in a terminal) SIGHUP stops it all:
// the managers first, so that nodes draining do not look failed.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { CLIENT_PASSWORD_FILE, SECRET_FILE, writeNewPasswordFile, writeNewSecretFile } from '../config/base/secret.js';
import type { ClusterConfig } from '../config/cluster.js';
import type { ConfigStore } from '../config/store.js';
import { describeStore, type StoreSpec } from '../config/store-spec.js';
import { checkTimings, deadWaitMsFor, defaultTimings, leaseTiming } from '../config/timings.js';
import { storeArgs } from './store-flags.js';
import { describeChange, RestartBackoff, waitListedDead, watchStoreChanges } from './cluster-supervise.js';
import { DETACHED_ENV } from './cluster-detach.js';
import { LAUNCHER_PID_ENV, managerPortOf, metricsPortOf, closeQuietly, openNodeLog, waitReady } from './cluster-lifecycle.js';
import { schedGetaffinity } from '../native/libc.js';
import { SERVER_V8_FLAGS } from '../runtime/server-flags.js';

const bin = new URL('../../bin/rowan', import.meta.url).pathname;

/** Everything the launcher needs, checked and resolved from the flags by ./cluster-cli.ts. */
export interface LaunchPlan {
  dir: string;
  store: ConfigStore;
  spec: StoreSpec;
  clusterName: string;
  cluster: ClusterConfig;
  fresh: boolean;
  /** The pool of the node config written for a new cluster (a restart keeps the one it has); checked
   *  (BAD_ARGUMENT) only when it is written. */
  pool: () => { segmentCount: number; segmentBytes: number };
  /** Flags given that shape only a new cluster, named in a warning on an existing one. */
  ignoredFlags: string[];
  managerCount: number;
  leaseMs: number;
  /** false (--no-restart): a node that dies stays down. */
  supervise: boolean;
  /** --tls-cert/--tls-key/--tls-ca for every process (empty: TLS off), and the CA clients need. */
  tlsArgs: string[];
  tlsCa: string | null;
  /** Passed to every manager (--zk-session-ms, --log-level, --no-auto-reshard, --debug-pause). */
  managerArgs: string[];
  /** Passed to every node (--log-level, --index-keys, --index-keys-max). */
  nodeArgs: string[];
}

type Node = ClusterConfig['nodes'][number];

const live = (c: ChildProcess | null): c is ChildProcess => c !== null && c.exitCode === null && c.signalCode === null;

export class ClusterLauncher {
  private readonly children = new Map<number, ChildProcess>();
  private readonly managers: (ChildProcess | null)[];
  private readonly backoff = new Map<number, RestartBackoff>();
  private readonly where: string[];
  private readonly env: NodeJS.ProcessEnv = { ...process.env, [LAUNCHER_PID_ENV]: String(process.pid) };
  private readonly detached = process.env[DETACHED_ENV] === '1';
  private readonly deadWaitMs: number;
  private readonly files: { nodeConfig: string; secret: string; password: string };
  private stopping = false;
  private wake: () => void = () => {};
  private codes = 0;
  private readyToWatch = false;
  /** The stored configuration as last seen: nodes added (`rowan cluster add-node`) start from it. */
  private cluster: ClusterConfig;
  /** Nodes decommissioned (out of the stored membership): not restarted when they exit. */
  private readonly removed = new Set<number>();

  constructor(private readonly p: LaunchPlan) {
    this.managers = Array.from({ length: p.managerCount }, () => null);
    this.cluster = p.cluster;
    this.where = storeArgs(p.spec, p.clusterName);
    // The manager grants this lease; the supervisor's wait for a dead node to be listed dead derives from it.
    this.deadWaitMs = deadWaitMsFor(checkTimings(defaultTimings), leaseTiming(p.leaseMs));
    this.files = { nodeConfig: join(p.dir, 'node-config.json'), secret: join(p.dir, SECRET_FILE), password: join(p.dir, CLIENT_PASSWORD_FILE) };
  }

  /** Start everything, serve until stopped; the exit code (1: a start failed or a node exited non-zero). */
  async run(): Promise<number> {
    await this.writeFiles();
    this.installSignals();
    try {
      // One after the other: the first becomes the active one (lowest election znode), the rest stand by.
      for (let i = 0; i < this.p.managerCount; i++) await this.startManager(i);
    } catch (err) {
      console.error((err as Error).message);
      this.stopAll();
      return 1;
    }
    if (!(await this.startNodes())) return 1;
    this.printServing();
    this.readyToWatch = true;
    for (const [id, c] of this.children) this.watchNode(id, c);
    this.managers.forEach((m, i) => this.watchManager(i, m!));
    return this.superviseUntilStopped();
  }

  /** The store (a new cluster), the node config, the secret and the client password (docs/security.md). */
  private async writeFiles(): Promise<void> {
    const { p, files } = this;
    if (p.fresh) await p.store.write(p.cluster, null);
    // The node config (pool size) is fixed when the cluster is made: a restart must map the same pools.
    if (p.fresh || !existsSync(files.nodeConfig)) writeFileSync(files.nodeConfig, JSON.stringify({ pool: p.pool() }, null, 2) + '\n');
    // Made with the cluster, mode 0600. Nodes and the manager prove the secret to each other; clients
    // prove the password (rowan put/get/del read it beside cluster.json), which grants no node's rights.
    // A cluster made before either existed gets it now, and is told so.
    if (!existsSync(files.secret)) {
      writeNewSecretFile(files.secret);
      if (!p.fresh) console.log(`this cluster had no secret: generated ${files.secret} (mode 0600); nodes and the manager prove it to each other`);
    }
    if (!existsSync(files.password)) {
      writeNewPasswordFile(files.password);
      if (!p.fresh) console.log(`this cluster had no client password: generated ${files.password} (mode 0600); clients and Redis users now need it instead of the cluster secret, which the client and Redis ports no longer accept (redis-cli -a "$(cat ${files.password})")`);
    }
    const c = p.cluster;
    console.log(`${p.fresh ? 'new' : 'existing'} cluster in ${p.dir}: ${c.nodes.length} nodes, ${c.shardCount} shards, replication ${c.replicationFactor} (${c.replication}), term ${c.term}; configuration in ${describeStore(p.spec)}`);
    if (!p.fresh && p.ignoredFlags.length > 0) console.log(`warning: ${p.ignoredFlags.join(', ')} ignored: they shape a new cluster, and ${p.dir} holds one already (delete it to start afresh)`);
  }

  /** Ctrl-C and SIGTERM stop the cluster; SIGHUP too under a terminal (it closed), not when detached. */
  private installSignals(): void {
    const stop = () => this.stopAll();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
    if (this.detached) process.on('SIGHUP', () => console.log('SIGHUP ignored: this launcher is detached (rowan cluster stop stops it)'));
    else process.once('SIGHUP', stop);
  }

  /** The managers first (every one at once: a standby stopping never acts), then the nodes. */
  private stopAll(): void {
    if (this.stopping) return;
    this.stopping = true;
    console.log('stopping the cluster ...');
    const nodes = () => {
      for (const c of this.children.values()) if (live(c)) c.kill('SIGTERM');
      this.wake();
    };
    const ms = this.managers.filter(live);
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
  }

  /** Manager i: port base + 490 + i, log DIR/manager.log (i = 0) or DIR/manager-i.log, runtime dir DIR/manager[-i]. */
  private async startManager(i: number): Promise<void> {
    const { p } = this;
    const suffix = i === 0 ? '' : `-${i}`;
    const port = managerPortOf(p.cluster) + i;
    const logFile = join(p.dir, `manager${suffix}.log`);
    const { fd: out, from } = openNodeLog(logFile);
    const args = [bin, 'manager', ...this.where, '--port', String(port), '--lease-ms', String(p.leaseMs), '--data-dir', join(p.dir, `manager${suffix}`),
      '--secret-file', this.files.secret, ...p.tlsArgs, ...p.managerArgs];
    // Like a node: its own process group, and down with this launcher however the launcher dies.
    const m = spawn(process.execPath, [...SERVER_V8_FLAGS, ...args], { stdio: ['ignore', out, out], detached: true, env: this.env });
    this.managers[i] = m;
    closeQuietly(out);
    const which = p.managerCount > 1 ? `configuration manager ${i}` : 'the configuration manager';
    console.log(`starting ${which} (log ${logFile})`);
    await waitReady(m, logFile, from, -1, 60_000, join(p.dir, `manager${suffix}`));
    console.log(`${p.managerCount > 1 ? `configuration manager ${i}` : 'configuration manager'} ready on 127.0.0.1:${port} (pid ${m.pid}), lease ${p.leaseMs} ms${p.managerCount > 1 ? ' (the elected one serves; the others stand by)' : ''}`);
  }

  /** All nodes at once (each cold-starts its own pool), each reported as it is ready; false if one failed. */
  private async startNodes(): Promise<boolean> {
    const { cluster, supervise } = this.p;
    const dead = new Set(cluster.dead ?? []);
    for (const id of dead) console.log(`node ${id} is dead in the stored configuration (term ${cluster.term}); ${supervise ? 'it rejoins (its pool is reconciled with the primaries before any of it counts)' : 'it stays down (--no-restart)'}`);
    const starting = cluster.nodes.filter((n) => supervise || !dead.has(n.id)).map((n) => this.spawnNode(n, dead.has(n.id)));
    const failed = (await Promise.allSettled(starting)).filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed.length === 0) return true;
    for (const f of failed) console.error((f.reason as Error).message);
    this.stopAll();
    const all = [...this.children.values(), ...this.managers.filter((m): m is ChildProcess => m !== null)];
    await Promise.all(all.map((c) => (live(c) ? new Promise((r) => c.once('exit', r)) : null)));
    return false;
  }

  /** Start node n; `rejoin`: it was failed over, so `rowan start --rejoin` discards its pool and asks to come back. */
  private spawnNode(n: Node, rejoin: boolean): Promise<void> {
    const { p, files } = this;
    mkdirSync(n.dataDir, { recursive: true });
    const logFile = join(p.dir, `node-${n.id}.log`);
    const { fd: out, from } = openNodeLog(logFile);
    const managerAddrs = this.managers.map((_, i) => `127.0.0.1:${managerPortOf(p.cluster) + i}`).join(',');
    const args = [bin, 'start', '--data-dir', n.dataDir, ...this.where, '--node-id', String(n.id), '--config', files.nodeConfig, '--secret-file', files.secret, '--client-password-file', files.password, ...p.tlsArgs,
      '--roles', launchedRoles(n.id, n.workerPorts.length), '--fabric', n.fabric.kind, '--fabric-port', String(n.fabric.port),
      '--manager', managerAddrs, '--metrics-port', String(metricsPortOf(p.cluster, n.id)), ...p.nodeArgs, ...(rejoin ? ['--rejoin'] : [])];
    // Own process group: a terminal ^C reaches only this launcher, which stops each node once (SIGTERM).
    // ROWAN_LAUNCHER_PID: the node sets a parent-death signal, so it goes down with this launcher
    // however the launcher dies (SIGKILL included), instead of living on under PID 1.
    const child = spawn(process.execPath, [...SERVER_V8_FLAGS, ...args], { stdio: ['ignore', out, out], detached: true, env: this.env });
    closeQuietly(out);
    this.children.set(n.id, child);
    const b = this.backoff.get(n.id) ?? new RestartBackoff();
    this.backoff.set(n.id, b);
    b.started(Date.now());
    console.log(`starting node ${n.id}${rejoin ? ' to rejoin' : ''} (log ${logFile})`);
    if (this.readyToWatch) this.watchNode(n.id, child);
    return waitReady(child, logFile, from, n.id, 120_000, n.dataDir).then(() => {
      const resp = n.resp ? `; redis on ${n.resp.ports.map((port) => `${n.host}:${port}`).join(', ')} (cluster ${n.resp.clusterPorts.join(', ')})` : '';
      console.log(`node ${n.id} ready (pid ${child.pid}): clients on ${n.workerPorts.map((port) => `${n.host}:${port}`).join(', ')}${resp}; metrics http://${n.host}:${metricsPortOf(p.cluster, n.id)}/metrics`);
    });
  }

  /**
   * The stored membership changed: a node added to it (`rowan cluster add-node`, its data under this
   * cluster's directory) is started; a node removed from it (decommissioned: it holds nothing) is
   * stopped and not restarted.
   */
  private membershipChanged(to: ClusterConfig): void {
    this.cluster = to;
    if (this.stopping) return;
    for (const n of to.nodes) {
      if (this.children.has(n.id) || this.removed.has(n.id) || !n.dataDir.startsWith(this.p.dir + '/')) continue;
      console.log(`node ${n.id} joined the membership (term ${to.term}): starting it`);
      this.spawnNode(n, false).catch((err: Error) => console.error(`node ${n.id} did not start: ${err.message}`));
    }
    for (const [id, c] of this.children) {
      if (to.nodes.some((n) => n.id === id) || this.removed.has(id)) continue;
      this.removed.add(id);
      console.log(`node ${id} was decommissioned (term ${to.term}): stopping it`);
      if (live(c)) c.kill('SIGTERM');
    }
  }

  /** A node that dies: reported, and (unless --no-restart) restarted after its backoff. */
  private watchNode(id: number, c: ChildProcess): void {
    c.once('exit', (code, signal) => {
      if (code !== 0) this.codes++;
      this.wake();
      if (this.stopping) return;
      if (this.removed.has(id)) return console.log(`node ${id} (pid ${c.pid}) stopped (${signal ?? `code ${code}`}): it was decommissioned`);
      if (!this.p.supervise) return console.log(`node ${id} (pid ${c.pid}) exited (${signal ?? `code ${code}`}); the configuration manager fails it over`);
      const ms = this.backoff.get(id)!.next(Date.now());
      console.log(`node ${id} (pid ${c.pid}) exited (${signal ?? `code ${code}`}); the configuration manager fails it over; restarting it in ${ms} ms`);
      setTimeout(() => this.restartNode(id), ms).unref();
    });
  }

  /** Once the store lists it dead (or the wait for that ends), start it again: to rejoin, or with its data. */
  private restartNode(id: number): void {
    if (this.stopping) return;
    void waitListedDead(this.p.store, id, () => this.stopping, this.deadWaitMs).then((isDead) => {
      if (this.stopping || this.removed.has(id)) return;
      const n = this.cluster.nodes.find((x) => x.id === id);
      if (!n) return;
      console.log(`restarting node ${id}: ${isDead ? 'failed over, it rejoins with the pool it kept' : 'not failed over, it restarts with its data'}`);
      this.spawnNode(n, isDead).catch((err: Error) => console.error(`node ${id} did not come back: ${err.message}`));
    });
  }

  private watchManager(i: number, m: ChildProcess): void {
    m.once('exit', (code, signal) => {
      if (this.stopping) return this.wake();
      const which = this.p.managerCount > 1 ? `configuration manager ${i} (pid ${m.pid})` : 'the configuration manager';
      console.log(`${which} exited (${signal ?? `code ${code}`}); restarting it${this.p.managerCount > 1 ? ' (it joins the election as a standby)' : ''}`);
      this.restartManager(i, which, 0);
    });
  }

  /** A manager that cannot start again (ZooKeeper still unreachable, say) is retried with backoff: the
   *  other managers and the nodes go on meanwhile. */
  private restartManager(i: number, which: string, attempt: number): void {
    this.startManager(i).then(() => this.watchManager(i, this.managers[i]!), (err: Error) => {
      if (this.stopping) return this.wake();
      const ms = Math.min(30_000, 1000 * 2 ** attempt);
      console.error(`cannot restart ${which}: ${err.message}; trying again in ${ms} ms`);
      setTimeout(() => {
        if (!this.stopping) this.restartManager(i, which, attempt + 1);
      }, ms).unref();
    });
  }

  /** The endpoints and the commands to try, as this user can type them (bin/rowan from the checkout). */
  private printServing(): void {
    const { p, files } = this;
    const rel = relative(process.cwd(), bin);
    const cmd = rel.startsWith('..') ? bin : rel;
    // With --cluster the clients find the password beside cluster.json; with ZooKeeper they are told where it is.
    const w = [...this.where, ...('file' in p.spec ? [] : ['--password-file', files.password]), ...(p.tlsCa ? ['--tls-ca', p.tlsCa] : [])].join(' ');
    const redis = `redis-cli ${p.tlsCa ? `--tls --cacert ${p.tlsCa} ` : ''}-p ${p.cluster.nodes[0]?.resp?.ports[0] ?? 0} -a "$(cat ${files.password})" get hello`;
    console.log(`\nserving. Try:\n  ${cmd} put hello world ${w}\n  ${cmd} get hello ${w}\n  ${cmd} status ${this.where.join(' ')}\n  ${redis}\n` +
      `Clients authenticate with the client password in ${files.password} (the cluster secret in ${files.secret} is for nodes only).\n` +
      `${this.detached ? `${cmd} cluster stop --dir ${p.dir} stops the cluster` : 'Ctrl-C stops the cluster'}; running this again on ${p.dir} restarts it with its data.`);
  }

  /** Print each configuration change until stopped (or every node has exited); the exit code. */
  private async superviseUntilStopped(): Promise<number> {
    const { p } = this;
    // What it prints is for the operator: a file store is watched, not polled (./cluster-supervise.ts).
    const stopWatching = watchStoreChanges(p.store, p.cluster, (from, to) => {
      console.log(describeChange(from, to));
      this.membershipChanged(to);
    });
    const anyLive = () => [...this.children.values()].some(live) || (this.stopping && this.managers.some(live));
    while ((p.supervise && !this.stopping) || anyLive()) {
      await new Promise<void>((r) => {
        this.wake = r;
        setTimeout(r, 1000).unref();
      });
    }
    stopWatching();
    if (!this.stopping) {
      console.error('every node has exited; stopping the configuration manager');
      this.stopAll();
      return 1;
    }
    console.log(this.codes ? `cluster stopped; ${this.codes} node(s) exited non-zero (see the node logs)` : 'cluster stopped');
    return this.codes ? 1 : 0;
  }
}

/**
 * The roles of node `id`: with one worker and several CPUs, its worker pinned to CPU `id` mod their
 * count, so the three workers of a 2-core machine do not all land on its first core (each node places
 * its actors on its own; runtime/placement.ts gives the background actors a core the worker leaves).
 */
export function launchedRoles(id: number, workers: number, cpus: readonly number[] = schedGetaffinity(0)): string {
  const pin = workers === 1 && cpus.length > 1 ? `@${cpus[id % cpus.length]}` : '';
  return `worker:${workers}${pin},control,digest,clean,migration`;
}
