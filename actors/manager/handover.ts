// Whether a stored move may hand its shard's primary role to the target (DESIGN §6: "a primary role
// changes hands only through a completed prepare"). Pure; used where a manager commits a move's term
// it did not prepare itself in one go: a stored term completed after a restart or a takeover
// (./takeover.ts) and a move resumed from the stored migration list (./moves.ts resume).
//
// The source of a move may still serve the shard -- acknowledge writes the target's promotion scan
// never sees -- until it has drained it (acknowledged a prepare that moves the shard away: requests
// blocked, every claimed write ended) or until its lease has certainly expired. So a task's handover
// is committed only when one of these holds:
//   drained     the source acknowledged this round's prepare (if it still served the shard, it
//               drained it before acknowledging; either way it reported its version counter)
//   on term     the source reported the stored term (it committed it, so it prepared it first)
//   committed   the target reported the stored term (a manager committed it to the target, which it
//               does only after the source drained -- this rule, applied before)
//   expired     the source's lease certainly expired (the manager then grants it none until it
//               reports the term, ./manager.ts `fenced`; the target waits out the peer-lease
//               promises it gave the source, actors/node/lease-client.ts)
// Otherwise the move is rolled back (./reshard.ts undoTasks) when the target certainly has not served
// it -- it acknowledged this prepare while behind the term, or its lease certainly expired -- and the
// source keeps every write it acknowledged. When neither is known (both unresponsive) nothing is
// committed yet: the manager tries again (`undecided`).
import type { ClusterConfig, MigrationTask } from '../../config/cluster.js';

/** What the manager knows of the members after a prepare round of the stored term `term`. */
export interface HandoverView {
  /** The stored term whose distribution makes the targets primaries. */
  term: number;
  /** Members that acknowledged this round's prepare. */
  answered: ReadonlySet<number>;
  connected(node: number): boolean;
  /** The committed term a member last reported (undefined: none since it connected). */
  reportedTerm(node: number): number | undefined;
  /** Whether `node`'s lease has certainly expired now (it can serve nothing under it). */
  leaseExpired(node: number): boolean;
}

export interface HandoverVerdict {
  /** Tasks whose handover may be committed. */
  safe: MigrationTask[];
  /** Of those, the shards whose source drained in this round: planned, no promotion gap and no
   *  peer-lease wait on the target (the versions a member reports in `prepared` include its shard
   *  counters, actors/shared/gather-scatter.ts, so the floors cover every version the source claimed). */
  drained: number[];
  /** Of those, the tasks committed on the source's expired lease: the caller fences the source. */
  expired: MigrationTask[];
  /** Tasks to roll back, each with why. */
  unsafe: { task: MigrationTask; why: string }[];
  /** Tasks neither safe nor known to be safe to roll back (their target may have served them). */
  undecided: { task: MigrationTask; why: string }[];
}

/** The tasks of `c` whose target is the shard's primary in `c` (the move is in force there). */
export function handovers(c: ClusterConfig): MigrationTask[] {
  return c.migrations.filter((t) => c.shards[t.shard]?.primary === t.target);
}

export function judgeHandovers(tasks: readonly MigrationTask[], v: HandoverView): HandoverVerdict {
  const out: HandoverVerdict = { safe: [], drained: [], expired: [], unsafe: [], undecided: [] };
  const onTerm = (n: number) => (v.reportedTerm(n) ?? -1) >= v.term;
  for (const t of tasks) {
    if (v.answered.has(t.source)) {
      out.safe.push(t);
      out.drained.push(t.shard);
      continue;
    }
    if (onTerm(t.source) || onTerm(t.target)) {
      out.safe.push(t);
      continue;
    }
    if (v.leaseExpired(t.source)) {
      out.safe.push(t);
      out.expired.push(t);
      continue;
    }
    const why = v.connected(t.source) ? `its source, node ${t.source}, did not acknowledge the prepare of term ${v.term}` : `its source, node ${t.source}, is not connected and its lease may still hold`;
    if (v.answered.has(t.target) || v.leaseExpired(t.target)) out.unsafe.push({ task: t, why });
    else out.undecided.push({ task: t, why: `${why}, and its target, node ${t.target}, did not answer either` });
  }
  return out;
}
