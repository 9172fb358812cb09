// Re-replication (§4.5 phase 3) and a dead node rejoining: the manager's pure configuration plans.
//
//   add       every shard with fewer replicas than replicationFactor gets a new backup, a live member
//             that holds no replica of it (fewest replicas first, then the lowest id), listed in
//             `backups` and marked in `catchingUp` (term + 1). From that term its primary replicates new
//             writes to it like to any backup, and the node copies the shard's existing entries from
//             the primary (actors/migration/copy.ts).
//   caught up the node reported a shard copied: its mark goes (term + 1); it now counts as a replica
//             (promotable, "a replica left").
//   join      a node listed dead that restarted (rowan start --rejoin) leaves `dead` (term + 1), holding no
//             shard; `add` then gives it some.
// The manager stores each result with a compare-and-set on the term and pushes it as a commit: no
// primary changes, so nothing needs to block (phase 1's prepare is for moves).
import { liveNodes, validateCluster, type CatchingUp, type ClusterConfig } from '../../config/cluster.js';

export interface RereplicationPlan {
  next: ClusterConfig;
  added: CatchingUp[];
}

/** Replicas (primary or backup, catching up or not) each live node holds. */
function replicaCounts(c: ClusterConfig, members: readonly number[]): Map<number, number> {
  const n = new Map(members.map((m) => [m, 0]));
  for (const s of c.shards) for (const r of [s.primary, ...s.backups]) if (n.has(r)) n.set(r, n.get(r)! + 1);
  return n;
}

/**
 * New backups for the shards below the replication factor, chosen among `eligible` (live members the
 * manager can reach); null when none is missing or no node can take one.
 */
export function planRereplication(c: ClusterConfig, eligible: ReadonlySet<number>): RereplicationPlan | null {
  const members = liveNodes(c).map((n) => n.id).filter((id) => eligible.has(id));
  const counts = replicaCounts(c, members);
  const added: CatchingUp[] = [];
  const shards = c.shards.map((s) => {
    const backups = [...s.backups];
    while (backups.length < c.replicationFactor - 1) {
      const holders = new Set([s.primary, ...backups]);
      let pick: number | null = null;
      for (const m of members) {
        if (holders.has(m)) continue;
        if (pick === null || counts.get(m)! < counts.get(pick)!) pick = m;
      }
      if (pick === null) break;
      backups.push(pick);
      counts.set(pick, counts.get(pick)! + 1);
      added.push({ shard: s.id, node: pick });
    }
    return { ...s, backups };
  });
  if (added.length === 0) return null;
  const next = validateCluster({ ...structuredClone(c), term: c.term + 1, shards, catchingUp: [...(c.catchingUp ?? []), ...added] });
  return { next, added };
}

/** Term + 1 without the catching-up marks of `done` (those still marked); null when none is. */
export function planCaughtUp(c: ClusterConfig, done: readonly CatchingUp[]): { next: ClusterConfig; cleared: CatchingUp[] } | null {
  const key = (x: CatchingUp) => `${x.shard}:${x.node}`;
  const want = new Set(done.map(key));
  const cleared = (c.catchingUp ?? []).filter((x) => want.has(key(x)));
  if (cleared.length === 0) return null;
  const rest = (c.catchingUp ?? []).filter((x) => !want.has(key(x)));
  const next = structuredClone(c);
  next.term = c.term + 1;
  if (rest.length > 0) next.catchingUp = rest;
  else delete next.catchingUp;
  return { next: validateCluster(next), cleared };
}

/** Term + 1 with `node` out of `dead`: a member holding no shard. Null when it is not dead. */
export function planJoin(c: ClusterConfig, node: number): ClusterConfig | null {
  if (!(c.dead ?? []).includes(node)) return null;
  const next = structuredClone(c);
  next.term = c.term + 1;
  const dead = (c.dead ?? []).filter((d) => d !== node);
  if (dead.length > 0) next.dead = dead;
  else delete next.dead;
  return validateCluster(next);
}
