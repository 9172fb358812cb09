// The node's side of a configuration change (§4.5, docs/architecture.md "The path of a configuration
// change"): it follows the manager's two rounds. `prepare`: block requests (PENDING; a move's, planned,
// blocks only the moved shards: the cell's per-shard fence, issue 28), drain the shards this node hands
// over alive, gather the entries of the shards changing primary, answer `prepared`.
// `commit`: persist what was scattered to it, wait out the peer-lease promises this node made to the
// old primaries it takes shards from, publish the configuration, promote (catch up, raise versions)
// and answer `promoted`. Commits run one at a time in arrival order. The lease client (./lease-client.ts)
// hands it the two messages from the manager link.
import { sleepOn, type Clock, type TimerHandle, type Timers } from '../../config/base/clock.js';
import { defaultTimings } from '../../config/timings.js';
import type { ClusterConfig } from '../../config/cluster.js';
import type { Logger } from '../../config/base/log.js';
import type { ConfigCell } from '../shared/config-cell.js';
import { promisesOverAt } from '../shared/peer-lease.js';
import type { GatherEntry, ManagerToNode, NodeToManager } from '../shared/manager-protocol.js';

/** The node's work in the two rounds (./node-application.ts builds them). */
export interface FollowerHooks {
  /** Phase 1: the highest version this node holds of each shard whose primary changes, and the
   *  entries of those shards it gathers (../shared/gather-scatter.ts). `drain`: the shards among them this node is
   *  primary of (a planned move, §4.6): first wait until every write it claimed for them has ended;
   *  throws when they do not end in time (then no prepared is sent and the manager rolls back).
   *  `planned`: no gather -- the versions are the shard counters (a live primary's covers them all). */
  prepare(shards: number[], drain: number[], planned: boolean): Promise<{ versions: Record<string, number>; entries: GatherEntry[]; truncated: boolean; scanned?: { segments: number; blocks: number } }>;
  /** Phase 2: persist and index `scatter`, catch the promoted shards (maybe none) up and raise their
   *  versions above `floors` (`planned` ones without the promotion gap). `entries`: b-log entries
   *  indexed; `scattered`: scattered ones absorbed. */
  promote(shards: number[], floors: Record<string, number>, scatter: GatherEntry[], planned: ReadonlySet<number>, already?: ReadonlySet<number>): Promise<{ entries: number; scattered: number }>;
  /** A configuration was published in the cell (and once at start): re-replication looks at it. */
  configured?(): void;
  /** The shards held since the cold start until the manager confirms them (./restart-hold.ts); held
   *  shards the published configuration gives to another node are let go. */
  unconfirmed?(): number[];
}

export interface FollowerDeps {
  nodeId: number;
  cell: ConfigCell;
  clock: Clock;
  timers: Timers;
  log: Logger;
  hooks: FollowerHooks;
  /** To the manager, on the lease client's current connection. */
  send(m: NodeToManager): void;
  /** The lease in force (peer-lease promises expire by it); null before the first grant. */
  timing(): { leaseMs: number; driftMs: number } | null;
  /** Raise this thread's scheduling priority while a round is in progress (true), and drop it when
   *  none is (false): a failover's rounds take ~25 ms of CPU, and 70-290 ms when an ordinary thread
   *  waits its turn on a busy machine. Absent: rounds run at the thread's priority. */
  urgent?(on: boolean): void;
}

export class ConfigFollower {
  private commits: Promise<void> = Promise.resolve();
  /** Entries this node gathered for the prepare of the term in progress. */
  private gathered = { term: 0, n: 0 };
  /** The shards this node drained for the last prepare it acknowledged (../shared/config-cell.ts PENDING
   *  holds that term until a commit: requests stay blocked meanwhile). */
  private drained: number[] = [];
  /** The latest term this node prepared for the whole node (PENDING): an earlier commit still
   *  finishing must leave requests blocked until a commit at or after it (see `release`). A move's
   *  fence needs no such care: it lifts only once its own term (or a later one) is published. */
  private prepared = 0;
  /** The latest term this node prepared, node-wide or fenced: its commit ends `drained`. */
  private preparedAny = 0;

  constructor(private readonly d: FollowerDeps) {}

  onMessage(m: Extract<ManagerToNode, { t: 'prepare' | 'commit' }>): void {
    this.begin();
    if (m.t === 'prepare') {
      this.prepare(m.term, m.config, m.shards, m.planned ?? false)
        .then(() => this.holdForCommit())
        .catch((err: Error) => this.d.log.error({ err: err.message, term: m.term }, `prepare of term ${m.term} failed: not acknowledged`))
        .finally(() => this.end());
      return;
    }
    this.commits = this.commits
      .then(() => this.commit(m.term, m.config, m.floors, m.scatter ?? [], m.promote ?? [], new Set(m.planned ?? [])))
      .catch((err: Error) => this.d.log.error({ err: err.message }, 'commit failed'))
      .finally(() => {
        this.end();
        this.unhold();
      });
  }

