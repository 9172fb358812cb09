// A node's side of the configuration manager (§4.5): it holds the lease and hands the manager's
// configuration rounds to the node's follower (./config-follower.ts), which applies them to the
// node's configuration cell (../shared/config-cell.ts) that every worker and digest actor reads per
// request.
//
// Which thread runs it: a node runs it on a thread of its own (./lease-thread.ts, issue 26), at a
// raised scheduling priority where the system allows, so that no stall of the main thread (a
// promotion's scan, a synchronous fsync, a GC pause) holds up a renewal or a grant: the lease it
// holds is what every worker checks (the cell's LEASE word) before serving and before acknowledging
// a write. The follower stays on the main thread, which holds the pool mapping and the shard state;
// the rounds reach it through `follow` (LeaseSeams). Without `follow` (the simulator, test/sim) the
// client runs the follower itself, on its own thread. Safety does not depend on which thread renews:
// a renewing thread that stalls only fences its node sooner.
//
// Lease (timing argument in actors/manager/leases.ts): each renew remembers when it was sent; its
// grant extends the lease to t_send + leaseMs - driftMs, never shortening it. The renew path
// allocates nothing (a ring of send times, a reused frame, a reused decoded grant).
//
// The connection itself -- handshake, reconnects, several managers, a silent connection replaced -- is
// ./manager-link.ts; the prepare/commit rounds this node follows are ./config-follower.ts.
import { connectSocket, type TlsClientMaterial } from '../../runtime/net/tls.js';
import { defaultTimings } from '../../config/timings.js';
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import { gridDelayMs, realTimers, type Clock, type TimerHandle, type Timers } from '../../config/base/clock.js';
import type { Logger } from '../../config/base/log.js';
import type { ConfigCell } from '../shared/config-cell.js';
import { ConfigFollower, type FollowerHooks } from './config-follower.js';
import type { ManagerToNode, NodeToManager } from '../shared/manager-protocol.js';
import { ManagerLink, type DialManager } from './manager-link.js';

export type { DialManager, LeaseSocket } from './manager-link.js';
import { LoadReportGate, type ShardLoad } from '../shared/shard-load.js';

/** What the node does for the manager: follow its rounds (./config-follower.ts, when the client runs
 *  the follower itself: no `follow` seam), report load, stop. */
export interface LeaseHooks extends Partial<FollowerHooks> {
  /** Resharding statistics (§4.6): requests and writes per shard since the previous call. */
  load?(): ShardLoad[];
  /** Live bytes of each shard this node is primary of, flat (shard, bytes) pairs (issue 28: the
   *  membership balancing weighs bytes). */
  bytes?(): number[];
  /** The manager removed this node from the membership (requests are refused from here on). */
  evicted?(retired: boolean): void;
  /** Each renew period, connected to a manager or not (peer leases look whether they are needed:
   *  ../shared/peer-lease.ts PeerLeases.tick). */
  tick?(): void;
  /** A grant brought another lease timing (the first grant, a new manager's). */
  timing?(t: Readonly<LeaseTiming>): void;
}

type LeaseTiming = { leaseMs: number; renewMs: number; driftMs: number };
/** The manager's two round messages, for the follower. */
export type RoundMessage = Extract<ManagerToNode, { t: 'prepare' | 'commit' }>;

/** What the lease client's time and connections come from (CONVENTIONS 9; the simulator, test/sim,
 *  passes its own). Default: Node's timers and TCP/TLS. */
export interface LeaseSeams {
  timers?: Timers;
  dial?: DialManager;
  /** Where the manager's prepare and commit go (the node's main thread, ./lease-thread-link.ts).
   *  Absent: a follower of the client's own, built on `hooks` (which then must have prepare and
   *  promote). */
  follow?: (m: RoundMessage) => void;
}

/** What one read from the manager's connection may bring at most (a grant frame is 40 B; a round's
 *  configuration line is a few kB and may take several reads). */
const READ_BYTES = 16 * 1024;

