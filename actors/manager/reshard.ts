// Resharding plans (§4.6), pure: which primary shards to move where, and the configurations a move
// goes through. The manager (./manager.ts) runs them.
//
// A move hands a shard's primary role to one of its full backups (a replica holding all of it, not
// catching up): the target already has every acknowledged entry of the shard in its b-log and index,
// so nothing is copied -- the old primary drains its writes in flight, the target catches its index
// up from its b-log (the promotion of §4.5 phase 2) and serves; the old primary stays a backup, so the
// shard keeps its replicas. The paper's protocol copies the shard's entries to a target that may hold
// none and forwards its misses to the source meanwhile; with replication 3, a target among the full
// backups is always there unless the cluster has more nodes than replicas, and then the planner only
// considers those (a node holding no replica of a hot shard does not take it: see README).
//
//   before        term t      S: primary A, backups [B, C]
//   moving        term t+1    S: primary B, backups [C, A]; migrations [{source A, target B, shard S}]
//                             prepared (A drains S), committed (B promotes S: planned, no version gap)
//   done          term t+2    same distribution, migrations []
//   rolled back   term t+2    the distribution of term t (a participant did not prepare: nobody
//                             served term t+1, so A still holds every write of S)
import { fullReplicas, holdsReplica, liveNodes, validateCluster, type ClusterConfig, type MigrationTask } from '../../config/cluster.js';
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import { nodeLoads, BACKUP_WRITE_WEIGHT, type ShardRate } from './load.js';
import { FAILOVER_MODES } from './plan.js';

export interface Move {
  shard: number;
  from: number;
  to: number;
}

/** Why `to` cannot take shard `shard`'s primary role now, or null when it can. */
export function moveRefusal(c: ClusterConfig, shard: number, to: number, live: ReadonlySet<number>): string | null {
  const s = c.shards[shard];
  if (!Number.isInteger(shard) || !s) return `there is no shard ${shard} (the cluster has ${c.shardCount})`;
  // Baseline modes' backups index one-sided writes only at a cold start: a target would lack entries.
  if (!FAILOVER_MODES.includes(c.replication)) return `replication mode ${c.replication} cannot hand a primary role over (its backups index only at a cold start)`;
  if (!c.nodes.some((n) => n.id === to)) return `there is no node ${to}`;
  if (!liveNodes(c).some((n) => n.id === to) || !live.has(to)) return `node ${to} is not a live member`;
  if (s.primary === to) return `node ${to} is shard ${shard}'s primary already`;
  if (c.migrations.some((m) => m.shard === shard)) return `shard ${shard} is being moved already`;
  if (!fullReplicas(c, shard).includes(to)) {
    return `node ${to} holds no full replica of shard ${shard} (its full replicas: node ${fullReplicas(c, shard).join(', node ')}); a move hands the primary role to one of them`;
  }
  return null;
}

/** The configuration of term t+1 for `moves` (each checked with moveRefusal first). */
export function planMoves(c: ClusterConfig, moves: readonly Move[]): ClusterConfig {
  const next = structuredClone(c);
  next.term = c.term + 1;
  const tasks: MigrationTask[] = [];
  for (const m of moves) {
    const s = next.shards[m.shard]!;
    if (s.primary !== m.from) throw new RowanError(ErrorCodes.BAD_ARGUMENT, `shard ${m.shard}'s primary is node ${s.primary}, not ${m.from}`);
    // The target leaves the backup list and the source takes its place: the same replicas, in the
    // same positions otherwise.
    s.backups = s.backups.map((b) => (b === m.to ? m.from : b));
    s.primary = m.to;
    tasks.push({ source: m.from, target: m.to, shard: m.shard });
  }
  next.migrations = [...c.migrations, ...tasks];
  return validateCluster(next);
}

/** Term t+1 without the tasks of `shards` (a move finished or given up). */
export function clearTasks(c: ClusterConfig, shards: readonly number[]): ClusterConfig {
  return validateCluster({ ...structuredClone(c), term: c.term + 1, migrations: c.migrations.filter((m) => !shards.includes(m.shard)) });
}

/** Term t+1 without the moves of `tasks`: each shard's primary role back with its source, the target
 *  back in the backup position planMoves gave the source (the same replicas), the task off the list.
 *  For a stored move whose source may not have drained (./handover.ts): nobody served it there. */
export function undoTasks(c: ClusterConfig, tasks: readonly MigrationTask[]): ClusterConfig {
  const next = structuredClone(c);
  next.term = c.term + 1;
  for (const t of tasks) {
    const s = next.shards[t.shard]!;
    if (s.primary !== t.target || !s.backups.includes(t.source)) throw new RowanError(ErrorCodes.BAD_ARGUMENT, `shard ${t.shard} is not moving from node ${t.source} to node ${t.target} in term ${c.term}`);
    s.backups = s.backups.map((b) => (b === t.source ? t.target : b));
    s.primary = t.source;
  }
  next.migrations = c.migrations.filter((m) => !tasks.some((t) => t.shard === m.shard));
  return validateCluster(next);
}

/** Term `current.term + 1` with `before`'s distribution (nobody served `current`). */
export function rollBack(before: ClusterConfig, current: ClusterConfig): ClusterConfig {
  return validateCluster({ ...structuredClone(before), term: current.term + 1, migrations: before.migrations });
}

