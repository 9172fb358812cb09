// The configuration manager's logic (§4.5 phase 1), independent of sockets and threads (CONVENTIONS 9):
// the server (./manager-server.ts) feeds it messages and connection closes, a timer calls tick(), and it talks
// back through each node's Link. Time comes from the injected clock.
//
// Failovers of nodes one at a time (./failover.ts), then configuration changes that move no primary
// (./healing.ts) and resharding moves (./moves.ts), from one drain loop.
//
// With a standby a manager acts only while it is the elected active one (./takeover.ts, ./election.ts).
import { realTimers, type Clock, type Timers } from '../../config/base/clock.js';
import { liveNodes, type ClusterConfig, type ClusterNode } from '../../config/cluster.js';
import type { ConfigStore } from '../../config/store.js';
import type { Logger } from '../../config/base/log.js';
import { LeaseTable, type LeaseTiming } from './leases.js';
import { FAILOVER_MODES, modeLimitation } from './plan.js';
import { ASYMNVM_CANNOT, ASYMNVM_MODE } from '../../config/asymnvm.js';
import { Rounds, roundsOf } from './rounds.js';
import { failOver, failoverEvent, markFailover, type FailoverHost, type FailoverRecord } from './failover.js';
import type { ManagerToNode, NodeToManager } from './protocol.js';
import { Healing } from './healing.js';
import { Reach } from './reach.js';
import { notActive } from './election.js';
import { ALWAYS, completeStoredTerm, type Activation, type TakeoverHost } from './takeover.js';
import { LoadTable, OverloadDetector } from './load.js';
import { MoveRunner, type MoveRecord } from './moves.js';
import { CopyRunner, type CopyRecord } from './copies.js';
import { MembershipRunner } from './membership-runner.js';
import { Reconfirms, type ReconfirmHost } from './reconfirm.js';
import { handovers } from './handover.js';
import { DEFAULT_RESHARDING, planBalance, type BalancePlan, type Move, type ReshardingOptions } from './reshard.js';
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import { defaultTimings } from '../../config/timings.js';

export { DEFAULT_RESHARDING, type Activation, type ReshardingOptions };

export interface Link {
  send(m: ManagerToNode): void;
  /** A grant, framed when the node reads frames (../shared/manager-frames.ts); absent: send() one. */
  grant?(seq: number, leaseMs: number, renewMs: number, driftMs: number, term: number): void;
  /** The node said in its hello that it reads binary frames. */
  frames?: boolean;
}

export class ConfigManager {
  private cfg: ClusterConfig;
  leases: LeaseTable;
  /** The committed term each connected member last reported (hello, renew). */
  private readonly memberTerm = new Map<number, number>();
  /** Sources of moves handed over on their expired lease: no grant before they report this term. */
  private readonly fenced = new Map<number, number>();
  private activatedAt: number;
  /** Complete a stored term some members have not committed (a takeover, a validity lapse). */
  private finishWanted: boolean;
  private readonly links = new Map<number, Link>();
  /** Nodes being (or queued to be) failed over: they get no more grants. */
  private readonly failing = new Set<number>();
  private readonly queue: number[] = [];
  private running = false;
  private closed = false;
  readonly history: FailoverRecord[] = [];
  /** Configuration changes that move no primary (§4.5 phase 3), run between failovers by drain(). */
  private readonly healing: Healing;
  /** Which members reach this manager (a manager cut off from all of them reassigns nothing). */
  private readonly reach: Reach;

