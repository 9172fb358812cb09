// A node's side of the configuration manager (§4.5), on the node's main thread: it holds the lease
// and applies the manager's configurations to the node's configuration cell (../shared/config-cell.ts), which
// every worker and digest actor reads per request.
//
// Why the main thread and not the control actor: the main thread creates the cell and the shard
// state, holds the pool mapping the promotion scan needs (./promote.ts), and is on no data path --
// the control actor ticks the b-log receiver every usedGraceMs / 2, and a renewal must not queue
// behind that work. Safety does not depend on which thread renews: workers check the lease expiry in
// the cell on every request and before acknowledging a write, so a main thread that stalls only
// fences its node sooner.
//
// Lease (timing argument in actors/manager/leases.ts): each renew remembers when it was sent; its
// grant extends the lease to t_send + leaseMs - driftMs, never shortening it.
//
// Each connection first proves the cluster secret to the manager and checks the manager's proof
// (../shared/manager-auth.ts); only then is the hello sent and the lease renewed. A refused handshake is
// logged once and retried every authRetryMs (the node's lease meanwhile runs out: it fences itself).
//
// Several managers (a standby, actors/manager/election.ts): the node is given all their addresses and
// holds its lease with whichever answers. A standby does not listen, so a refused or lost connection
// moves on to the next address; so does a connection whose handshake is not completed within
// noGrantMs or on which no grant came for noGrantMs after it (a manager that lost its election or
// is paused), as long as another address is there to try. The timings: config/timings.ts; noGrantMs
// grows to two renew periods of the lease in force, so a healthy manager is never left.
import { connectSocket, type TlsClientMaterial } from '../../runtime/net/tls.js';
import { RowanError } from '../../config/base/errors.js';
import { NodeAuthHandshake } from '../shared/manager-auth.js';
import { defaultTimings, noGrantMsFor } from '../../config/timings.js';
import { realTimers, type Clock, type TimerHandle, type Timers } from '../../config/base/clock.js';
import type { Logger } from '../../config/base/log.js';
import type { ConfigCell } from '../shared/config-cell.js';
import { ConfigFollower, type FollowerHooks } from './config-follower.js';
import { LineReader, encodeLine, type ManagerToNode, type NodeToManager } from '../shared/manager-protocol.js';
import type { ShardLoad } from '../shared/shard-load.js';

/** What the node does for the manager: follow its rounds (./config-follower.ts), report load, stop. */
export interface LeaseHooks extends FollowerHooks {
  /** Resharding statistics (§4.6): requests and writes per shard since the previous call. */
  load?(): ShardLoad[];
  /** The manager removed this node from the membership (requests are refused from here on). */
  evicted?(): void;
}

/** The connection to a manager, as the lease client uses it (a net.Socket or tls.TLSSocket). */
export interface LeaseSocket {
  on(event: string, fn: (...args: any[]) => void): unknown; // eslint-disable-line @typescript-eslint/no-explicit-any
  write(line: string): unknown;
  destroy(): unknown;
}

/** Open a connection to a manager; `ready` names the event the socket emits once connected. */
export type DialManager = (to: { host: string; port: number; noDelay: boolean }, tls: TlsClientMaterial | null) => { socket: LeaseSocket; ready: string };

/** What the lease client's time and connections come from (CONVENTIONS 9; the simulator, test/sim,
 *  passes its own). Default: Node's timers and TCP/TLS. */
/** One connection attempt to one manager, from the dial to its close. */
interface Attempt {
  s: LeaseSocket;
  manager: { host: string; port: number };
  /** Several managers to try: a silent one is left for the next sooner. */
  multi: boolean;
  reader: LineReader<ManagerToNode>;
  auth: NodeAuthHandshake;
  authed: boolean;
  /** How long after a close the next attempt waits (longer after a refused handshake). */
  retryMs: number;
  connecting: TimerHandle;
  deadline: TimerHandle | undefined;
}

export interface LeaseSeams {
  timers?: Timers;
  dial?: DialManager;
}

