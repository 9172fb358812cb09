// Copy moves (§4.6), pure: moving a shard's replica -- its primary role or one of its backups -- to a
// node that holds no replica of it. The manager (./copies.ts) runs them; the target's migration actor
// copies (actors/migration/copy.ts).
//
//   before        term t      S: primary A, backups [B, C]                     (moving A's role to D)
//   copying       term t+1    S: primary A, backups [B, C, D]; catchingUp [S@D]; copies [{A -> D, S}]
//                             A replicates every write of S to D from here (D is a backup); D's migration
//                             actor streams S's committed entries from A (COPY_SHARD, the copy batch
//                             format), absorbing them version-conditionally, and reports caught up
//   copied        term t+2    the catching-up mark goes (as for re-replication: ./rereplicate.ts)
//   handed over   (A was the primary) the move of ./moves.ts: prepare, A drains, D promotes and
//                             serves; S: primary D, backups [B, C, A]
//   done          term t+n    A leaves the shard: S: primary D, backups [B, C]; copies []
//
// During the copy the source serves alone: the target serves nothing of S (a catching-up backup is
// never read, forwarded to or promoted), so no GET miss has to be forwarded. The shard's writes
// replicate to the target as to any backup, so the switch needs no second copy pass: what the walk
// did not see arrived by replication, and the handover is the move's drained prepare.
//
// Rolled back: a participant that dies is failed over (./plan.ts drops the task; a dead target leaves
// the backups, a dead source leaves the target as its replacement, still catching up). By hand before
// the handover: `undoCopies` takes the target out again; the source never stopped serving.
import { holdsReplica, isCatchingUp, liveNodes, validateCluster, type ClusterConfig, type CopyTask } from '../../config/cluster.js';
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import { FAILOVER_MODES } from './plan.js';
import type { Move } from './reshard.js';

/** Where a copy is: the target still copying, the source's primary role to hand over, or the source
 *  to take out of the shard. */
export type CopyStage = 'copying' | 'handover' | 'drop';

export function copyStage(c: ClusterConfig, t: CopyTask): CopyStage {
  if (isCatchingUp(c, t.shard, t.target)) return 'copying';
  return c.shards[t.shard]!.primary === t.source ? 'handover' : 'drop';
}

/** Why shard `m.shard`'s replica on `m.from` cannot be copied to `m.to` now, or null when it can. */
export function copyRefusal(c: ClusterConfig, m: Move, live: ReadonlySet<number>): string | null {
  const s = c.shards[m.shard];
  if (!Number.isInteger(m.shard) || !s) return `there is no shard ${m.shard} (the cluster has ${c.shardCount})`;
  if (!FAILOVER_MODES.includes(c.replication)) return `replication mode ${c.replication} cannot move a replica (its backups index only at a cold start)`;
  if (!c.nodes.some((n) => n.id === m.to)) return `there is no node ${m.to}`;
  if (!liveNodes(c).some((n) => n.id === m.to) || !live.has(m.to)) return `node ${m.to} is not a live member`;
  if (holdsReplica(c, m.shard, m.to)) return `node ${m.to} holds a replica of shard ${m.shard} already`;
  if (!holdsReplica(c, m.shard, m.from)) return `node ${m.from} holds no replica of shard ${m.shard}`;
  if (isCatchingUp(c, m.shard, m.from)) return `node ${m.from} is still catching up on shard ${m.shard}`;
  if (!live.has(m.from)) return `its source, node ${m.from}, is not reachable`;
  if (c.migrations.some((x) => x.shard === m.shard) || (c.copies ?? []).some((x) => x.shard === m.shard)) return `shard ${m.shard} is being moved already`;
  return null;
}

/** Term t+1: each target a catching-up backup of its shard, each copy listed. */
export function planCopies(c: ClusterConfig, moves: readonly Move[]): ClusterConfig {
  const next = structuredClone(c);
  next.term = c.term + 1;
  const tasks: CopyTask[] = [];
  for (const m of moves) {
    next.shards[m.shard]!.backups.push(m.to);
    tasks.push({ source: m.from, target: m.to, shard: m.shard });
  }
  next.catchingUp = [...(c.catchingUp ?? []), ...moves.map((m) => ({ shard: m.shard, node: m.to }))];
  next.copies = [...(c.copies ?? []), ...tasks];
  return validateCluster(next);
}

function withoutCopies(next: ClusterConfig, shards: readonly number[]): void {
  const rest = (next.copies ?? []).filter((x) => !shards.includes(x.shard));
  if (rest.length > 0) next.copies = rest;
  else delete next.copies;
}

/** Term t+1 with each source of `tasks` out of its shard (it is a backup there now), the tasks done. */
export function planCopiesDone(c: ClusterConfig, tasks: readonly CopyTask[]): ClusterConfig {
  const next = structuredClone(c);
  next.term = c.term + 1;
  for (const t of tasks) {
    const s = next.shards[t.shard]!;
    if (s.primary === t.source || copyStage(c, t) !== 'drop') throw new RowanError(ErrorCodes.BAD_ARGUMENT, `shard ${t.shard}: node ${t.source} cannot leave it yet (stage ${copyStage(c, t)})`);
    s.backups = s.backups.filter((b) => b !== t.source);
  }
  withoutCopies(next, tasks.map((t) => t.shard));
  return validateCluster(next);
}

/** Term t+1 without the copies of `tasks` still copying: each target out of its shard again. */
export function undoCopies(c: ClusterConfig, tasks: readonly CopyTask[]): ClusterConfig {
  const next = structuredClone(c);
  next.term = c.term + 1;
  for (const t of tasks) {
    if (copyStage(c, t) !== 'copying') throw new RowanError(ErrorCodes.BAD_ARGUMENT, `shard ${t.shard}'s copy to node ${t.target} is past its copy (${copyStage(c, t)})`);
    const s = next.shards[t.shard]!;
    s.backups = s.backups.filter((b) => b !== t.target);
  }
  const undone = (x: { shard: number; node: number }) => tasks.some((t) => t.shard === x.shard && t.target === x.node);
  const marks = (c.catchingUp ?? []).filter((x) => !undone(x));
  if (marks.length > 0) next.catchingUp = marks;
  else delete next.catchingUp;
  withoutCopies(next, tasks.map((t) => t.shard));
  return validateCluster(next);
}