  /** Load statistics the nodes report (§4.6) and the moves made from them or asked for. */
  readonly loads = new LoadTable();
  readonly moves: MoveRunner;
  /** Moves to nodes holding no replica: copied first (./copies.ts). */
  readonly copies: CopyRunner;
  /** Nodes added and decommissioned, replicas spread onto and off them (./membership-runner.ts). */
  readonly membership: MembershipRunner;
  /** Restarted primaries waiting to be confirmed (./reconfirm.ts). */
  private readonly reconfirms = new Reconfirms();
  /** The two rounds of a primary change, for failovers, takeovers and moves (./rounds.ts). */
  private readonly rounds: Rounds;
  private readonly moveRequests: { moves: Move[]; why: string; reply: (err: Error | null, rec?: MoveRecord | CopyRecord) => void }[] = [];
  /** When the configuration last changed: load reports must cover periods after it. */
  private changedAt: number;
  private readonly overload = new OverloadDetector();
  private resumeAfter = 0;

  constructor(
    private readonly store: ConfigStore,
    initial: ClusterConfig,
    readonly timing: LeaseTiming,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly sleep: (ms: number) => Promise<void>,
    private readonly activation: Activation = ALWAYS,
    /** Automatic resharding (§4.6); absent or auto false: moves only when asked (`rowan reshard`). */
    readonly resharding: ReshardingOptions = { ...DEFAULT_RESHARDING, auto: false },
    /** Where tick()'s second look is deferred to (the simulator, test/sim, passes its own). */
    private readonly timers: Pick<Timers, 'setImmediate'> = realTimers,
  ) {
    this.cfg = initial;
    this.changedAt = clock.now();
    this.activatedAt = clock.now();
    this.finishWanted = activation.elected;
    this.leases = activation.takeover ? new LeaseTable(timing, this.activatedAt, defaultTimings.takeoverGraceMs) : new LeaseTable(timing, this.activatedAt);
    // A move goes through storeConfig()/push()/prepareRound()/commitRound(): each refuses (notActive)
    // once this manager is not the active one; the store itself is fenced on its election znode.
    this.rounds = new Rounds({
      config: () => this.cfg,
      members: () => this.members(),
      link: (n) => this.links.get(n),
      valid: () => this.activation.valid(),
      promotedEntries: (term, entries) => this.moves.promotedEntries.set(term, (this.moves.promotedEntries.get(term) ?? 0) + entries),
      log,
      clock,
      sleep: (ms) => this.sleep(ms),
    });
    this.moves = new MoveRunner({
      ...roundsOf(this.rounds),
      reachable: () => this.reachable(),
      suspected: (node) => this.failing.has(node),
      reportedTerm: (node) => this.memberTerm.get(node),
      leaseExpired: (node) => this.leaseExpired(node),
      fence: (node, term) => this.fenced.set(node, Math.max(term, this.fenced.get(node) ?? 0)),
      storeConfig: (next) => this.storeConfig(next),
      push: (next) => this.push(next),
      pauseAfter: resharding.pauseAfter,
    });
    this.copies = new CopyRunner({ config: () => this.cfg, reachable: () => this.reachable(), push: (next) => this.push(next), moves: this.moves, clock, log });
    const shardStats = () => ({ rates: this.loads.shardRates(), bytes: this.loads.shardBytes() });
    this.membership = new MembershipRunner({ config: () => this.cfg, reachable: () => this.reachable(), push: (next) => this.push(next), copies: this.copies, moves: this.moves, shardStats, clock, log,
      added: (node) => this.leases.added(node, clock.now()) });
    this.reach = new Reach({
      timing,
      leases: this.leases,
      members: () => this.members(),
      candidates: (failed) => this.members().filter((n) => n !== failed && this.links.has(n) && !this.failing.has(n)),
      solicit: (nodes) => nodes.forEach((n) => this.links.get(n)?.send({ t: 'renewNow' })),
      closed: () => this.closed,
      sleep: (ms) => this.sleep(ms),
      clock,
      log,
    });
    this.healing = new Healing({
      config: () => this.cfg,
      members: () => this.members(),
      usable: (node) => this.links.has(node) && !this.failing.has(node),
      connected: (node) => this.links.has(node),
      admitted: (node) => {
        this.failing.delete(node);
        this.leases.renewed(node, this.clock.now()); // its lease window starts now (it gets grants from here)
      },
      push: (next) => this.push(next),
      clock,
      log,
    });
    const limitation = modeLimitation(initial.replication);
    if (limitation !== null) log.warn({ mode: initial.replication }, limitation);
    if (!FAILOVER_MODES.includes(initial.replication)) {
      log.warn({ mode: initial.replication }, `replication mode ${initial.replication}: NO FAILOVER -- its backups index one-sided writes only at a cold start, so a promoted backup would lack acknowledged writes; a dead node's shards stay unserved`);
    }
    if (initial.replication === ASYMNVM_MODE) log.warn({ mode: initial.replication }, ASYMNVM_CANNOT);
  }