  /** Rounds in progress, and a prepare acknowledged whose commit has not come (urgent while any). */
  private active = 0;
  private held: TimerHandle | undefined;

  private begin(): void {
    if (this.active++ === 0) this.d.urgent?.(true);
  }

  private end(): void {
    if (--this.active === 0) this.d.urgent?.(false);
  }

  /** An acknowledged prepare stays urgent until a commit ends (the commit then reaches a thread that
   *  runs at once, not one that waits its turn), or at most a prepare timeout and the slack. */
  private holdForCommit(): void {
    if (!this.d.urgent || this.held !== undefined) return;
    this.begin();
    this.held = this.d.timers.setTimeout(() => this.unhold(), defaultTimings.prepareTimeoutMs + defaultTimings.reconfigureSlackMs);
  }

  private unhold(): void {
    if (this.held === undefined) return;
    this.d.timers.clearTimeout(this.held);
    this.held = undefined;
    this.end();
  }

  private async prepare(term: number, next: ClusterConfig, confirm: number[] = [], planned = false): Promise<void> {
    if (term <= this.d.cell.term()) return;
    const old = this.d.cell.config();
    const changed = [...new Set([...next.shards.filter((s) => s.primary !== old.shards[s.id]!.primary).map((s) => s.id), ...confirm])].sort((a, b) => a - b);
    // Requests wait from here until the commit: a move's (planned: its source is alive and drains)
    // only for the shards whose placement changes, every other shard serves on (issue 28); a failover's
    // or a takeover's for the whole node (its gather must cover every version of the dead primary).
    if (planned) this.d.cell.fenceShards([...new Set([...changed, ...placementChanged(old, next)])], term);
    else this.d.cell.setPending(term);
    if (!planned) this.prepared = Math.max(this.prepared, term);
    this.preparedAny = Math.max(this.preparedAny, term);
    const stoppedAt = this.d.clock.now();
    // A shard this node hands over alive (a move, §4.6): its writes in flight end before the prepare
    // is acknowledged, so the floors cover them and none lands after the new primary serves.
    const drain = changed.filter((s) => old.shards[s]!.primary === this.d.nodeId && next.shards[s]!.primary !== this.d.nodeId);
    const r = await this.d.hooks.prepare(changed, drain, planned);
    this.gathered = { term, n: r.entries.length };
    this.drained = drain;
    // Logged (synchronously) before the acknowledgement: a record of when this node stopped serving
    // exists for every prepare the manager may build on, even if the node dies right after.
    const ms = +(this.d.clock.now() - stoppedAt).toFixed(1);
    this.d.log.info({ term, changed: changed.length, drained: drain, stoppedAt, ms, gathered: r.entries.length, truncated: r.truncated, scanned: r.scanned }, `prepared term ${term} in ${ms} ms: ${planned ? `shard(s) ${changed.join(', ')} blocked` : 'requests blocked'}; ${r.entries.length} entries gathered`);
    this.d.send({ t: 'prepared', node: this.d.nodeId, term, versions: r.versions, entries: r.entries, truncated: r.truncated });
  }

  /**
   * Before taking over shards of `from` nodes: no more peer leases from here (PENDING; a prepare set
   * it already), then wait until every promise this node made to them has certainly expired
   * (../shared/peer-lease.ts): an old primary serving on its peer leases has stopped by then.
   */
  private async outlivePromises(term: number, from: number[]): Promise<void> {
    if (from.length === 0) return;
    if (this.d.cell.pendingTerm() === 0) this.d.cell.setPending(term); // seq-cst store before the loads below
    const t = this.d.timing() ?? { leaseMs: 0, driftMs: 0 };
    const until = Math.max(...from.map((n) => promisesOverAt(this.d.cell, n, t.leaseMs, t.driftMs)));
    const wait = until - this.d.clock.now();
    if (wait <= 0) return;
    this.d.log.info({ term, from: [...new Set(from)], waitMs: +wait.toFixed(1) }, `taking over shards at term ${term}: waiting ${wait.toFixed(0)} ms for the peer leases granted to node ${[...new Set(from)].join(', node ')} to expire`);
    await sleepOn(this.d.timers, Math.ceil(wait));
  }

