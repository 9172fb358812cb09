// Confirming restarted primaries (issue 24; the node's side is actors/node/restart-hold.ts). A node that
// restarts holds the shards it is primary of and lists them in its hello; they serve again only after
// this round: term t+1 (the same distribution) is stored, every member prepares -- the restarted node
// lists its restart tail (writes that were replicating when it went down), the backups what their
// b-logs hold above the shard's CommitVer -- and the commit scatters the union to every replica and
// promotes the shards on their primary again (`promote`, `planned`: the counters already resumed above
// every version the previous incarnation handed out, so no gap). A node that did not prepare in time
// is committed without its shards (they stay held) and asked again after a back-off.
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

  /** Whether a round is due now for some node in `live`. */
  wanted(live: ReadonlySet<number>, now: number): boolean {
    for (const n of this.held.keys()) if (live.has(n) && now >= (this.notBefore.get(n) ?? 0)) return true;
    return false;
  }

  /** One round confirming every due node's held shards that `h.config()` still names it primary of. */
  async run(h: ReconfirmHost): Promise<void> {
    const c = h.config();
    const live = h.reachable();
    const now = h.clock.now();
    const moves: ShardMove[] = [];
    for (const [node, shards] of this.held) {
      if (!live.has(node) || h.suspected(node) || now < (this.notBefore.get(node) ?? 0)) continue;
      for (const s of shards) if (c.shards[s]?.primary === node) moves.push({ shard: s, from: node, to: node });
      // A shard no longer its primary: nothing to confirm (the node lets go of it once it has c).
      if (![...shards].some((s) => c.shards[s]?.primary === node)) this.held.delete(node);
    }
    if (moves.length === 0) return;
    const next: ClusterConfig = { ...structuredClone(c), term: c.term + 1 };
    await h.storeConfig(next);
    const nodes = [...new Set(moves.map((m) => m.to))];
    h.log.warn({ event: 'reconfirm-stored', term: next.term, nodes, shards: moves.map((m) => m.shard) }, `confirming restarted primaries: node ${nodes.join(', node ')} (term ${next.term}, ${moves.length} shard(s))`);
    const prep = await h.prepareRound(next, moves.map((m) => m.shard), false);
    const ok = moves.filter((m) => !prep.missing.includes(m.to));
    for (const n of nodes) if (prep.missing.includes(n)) this.later(n, h.clock.now());
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
