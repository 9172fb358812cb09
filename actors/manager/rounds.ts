// The two rounds of a primary change -- prepare (with gather) and commit (with floors and scatter) --
// and the wait for the new primaries' promotions: one home for their state and messages (Rounds). The
// manager (./manager.ts) owns one and hands it to what changes primaries: a node's failover
// (./failover.ts), a stored term completed after a takeover (./takeover.ts) and a resharding move
// (./moves.ts); each of their hosts extends RoundsHost.
import type { Clock } from '../../config/base/clock.js';
import type { ClusterConfig } from '../../config/cluster.js';
import type { Logger } from '../../config/base/log.js';
import { planScatter, type MemberReport } from './gather.js';
import type { ShardMove } from './plan.js';
import type { ManagerToNode, NodeToManager } from './protocol.js';
import { notActive } from './election.js';
import { defaultTimings } from '../../config/timings.js';

/** Phase 1's result: the shards' highest versions, each member's gathered entries, who did not answer. */
export interface Prepared {
  versions: Map<number, number>;
  reports: Map<number, MemberReport>;
  missing: number[];
}

export interface RoundsHost {
  config(): ClusterConfig;
  /** Phase 1: every reachable member blocks; `planned`: a move (the source drains its writes first);
   *  `waitFor`: the members waited for (default every reachable one). */
  prepareRound(next: ClusterConfig, shards: number[], planned?: boolean, waitFor?: ReadonlySet<number>): Promise<Prepared>;
  /** Phase 2: commit `next`, with floors and scatter for the shards in `moved`. */
  commitRound(next: ClusterConfig, moved: readonly ShardMove[], prep: Omit<Prepared, 'missing'>, again: number[], planned: number[]): { gathered: number; scattered: number };
  /** Call `done` once the new primaries of `term` reported their promotions. */
  awaitPromoted(term: number, to: readonly number[], done: () => void): void;
  readonly log: Logger;
  readonly clock: Clock;
  sleep(ms: number): Promise<void>;
}

/** What the rounds need of the manager: who is a member, how to reach it, whether it may act. */
export interface RoundsDeps {
  config(): ClusterConfig;
  members(): number[];
  /** The member's current connection; undefined when it is not connected. */
  link(node: number): { send(m: ManagerToNode): void } | undefined;
  /** Whether this manager may act (the active one): a round refuses (notActive) otherwise. */
  valid(): boolean;
  /** A member reported promotions of `term` holding `entries` (for the move's record). */
  promotedEntries(term: number, entries: number): void;
  readonly log: Logger;
  readonly clock: Clock;
  sleep(ms: number): Promise<void>;
}

/**
 * The rounds themselves: prepare (phase 1, with gather), commit (phase 2, with floors and scatter) and
 * the wait for the new primaries' `promoted` -- their state, and the members' answers to them, which
 * the manager hands over from its message loop (onPrepared, onPromoted).
 */
export class Rounds implements RoundsHost {
  private prepared: {
    term: number;
    waiting: Set<number>;
    versions: Map<number, number>;
    reports: Map<number, MemberReport>;
    /** Members waited for whose connection closed before they answered. */
    gone: number[];
    done: () => void;
  } | null = null;
  /** Primary changes committed whose new primaries have not all reported `promoted`, by term. */
  private readonly promoting = new Map<number, { waiting: Set<number>; done: () => void }>();
  readonly log: Logger;
  readonly clock: Clock;

  constructor(private readonly d: RoundsDeps) {
    this.log = d.log;
    this.clock = d.clock;
  }

  config(): ClusterConfig {
    return this.d.config();
  }

  sleep(ms: number): Promise<void> {
    return this.d.sleep(ms);
  }

  /**
   * Phase 1 of a primary change: every reachable member is sent `prepare` and blocks; the ones in
   * `waitFor` (default: every reachable member) are waited for, bounded by prepareTimeoutMs (config/timings.ts).
   * `shards`: the shards changing primary (a member adds the ones its own configuration shows).
   */
  async prepareRound(next: ClusterConfig, shards: number[], planned = false, waitFor?: ReadonlySet<number>): Promise<Prepared> {
    if (!this.d.valid()) throw notActive(`push of term ${next.term}`);
    const members = this.d.members();
    const versions = new Map<number, number>();
    const reports = new Map<number, MemberReport>();
    const waiting = new Set((waitFor ? [...waitFor] : members).filter((n) => this.d.link(n) !== undefined));
    const gone: number[] = [];
    await new Promise<void>((resolve) => {
      let settled = false;
      const done = () => {
        if (settled) return;
        settled = true;
        this.prepared = null;
        resolve();
      };
      this.prepared = { term: next.term, waiting, versions, reports, gone, done };
      for (const n of members) this.d.link(n)?.send({ t: 'prepare', term: next.term, config: next, shards, ...(planned ? { planned } : {}) });
      if (waiting.size === 0) done();
      void this.d.sleep(defaultTimings.prepareTimeoutMs).then(done);
    });
    return { versions, reports, missing: [...waiting, ...gone] };
  }