  config(): ClusterConfig {
    return this.cfg;
  }

  /**
   * Acting again after a validity lapse (ZooKeeper unreachable for a while, the session kept): renews
   * received meanwhile were not granted, so members may have fenced themselves; start over like a
   * takeover -- no lease knowledge, a full lease before anyone is suspected -- and finish the stored term.
   */
  resume(): void {
    this.activatedAt = this.clock.now();
    this.leases = new LeaseTable(this.timing, this.activatedAt, defaultTimings.takeoverGraceMs);
    this.finishWanted = true;
    this.log.warn({ term: this.cfg.term }, 'active again: every member gets a full lease before it can be suspected');
    this.kick();
  }

  /** Stop: no more failovers (one in progress ends at its next step). */
  close(): void {
    this.closed = true;
    this.queue.length = 0;
  }

  members(): number[] {
    return liveNodes(this.cfg).map((n) => n.id);
  }

  /** Whether `node` is a live member (members().includes(node), without its arrays: every renew asks). */
  private isMember(node: number): boolean {
    const c = this.cfg;
    if (c.dead !== undefined && c.dead.includes(node)) return false;
    for (const n of c.nodes) if (n.id === node) return true;
    return false;
  }

  /** A member's renewals came `gapMs` apart: over half a lease is said (its lease ran low; the lease
   *  soak counts these, bench/lease-soak.bench.ts). */
  private noteGap(node: number, gapMs: number): void {
    if (gapMs <= this.timing.leaseMs / 2 || gapMs === Infinity) return;
    this.log.warn({ event: 'renew-gap', node, gapMs: +gapMs.toFixed(1) }, `node ${node}: ${gapMs.toFixed(1)} ms between two renewals received (lease ${this.timing.leaseMs} ms)`);
  }

