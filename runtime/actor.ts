// Actors: one role instance, driven by the event loop of a pinned worker_thread -- alone on it, or
// with the other background actors of its node (runtime.threads, ./placement.ts).
//
//   main thread                                   actor thread (./actor-host.ts: imports the roles'
//   spawnThread() -- new Worker(host) -------->   thread.ts, whose runActor() registers a definition)
//                --- HostStart (entry, port) ->   one per actor, each with a MessagePort of its own;
//                                                 pins the thread (sched_setaffinity(0)), reads the
//                                                 mask back, opens its rings, runs init()
//                <-- READY {tid, cpus, cpu} ---   then pumps its inbox and runs its tick
//   handle.stop() --- stop (port) ------------>   stops ticking, drains its rings, runs drain()
//                <-- stopped -----------------    closes its port; the thread exits once every actor
//                                                 on it closed its port
//                <-- failed {code, message} ---   on any throw (handler, tick, init, uncaught: an
//                                                 uncaught error fails every actor of the thread)
//
// Ring records (shm/mailbox.ts) carry the data; the port carries only these lifecycle messages.
// The definition is plain data plus functions of a context, so a test can drive handlers directly with
// a fake context, single-threaded (CONVENTIONS 9).
import { parentPort, type MessagePort } from 'node:worker_threads';
import { monotonicClock, realTimers, type Clock } from '../config/base/clock.js';
import { dataDirFiles } from '../config/base/files.js';
import type { RowanConfig } from '../config/model.js';
import { Pool } from '../shm/pool.js';
import { fabricTransport, type Transport } from './fabric/transport.js';
import { selectVerbsDevices } from './fabric/verbs-devices.js';
import { gettid, schedGetaffinity, schedGetcpu, schedSetaffinity, setThreadName } from '../native/libc.js';
import { ActorState, CounterWriter, I64 } from '../shm/counters.js';
import { Doorbell, Inbox, Outbox, RecordKind, type RingMessage } from '../shm/mailbox.js';
import { Ring } from '../shm/ring.js';
import { ErrorCodes, RowanError, invariant, toRecord } from '../config/base/errors.js';
import type { ActorToParent, ParentToActor, ReadyExtras, StartMessage } from './lifecycle.js';
import { createLogger, type Logger } from '../config/base/log.js';
import { pump } from './pump.js';
import { TickSchedule, type TickResult } from './tick-schedule.js';
import { withPoolMedia } from './optane/media-file.js';

export { spawnActor, spawnThread, ActorHandle, type SpawnSpec } from './spawn.js';
export type { ReadyExtras, ReadyReport, StartMessage } from './lifecycle.js';
export type { TickResult } from './tick-schedule.js';

/** What an actor's code may use. Everything crossed the boundary in the StartMessage. */
export interface ActorContext {
  readonly role: string;
  readonly id: number;
  readonly name: string;
  readonly config: RowanConfig;
  readonly log: Logger;
  readonly counters: CounterWriter;
  /** Publish one record to actor `to` now; false when its ring is full (the record is dropped). */
  send(to: string, msg: RingMessage): boolean;
  /** The producer end towards `to`, for batches (append ... flush). */
  outbox(to: string): Outbox;
  /** Names of the actors of `role` this actor has a ring to. */
  peers(role: string): string[];
  /** The node's PM pool, mapped in this thread on first use (storage is injected: roles never open
   *  a pool by path). The runtime unmaps it after drain(). */
  readonly pool: Pool;
  /** Monotonic milliseconds (time is injected: roles never read Date.now/performance.now). */
  readonly clock: Clock;
  /** How this actor reaches other nodes' receivers. */
  readonly transport: Transport;
  /** The application's payload from the start message; the runtime does not interpret it. */
  readonly app: unknown;
  /** The cluster secret, or null when the node runs without authentication (--no-auth). */
  readonly secret: Uint8Array | null;
  /** The client password clients must prove on the client and Redis ports, or null (--no-auth). */
  readonly clientPassword: Uint8Array | null;
  /** Work appeared for the periodic duty: its next tick runs within one base period, however long
   *  idle ticks had stretched the wait (./tick-schedule.ts). Cheap when not stretched. */
  wakeTick(): void;
}

