// Phase 1's new configuration (§4.5): term + 1, the failed node out of the membership, for every shard
// it was primary of a backup promoted to primary, and the failed node removed from every backup list.
// Pure: the manager stores and pushes what this returns.
import { isCatchingUp, liveNodes, validateCluster, type ClusterConfig } from '../../config/cluster.js';
import { ErrorCodes, RowanError } from '../../config/base/errors.js';

export interface ShardMove {
  shard: number;
  from: number;
  to: number;
}

export interface FailoverPlan {
  next: ClusterConfig;
  /** Shards whose primary changed. */
  moved: ShardMove[];
  /** Shards that lost a backup only. */
  degraded: number[];
}

/** Replication modes a promotion can start from: their backups index replicated entries online, or
 *  (tailwind) the promotion scans the old primary's backup buffers first (actors/node/promote.ts). */
export const FAILOVER_MODES: readonly string[] = ['rowan', 'rpc',
  'tailwind'];

/** What a mode that fails over still cannot do, for the status and the manager's log (issue 29). */
export function modeLimitation(mode: string): string | null {
  if (mode === 'tailwind') {
    return 'replication mode tailwind: NO GC of backup buffers -- no backup reads them before a recovery (a promotion or a cold start), so they are never reclaimed while their primary is a member and a long write load fills the backups\' pools (ROWAN_ERR_PM_FULL / ROWAN_ERR_QUOTA)';
  }
  return null;
}

/**
 * `live`: the members that may take a shard (holding a lease, not being failed over themselves);
 * absent, every surviving backup may. A shard whose surviving backups are none of them cannot move now
 * (several nodes died at once, or the whole cluster did): the plan throws and the manager retries.
 */
export function planFailover(c: ClusterConfig, failed: number, live?: ReadonlySet<number>): FailoverPlan {
  if (!liveNodes(c).some((n) => n.id === failed)) throw new RowanError(ErrorCodes.BAD_ARGUMENT, `node ${failed} is not a live member at term ${c.term}`);
  const moved: ShardMove[] = [];
  const degraded: number[] = [];
  // Spread the promotions: among a shard's surviving backups, the one that received the fewest so far
  // (ties: the first in the backup list, the next in ring order).
  const promotedTo = new Map<number, number>();
  const shards = c.shards.map((s) => {
    const backups = s.backups.filter((b) => b !== failed);
    if (s.primary !== failed) {
      if (backups.length !== s.backups.length) degraded.push(s.id);
      return { id: s.id, primary: s.primary, backups };
    }
    // A catching-up backup (§4.5 phase 3) lacks part of the shard: never promoted, not a replica here.
    const full = backups.filter((b) => !isCatchingUp(c, s.id, b));
    if (full.length === 0) {
      throw new RowanError(ErrorCodes.BAD_CONFIG, `shard ${s.id} has no replica left once node ${failed} is gone (replication ${c.replicationFactor}${backups.length > 0 ? `; node ${backups.join(', node ')} still catching up` : ''})`);
    }
    const candidates = live ? full.filter((b) => live.has(b)) : full;
    if (candidates.length === 0) {
      throw new RowanError(ErrorCodes.NODE_NOT_RUNNING, `shard ${s.id}: none of its other replicas (node ${full.join(', node ')}) is live to take over from node ${failed}`);
    }
    let to = candidates[0]!;
    for (const b of candidates) if ((promotedTo.get(b) ?? 0) < (promotedTo.get(to) ?? 0)) to = b;
    promotedTo.set(to, (promotedTo.get(to) ?? 0) + 1);
    moved.push({ shard: s.id, from: failed, to });
    return { id: s.id, primary: to, backups: backups.filter((b) => b !== to) };
  });
  // A move (§4.6) away from the failed node that had committed: the target is the primary already and
  // promotes the shard again, with this failover's floors and scatter (the source may have landed
  // blocks of it on some replicas only). A task involving the failed node ends here either way; one
  // whose target failed is moved on above like any shard of the failed node.
  for (const t of c.migrations ?? []) {
    if (t.source === failed && c.shards[t.shard]?.primary === t.target && t.target !== failed) moved.push({ shard: t.shard, from: failed, to: t.target });
  }
  const next = validateCluster({
    ...structuredClone(c),
    // A copy move (./copy-moves.ts) with the failed node as its source or target ends: a dead target
    // leaves the backups here; a dead source leaves the target in its place, still catching up.
    copies: (c.copies ?? []).filter((t) => t.source !== failed && t.target !== failed),
    migrations: (c.migrations ?? []).filter((t) => t.source !== failed && t.target !== failed),
    term: c.term + 1,
    shards,
    dead: [...(c.dead ?? []), failed].sort((a, b) => a - b),
    ...(c.catchingUp ? { catchingUp: c.catchingUp.filter((x) => x.node !== failed) } : {}),
  });
  if (next.copies?.length === 0) delete next.copies;
  return { next, moved, degraded };
}