  onMessage(m: NodeToManager, link: Link): void {
    const now = this.clock.now();
    switch (m.t) {
      case 'hello':
      case 'renew': {
        if (this.healing.joining(m.node)) return; // rejoining: no grant until it is a member again
        if (m.t === 'hello' && m.rejoin && (this.cfg.dead ?? []).includes(m.node)) {
          // A failed-over node restarted asks to come back (its pool kept or not: it holds no shard) (./rereplicate.ts planJoin).
          this.links.set(m.node, link);
          this.healing.join(m.node);
          this.log.warn({ node: m.node }, `node ${m.node} asks to rejoin`);
          this.kick();
          return;
        }
        if (!this.isMember(m.node)) {
          // A decommissioned node is told so: it stops for good rather than asking to rejoin.
          link.send({ t: 'evicted', term: this.cfg.term, ...((this.cfg.retired ?? []).includes(m.node) ? { retired: true as const } : {}) });
          return;
        }
        // A new connection introduces itself with hello and becomes the node's link; renewals still
        // arriving on an older one (a node that opened a second connection to a silent manager,
        // actors/node/lease-client.ts) are answered there but do not make it current again, so its close is
        // not taken for a failure.
        if (m.t === 'hello' || !this.links.has(m.node)) this.links.set(m.node, link);
        this.memberTerm.set(m.node, m.term);
        // Recorded by a standby too: it confirms the node once it is the active manager.
        if (m.t === 'hello') this.reconfirms.want(m.node, Array.isArray(m.unconfirmed) ? m.unconfirmed.filter((s) => Number.isInteger(s)) : []);
        this.reach.heardFrom(m.node, now);
        if (!this.activation.valid()) return; // not (or no longer) the active manager: no grant
        if (this.failing.has(m.node)) {
          // No grant: its lease runs out. Counting the renew as its last one only moves the instant
          // its lease certainly expired later (safe), and keeps tick() from suspecting again a node
          // that talks to us while its failover is being decided (failover() then drops it).
          this.leases.renewed(m.node, now);
          return;
        }
        this.noteGap(m.node, this.leases.renewed(m.node, now));
        if (this.fencedUntil(m.node, m.term)) return; // handed over on its expired lease: none again yet
        const { leaseMs, renewMs, driftMs } = this.timing;
        const seq = m.t === 'renew' ? m.seq : 0;
        if (link.grant) link.grant(seq, leaseMs, renewMs, driftMs, this.cfg.term);
        else link.send({ t: 'grant', seq, leaseMs, renewMs, driftMs, term: this.cfg.term });
        if (m.term < this.cfg.term) this.catchUp(m.node, link);
        // A member (re)connecting may be what a degraded shard was waiting for; a restarted primary
        // waits for a round confirming it (./reconfirm.ts).
        if (m.t === 'hello') {
          this.healing.want();
          this.kick();
        }
        return;
      }
      case 'caughtUp':
        if (this.healing.reportCaughtUp(m)) {
          this.copies.noteCaughtUp(m);
          this.kick();
        }
        return;
      case 'prepared':
        return this.rounds.onPrepared(m);
      case 'promoted':
        if (Array.isArray(m.shards)) this.reconfirms.promoted(m.node, m.shards);
        return this.rounds.onPromoted(m, now);
      case 'load':
        if (!this.members().includes(m.node) || !Array.isArray(m.loads)) return;
        this.loads.record(m.node, m.term, m.periodMs, m.loads, now, Array.isArray(m.bytes) ? m.bytes : []);
        if (this.activation.valid()) this.maybeRebalance(now); // the report that completes a generation plans at once
        return;
    }
  }

  /**
   * Whether `node` (reporting `term`) gets no grant: a move's handover was committed because its lease
   * had certainly expired (./handover.ts), and a new lease before it committed that term would let it
   * serve the shard again beside the target. Cleared once it reports the term.
   */
  private fencedUntil(node: number, term: number): boolean {
    const until = this.fenced.get(node);
    if (until === undefined) return false;
    if (term < until) return true;
    this.fenced.delete(node);
    return false;
  }

  /**
   * A member behind the stored term (paused past a prepare timeout, or the term was stored by a
   * manager that died before pushing it) catches up: with a bare commit when the term hands none of
   * its primary roles over or to it; else it is prepared first -- a move's source drains -- and the
   * term completed as after a takeover (./takeover.ts), or the move rolled back.
   */
  private catchUp(node: number, link: Link): void {
    if (this.running || this.finishWanted) return;
    if (!handovers(this.cfg).some((t) => t.source === node || t.target === node)) {
      link.send({ t: 'commit', term: this.cfg.term, config: this.cfg, floors: {} });
      return;
    }
    this.log.warn({ node, term: this.cfg.term }, `node ${node} is behind term ${this.cfg.term}, which moves a shard from or to it: preparing it before anything commits`);
    this.finishWanted = true;
    this.kick();
  }

  /** A node's connection closed: a hint that it failed (its lease still has to expire first). */
  onClose(node: number, link: Link): void {
    if (this.links.get(node) !== link) return;
    this.links.delete(node);
    this.memberTerm.delete(node);
    this.reconfirms.forget(node);
    this.rounds.memberGone(node);
    if (!this.activation.valid()) return;
    this.healing.forget(node);
    if (this.members().includes(node)) this.suspect(node, 'connection closed');
  }