type Handler<M> = (msg: M, from: string, ctx: ActorContext) => void;
/** Kinds the runtime handles for every role: PING is answered with a PONG, PONG is counted. */
type RuntimeKind = typeof RecordKind.PING | typeof RecordKind.PONG;
type RoleKind<In extends RingMessage> = Exclude<In['kind'], RuntimeKind>;

export interface ActorDefinition<In extends RingMessage = RingMessage> {
  role: string;
  /** Record kinds this role takes on its rings beyond PING/PONG (which the runtime answers/counts). */
  accepts: readonly RoleKind<In>[];
  handlers: { [K in RoleKind<In>]: Handler<Extract<In, { kind: K }>> };
  /** Period of tick() for this configuration; undefined = no periodic work. */
  tickMs?: (config: RowanConfig) => number | undefined;
  /** The longest wait between ticks while they report 'idle' (doubling from tickMs); undefined = tickMs. */
  idleTickMs?: (config: RowanConfig) => number | undefined;
  /** The periodic duty: report 'idle' when it found nothing to do and nothing is pending, or when it
   *  next needs to look ({ inMs }); nothing = it worked (the base period again). */
  tick?: (ctx: ActorContext) => TickResult | Promise<TickResult>;
  /** Runs before READY; what it returns (e.g. the endpoint it listens on) is reported in READY. */
  init?: (ctx: ActorContext) => void | ReadyExtras | Promise<void | ReadyExtras>;
  /** Last words on stop, after the inbound rings were drained. 'keep-pool-mapped': requests still
   *  running may touch the pool, so the runtime must not unmap it (the process exit does). */
  drain?: (ctx: ActorContext) => void | 'keep-pool-mapped' | Promise<void | 'keep-pool-mapped'>;
}

/** Identity function that checks a definition's types where it is written. */
export function defineActor<In extends RingMessage>(def: ActorDefinition<In>): ActorDefinition<In> {
  return def;
}

/** Definitions registered by the role modules the host thread imports, by module URL. */
const registered = new Map<string, ActorDefinition>();
/** The module ./actor-host.ts is importing now (its runActor() registers under this URL). */
let importing: string | null = null;

/** Call at the top of a role's thread.ts. Imported by ./actor-host.ts: registers the definition for
 *  the actors of that module the host starts. Run as a worker's own entry (an older spawner): takes
 *  the start message on parentPort itself. A no-op on the main thread. */
export function runActor<In extends RingMessage>(def: ActorDefinition<In>): void {
  if (importing !== null) {
    registered.set(importing, def as unknown as ActorDefinition);
    return;
  }
  const port = parentPort;
  if (!port) return;
  port.once('message', (m: ParentToActor) => {
    invariant(m.type === 'start', `actor's first message must be start, got ${m.type}`);
    new ActorThread(def as unknown as ActorDefinition, m, port).start();
  });
}

/** ./actor-host.ts: import a role module so its runActor() registers; its definition. */
export async function importActor(entry: string): Promise<ActorDefinition> {
  const known = registered.get(entry);
  if (known) return known;
  importing = entry;
  try {
    await import(entry);
  } finally {
    importing = null;
  }
  const def = registered.get(entry);
  if (!def) throw new RowanError(ErrorCodes.ACTOR_FAILED, `${entry} defines no actor (its module never called runActor)`);
  return def;
}

/** ./actor-host.ts: start one actor of this thread on its own lifecycle port. */
export function startActor(def: ActorDefinition, start: StartMessage, port: MessagePort): void {
  new ActorThread(def, start, port).start();
}

type Port = Pick<MessagePort, 'on' | 'postMessage' | 'close'>;

