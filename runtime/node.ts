// One server process (a *node*): opens its data dir and PM pool, spawns the configured role actors
// pinned to their cores, wires their rings, answers the control socket, supervises the actors, and
// shuts down in pipeline order on SIGTERM/SIGINT or `rowan stop`.
//
// Supervision: an actor that throws, reports failure or exits unasked takes the whole node down (exit
// code 1, one fatal log line with the error's code), unless `runtime.restarts[role]` still allows a
// restart: then the same actor is respawned on the same rings and counters.
import { accessSync, constants, mkdirSync, statSync, unlinkSync } from 'node:fs';
import type { Server } from 'node:net';
import type { RowanConfig } from '../config/model.js';
import { createCounters } from '../shm/counters.js';
import { Inbox, Outbox, RecordKind } from '../shm/mailbox.js';
import { spawnThread, type ActorHandle } from './actor.js';
import { ErrorCodes, RowanError } from '../config/base/errors.js';
import { listenControl, probeSocket, socketPath, type ControlRequest } from './endpoint.js';
import { createLogger, type Logger } from '../config/base/log.js';
import { MAIN, nodeRoles, placeActors, threadsOf, wireActors, type ActorPlan, type Wiring } from './placement.js';
import { openNodePool, type NodePool } from './pool-hook.js';
import { checkNodeFabric } from './fabric/check.js';
import type { VerbsDevices } from './fabric/verbs-devices.js';
import { monotonicClock, type Clock } from '../config/base/clock.js';
import type { NodeApplication } from './application.js';
import { Exposition, pmMediaMetrics, runtimeMetrics, serveMetrics } from './metrics.js';
import { pump } from './pump.js';
import { collectStatus, type NodeStatus } from './status.js';
import type { SpawnSpec } from './spawn.js';

export type { NodeStatus } from './status.js';

export interface NodeOptions {
  config: RowanConfig;
  log?: Logger;
  /** Install SIGTERM/SIGINT handlers that shut the node down (the CLI does; tests may not). */
  handleSignals?: boolean;
  /** Replace a role's thread entry (tests inject faulty actors through the real supervisor). */
  entries?: Partial<Record<string, URL>>;
  /** The application the actors run (ROWAN-KV: actors/node/node-application.ts kvApplication); none = bare actors. */
  app?: NodeApplication;
  /** Serve Prometheus metrics on GET http://host:port/metrics (runtime/metrics.ts); absent = none. */
  metrics?: { host: string; port: number };
  /** The cluster secret the node's ports demand and its actors prove (config/base/secret.ts); null =
   *  no authentication (rowan start --no-auth, warned about in the log). Absent = null without the
   *  warning (`rowan manager --no-auth` warns in its own words). `rowan start` always sets it. */
  secret?: Uint8Array | null;
  /** The client password the client and Redis ports demand of clients (config/base/secret.ts); null
   *  or absent = none. A node with client ports needs both or neither (its workers refuse to start). */
  clientPassword?: Uint8Array | null;
  /** Where `--fabric verbs` finds RDMA devices (runtime/fabric/verbs-devices.ts): absent = libibverbs;
   *  `loopbackDevices(dir)` = the loopback RNIC, for tests on machines without RDMA hardware. */
  verbsDevices?: VerbsDevices;
}

/**
 * Stop order: producers before their consumers, so each stage drains what the previous one sent. The
 * nic goes first: remote writes land through it into control's b-log.
 */
// Every role is stopped (its drain runs): 'manager' was missing, so the configuration manager's drain
// never ran and its ZooKeeper session outlived the process by a session timeout.
const stopOrder = ['manager', 'nic', 'worker', 'migration', 'control', 'digest', 'clean'];

export function roleEntry(role: string): URL {
  return new URL(`../actors/${role}/thread.js`, import.meta.url);
}