/** Production's dial: each connection reads into one buffer of its own, reused for every read (no
 *  allocation nor stream push per grant; the stream reader copies what it holds). Over TLS, Node's
 *  ordinary reads. */
const dialReusingBuffer: DialManager = (to, tls) => connectSocket({ ...to, readInto: Buffer.allocUnsafe(READ_BYTES) }, tls);

/** Renewals whose send time is kept for their grant (older grants are ignored). */
const SENT_KEPT = 64;
/** Renew seqs wrap below 2^32 (they fit a renew frame, ../shared/manager-frames.ts). */
const SEQ_MAX = 0xffff_ffff;

/**
 * How long from `now` until the next multiple of `periodMs` on the monotonic clock, in (0, periodMs]:
 * where the renew timer starts. Every node on a host reads the same CLOCK_MONOTONIC, so their renewals
 * leave within a millisecond of each other and the manager takes them in one wakeup instead of one
 * each (an idle 3-node cluster woke the manager's thread ~145 times a second for 150 renewals). The
 * first renewal after a hello still comes within one period, and the period itself is unchanged.
 */
export function renewGridDelayMs(now: number, periodMs: number): number {
  return gridDelayMs(now, periodMs, 0); // never later than a period: the lease depends on it
}

export class LeaseClient {
  private timer: TimerHandle | undefined;
  private renewMs = defaultTimings.firstRenewMs;
  private seq = 0;
  /** When each of the last SENT_KEPT renewals was sent, by seq % SENT_KEPT (a ring: no allocation per
   *  renew); a grant for a seq no longer here is ignored. */
  private readonly sentAt = new Float64Array(SENT_KEPT).fill(NaN);
  private readonly sentSeq = new Float64Array(SENT_KEPT).fill(-1);
  private leaseUntil = 0;
  /** The lease end whose lapse was last logged (noteLapse). */
  private lapseSaid = 0;
  private timing: { leaseMs: number; renewMs: number; driftMs: number } | null = null;
  private evicted = false;

  constructor(
    managers: { host: string; port: number }[],
    private readonly nodeId: number,
    private readonly cell: ConfigCell,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly hooks: LeaseHooks,
    /** Started with an empty pool to rejoin after a failover (its hello asks to leave `dead`). */
    private readonly rejoin = false,
    /** The cluster secret this node proves to the manager; null = none (--no-auth). */
    secret: Uint8Array | null = null,
    /** Mutual TLS to the manager (this node's certificate, the CA); null = plain TCP. */
    tls: TlsClientMaterial | null = null,
    /** How often the load statistics go to the manager (resharding.periodMs; paper: 500 ms). */
    private readonly loadPeriodMs = 500,
    seams: LeaseSeams = {},
  ) {
    this.timers = seams.timers ?? realTimers;
    this.loadGate = new LoadReportGate(loadPeriodMs);
    this.link = new ManagerLink({
      managers, clock, log, secret, tls, timers: this.timers,
      dial: seams.dial ?? dialReusingBuffer,
      timing: () => this.timing,
      events: { up: (watchGrants) => this.up(watchGrants), down: () => this.down(), message: (m) => this.onMessage(m) },
    });
    this.follow = seams.follow ?? this.ownFollower(hooks);
  }

  /** The prepare/commit rounds go here (./config-follower.ts, here or on another thread). */
  private readonly follow: (m: RoundMessage) => void;

  private ownFollower(hooks: LeaseHooks): (m: RoundMessage) => void {
    const { prepare, promote } = hooks;
    if (!prepare || !promote) throw new RowanError(ErrorCodes.BAD_ARGUMENT, 'a lease client without `follow` needs the prepare and promote hooks');
    const follower = new ConfigFollower({
      nodeId: this.nodeId, cell: this.cell, clock: this.clock, log: this.log, timers: this.timers,
      hooks: { ...hooks, prepare, promote },
      send: (m) => this.send(m),
      timing: () => this.timing,
    });
    return (m) => follower.onMessage(m);
  }

  private readonly timers: Timers;
  /** The connection to the manager (./manager-link.ts). */
  private readonly link: ManagerLink;