export class LeaseClient {
  private socket: LeaseSocket | null = null;
  /** A first connection being made; a second one made beside a silent `socket`; the old one of
   *  those, closed once the manager answers on its replacement. */
  private dialing: LeaseSocket | null = null;
  private replacing: LeaseSocket | null = null;
  private retiring: LeaseSocket | null = null;
  private timer: TimerHandle | undefined;
  private renewMs = defaultTimings.firstRenewMs;
  private seq = 0;
  private readonly sentAt = new Map<number, number>();
  private leaseUntil = 0;
  /** Until when this node holds every other member's peer lease (../shared/peer-lease.ts). */
  private peerUntil = -Infinity;
  private timing: { leaseMs: number; renewMs: number; driftMs: number } | null = null;
  /** When the manager last said anything on the current connection (own clock). */
  private heardAt = 0;
  private silent = false;
  private stopped = false;
  private evicted = false;
  /** Commits run one after the other: a promotion is the promotion log's only writer. */
  /** The manager tried next (an index into managers), and when the current connection was last granted. */
  private next = 0;
  private grantedAt = 0;
  private watchdog: TimerHandle | undefined;

  constructor(
    private readonly managers: { host: string; port: number }[],
    private readonly nodeId: number,
    private readonly cell: ConfigCell,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly hooks: LeaseHooks,
    /** Started with an empty pool to rejoin after a failover (its hello asks to leave `dead`). */
    private readonly rejoin = false,
    /** The cluster secret this node proves to the manager; null = none (--no-auth). */
    private readonly secret: Uint8Array | null = null,
    /** Mutual TLS to the manager (this node's certificate, the CA); null = plain TCP. */
    private readonly tls: TlsClientMaterial | null = null,
    /** How often the load statistics go to the manager (resharding.periodMs; paper: 500 ms). */
    private readonly loadPeriodMs = 500,
    seams: LeaseSeams = {},
  ) {
    this.timers = seams.timers ?? realTimers;
    this.dial = seams.dial ?? connectSocket;
    this.follower = new ConfigFollower({
      nodeId, cell, clock, log, hooks, timers: this.timers,
      send: (m) => this.send(m),
      timing: () => this.timing,
    });
  }

  /** The prepare/commit rounds, as this node follows them (./config-follower.ts). */
  private readonly follower: ConfigFollower;

  private readonly timers: Timers;
  private readonly dial: DialManager;

  /** The manager's lease timing, once it granted a lease (peer leases use the same). */
  leaseTiming(): { leaseMs: number; renewMs: number; driftMs: number } | null {
    return this.timing;
  }

  /** Peer leases (../shared/peer-lease.ts) changed: the node serves while either lease holds. */
  setPeerLease(until: number): void {
    this.peerUntil = until;
    this.publishLease();
  }

  /** Workers serve until the later of the manager's lease and the peer leases (never after eviction). */
  private publishLease(): void {
    if (this.evicted || this.cell.evicted()) return;
    this.cell.setLease(Math.max(this.leaseUntil, this.peerUntil, 0));
  }

  private loadTimer: TimerHandle | undefined;
  private loadSentAt = 0;
  /** The last handshake failure logged (each distinct one is logged once, not at every retry). */
  private authFailure = '';

  private sendLoad(): void {
    const loads = this.hooks.load?.() ?? [];
    const now = this.clock.now();
    const flat: number[] = [];
    for (const l of loads) flat.push(l.shard, l.reqs, l.writes);
    this.send({ t: 'load', node: this.nodeId, term: this.cell.term(), periodMs: +(now - this.loadSentAt).toFixed(1), loads: flat });
    this.loadSentAt = now;
  }

  /** Tell the manager something outside the lease exchange (re-replication's caughtUp). */
  notify(m: NodeToManager): void {
    this.send(m);
  }

  start(): void {
    this.connect();
  }

  stop(): void {
    this.stopped = true;
    this.timers.clearInterval(this.timer);
    this.timers.clearInterval(this.watchdog);
    this.timers.clearInterval(this.loadTimer);
    for (const x of [this.socket, this.dialing, this.replacing, this.retiring]) x?.destroy();
  }

  /**
   * Connect to the manager. `replace`: a second connection beside the current one, which looks dead
   * (renew()); the current one is closed only once the manager answered on the new one, so it has
   * taken the new connection as this node's before it sees the old one close (a close is a failure
   * hint to it), and nothing is closed while the manager cannot be reached at all.
   */
  private connect(replace = false): void {
    if (this.stopped || this.evicted) return;
    if (replace && this.replacing !== null) return;
    const manager = this.managers[this.next % this.managers.length]!;
    this.next = (this.next + 1) % this.managers.length;
    const { socket: s, ready } = this.dial({ host: manager.host, port: manager.port, noDelay: true }, this.tls);
    if (replace) this.replacing = s;
    else this.dialing = s;
    const a: Attempt = {
      s, manager, multi: this.managers.length > 1,
      reader: new LineReader<ManagerToNode>(),
      auth: new NodeAuthHandshake(this.secret, `${manager.host}:${manager.port}`),
      authed: false,
      retryMs: defaultTimings.reconnectMs,
      // A manager that cannot be reached (a partition drops the SYN) is tried again, not waited for.
      connecting: this.timers.setTimeout(() => s.destroy(), this.timing?.leaseMs ?? defaultTimings.managerConnectTimeoutMs),
      deadline: undefined,
    };
    a.deadline = this.handshakeDeadline(a);
    s.on(ready, () => {
      this.timers.clearTimeout(a.connecting);
      s.write(a.auth.hello());
    });
    s.on('data', (chunk: Buffer) => this.onData(a, chunk));
    s.on('error', () => {});
    s.on('close', () => this.onClose(a));
  }