/** Create the data dir if its parent exists, and check it is a writable directory. */
export function prepareDataDir(dir: string): void {
  try {
    mkdirSync(dir, { recursive: false });
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (e.code !== 'EEXIST')
      throw new RowanError(ErrorCodes.DATA_DIR, `cannot create data dir ${dir}: ${e.code === 'ENOENT' ? 'its parent does not exist' : e.message}`);
  }
  if (!statSync(dir).isDirectory()) throw new RowanError(ErrorCodes.DATA_DIR, `data dir ${dir} is not a directory`);
  try {
    accessSync(dir, constants.W_OK | constants.X_OK);
  } catch {
    throw new RowanError(ErrorCodes.DATA_DIR, `data dir ${dir} is not writable`);
  }
}

export class RowanNode {
  readonly clock: Clock = monotonicClock;
  readonly startedAt = this.clock.now();
  /** Resolves with the process exit code once the node is fully down. */
  readonly closed: Promise<number>;
  private resolveClosed!: (code: number) => void;
  private readonly actors = new Map<string, ActorHandle>();
  private readonly restartsUsed = new Map<string, number>();
  private readonly outboxes = new Map<string, Outbox>();
  private readonly pongs = new Map<number, (at: number) => void>();
  private server: Server | undefined;
  private metricsServer: import('node:http').Server | undefined;
  /** Where GET /metrics is served, once listening. */
  metricsEndpoint: { host: string; port: number } | null = null;
  private pool: { pool: NodePool; path: string } | null = null;
  private shuttingDown = false;
  private pingSeq = 0;
  private readonly signalHandlers: [NodeJS.Signals, () => void][] = [];

  constructor(
    readonly config: RowanConfig,
    readonly log: Logger,
    readonly plans: ActorPlan[],
    readonly wiring: Wiring,
    private readonly entries: Partial<Record<string, URL>>,
    private readonly app?: NodeApplication,
    private readonly metrics?: { host: string; port: number },
    private readonly secret: Uint8Array | null = null,
    private readonly clientPassword: Uint8Array | null = null,
    private readonly verbsDevices?: VerbsDevices,
  ) {
    this.closed = new Promise((r) => (this.resolveClosed = r));
    for (const l of wiring.links)
      if (l.from === MAIN) this.outboxes.set(l.to, new Outbox(l.to, l.ring, wiring.bells.get(l.to)!));
  }

  get socketPath(): string {
    return socketPath(this.config.dataDir);
  }

  /** @internal startNode's steps, in order. */
  async boot(handleSignals: boolean): Promise<void> {
    const path = this.socketPath;
    if ((await probeSocket(path)) === 'live')
      throw new RowanError(ErrorCodes.DATA_DIR, `a node is already running in ${this.config.dataDir} (${path} answers)`);
    checkNodeFabric(this.config.fabric.kind, this.verbsDevices);
    this.pool = await openNodePool(this.config, this.log);
    const { mode, backend } = this.pool.pool;
    this.log.info(
      { persistence: mode, backend, pool: this.pool.path, poolId: this.pool.pool.poolId },
      `persistence mode: ${mode} (mapped through ${backend})`,
    );
    await this.app?.prepare(this.pool.pool, this.log);
    void this.pumpMain();
    try {
      const results = await Promise.allSettled([...threadsOf(this.plans)].map(([thread, group]) => this.spawn(group, thread)));
      const bad = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (bad) throw bad.reason;
      this.server = await listenControl(path, (req) => this.control(req));
      if (this.metrics) {
        const m = await serveMetrics({ ...this.metrics, collect: async () => this.metricsText(), log: this.log });
        this.metricsServer = m.server;
        this.metricsEndpoint = { host: this.metrics.host, port: m.port };
        this.log.info({ metrics: `http://${this.metrics.host}:${m.port}/metrics` }, 'metrics served');
      }
      if (this.shuttingDown) throw new RowanError(ErrorCodes.ACTOR_FAILED, 'an actor failed while the node was starting');
    } catch (err) {
      await this.shutdown(1, 'start failed');
      throw err;
    }
    if (handleSignals)
      for (const sig of ['SIGTERM', 'SIGINT'] as const) {
        const h = () => void this.shutdown(0, sig);
        process.once(sig, h);
        this.signalHandlers.push([sig, h]);
      }
    this.app?.started?.(this.log);
    this.log.info({ actors: this.plans.length, socket: path }, 'node ready');
  }