class ActorThread {
  private readonly counters: CounterWriter;
  private readonly bell: Doorbell;
  private readonly inbox: Inbox;
  private readonly outboxes = new Map<string, Outbox>();
  private readonly log: Logger;
  private readonly ctx: ActorContext;
  private stopping = false;
  private failed = false;
  private ticks: TickSchedule | null = null;
  private ticking = false;

  constructor(
    private readonly def: ActorDefinition,
    private readonly s: StartMessage,
    private readonly port: Port,
  ) {
    // Before anything in this thread can open an RDMA device (the control actor's receive queue, a
    // worker's verbs connections): the device list the node was started with.
    selectVerbsDevices(s.verbsDevices);
    this.counters = new CounterWriter(s.counters);
    this.bell = new Doorbell(s.doorbell);
    this.inbox = new Inbox(
      s.inbound.map((l) => ({ from: l.from, ring: new Ring(l.ring) })),
      this.bell,
    );
    for (const o of s.outbound) this.outboxes.set(o.to, new Outbox(o.to, new Ring(o.ring), new Doorbell(o.doorbell)));
    this.log = createLogger(s.config.logLevel, { actor: s.name, role: s.role });
    const peersByRole = new Map<string, string[]>();
    for (const o of s.outbound) peersByRole.set(o.toRole, [...(peersByRole.get(o.toRole) ?? []), o.to]);
    // eslint-disable-next-line @typescript-eslint/no-this-alias -- the context's pool getter
    const self = this;
    this.ctx = {
      role: s.role,
      id: s.id,
      name: s.name,
      config: s.config,
      log: this.log,
      counters: this.counters,
      send: (to, msg) => this.send(to, msg),
      outbox: (to) => this.outboxTo(to),
      peers: (role) => peersByRole.get(role) ?? [],
      get pool() {
        return self.openPool();
      },
      clock: monotonicClock,
      transport: fabricTransport(s.config, s.secret),
      app: s.app,
      secret: s.secret,
      clientPassword: s.clientPassword ?? null,
      wakeTick: () => this.ticks?.wake(),
    };
  }

  private pool: Pool | null = null;

  /** The pool, mapped once per thread with the node's persistence mode and GC reserve. */
  private openPool(): Pool {
    if (!this.pool) {
      const c = this.s.config;
      this.pool = Pool.open(dataDirFiles(c.dataDir).pool, { mode: c.persistence, reserveSegments: c.gc.reserveSegments, wrapRegion: withPoolMedia });
    }
    return this.pool;
  }

  start(): void {
    process.on('uncaughtException', (err) => this.fail(err));
    process.on('unhandledRejection', (err) => this.fail(err));
    this.port.on('message', (m: ParentToActor) => {
      if (m.type === 'stop') void this.stop().catch((err) => this.fail(err));
    });
    this.boot().catch((err) => this.fail(err));
  }

  private async boot(): Promise<void> {
    // Pin this thread only: pid 0 = the calling thread (Linux affinity is per task, not per process).
    schedSetaffinity(0, this.s.cores);
    setThreadName(this.s.thread ?? this.s.name);
    const cpus = schedGetaffinity(0);
    const tid = gettid();
    const cpu = schedGetcpu();
    this.counters.setIdentity(tid, cpu);
    const extras = (await this.def.init?.(this.ctx)) ?? {};
    this.counters.setState(ActorState.READY);
    this.counters.publish();
    this.post({ type: 'ready', tid, cpus, cpu, ...(extras.endpoint ? { endpoint: extras.endpoint } : {}) });
    this.log.debug({ tid, cpus, cpu }, 'actor ready');
    const period = this.def.tickMs?.(this.s.config);
    if (this.def.tick && period !== undefined) {
      const idleMax = Math.max(period, this.def.idleTickMs?.(this.s.config) ?? period);
      this.ticks = new TickSchedule(period, idleMax, () => this.runTick(), realTimers, monotonicClock);
      this.ticks.start();
    }
    await pump(this.inbox, {
      dispatch: (msg, from) => this.dispatch(msg, from),
      afterPass: () => this.counters.publish(),
      onWake: () => this.counters.local[I64.WAKEUPS]!++,
      stopping: () => this.stopping || this.failed,
    });
  }