  /**
   * A manager that never answers the handshake (an old one ignores auth-hello; a paused one accepts in
   * the kernel and says nothing) must not hold the node silently: give up after the manager's own
   * handshake deadline and retry -- with another manager to try, after noGrantMs and at once there.
   */
  private handshakeDeadline(a: Attempt): TimerHandle {
    const { s, manager, multi } = a;
    const handshakeMs = multi ? Math.min(noGrantMsFor(defaultTimings, this.timing?.renewMs ?? null), defaultTimings.managerHandshakeMs) : defaultTimings.managerHandshakeMs;
    return this.timers.setTimeout(() => {
      if (a.authed) return;
      if (multi) {
        this.log.warn({ manager: `${manager.host}:${manager.port}` }, `lease: the configuration manager at ${manager.host}:${manager.port} did not complete the authentication handshake within ${handshakeMs} ms; trying the next one`);
        s.destroy();
        return;
      }
      a.retryMs = defaultTimings.authRetryMs;
      const why = `the configuration manager at ${manager.host}:${manager.port} did not complete the authentication handshake within ${handshakeMs} ms`;
      if (why !== this.authFailure) this.log.error(`lease: ${why}; retrying every ${defaultTimings.authRetryMs} ms`);
      this.authFailure = why;
      s.destroy();
    }, handshakeMs).unref();
  }

  /** Bytes from the manager: the handshake until it completes, then its messages. */
  private onData(a: Attempt, chunk: Buffer): void {
    const s = a.s;
    if (a.authed && this.socket === s && this.retiring !== null) {
      const old = this.retiring;
      this.retiring = null;
      old.destroy();
    }
    this.heardAt = this.clock.now();
    if (this.silent) {
      this.silent = false;
      this.log.warn('the configuration manager answers again');
    }
    try {
      for (const m of a.reader.push(chunk)) {
        if (a.authed) {
          this.onMessage(m);
          continue;
        }
        const next = a.auth.onMessage(m);
        if (next === null) this.authenticated(a);
        else s.write(next);
      }
    } catch (err) {
      if (!a.authed && err instanceof RowanError) {
        a.retryMs = defaultTimings.authRetryMs;
        if (err.message !== this.authFailure) this.log.error({ code: err.code }, `lease: ${err.message}; retrying every ${defaultTimings.authRetryMs} ms`);
        this.authFailure = err.message;
      } else this.log.error({ err: (err as Error).message }, 'lease: bad message from the manager; reconnecting');
      s.destroy();
    }
  }

  /** The manager proved the secret: this connection becomes the node's (the old one retires), hello. */
  private authenticated(a: Attempt): void {
    const { s, manager } = a;
    a.authed = true;
    this.timers.clearTimeout(a.deadline);
    if (this.authFailure !== '') this.log.info('lease: the configuration manager accepted this node');
    this.authFailure = '';
    if (this.dialing === s) this.dialing = null;
    if (this.replacing === s) this.replacing = null;
    const old = this.socket;
    if (old !== null && old !== s) {
      this.retiring?.destroy();
      this.retiring = old; // closed at the first answer on `s` after its hello
    }
    this.socket = s;
    this.heardAt = this.clock.now();
    this.send({ t: 'hello', node: this.nodeId, pid: process.pid, term: this.cell.term(), ...(this.rejoin ? { rejoin: true } : {}) });
    this.sentAt.set(0, this.clock.now()); // the hello is renew 0
    this.grantedAt = this.clock.now();
    this.next = this.managers.indexOf(manager); // this one answered: come back to it first
    this.schedule();
    if (a.multi) this.watchGrants(s, manager);
    if (this.hooks.load) {
      this.timers.clearInterval(this.loadTimer);
      this.hooks.load(); // what was counted while disconnected is not this period's
      this.loadSentAt = this.clock.now();
      this.loadTimer = this.timers.setInterval(() => this.sendLoad(), this.loadPeriodMs);
      this.loadTimer.unref();
    }
  }