export interface BalanceOptions {
  /** A node more than this far above the average load is overloaded (resharding.overloadPercent). */
  overloadPercent: number;
  /** Moves go on until every overloaded node is within this of the average (resharding.targetPercent). */
  targetPercent: number;
  /** Below this total (requests/s) nothing is planned: an idle cluster's noise is no overload. */
  minTotalOps: number;
  /** A shard no full backup can take goes to the least loaded node holding no replica of it, by a
   *  copy move (resharding.copyMoves); absent or false: full backups only. */
  copyMoves?: boolean;
}

export interface ReshardingOptions extends BalanceOptions {
  /** Plan and make moves on its own from the load reports (paper); else only `rowan reshard`. */
  auto: boolean;
  /** Load reporting and planning period (resharding.periodMs; paper: 500 ms). */
  periodMs: number;
  /** Fault tests (`--debug-pause move-stored|move-committed:MS`): hold every move this long after a
   *  step, so a test can crash the cluster mid-move. */
  pauseAfter?: { step: string; ms: number };
}

export const DEFAULT_RESHARDING: ReshardingOptions = { auto: true, periodMs: 500, overloadPercent: 30, targetPercent: 5, minTotalOps: 1000, copyMoves: false };

export interface BalancePlan {
  loads: Record<string, number>;
  average: number;
  overloaded: number[];
  moves: Move[];
  /** Why there are no moves (absent when there are). */
  none?: string;
}

/**
 * The paper's plan: the hottest primary shards of each overloaded node go to the least loaded of their
 * full backups, while that lowers the larger of the two loads, until the node is within targetPercent
 * of the average (or no move helps). Moving shard S from N to T shifts reqs(S) - w * writes(S): N
 * keeps S as a backup. With `copyMoves`, a shard none of its full backups can take goes to the least
 * loaded node holding no replica of it (a copy move, ./copy-moves.ts): N leaves S once T serves it, so
 * reqs(S), all N counted for S, moves to T; the other backups' share does not change.
 */
export function planBalance(c: ClusterConfig, rates: ReadonlyMap<number, ShardRate>, live: readonly number[], o: BalanceOptions): BalancePlan {
  const members = liveNodes(c).map((n) => n.id).filter((n) => live.includes(n));
  const load = nodeLoads(c, rates, members);
  const total = [...load.values()].reduce((a, b) => a + b, 0);
  const average = members.length > 0 ? total / members.length : 0;
  const loads = Object.fromEntries([...load].map(([n, l]) => [String(n), Math.round(l)]));
  const overloaded = members.filter((n) => load.get(n)! > average * (1 + o.overloadPercent / 100)).sort((a, b) => load.get(b)! - load.get(a)!);
  const plan: BalancePlan = { loads, average: Math.round(average), overloaded, moves: [] };
  const none = !FAILOVER_MODES.includes(c.replication)
    ? `replication mode ${c.replication} has no failover, so no move`
    : members.length < 2
      ? 'fewer than 2 live nodes'
      : total < o.minTotalOps
        ? `the cluster's load (${Math.round(total)} requests/s) is under the ${o.minTotalOps} a plan needs`
        : overloaded.length === 0
          ? 'no node is overloaded'
          : null;
  if (none !== null) return { ...plan, none };
  const moving = new Set([...c.migrations.map((m) => m.shard), ...(c.copies ?? []).map((m) => m.shard)]);
  // One copy per target at a time: a copy streams a whole shard into it.
  const copying = new Set((c.copies ?? []).map((m) => m.target));
  const liveSet = new Set(members);
  for (const n of overloaded) {
    const mine = c.shards.filter((s) => s.primary === n && !moving.has(s.id) && rates.has(s.id)).sort((a, b) => rates.get(b.id)!.reqs - rates.get(a.id)!.reqs);
    for (const s of mine) {
      if (load.get(n)! <= average * (1 + o.targetPercent / 100)) break;
      const r = rates.get(s.id)!;
      const shift = r.reqs - BACKUP_WRITE_WEIGHT * r.writes;
      if (shift <= 0) continue;
      const targets = fullReplicas(c, s.id).filter((t) => t !== n && liveSet.has(t)).sort((a, b) => load.get(a)! - load.get(b)!);
      let to = targets[0];
      let moved = shift;
      if (to === undefined || load.get(to)! + shift >= load.get(n)!) {
        // No full backup takes it without becoming the hotspot (it would only move it): a node holding
        // no replica of S may, by a copy move. N leaves S, so its whole primary load of S goes.
        const copyTo = o.copyMoves ? copyTarget(c, s.id, members, load, copying) : undefined;
        if (copyTo === undefined || load.get(copyTo)! + r.reqs >= load.get(n)!) continue;
        to = copyTo;
        moved = r.reqs;
        copying.add(to);
      }
      load.set(n, load.get(n)! - moved);
      load.set(to, load.get(to)! + moved);
      plan.moves.push({ shard: s.id, from: n, to });
      moving.add(s.id);
    }
  }
  return plan.moves.length > 0 ? plan : { ...plan, none: `no move lowers an overloaded node without overloading its target (${o.copyMoves ? 'a full backup or a node holding no replica' : 'a move needs a full backup to take the primary role; resharding.copyMoves lets a node holding no replica take it by a copy'})` };
}

/** The least loaded live member holding no replica of `shard` and receiving no copy: a copy move's
 *  target, or undefined. */
function copyTarget(c: ClusterConfig, shard: number, members: readonly number[], load: ReadonlyMap<number, number>, copying: ReadonlySet<number>): number | undefined {
  const catching = new Set((c.catchingUp ?? []).map((x) => x.node));
  return members
    .filter((t) => !holdsReplica(c, shard, t) && !copying.has(t) && !catching.has(t))
    .sort((a, b) => load.get(a)! - load.get(b)!)[0];
}