  private dispatch(msg: RingMessage, from: string): void {
    const c = this.counters.local;
    c[I64.MESSAGES_IN]!++;
    switch (msg.kind) {
      case RecordKind.PING:
        // Answered by the runtime for every role: proves the actor's loop and both rings are alive. The
        // count is published before the PONG goes out, so whoever has the PONG also sees it counted
        // (`rowan status` pings, then reads the counters: it used to read them one publish early).
        if (!this.outboxes.has(from)) return;
        c[I64.PINGS]!++;
        this.counters.publish();
        if (!this.send(from, { kind: RecordKind.PONG, seq: msg.seq })) c[I64.PINGS]!--; // ring full: no PONG
        return;
      case RecordKind.PONG:
        return;
      case RecordKind.SEGMENT_BATCH:
        c[I64.SEGMENT_BATCHES]!++;
        break;
    }
    const h = (this.def.handlers as Record<number, Handler<RingMessage> | undefined>)[msg.kind];
    // A record kind outside the role's protocol means the rings are wired wrong: stop loudly.
    invariant(h && (this.def.accepts as readonly number[]).includes(msg.kind), `${this.s.name} got record kind ${msg.kind} from ${from}`);
    h(msg, from, this.ctx);
  }

  private send(to: string, msg: RingMessage): boolean {
    const ok = this.outboxTo(to).send(msg);
    if (ok) this.counters.local[I64.MESSAGES_OUT]!++;
    return ok;
  }

  private outboxTo(to: string): Outbox {
    const o = this.outboxes.get(to);
    if (!o) throw new RowanError(ErrorCodes.ACTOR_FAILED, `${this.s.name} has no ring to ${to}`);
    return o;
  }

  private runTick(): void {
    if (this.ticking || this.stopping || this.failed) return; // re-armed only after a tick ends: cannot pile up
    this.ticking = true;
    this.ticks!.began();
    const done = (result: TickResult) => {
      this.ticking = false;
      this.ticks!.ended(result);
      const c = this.counters.local;
      c[I64.TICKS]!++;
      c[I64.TICK_AT_MS] = Date.now();
      c[I64.TICK_WAIT_MS] = Math.ceil(this.ticks!.periodMs); // counters are integers; the manager's wait ({ inMs }) is not
      this.counters.setCpu(schedGetcpu());
      this.counters.publish();
    };
    try {
      const r = this.def.tick!(this.ctx);
      if (r instanceof Promise) r.then(done, (err) => this.fail(err));
      else done(r);
    } catch (err) {
      this.fail(err);
    }
  }

  private async stop(): Promise<void> {
    if (this.stopping || this.failed) return;
    this.stopping = true;
    this.counters.setState(ActorState.STOPPING);
    this.ticks?.stop();
    this.bell.wake(); // end the pump's sleep so it sees `stopping`
    // Drain: whatever was published before the stop is still handled (producers were stopped first).
    this.inbox.drain((msg, from) => this.dispatch(msg, from));
    const keep = await this.def.drain?.(this.ctx);
    if (keep !== 'keep-pool-mapped') this.pool?.close();
    else this.log.warn('requests still running at stop: leaving the pool mapped until the thread exits');
    this.counters.setState(ActorState.STOPPED);
    this.counters.publish();
    this.post({ type: 'stopped' });
    this.log.debug('actor stopped');
    this.port.close();
  }

  private fail(err: unknown): void {
    if (this.failed) return;
    this.failed = true;
    this.ticks?.stop();
    this.bell.wake();
    const rec = toRecord(err);
    try {
      this.counters.setState(ActorState.FAILED);
      this.counters.publish();
    } catch {
      // counters are best effort here; the report below is what matters
    }
    this.post({ type: 'failed', error: rec });
    // The supervisor terminates the thread after reading the report; until then it stays inert.
  }

  private post(m: ActorToParent): void {
    this.port.postMessage(m);
  }
}