  /** With several managers: connected but not granted for two renew periods, try the next one. */
  private watchGrants(s: LeaseSocket, manager: { host: string; port: number }): void {
    this.timers.clearInterval(this.watchdog);
    this.watchdog = this.timers.setInterval(() => {
      const noGrantMs = noGrantMsFor(defaultTimings, this.timing?.renewMs ?? null); // two renew periods of the lease in force, at least
      if (this.socket !== s || this.clock.now() - this.grantedAt < noGrantMs) return;
      this.log.warn({ manager: `${manager.host}:${manager.port}` }, `no lease grant from the manager at ${manager.host}:${manager.port} for ${noGrantMs} ms; trying the next one`);
      this.next = (this.managers.indexOf(manager) + 1) % this.managers.length;
      s.destroy();
    }, defaultTimings.noGrantMs / 4);
    this.watchdog.unref();
  }

  private onClose(a: Attempt): void {
    const s = a.s;
    this.timers.clearTimeout(a.connecting);
    this.timers.clearTimeout(a.deadline);
    if (this.replacing === s) return void (this.replacing = null); // renew() tries again
    if (this.retiring === s) return void (this.retiring = null); // replaced: nothing to do
    if (this.dialing === s) this.dialing = null;
    else if (this.socket === s) {
      this.socket = null;
      this.timers.clearInterval(this.watchdog);
      this.timers.clearInterval(this.timer);
      this.timers.clearInterval(this.loadTimer);
    } else return;
    if (!this.stopped && !this.evicted) this.timers.setTimeout(() => this.connect(), a.retryMs).unref();
  }

  private schedule(): void {
    this.timers.clearInterval(this.timer);
    this.timer = this.timers.setInterval(() => this.renew(), this.renewMs);
  }

  private renew(): void {
    // No word from the manager for two leases on a connection that looks open: the path to it may be
    // broken (a partition drops packets; TCP would retransmit with a growing backoff for minutes and,
    // after the heal, resume seconds late). A second connection is tried, again each renew period
    // until one works (connect(true)). Checked again after the event loop has read its sockets
    // (setImmediate): timers run before I/O, so after a stall of this thread grants already waiting
    // in the socket would look missing.
    const t = this.timing;
    if (t && this.clock.now() - this.heardAt > defaultTimings.silentLeases * t.leaseMs) {
      const s = this.socket;
      this.timers.setImmediate(() => {
        const ms = this.clock.now() - this.heardAt;
        if (this.socket !== s || ms <= defaultTimings.silentLeases * t.leaseMs) return;
        if (!this.silent) {
          this.silent = true;
          this.log.warn({ ms: +ms.toFixed(0) }, 'no word from the configuration manager for two leases: trying a new connection (serving on peer leases meanwhile, if every other member grants one)');
        }
        this.connect(true);
      });
    }
    const seq = ++this.seq;
    this.sentAt.set(seq, this.clock.now());
    if (this.sentAt.size > 64) this.sentAt.delete(this.sentAt.keys().next().value!);
    this.send({ t: 'renew', node: this.nodeId, seq, term: this.cell.term() });
  }

  private send(m: NodeToManager): void {
    this.socket?.write(encodeLine(m));
  }

  private onMessage(m: ManagerToNode): void {
    switch (m.t) {
      case 'grant': {
        const sent = this.sentAt.get(m.seq);
        if (sent === undefined) return;
        this.timing = { leaseMs: m.leaseMs, renewMs: m.renewMs, driftMs: m.driftMs };
        this.cell.setLeaseSpan(m.leaseMs, m.driftMs);
        this.grantedAt = this.clock.now();
        const until = sent + m.leaseMs - m.driftMs;
        if (until > this.leaseUntil) {
          this.leaseUntil = until;
          this.publishLease(); // workers serve until then (or longer, on peer leases)
        }
        if (m.renewMs !== this.renewMs) {
          this.renewMs = m.renewMs;
          this.schedule();
        }
        return;
      }
      case 'prepare':
      case 'commit':
        return this.follower.onMessage(m);
      case 'evicted':
        if (this.evicted) return;
        this.evicted = true;
        this.cell.evict();
        this.log.error({ term: m.term }, 'the configuration manager removed this node from the cluster (its lease expired): serving nothing from now on');
        this.stop();
        this.hooks.evicted?.();
        return;
    }
  }
}