  /**
   * Periodic: members whose lease certainly expired are failed over. Checked again after the event
   * loop has read its sockets: timers run before I/O, so after a stall of this thread the tick would
   * otherwise see renewals that are already waiting in the socket as missing. Returns the ms until a
   * lease could next expire (Infinity: no member), so an idle manager need not look before then.
   */
  tick(): number {
    if (!this.activation.valid()) return Infinity;
    this.maybeRebalance(this.clock.now());
    if (!this.running && (this.resumeWanted() || this.reconfirmWanted() || this.copies.wanted() || this.membership.wanted())) this.kick(); // its participants may have connected since
    const members = this.members();
    const now = this.clock.now();
    if (this.leases.expired(members, now).length === 0) return this.leases.nextExpiry(members, now) - now;
    this.timers.setImmediate(() => {
      for (const n of this.leases.expired(this.members(), this.clock.now())) this.suspect(n, 'lease expired');
    });
    return 0;
  }

  private suspect(node: number, why: string): void {
    if (this.failing.has(node)) return;
    if (!FAILOVER_MODES.includes(this.cfg.replication)) {
      this.failing.add(node);
      this.log.error({ node, why, mode: this.cfg.replication }, `node ${node} failed (${why}); replication mode ${this.cfg.replication} does not fail over: its shards stay unserved`);
      return;
    }
    this.failing.add(node);
    this.queue.push(node);
    this.log.warn({ node, why }, `node ${node} suspected failed: ${why}`);
    this.kick();
  }

  private kick(): void {
    if (!this.running && !this.closed) void this.drain();
  }

  private reconfigurationWanted(): boolean {
    return this.finishWanted || this.reconfirmWanted() || this.healing.pending() || this.moveRequests.length > 0 || this.resumeWanted() || this.copies.wanted() || this.membership.wanted();
  }

  private reconfirmWanted(): boolean {
    return this.reconfirms.wanted(this.cfg, this.reachable(), this.clock.now());
  }

  /** Stored tasks of a move this manager did not finish (it restarted, or took over) to resume. */
  private resumeWanted(): boolean {
    if (this.cfg.migrations.length === 0 || this.clock.now() < this.resumeAfter) return false;
    const live = this.reachable();
    return this.cfg.migrations.some((t) => live.has(t.source) && live.has(t.target));
  }

  /** Whether `node` certainly serves nothing under a lease from this manager (or a previous one). */
  private leaseExpired(node: number): boolean {
    return this.clock.now() >= this.leases.certainlyExpiredAt(node);
  }

  /** Live members holding a connection and not being failed over. */
  private reachable(): Set<number> {
    return new Set(this.members().filter((n) => this.links.has(n) && !this.failing.has(n)));
  }

  /** Ask for a move (`rowan reshard`); the reply comes once it is done, rolled back or refused. A move
   *  to a node holding no replica of the shard is a copy (./copies.ts): its reply comes once the copy
   *  is done and the source left the shard. */
  requestMove(moves: Move[], why: string, reply: (err: Error | null, rec?: MoveRecord | CopyRecord) => void): void {
    this.moveRequests.push({ moves, why, reply });
    this.kick();
  }

  /** What the planner would move now, from the latest load reports. */
  balancePlan(): BalancePlan {
    return planBalance(this.cfg, this.loads.shardRates(), [...this.reachable()], this.resharding);
  }