  /** The manager's lease timing, once it granted a lease (peer leases use the same). */
  leaseTiming(): { leaseMs: number; renewMs: number; driftMs: number } | null {
    return this.timing;
  }

  /** Until when the manager's lease holds (own clock; 0 before the first grant). */
  managerLeaseUntil(): number {
    return this.leaseUntil;
  }

  /** Peer leases (../shared/peer-lease.ts) changed: the node serves while either lease holds (the
   *  cell's PEER word, beside the manager's LEASE: workers take the later). */
  setPeerLease(until: number): void {
    if (this.evicted) return;
    this.cell.setPeerLease(until);
  }

  /** Workers serve until the manager's lease ends (or the peers', whichever is later; never after
   *  eviction). */
  private publishLease(): void {
    if (this.evicted) return;
    this.cell.setLease(Math.max(this.leaseUntil, 0), this.clock.now());
  }

  private loadTimer: TimerHandle | undefined;
  private loadSentAt = 0;
  private readonly loadGate: LoadReportGate;

  /** As the lease thread's link does (./lease-thread-link.ts): the gate drops an idle node's repeats. */
  private sendLoad(): void {
    const loads = this.hooks.load?.() ?? [];
    const now = this.clock.now();
    const periodMs = +(now - this.loadSentAt).toFixed(1);
    this.loadSentAt = now;
    const term = this.cell.term();
    if (!this.loadGate.send(loads.length === 0, term, now)) return;
    const flat: number[] = [];
    for (const l of loads) flat.push(l.shard, l.reqs, l.writes);
    const bytes = this.hooks.bytes?.();
    this.send({ t: 'load', node: this.nodeId, term, periodMs, loads: flat, ...(bytes ? { bytes } : {}) });
  }

  /** Tell the manager something outside the lease exchange (re-replication's caughtUp). */
  notify(m: NodeToManager): void {
    this.send(m);
  }

  /** notify() with the line encoded already (by another thread: ./lease-thread-link.ts). */
  notifyLine(line: string): void {
    this.link.sendLine(line);
  }

  start(): void {
    this.link.start();
    this.schedule();
  }

  stop(): void {
    this.timers.clearInterval(this.timer);
    this.timers.clearTimeout(this.loadTimer);
    this.link.stop();
  }

  /** A connection is the node's: hello (renew 0), renewals, load reports. */
  private up(watchGrants: () => void): void {
    const unconfirmed = this.hooks.unconfirmed?.() ?? [];
    this.send({ t: 'hello', node: this.nodeId, pid: process.pid, term: this.cell.term(), frames: 1, ...(this.rejoin ? { rejoin: true } : {}), ...(unconfirmed.length > 0 ? { unconfirmed } : {}) });
    this.sent(0, this.clock.now()); // the hello is renew 0
    this.connected = true;
    this.schedule(); // the first renew one period after the hello
    watchGrants();
    if (this.hooks.load) {
      this.timers.clearTimeout(this.loadTimer);
      this.hooks.load(); // what was counted while disconnected is not this period's
      this.loadSentAt = this.clock.now();
      this.loadGate.reset(); // a new manager (or connection) hears this node's load at once
      this.scheduleLoad();
    }
  }

  /** Load periods end on the grid of the monotonic clock: every node of a host counts the same
   *  interval, so the manager compares loads over the same instants (sampled each at its own phase, a
   *  burst shorter than a period fell in one node's period and not the next's, and two such
   *  generations in a row looked like an overloaded node: a move nobody needed). */
  private scheduleLoad(): void {
    this.loadTimer = this.timers.setTimeout(() => {
      this.sendLoad();
      this.scheduleLoad();
    }, gridDelayMs(this.clock.now(), this.loadPeriodMs));
    this.loadTimer.unref();
  }

  /** The node's connection closed: no renewals nor load reports until the next is up (the timer
   *  still ticks the hook). */
  private down(): void {
    this.connected = false;
    this.timers.clearTimeout(this.loadTimer);
  }