  /**
   * A commit that takes a primary role from this node it did not drain in a prepare still pending (a
   * manager broke "a primary role changes hands only through a completed prepare"): said loudly, and
   * the commit goes on -- once it is published, a write of such a shard still in flight here is not
   * acknowledged (the worker re-checks term and role, actors/worker/primary.ts); refusing the commit
   * would only keep this node serving the shard beside its new primary.
   */
  private checkDrained(term: number, old: ClusterConfig, next: ClusterConfig): void {
    const away = next.shards.filter((s) => old.shards[s.id]!.primary === this.d.nodeId && s.primary !== this.d.nodeId).map((s) => s.id);
    // Drained: in a prepare acknowledged since the last commit (PENDING or the shard's fence set since,
    // nothing of it admitted).
    const undrained = away.filter((s) => !this.d.cell.reconfiguring(s) || !this.drained.includes(s));
    if (term >= this.preparedAny) this.drained = []; // the commit ends the pending prepare (an earlier one does not)
    if (undrained.length === 0) return;
    this.d.log.error({ term, shards: undrained, pending: this.d.cell.pendingTerm() }, `committing term ${term}, which takes shard(s) ${undrained.join(', ')} from this node, without having drained them in a prepare: writes of them still in flight end with an unknown outcome`);
  }

  /**
   * Term `term` is published: requests run again -- unless a later term was prepared meanwhile
   * (prepares are answered at once, commits run one at a time, so a commit still waiting out peer
   * leases can finish after a later prepare was acknowledged). That prepare drained shards this node
   * hands over and the manager may have committed it to the others already: serving them again at the
   * earlier term would make two primaries (simulator seeds 1781, 1862). Blocked until its commit.
   */
  private release(term: number): void {
    this.d.cell.setPending(this.prepared > term ? this.prepared : 0);
  }

  private async commit(term: number, next: ClusterConfig, floors: Record<string, number>, scatter: GatherEntry[], again: number[], planned: ReadonlySet<number>): Promise<void> {
    if (term <= this.d.cell.term()) return;
    const t0 = this.d.clock.now();
    const old = this.d.cell.config();
    this.checkDrained(term, old, next);
    const mine = next.shards.filter((s) => s.primary === this.d.nodeId && (old.shards[s.id]!.primary !== this.d.nodeId || again.includes(s.id))).map((s) => s.id);
    const gathered = this.gathered.term === term ? this.gathered.n : 0;
    if (mine.length === 0) {
      // A node that stays backup persists what it lacked before it serves the new term (its requests
      // are still blocked by the prepare): the shard's replicas agree before anything builds on them.
      // A failure here (the pool full) is logged and the node goes on: it must not stay blocked.
      if (scatter.length > 0) {
        try {
          const r = await this.d.hooks.promote([], floors, scatter, planned);
          this.d.log.info({ term, gathered, scattered: r.scattered, sent: scatter.length }, `absorbed ${r.scattered} scattered entries (of ${scatter.length})`);
        } catch (err) {
          this.d.log.error({ term, err: (err as Error).message, sent: scatter.length }, 'could not absorb the scattered entries; this replica may lack some of them');
        }
      }
      this.d.cell.publish(next);
      this.release(term);
      this.d.hooks.unconfirmed?.(); // lets go of held shards `next` gives to another node (./restart-hold.ts)
      this.d.log.info({ term, promoted: 0 }, `committed term ${term}`);
      this.d.hooks.configured?.();
      return;
    }
    for (const s of mine) this.d.cell.setShardBlocked(s, true); // before the new configuration is visible
    // The old primary of a shard handed over without its drain (a failover: it is dead in `next`; a
    // stored move completed because its source's lease expired) may still serve on the peer leases
    // this node granted it until they run out. Only a `planned` handover's source acknowledged a
    // prepare that drained the shard, and serves nothing of it any more.
    await this.outlivePromises(term, mine.filter((s) => !planned.has(s)).map((s) => old.shards[s]!.primary).filter((n) => n !== this.d.nodeId));
    this.d.cell.publish(next);
    this.release(term);
    this.d.log.info({ term, promoted: mine.length }, `committed term ${term}`);
    // Promoted again on the node that was their primary already (a restarted primary confirmed).
    const already = new Set(mine.filter((s) => old.shards[s]!.primary === this.d.nodeId));
    const r = await this.d.hooks.promote(mine, floors, scatter, planned, already);
    for (const s of mine) this.d.cell.setShardBlocked(s, false);
    const servingAt = this.d.clock.now(); // monotonic, comparable with other processes' on this host
    this.d.hooks.configured?.();
    const ms = this.d.clock.now() - t0;
    this.d.send({ t: 'promoted', node: this.d.nodeId, term, shards: mine, ms, entries: r.entries, gathered, scattered: r.scattered });
    this.d.log.info({ term, shards: mine, startedAt: t0, servingAt, ms, entries: r.entries, gathered, scattered: r.scattered }, `promoted ${mine.length} shard(s) in ${ms.toFixed(1)} ms`);
  }
}

/** The shards whose primary or backups differ between `old` and `next`. */
function placementChanged(old: ClusterConfig, next: ClusterConfig): number[] {
  const same = (a: readonly number[], b: readonly number[]) => a.length === b.length && a.every((x, i) => x === b[i]);
  return next.shards.filter((s) => s.primary !== old.shards[s.id]!.primary || !same(s.backups, old.shards[s.id]!.backups)).map((s) => s.id);
}