  /** Automatic resharding (§4.6): plans once per generation of load reports (./load.ts
   *  OverloadDetector); the moves of a second overloaded generation in a row are queued as one batch. */
  private maybeRebalance(now: number): void {
    const r = this.resharding;
    if (!r.auto || !this.overload.news(this.loads) || this.running || this.closed || this.moveRequests.length > 0) return;
    const members = [...this.reachable()];
    if (!this.overload.due(this.loads, members, this.changedAt + r.periodMs, this.cfg.term)) return;
    const plan = this.balancePlan();
    if (!this.overload.planned(this.loads, plan.moves.length)) return;
    this.log.warn({ event: 'overload-detected', at: now, loads: plan.loads, average: plan.average, overloaded: plan.overloaded, moves: plan.moves },
      `overload: node ${plan.overloaded.join(', node ')} above the average ${plan.average} ops/s by more than ${r.overloadPercent} % (loads ${JSON.stringify(plan.loads)}); moving ${plan.moves.map((m) => `shard ${m.shard} ${m.from}->${m.to}`).join(', ')}`);
    // Role moves and copy moves (a target holding no replica, resharding.copyMoves) run apart.
    const copies = plan.moves.filter((m) => CopyRunner.isCopy(this.cfg, [m]));
    for (const moves of [plan.moves.filter((m) => !copies.includes(m)), copies]) {
      if (moves.length === 0) continue;
      this.requestMove(moves, 'overload', (err) => {
        if (err) this.log.warn({ err: err.message }, `automatic move not made: ${err.message}`);
      });
    }
  }

  /**
   * Store `next` (compare-and-set on the term) without telling the members yet. Every store goes
   * through here (failovers, re-replication, moves): none once this manager is not the active one.
   */
  private async storeConfig(next: ClusterConfig): Promise<void> {
    if (!this.activation.valid()) throw notActive(`storing term ${next.term}`);
    await this.store.write(next, this.cfg.term);
    this.cfg = next;
    this.changedAt = this.clock.now();
  }

  private async drain(): Promise<void> {
    this.running = true;
    try {
      while (this.queue.length > 0 || this.reconfigurationWanted()) {
        if (this.closed) return;
        // Not (or no longer) valid: nothing can be stored or pushed; resume() starts this loop again.
        if (!this.activation.valid()) return;
        if (this.queue.length === 0 || this.finishWanted) {
          // A stored term to finish first; then failovers; then joins, caught-up marks and new backups (§4.5 phase 3).
          try {
            if (this.finishWanted) await this.finish();
            else await this.reconfigure();
          } catch (err) {
            this.log.error({ err: (err as Error).message }, `reconfiguration failed; retrying in ${defaultTimings.failoverRetryMs} ms`);
            void this.sleep(defaultTimings.failoverRetryMs).then(() => {
              this.healing.want();
              this.kick();
            });
            return;
          }
          continue;
        }
        const node = this.queue.shift()!;
        try {
          await failOver(this.failoverHost(), node);
        } catch (err) {
          // A store that refused (another manager moved the term) or a plan that cannot be made (the
          // node holds a shard's last replica): say so once and try again a second later.
          this.log.error({ node, err: (err as Error).message }, `failover of node ${node} failed; retrying in ${defaultTimings.failoverRetryMs} ms`);
          if (this.activation.elected) this.finishWanted = true; // the stored term may not have been pushed
          void this.sleep(defaultTimings.failoverRetryMs).then(() => {
            this.failing.delete(node);
            if (this.closed || !this.members().includes(node)) return;
            // Back (restarted, or it was only slow) before anything was reassigned: grant it again.
            if (this.links.has(node)) return this.log.warn({ node }, `node ${node} is back before its failover could be made; it keeps its shards`);
            this.suspect(node, 'retry');
          });
        }
      }
    } finally {
      this.running = false;
    }
  }

  private failoverHost(): FailoverHost {
    return {
      ...roundsOf(this.rounds),
      closed: () => this.closed,
      leases: this.leases,
      timing: this.timing,
      reach: this.reach,
      connected: (node) => this.links.has(node),
      spared: (node) => this.failing.delete(node),
      begin: (rec) => this.history.push(rec),
      storeConfig: (next) => this.storeConfig(next),
      stored: (node) => this.loads.forget(node),
      pauseAfterStoreMs: this.activation.pauseAfterStoreMs,
      evict: (node, term) => this.links.get(node)?.send({ t: 'evicted', term }),
      healingWanted: () => this.healing.want(),
    };
  }