  private spawnSpec(p: ActorPlan): SpawnSpec {
    return {
      entry: this.entries[p.role] ?? roleEntry(p.role),
      readyTimeoutMs: this.config.runtime.readyTimeoutMs,
      start: {
        role: p.role,
        id: p.id,
        name: p.name,
        cores: p.cores,
        config: this.config,
        counters: this.actors.get(p.name)?.spec.start.counters ?? createCounters(),
        doorbell: this.wiring.bells.get(p.name)!.sab,
        inbound: this.wiring.inbound(p.name),
        outbound: this.wiring.outbound(p.name),
        app: this.app?.payload(p.role),
        secret: this.secret,
        clientPassword: this.clientPassword,
        ...(this.verbsDevices ? { verbsDevices: this.verbsDevices } : {}),
      },
    };
  }

  /** Start the actors of one thread (one, or the background actors sharing it). */
  private async spawn(group: ActorPlan[], thread: string): Promise<void> {
    const handles = await spawnThread(group.map((p) => this.spawnSpec(p)), thread);
    if (this.shuttingDown) {
      // Another actor failed while these were starting: the stop sweep may have passed already.
      await Promise.all(handles.map((h) => h.stop(this.config.runtime.stopTimeoutMs)));
      throw new RowanError(ErrorCodes.ACTOR_FAILED, `${group.map((p) => p.name).join(', ')} started after the node began stopping`);
    }
    group.forEach((p, i) => {
      const h = handles[i]!;
      this.actors.set(p.name, h);
      const r = h.ready!;
      this.log.info({ actor: p.name, role: p.role, thread, tid: r.tid, cores: r.cpus, cpu: r.cpu }, `actor ${p.name} READY`);
      if (r.cpus.join(',') !== p.cores.join(','))
        this.log.warn({ actor: p.name, asked: p.cores, got: r.cpus }, 'actor runs on other CPUs than asked');
      h.once('failed', (err: RowanError) => void this.onActorFailed(p, err));
    });
  }

  private async onActorFailed(p: ActorPlan, err: RowanError): Promise<void> {
    if (this.shuttingDown) return;
    const used = this.restartsUsed.get(p.name) ?? 0;
    const allowed = this.config.runtime.restarts[p.role] ?? 0;
    if (used < allowed) {
      this.restartsUsed.set(p.name, used + 1);
      this.log.error({ actor: p.name, code: err.code, restart: used + 1, of: allowed }, `actor ${p.name} failed: ${err.code}: ${err.message}; restarting`);
      try {
        await this.spawn([p], p.name); // on a thread of its own, even if it shared one (which it took down)
        return;
      } catch (again) {
        err = again instanceof RowanError ? again : new RowanError(ErrorCodes.ACTOR_FAILED, String(again));
      }
    }
    this.log.fatal({ actor: p.name, role: p.role, code: err.code }, `actor ${p.name} failed: ${err.code}: ${err.message}; stopping node`);
    await this.shutdown(1, `${p.name} failed`);
  }

  /** The main thread's own inbox: PONGs from the actors. */
  private async pumpMain(): Promise<void> {
    const links = this.wiring.links.filter((l) => l.to === MAIN).map((l) => ({ from: l.from, ring: l.ring }));
    const inbox = new Inbox(links, this.wiring.bells.get(MAIN)!);
    await pump(inbox, {
      dispatch: (msg) => {
        if (msg.kind === RecordKind.PONG) this.pongs.get(msg.seq)?.(this.clock.now());
      },
      stopping: () => this.shuttingDown,
    });
  }