  /** A connection is up and said hello: renew() sends. */
  private connected = false;

  /** The node's one renew-period timer (start() to stop()): renew while connected, then the hook.
   *  Its ticks fall on the period's grid of the monotonic clock (renewGridDelayMs), so the nodes of
   *  one host renew together and the manager reads their renewals in one wakeup (issue 26). */
  private schedule(): void {
    this.timers.clearInterval(this.timer);
    const period = this.renewMs;
    this.timer = this.timers.setTimeout(() => {
      this.timer = this.timers.setInterval(() => this.renewTick(), period);
      this.renewTick();
    }, renewGridDelayMs(this.clock.now(), period));
  }

  private renewTick(): void {
    if (this.connected) this.renew();
    this.hooks.tick?.();
  }

  private renew(): void {
    const t = this.timing;
    if (t) this.link.reconnectIfSilent(defaultTimings.silentLeases * t.leaseMs);
    this.seq = this.seq >= SEQ_MAX ? 1 : this.seq + 1; // 0 is the hello's
    this.sent(this.seq, this.clock.now());
    this.link.renew(this.nodeId, this.seq, this.cell.term());
  }

  private sent(seq: number, at: number): void {
    this.sentAt[seq % SENT_KEPT] = at;
    this.sentSeq[seq % SENT_KEPT] = seq;
  }

  /** When renew `seq` was sent (undefined: not one of the last SENT_KEPT). */
  private sentTime(seq: number): number | undefined {
    const i = seq % SENT_KEPT;
    return Number.isInteger(seq) && seq >= 0 && this.sentSeq[i] === seq ? this.sentAt[i] : undefined;
  }

  /** The timing a grant carries; a new object only when it changed (a grant comes each renew). */
  private takeTiming(leaseMs: number, renewMs: number, driftMs: number): void {
    const t = this.timing;
    if (t !== null && t.leaseMs === leaseMs && t.renewMs === renewMs && t.driftMs === driftMs) return;
    this.timing = { leaseMs, renewMs, driftMs };
    this.cell.setLeaseSpan(leaseMs, driftMs);
    this.hooks.timing?.(this.timing);
  }

  /** A grant came after the lease it extends had run out: the node served nothing (fenced itself) for
   *  that stretch -- a lease lost on a live node. Said once per lapse (the lease soak counts them,
   *  bench/lease-soak.bench.ts). */
  private noteLapse(): void {
    const now = this.clock.now();
    if (this.leaseUntil <= 0 || now <= this.leaseUntil || this.evicted || this.lapseSaid === this.leaseUntil) return;
    this.lapseSaid = this.leaseUntil;
    this.log.warn({ event: 'lease-lapsed', lapsedMs: +(now - this.leaseUntil).toFixed(1) }, `lease: no grant got through for ${(now - this.leaseUntil).toFixed(1)} ms past the lease: this node served nothing meanwhile`);
  }

  private send(m: NodeToManager): void {
    this.link.send(m);
  }

  private onMessage(m: ManagerToNode): void {
    switch (m.t) {
      case 'grant': {
        const sent = this.sentTime(m.seq);
        if (sent === undefined) return;
        this.takeTiming(m.leaseMs, m.renewMs, m.driftMs);
        this.link.granted();
        const until = sent + m.leaseMs - m.driftMs;
        this.noteLapse();
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
        return this.follow(m);
      case 'renewNow':
        if (this.connected && !this.evicted) this.renew(); // an extra renewal: its grant extends the lease like any
        return;
      case 'evicted':
        if (this.evicted) return;
        this.evicted = true;
        this.cell.evict();
        this.log.error({ term: m.term, retired: m.retired === true }, `the configuration manager removed this node from the cluster (${m.retired ? 'decommissioned: its id is retired' : 'its lease expired'}): serving nothing from now on`);
        this.stop();
        this.hooks.tick?.(); // a last tick: peer leases see the eviction and stop asking
        this.hooks.evicted?.(m.retired === true);
        return;
    }
  }
}
