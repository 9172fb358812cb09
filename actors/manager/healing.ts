// Re-replication's side of the configuration manager (§4.5 phase 3), for ./manager.ts: changes that
// move no primary -- a failed-over node asking to rejoin (holding no shard), new backups reported
// caught up, new backups for shards short of replicas. The manager feeds it what the members say
// (join, caughtUp) and runs pass() between failovers (its drain loop). Each change is stored with a
// compare-and-set on the term and pushed as a commit; members serve it at once (no primary changes).
import type { Clock } from '../../config/base/clock.js';
import { isCatchingUp, liveNodes, type CatchingUp, type ClusterConfig } from '../../config/cluster.js';
import type { Logger } from '../../config/base/log.js';
import { planCaughtUp, planJoin, planRereplication } from './rereplicate.js';

/** One new backup: when it was added and when (and with how much) it was reported caught up. */
export interface RereplicationRecord {
  shard: number;
  node: number;
  term: number;
  addedAt: number;
  caughtUpAt?: number;
  entries?: number;
  bytes?: number;
  ms?: number;
}

/** What a pass needs of the manager. */
export interface HealingHost {
  config(): ClusterConfig;
  members(): number[];
  /** Whether `node` has a connection and is not being failed over. */
  usable(node: number): boolean;
  connected(node: number): boolean;
  /** A joiner became a member: no longer failing, its lease window starts now. */
  admitted(node: number): void;
  /** Store `next` (CAS on the term) and send it to every reachable member as a commit. */
  push(next: ClusterConfig): Promise<void>;
  readonly clock: Clock;
  readonly log: Logger;
}

/**
 * The term that takes failed-over `node` back (./rereplicate.ts planJoin), holding no shard. With more
 * members than the replication factor, re-replication gave its shards to the others already and it
 * would stay empty for good -- a node SIGKILLed while replicas were spread onto it (issue 28), or after
 * the balancing ended without it: the term turns balancing on (./membership-runner.ts), which spreads
 * replicas and primaries over the members again, the rejoined node with them.
 */
export function rejoinTerm(c: ClusterConfig, node: number): ClusterConfig | null {
  const next = planJoin(c, node);
  if (next && liveNodes(next).length > next.replicationFactor) next.balancing = true;
  return next;
}

export class Healing {
  private readonly joins = new Set<number>();
  private caughtUp: CatchingUp[] = [];
  private wanted = true;
  /** Re-replications: when each new backup was added and when it was reported caught up. */
  readonly records: RereplicationRecord[] = [];

  constructor(private readonly host: HealingHost) {}

  /** A failed-over node restarted asks to come back (./rereplicate.ts planJoin). */
  join(node: number): void {
    this.joins.add(node);
  }

  joining(node: number): boolean {
    return this.joins.has(node);
  }

  /** Its connection closed: a joiner that left is not taken back. */
  forget(node: number): void {
    this.joins.delete(node);
  }

  /** Look again for shards short of replicas (a member connected, a failover took one away). */
  want(): void {
    this.wanted = true;
  }

  pending(): boolean {
    return this.joins.size > 0 || this.caughtUp.length > 0 || this.wanted;
  }

  /** A primary says `node` caught up on `shard`; false when stale or already known. */
  reportCaughtUp(m: { shard: number; node: number; from: number; entries: number; bytes: number; ms: number }): boolean {
    const cfg = this.host.config();
    if (!isCatchingUp(cfg, m.shard, m.node) || cfg.shards[m.shard]!.primary !== m.from) return false; // stale
    if (this.caughtUp.some((x) => x.shard === m.shard && x.node === m.node)) return false;
    const r = this.records.find((x) => x.shard === m.shard && x.node === m.node && x.caughtUpAt === undefined);
    if (r) Object.assign(r, { entries: m.entries, bytes: m.bytes, ms: m.ms });
    this.host.log.info({ node: m.node, shard: m.shard, from: m.from, entries: m.entries, bytes: m.bytes, ms: m.ms }, `node ${m.node} caught up on shard ${m.shard}: ${m.entries} entries, ${m.bytes} B in ${m.ms.toFixed(0)} ms`);
    this.caughtUp.push({ shard: m.shard, node: m.node });
    return true;
  }

  /** One pass: joins, caught-up marks, new backups. */
  async pass(): Promise<void> {
    const h = this.host;
    for (const node of [...this.joins]) {
      const next = rejoinTerm(h.config(), node);
      if (!next || !h.connected(node)) {
        this.joins.delete(node);
        continue;
      }
      // A joiner until its configuration is stored: a renewal arriving meanwhile is ignored, where a
      // non-member's would be answered `evicted` (which ends the node).
      await h.push(next);
      this.joins.delete(node);
      h.admitted(node);
      h.log.warn({ node, term: next.term, balancing: next.balancing === true }, `node ${node} rejoined the cluster (term ${next.term}) holding no shard${next.balancing ? '; balancing the members, it with them' : ''}`);
      this.wanted = true;
    }
    if (this.caughtUp.length > 0) {
      const done = this.caughtUp;
      this.caughtUp = [];
      const plan = planCaughtUp(h.config(), done);
      if (plan) {
        await h.push(plan.next);
        const at = h.clock.now();
        for (const x of plan.cleared) {
          const r = this.records.find((y) => y.shard === x.shard && y.node === x.node && y.caughtUpAt === undefined);
          if (r) r.caughtUpAt = at;
        }
        h.log.warn(
          { event: 'caught-up', term: plan.next.term, cleared: plan.cleared, catchingUp: plan.next.catchingUp?.length ?? 0 },
          `re-replication: term ${plan.next.term}, ${plan.cleared.map((x) => `${x.shard}@${x.node}`).join(' ')} caught up (${plan.next.catchingUp?.length ?? 0} still catching up)`,
        );
      }
    }
    if (this.wanted) {
      this.wanted = false;
      const eligible = new Set(h.members().filter((n) => h.usable(n)));
      const plan = planRereplication(h.config(), eligible);
      if (plan) {
        await h.push(plan.next);
        const at = h.clock.now();
        for (const x of plan.added) this.records.push({ ...x, term: plan.next.term, addedAt: at });
        h.log.warn({ event: 're-replicate', term: plan.next.term, added: plan.added }, `re-replication: term ${plan.next.term}, new backups ${plan.added.map((x) => `${x.shard}->${x.node}`).join(' ')} (catching up)`);
      }
    }
  }
}