  /** A member's connection closed: an answer it owes the prepare round in progress will not come (a
   *  restarted node never saw that prepare), so the round stops waiting for it -- it counts as missing. */
  memberGone(node: number): void {
    const p = this.prepared;
    if (!p || !p.waiting.has(node)) return;
    p.waiting.delete(node);
    p.gone.push(node);
    if (p.waiting.size === 0) p.done();
  }

  /** A member's answer to the prepare round in progress (its versions and gathered entries). */
  onPrepared(m: Extract<NodeToManager, { t: 'prepared' }>): void {
    const p = this.prepared;
    if (!p || m.term !== p.term || !p.waiting.has(m.node)) return;
    for (const [s, v] of Object.entries(m.versions)) p.versions.set(Number(s), Math.max(v, p.versions.get(Number(s)) ?? 0));
    p.reports.set(m.node, { entries: m.entries ?? [], truncated: m.truncated ?? false });
    p.waiting.delete(m.node);
    if (p.waiting.size === 0) p.done();
  }

  /** Phase 2: commit `next` to every member, with floors and scatter for the shards in `moved`. */
  commitRound(next: ClusterConfig, moved: readonly ShardMove[], prep: Omit<Prepared, 'missing'>, again: number[], planned: number[]): { gathered: number; scattered: number } {
    if (!this.d.valid()) throw notActive(`commit of term ${next.term}`);
    const members = this.d.members();
    const floors: Record<string, number> = {};
    for (const m of moved) floors[m.shard] = prep.versions.get(m.shard) ?? 0;
    const scatter = planScatter(next, moved.map((m) => m.shard), prep.reports, new Set(members.filter((n) => this.d.link(n) !== undefined)));
    if (scatter.incomplete.length > 0) {
      this.log.error({ term: next.term, why: scatter.incomplete }, `gather/scatter for term ${next.term} cannot be complete: ${scatter.incomplete.join('; ')}`);
    }
    for (const n of members) {
      const mine = scatter.perMember.get(n);
      this.d.link(n)?.send({ t: 'commit', term: next.term, config: next, floors, ...(mine ? { scatter: mine } : {}), ...(again.length ? { promote: again } : {}), ...(planned.length ? { planned } : {}) });
    }
    return { gathered: scatter.gathered, scattered: scatter.scattered };
  }

  /** Call `done` once every reachable node of `to` reported the promotions of `term`. Registered
   *  before the commit goes out; `done` runs at once when none is reachable. */
  awaitPromoted(term: number, to: readonly number[], done: () => void): void {
    const waiting = new Set(to.filter((n) => this.d.link(n) !== undefined));
    if (waiting.size === 0) return done();
    this.promoting.set(term, { waiting, done });
  }

  /** A new primary reports its promotions of a term. */
  onPromoted(m: Extract<NodeToManager, { t: 'promoted' }>, now: number): void {
    const pr = this.promoting.get(m.term);
    if (!pr) return;
    this.log.info(
      { node: m.node, term: m.term, shards: m.shards, entries: m.entries, gathered: m.gathered ?? 0, scattered: m.scattered ?? 0, ms: m.ms, at: now },
      `node ${m.node} promoted ${m.shards.length} shard(s) in ${m.ms.toFixed(1)} ms`,
    );
    pr.waiting.delete(m.node);
    this.d.promotedEntries(m.term, m.entries);
    if (pr.waiting.size === 0) {
      this.promoting.delete(m.term);
      pr.done();
    }
  }
}

/** `r`'s rounds as the plain RoundsHost object the failover, takeover and move hosts spread. */
export function roundsOf(r: Rounds): RoundsHost {
  return {
    config: () => r.config(),
    prepareRound: (next, shards, planned, waitFor) => r.prepareRound(next, shards, planned, waitFor),
    commitRound: (next, moved, prep, again, planned) => r.commitRound(next, moved, prep, again, planned),
    awaitPromoted: (term, to, done) => r.awaitPromoted(term, to, done),
    log: r.log,
    clock: r.clock,
    sleep: (ms) => r.sleep(ms),
  };
}
