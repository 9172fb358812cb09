// The configuration manager in the simulator: the real ConfigManager (actors/manager/manager.ts) with
// its rounds (failover with gather/scatter, moves, completing a stored term), on simulated time
// (./timers.ts), a configuration store in memory that outlives the manager's crashes (the cluster file,
// or ZooKeeper), and the manager's side of each node's lease connection (./wire.ts) as
// actors/manager/manager-server.ts serves it (the handshake gate, then JSON lines into onMessage/onClose).
//
// It crashes like any process: at a time the seed picks, or at a crash point -- the nth log event of
// a round step (failover detected/stored/prepared/committed, move-*, takeover), the nth prepare or
// commit about to be sent (mid-round: some members got it, the rest never will), or right after the
// nth store write reached the store (stored, not yet known to the manager). A crashed manager sends,
// stores and schedules nothing more. It restarts from the stored configuration either as the file
// store's manager restarts (`rowan manager` again: no election) or as a standby taking over
// (elected: it completes the stored term first, actors/manager/takeover.ts).
import type { ClusterConfig, ClusterNode } from '../../config/cluster.js';
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import type { Logger } from '../../config/base/log.js';
import type { ConfigStore } from '../../config/store.js';
import { ConfigManager, type Link } from '../../actors/manager/manager.js';
import { ALWAYS } from '../../actors/manager/takeover.js';
import type { LeaseTiming } from '../../actors/manager/leases.js';
import type { Move } from '../../actors/manager/reshard.js';
import { ManagerAuthGate } from '../../actors/shared/manager-auth.js';
import { encodeLine, type NodeToManager } from '../../actors/manager/protocol.js';
import { GrantWriter, ManagerStreamReader } from '../../actors/shared/manager-frames.js';
import type { SimNet } from './net.js';
import { SimTimers } from './timers.js';
import { MANAGER_ID, SimSocket } from './wire.js';

/** Where the manager crashes: a log event of a round step, a message about to be sent, a store write. */
export type CrashPoint = { kind: 'event'; event: string; nth: number } | { kind: 'send'; msg: 'prepare' | 'commit'; nth: number } | { kind: 'store'; nth: number };

export const CRASH_EVENTS = ['detected', 'stored', 'prepared', 'committed', 'promoted', 'move-started', 'move-stored', 'move-prepared', 'move-committed', 'move-promoted', 'move-done', 'move-rolled-back', 'takeover', 'resumed', 're-replicate'] as const;

export function describePoint(p: CrashPoint): string {
  return p.kind === 'event' ? `event ${p.event} #${p.nth}` : p.kind === 'send' ? `send of ${p.msg} #${p.nth}` : `store write #${p.nth}`;
}

/** The durable configuration store (compare-and-set on the term), shared by every manager incarnation. */
export class SimStore {
  writes = 0;
  constructor(public cfg: ClusterConfig) {}

  write(next: ClusterConfig, expected: number | null): void {
    if (expected !== this.cfg.term) throw new RowanError(ErrorCodes.STALE_TERM, `store: term is ${this.cfg.term}, not ${expected}`);
    this.cfg = structuredClone(next);
    this.writes++;
  }
}

export interface SimManagerOptions {
  timing: LeaseTiming;
  tickMs: number;
  /** Mutation (./mutations.ts): a move's stored term is committed to every member at once, without
   *  a prepare -- nobody drained; and a member behind the stored term that says hello or renews is sent
   *  the bare commit (the catch-up of issue 24's hazard 2). */
  bareCommitMoves?: boolean;
}

export class SimManager {
  up = false;
  inc = 0;
  cm: ConfigManager | null = null;
  timers: SimTimers | null = null;
  readonly counts = { boots: 0, crashes: 0, crashPoints: 0 };
  /** Crash points still armed, and what they counted so far. */
  private points: (CrashPoint & { then: () => void })[] = [];
  /** Events watched (watch()): each fires once. */
  private watches: { event: string; then: () => void }[] = [];
  private seen = new Map<string, number>();
  private sockets: SimSocket[] = [];
  /** The latest connection of each node (the bare-commit mutation sends on it). */
  private links = new Map<number, Link>();
  /** The log of every incarnation (for a failing seed's report). */
  readonly lines: string[] = [];

  constructor(
    readonly store: SimStore,
    private readonly net: SimNet,
    private readonly o: SimManagerOptions,
    private readonly onError: (where: string, err: unknown) => void,
  ) {}

  /** Crash at `p`; `then` runs after the crash (it schedules the restart). */
  arm(p: CrashPoint, then: () => void): void {
    this.points.push({ ...p, then });
  }

  /** Run `then` at the next log event `event` of any incarnation, without crashing (a fault timed to a
   *  round's step, ./faults.ts schedulePromotionCut). */
  watch(event: string, then: () => void): void {
    this.watches.push({ event, then });
  }

  /** No crash point fires any more (the simulation settles). */
  disarm(): void {
    this.points = [];
    this.watches = [];
  }

  /** Start an incarnation from the stored configuration; `takeover`: as an elected standby. */
  boot(takeover: boolean): void {
    const inc = ++this.inc;
    this.up = true;
    this.counts.boots++;
    this.sockets = [];
    this.links = new Map();
    const alive = () => this.up && this.inc === inc;
    const loop = this.net.loop;
    this.timers = new SimTimers(loop, ['manager', inc], alive, (w, e) => this.onError(w, e));
    const store: ConfigStore = {
      read: async () => structuredClone(this.store.cfg),
      // A write lands (or is refused) at once; the manager hears of it a moment later -- if it still runs.
      write: (next, expected) => {
        if (!alive()) return new Promise(() => {});
        try {
          this.store.write(next, expected);
        } catch (err) {
          return Promise.reject(err);
        }
        this.hit(`store`, (p) => p.kind === 'store');
        return this.timers!.sleep(this.net.delay());
      },
    };
    const activation = takeover ? { valid: alive, elected: true, takeover: true } : ALWAYS;
    this.cm = new ConfigManager(store, structuredClone(this.store.cfg), this.o.timing, loop.clock, this.logger(alive), this.timers.sleep, activation, undefined, this.timers);
    const cm = this.cm;
    this.timers.setInterval(() => cm.tick(), this.o.tickMs);
    this.lines.push(`${loop.now().toFixed(1)} manager incarnation ${inc} starts at term ${this.store.cfg.term}${takeover ? ' (takeover)' : ''}`);
  }