  /** Round trip main -> actor -> main through the rings, in microseconds; null if no answer in time. */
  async ping(name: string, timeoutMs = 500): Promise<number | null> {
    const out = this.outboxes.get(name);
    if (!out) return null;
    const seq = ++this.pingSeq | 0;
    const t0 = this.clock.now();
    const answered = new Promise<number>((r) => this.pongs.set(seq, r));
    if (!out.send({ kind: RecordKind.PING, seq })) return null;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<null>((r) => (timer = setTimeout(() => r(null), timeoutMs)));
    const at = await Promise.race([answered, late]);
    clearTimeout(timer);
    this.pongs.delete(seq);
    return at === null ? null : Math.round((at - t0) * 1000);
  }

  async status(): Promise<NodeStatus> {
    const pings = new Map<string, number | null>();
    await Promise.all([...this.actors.keys()].map(async (n) => pings.set(n, await this.ping(n))));
    return collectStatus(this, this.actors, pings, this.pool, this.app?.status?.bind(this.app));
  }

  /** The exposition for one scrape: from shared counters, without pinging the actors. */
  private metricsText(): string {
    const s = collectStatus(this, this.actors, new Map(), this.pool, undefined);
    const e = new Exposition();
    runtimeMetrics(e, s.actors, s.uptimeMs);
    if (s.pm.model) pmMediaMetrics(e, s.pm.model);
    if (this.pool) this.app?.metrics?.(e, this.pool.pool, s.actors, s.uptimeMs);
    return e.text();
  }

  private async control(req: ControlRequest): Promise<unknown> {
    if (req.op === 'status') return this.status();
    setImmediate(() => void this.shutdown(0, 'rowan stop'));
    return { stopping: true, pid: process.pid };
  }

  /** Stop everything; idempotent. Resolves `closed` with `code`. */
  async shutdown(code: number, reason: string): Promise<number> {
    if (this.shuttingDown) return this.closed;
    this.shuttingDown = true;
    this.log.info({ reason, code }, 'node stopping');
    this.app?.stopping?.();
    for (const [sig, h] of this.signalHandlers) process.off(sig, h);
    if (this.signalHandlers.length) {
      process.once('SIGINT', () => process.exit(130)); // a second ^C ends it at once
      // A SIGTERM while draining (a supervisor repeating itself) must not kill the drain half-way.
      process.on('SIGTERM', () => this.log.info('SIGTERM while stopping: already draining'));
    }
    if (this.metricsServer) {
      this.metricsServer.closeAllConnections();
      await new Promise<void>((r) => this.metricsServer!.close(() => r()));
    }
    if (this.server) {
      await new Promise<void>((r) => this.server!.close(() => r()));
      try {
        unlinkSync(this.socketPath);
      } catch {
        // already gone: closing the server may have removed it
      }
    }
    this.wiring.bells.get(MAIN)!.wake(); // end the main pump's sleep
    const timeout = this.config.runtime.stopTimeoutMs;
    for (const role of stopOrder) {
      const group = [...this.actors.values()].filter((h) => h.role === role);
      const results = await Promise.all(group.map((h) => h.stop(timeout)));
      results.forEach((r, i) => r === 'terminated' && this.log.warn({ actor: group[i]!.name }, 'actor did not stop in time; terminated'));
    }
    if (this.pool) await this.pool.pool.close();
    this.log.info({ code }, 'node stopped');
    this.resolveClosed(code);
    return code;
  }
}

/** Start a node: every actor READY and the control socket listening, or a RowanError and nothing left. */
export async function startNode(o: NodeOptions): Promise<RowanNode> {
  const cfg = o.config;
  const log = o.log ?? createLogger(cfg.logLevel, { node: cfg.dataDir });
  prepareDataDir(cfg.dataDir);
  socketPath(cfg.dataDir); // a data dir too long for a unix socket fails here, before any thread starts
  const plans = placeActors(nodeRoles(cfg), cfg.cores, cfg.runtime.threads);
  const node = new RowanNode(cfg, log, plans, wireActors(plans, cfg.runtime.ringWords), o.entries ?? {}, o.app, o.metrics, o.secret ?? null, o.clientPassword ?? null, o.verbsDevices);
  if (o.secret === null) log.warn('authentication is off (--no-auth): the fabric nic, client and Redis ports serve anyone who can reach them');
  await node.boot(o.handleSignals ?? false);
  return node;
}
