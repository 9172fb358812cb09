// Confirming restarted primaries (issue 24; the node's side is actors/node/restart-hold.ts). A node that
// restarts holds the shards it is primary of and lists them in its hello; they serve again only after
// this round: term t+1 (the same distribution) is stored, every member prepares -- the restarted node
// lists its restart tail (writes that were replicating when it went down), the backups what their
// b-logs hold above the shard's CommitVer -- and the commit scatters the union to every replica and
// promotes the shards on their primary again (`promote`, `planned`: the counters already resumed above
// every version the previous incarnation handed out, so no gap). A shard is confirmed only with every
// replica in the round: a backup that missed it would lack the tail its primary then serves, and a
// failover to it would take that back. So a shard waits (held) while one of its backups is not
// connected -- it comes back, or its failover removes it -- and one whose primary or a backup did not
// prepare in time is committed without confirmation and asked again after a back-off.
import type { ClusterConfig } from '../../config/cluster.js';
import { defaultTimings } from '../../config/timings.js';
import type { ShardMove } from './plan.js';
import type { RoundsHost } from './rounds.js';

export interface ReconfirmHost extends RoundsHost {
  /** Live members holding a connection and not being failed over. */
  reachable(): Set<number>;
  /** Whether `node` is being (or queued to be) failed over. */
  suspected(node: number): boolean;
  storeConfig(next: ClusterConfig): Promise<void>;
}

export class Reconfirms {
  /** Held shards per node, as its hello listed them. */
  private readonly held = new Map<number, Set<number>>();
  /** No round for a node before this instant (a round it did not complete). */
  private readonly notBefore = new Map<number, number>();

  /** `node` says hello holding `shards` (none: nothing to confirm). */
  want(node: number, shards: readonly number[]): void {
    if (shards.length === 0) this.held.delete(node);
    else this.held.set(node, new Set(shards));
    this.notBefore.delete(node);
  }

  /** `node` is gone (its connection closed, it is failed over): its next hello says what it holds. */
  forget(node: number): void {
    this.held.delete(node);
    this.notBefore.delete(node);
  }

  /** `node` reported the promotion of `shards` (of any round): those are confirmed, even when the
   *  round that confirmed them stopped waiting for them (another of its nodes was suspected). */
  promoted(node: number, shards: readonly number[]): void {
    const held = this.held.get(node);
    if (!held) return;
    for (const s of shards) held.delete(s);
    if (held.size === 0) this.held.delete(node);
  }

  /** Whether a round is due now: some held shard whose replicas are all in `live`. */
  wanted(c: ClusterConfig, live: ReadonlySet<number>, now: number): boolean {
    return this.due(c, live, now).length > 0;
  }

  /** The held shards that can be confirmed now (see the header), as moves from their primary to itself. */
  private due(c: ClusterConfig, live: ReadonlySet<number>, now: number): ShardMove[] {
    const moves: ShardMove[] = [];
    for (const [node, shards] of this.held) {
      if (!live.has(node) || now < (this.notBefore.get(node) ?? 0)) continue;
      for (const s of shards) {
        const p = c.shards[s];
        if (p?.primary === node && p.backups.every((b) => live.has(b))) moves.push({ shard: s, from: node, to: node });
      }
    }
    return moves;
  }

  /** One round confirming every held shard that can be confirmed now. */
  async run(h: ReconfirmHost): Promise<void> {
    const c = h.config();
    for (const [node, shards] of this.held) {
      // Shards no longer its primary: nothing to confirm (the node lets go of them once it has c).
      for (const s of shards) if (c.shards[s]?.primary !== node) shards.delete(s);
      if (shards.size === 0) this.held.delete(node);
    }
    const live = new Set([...h.reachable()].filter((n) => !h.suspected(n)));
    const moves = this.due(c, live, h.clock.now());
    if (moves.length === 0) return;
    const next: ClusterConfig = { ...structuredClone(c), term: c.term + 1 };
    await h.storeConfig(next);
    const nodes = [...new Set(moves.map((m) => m.to))];
    h.log.warn({ event: 'reconfirm-stored', term: next.term, nodes, shards: moves.map((m) => m.shard) }, `confirming restarted primaries: node ${nodes.join(', node ')} (term ${next.term}, ${moves.length} shard(s))`);
    const prep = await h.prepareRound(next, moves.map((m) => m.shard), false);
    // Every replica of the shard prepared (listed what it holds): else it is not confirmed this time.
    const ok = moves.filter((m) => [m.to, ...next.shards[m.shard]!.backups].every((n) => prep.reports.has(n)));
    for (const m of moves) if (!ok.includes(m)) this.later(m.to, h.clock.now());
    let reported = ok.length === 0;
    h.awaitPromoted(next.term, [...new Set(ok.map((m) => m.to))], () => (reported = true));
    const shards = ok.map((m) => m.shard);
    const r = h.commitRound(next, ok, prep, shards, shards);
    const t0 = h.clock.now();
    while (!reported && h.clock.now() - t0 < defaultTimings.movePromoteTimeoutMs && !ok.some((m) => h.suspected(m.to))) await h.sleep(2);
    if (!reported) {
      for (const m of ok) this.later(m.to, h.clock.now());
      h.log.error({ event: 'reconfirm-stalled', term: next.term }, `restarted primaries of term ${next.term} did not report their promotion; asked again in ${defaultTimings.failoverRetryMs} ms`);
      return;
    }
    for (const m of ok) this.held.get(m.to)?.delete(m.shard);
    for (const n of nodes) if (this.held.get(n)?.size === 0) this.held.delete(n);
    h.log.info({ event: 'reconfirm-done', term: next.term, shards, gathered: r.gathered, scattered: r.scattered }, `restarted primaries confirmed at term ${next.term}: ${shards.length} shard(s), ${r.gathered} entries gathered, ${r.scattered} scattered`);
  }

  private later(node: number, now: number): void {
    this.notBefore.set(node, now + defaultTimings.failoverRetryMs);
  }
}