  /** Power off now: every connection closes, nothing more happens. */
  crash(why: string): void {
    if (!this.up) return;
    this.up = false;
    this.counts.crashes++;
    this.cm?.close();
    for (const s of this.sockets) s.kill();
    this.sockets = [];
    this.lines.push(`${this.net.loop.now().toFixed(1)} manager crashes: ${why}`);
  }

  requestMove(moves: Move[]): void {
    this.cm?.requestMove(moves, 'sim', (err) => err && this.lines.push(`move refused: ${err.message}`));
  }

  requestMembership(req: { kind: 'add'; node: ClusterNode } | { kind: 'leave'; node: number }): void {
    this.cm?.requestMembership(req, (err) => err && this.lines.push(`membership change refused: ${err.message}`));
  }

  /** A node dials: answered (a new connection) after a delay, refused while down, lost across a cut. */
  accept(dialer: SimSocket): void {
    this.net.loop.at(this.net.delay(), ['dial', dialer.self, MANAGER_ID], () => {
      if (dialer.closed || !dialer.alive() || this.net.cut(dialer.self, MANAGER_ID)) return;
      if (!this.up) return dialer.refuse();
      const inc = this.inc;
      const end = new SimSocket(this.net, MANAGER_ID, () => this.up && this.inc === inc);
      SimSocket.pair(dialer, end);
      this.sockets.push(end);
      this.serve(end);
      dialer.emit('connect');
    }, true);
  }

  /** actors/manager/manager-server.ts's connection handling, on a simulated socket. */
  private serve(s: SimSocket): void {
    const cm = this.cm!;
    const reader = new ManagerStreamReader<NodeToManager>();
    const gate = new ManagerAuthGate(null);
    let node: number | null = null;
    const grants = new GrantWriter();
    const link: Link = {
      send: (m) => {
        if ((m.t === 'prepare' || m.t === 'commit') && this.hit(m.t, (p) => p.kind === 'send' && p.msg === m.t)) return;
        s.write(encodeLine(m));
      },
      grant: (seq, leaseMs, renewMs, driftMs, term) => {
        const b = link.frames ? grants.grant(seq, leaseMs, renewMs, driftMs, term) : null;
        if (b === null) return link.send({ t: 'grant', seq, leaseMs, renewMs, driftMs, term });
        s.write(b);
        grants.sent(undefined); // the simulated pipe keeps the buffer until it delivers it: never reused
      },
      frames: false,
    };
    s.on('data', (chunk: string | Buffer) => {
      reader.push(chunk, (m) => {
        if (!gate.authed || (m as { t: string }).t === 'auth-hello') {
          for (const line of gate.accept(m)) s.write(line);
          return;
        }
        node ??= m.node;
        this.links.set(m.node, link);
        if (m.t === 'hello' && m.frames === 1) link.frames = true;
        cm.onMessage(m, link);
        if (this.o.bareCommitMoves && (m.t === 'hello' || m.t === 'renew') && m.term < this.store.cfg.term) this.bareCommit(link);
      });
    });
    s.on('close', () => {
      if (node !== null) cm.onClose(node, link);
    });
  }

  private bareCommit(link: Link): void {
    const c = this.store.cfg;
    link.send({ t: 'commit', term: c.term, config: structuredClone(c), floors: {} });
  }

  /** Count an occurrence of `what`; crash if an armed point matching it reached its count. */
  private hit(what: string, match: (p: CrashPoint) => boolean): boolean {
    if (!this.up) return true;
    const n = (this.seen.get(what) ?? 0) + 1;
    this.seen.set(what, n);
    const p = this.points.find((x) => match(x) && x.nth === n);
    if (!p) return false;
    this.points.splice(this.points.indexOf(p), 1);
    this.counts.crashPoints++;
    this.crash(`crash point ${describePoint(p)}`);
    p.then();
    return true;
  }

  private fireWatches(ev: string): void {
    const due = this.watches.filter((w) => w.event === ev);
    if (due.length === 0) return;
    this.watches = this.watches.filter((w) => w.event !== ev);
    for (const w of due) w.then();
  }

  private logger(alive: () => boolean): Logger {
    const line = (level: string) => (o: unknown, msg?: string) => {
      if (!alive()) return;
      const obj = typeof o === 'object' && o !== null ? (o as Record<string, unknown>) : {};
      const text = typeof o === 'string' ? o : (msg ?? '');
      this.lines.push(`${this.net.loop.now().toFixed(1)} ${level} ${text}`);
      const ev = obj['event'];
      if (typeof ev === 'string') {
        this.hit(`event:${ev}`, (p) => p.kind === 'event' && p.event === ev);
        this.fireWatches(ev);
      }
      if (ev === 'move-stored' && this.o.bareCommitMoves && alive()) for (const l of this.links.values()) this.bareCommit(l);
    };
    return { info: line('info'), warn: line('warn'), error: line('error'), debug: () => {}, trace: () => {}, fatal: line('fatal') } as unknown as Logger;
  }
}