  /** After an election or a validity lapse: complete the stored term (./takeover.ts). */
  private async finish(): Promise<void> {
    this.finishWanted = false;
    try {
      if (await completeStoredTerm(this.takeoverHost())) this.healing.want();
    } catch (err) {
      this.finishWanted = true;
      throw err;
    }
  }

  private takeoverHost(): TakeoverHost {
    return {
      ...roundsOf(this.rounds),
      members: () => this.members(),
      connected: (n) => this.links.has(n),
      suspected: (n) => this.failing.has(n),
      reportedTerm: (n) => this.memberTerm.get(n),
      leaseExpired: (n) => this.leaseExpired(n),
      fence: (n, term) => this.fenced.set(n, Math.max(term, this.fenced.get(n) ?? 0)),
      storeConfig: (next) => this.storeConfig(next),
      closed: () => this.closed,
      activation: this.activation,
      timing: this.timing,
      activatedAt: () => this.activatedAt,
      begin: (rec) => (this.history.push(rec), failoverEvent(this.log, rec, 'resumed', rec.detectedAt)),
      mark: (rec, step) => markFailover(this.log, this.clock, rec, step),
    };
  }

  /**
   * One pass of the changes that move no primary: joins, caught-up marks, new backups. Each is stored
   * with a compare-and-set on the term and pushed as a commit (members serve it at once: nothing to
   * block, as no primary changes).
   */
  private async reconfigure(): Promise<void> {
    if (this.reconfirmWanted()) await this.reconfirms.run(this.reconfirmHost()); // restarted primaries serve nothing until then
    await this.healing.pass();
    const req = this.moveRequests.shift();
    if (req && CopyRunner.isCopy(this.cfg, req.moves)) {
      await this.copies.start(req.moves, req.why, req.reply);
    } else if (req) {
      try {
        if ((this.cfg.copies ?? []).some((t) => req.moves.some((m) => m.shard === t.shard))) throw new RowanError(ErrorCodes.MOVE_REFUSED, 'the shard is being copied to another node');
        const rec = await this.moves.run(req.moves, req.why);
        req.reply(null, rec);
      } catch (err) {
        req.reply(err as Error);
        if (!(err instanceof RowanError && err.code === ErrorCodes.MOVE_REFUSED)) throw err;
      }
    } else if (this.resumeWanted()) {
      this.resumeAfter = this.clock.now() + defaultTimings.movePromoteTimeoutMs; // not again before a stalled one timed out
      await this.moves.resume();
    }
    if (this.copies.wanted()) await this.copies.advance();
    if (this.membership.wanted()) await this.membership.advance();
  }

  /** Add `node` to the membership (`rowan cluster add-node`), then spread replicas onto it; or
   *  decommission it (`rowan node decommission`). The reply comes once the change's term is stored. */
  requestMembership(req: { kind: 'add'; node: ClusterNode } | { kind: 'leave'; node: number }, reply: (err: Error | null, result?: { term: number }) => void): void {
    this.membership.request(req, reply);
    this.kick();
  }

  private reconfirmHost(): ReconfirmHost {
    return {
      ...roundsOf(this.rounds),
      reachable: () => this.reachable(),
      suspected: (n) => this.failing.has(n),
      storeConfig: (next) => this.storeConfig(next),
    };
  }

  /** Store `next` (compare-and-set on the term) and send every reachable member the commit. */
  async push(next: ClusterConfig): Promise<void> {
    await this.storeConfig(next); // fenced: refused when not the active manager
    for (const n of this.members()) this.links.get(n)?.send({ t: 'commit', term: next.term, config: next, floors: {} });
  }
}
