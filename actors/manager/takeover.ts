// A manager that was elected (./election.ts) -- or is acting again after a validity lapse, or restarted
// with a stored term some members had not committed -- taking over from whoever acted before it, on
// the configuration manager's behalf (./manager.ts).
//
// With a standby a manager acts only while `activation.valid()`: no grant, no store, no push otherwise.
// Elected, it starts with no lease knowledge: a member it has not heard from is suspected only after
// leaseMs + driftMs + takeoverGraceMs (LeaseTable.startedAt = activation), so it never cuts a lease
// the previous manager granted short. Its first step (completeStoredTerm) completes a failover -- or a
// move (./moves.ts) -- the previous manager stored but may not have pushed: once the members reconnected
// (bounded), every member still below the stored term is prepared and committed for it, with
// gather/scatter and version floors like any failover. A failed node's lease may not have expired
// when its term was stored (failover() plans at once after a closed connection and waits before the
// commit), so the commit here waits until this manager is sure it has: every dead node's lease as
// this manager's table sees it (from its activation when it never heard the node). A move's
// source is another matter: it is alive and may serve the shard until it drains it, so a stored move
// is committed only as ./handover.ts allows (the source drained in this prepare, or its lease certainly
// expired, ...) and otherwise rolled back to the source (term + 1, ./reshard.ts undoTasks). Moves left
// in the stored migration list are then resumed by the manager's reconfigure() (./moves.ts resume).
import type { ClusterConfig } from '../../config/cluster.js';
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import { defaultTimings } from '../../config/timings.js';
import { notActive } from './election.js';
import { handovers, judgeHandovers, type HandoverVerdict } from './handover.js';
import type { LeaseTiming } from './leases.js';
import type { ShardMove } from './plan.js';
import { undoTasks } from './reshard.js';
import type { Prepared, RoundsHost } from './rounds.js';

/** Whether this manager may act (./election.ts); a manager without an election always may. */
export interface Activation {
  valid(): boolean;
  /** Elected through ZooKeeper: begin with completeStoredTerm and resume after a validity lapse. */
  elected: boolean;
  /** Elected while another manager was seen active: members get takeoverGraceMs, not joinGraceMs (config/timings.ts). */
  takeover: boolean;
  /** Fault tests (--debug-pause failover-stored:MS): pause this long after storing a failover's
   *  configuration, before pushing it. */
  pauseAfterStoreMs?: number;
}

export const ALWAYS: Activation = { valid: () => true, elected: false, takeover: false };

/** The record of a completed term kept in the manager's failover history (a TakeoverRecord). */
export interface TakeoverRecord {
  node: number;
  term: number;
  moved: ShardMove[];
  detectedAt: number;
  gathered?: number;
  scattered?: number;
}

/** What completing a stored term needs of the manager. */
export interface TakeoverHost extends RoundsHost {
  members(): number[];
  /** Whether `node` holds a connection / is being failed over / the term it last reported. */
  connected(node: number): boolean;
  suspected(node: number): boolean;
  reportedTerm(node: number): number | undefined;
  /** Whether `node`'s lease has certainly expired now (LeaseTable.certainlyExpiredAt). */
  leaseExpired(node: number): boolean;
  /** Grant `node` no lease until it reports `term` (a move's source handed over on its expired lease). */
  fence(node: number, term: number): void;
  /** Store a configuration (compare-and-set on the term; fenced when not the active manager). */
  storeConfig(next: ClusterConfig): Promise<void>;
  closed(): boolean;
  readonly activation: Activation;
  readonly timing: LeaseTiming;
  /** When this manager was elected or became valid again. */
  activatedAt(): number;
  /** A term being completed: into the manager's failover history, logged as `resumed`. */
  begin(rec: TakeoverRecord): void;
  mark(rec: TakeoverRecord, step: 'prepared' | 'committed' | 'promoted'): void;
}

/**
 * Wait (bounded) for the members to reconnect, then complete the stored term for every member still
 * below it. The previous configuration is not known here: each member behind compares with its own, so
 * the shards changing primary are the ones the members reported in their `prepared`. Members already on
 * the term ignore the prepare and the commit; only the ones behind are waited for. A stored move whose
 * handover is not safe (./handover.ts) is rolled back in the committed configuration (term + 1).
 * Returns whether a term was completed (then the manager looks at re-replication again).
 */
export async function completeStoredTerm(h: TakeoverHost): Promise<boolean> {
  const until = h.activatedAt() + h.timing.leaseMs + h.timing.driftMs + defaultTimings.takeoverGraceMs;
  while (!h.closed() && h.clock.now() < until && h.members().some((n) => !h.connected(n) && !h.suspected(n))) await h.sleep(20);
  if (h.closed()) return false;
  const stored = h.config();
  if (!h.activation.valid()) throw notActive(`completing term ${stored.term}`);
  const behind = h.members().filter((n) => h.connected(n) && (h.reportedTerm(n) ?? stored.term) < stored.term);
  const missing = h.members().filter((n) => !h.connected(n));
  h.log.info({ event: 'takeover', term: stored.term, behind, missing }, `taking over at term ${stored.term}: ${behind.length ? `member(s) ${behind.join(',')} not yet on it; completing it` : 'every connected member is on it'}${missing.length ? `; not connected: ${missing.join(',')}` : ''}`);
  if (behind.length === 0) return false;
  const dead = stored.dead ?? [];
  const rec: TakeoverRecord = { node: dead[dead.length - 1] ?? -1, term: stored.term, moved: [], detectedAt: h.clock.now() };
  h.begin(rec);
  const prep = await h.prepareRound(stored, [], false, new Set(behind));
  if (prep.missing.length > 0) h.log.warn({ term: stored.term, missing: prep.missing }, 'prepare not acknowledged by every member in time; committing without them where no move needs them');
  h.mark(rec, 'prepared');
  if (h.closed()) return false;
  // Never a second primary: a dead node's shards change hands only once its lease certainly expired.
  while (!h.closed() && (stored.dead ?? []).some((n) => !h.leaseExpired(n))) await h.sleep(Math.max(1, Math.floor(h.timing.renewMs / 4)));
  if (h.closed()) return false;
  const verdict = judgeStoredMoves(h, stored, new Set(prep.reports.keys()));
  // Fenced before anything is awaited: a renew granted after the judgement would renew the lease it
  // counted as expired.
  for (const t of verdict.expired) h.fence(t.source, stored.term + (verdict.unsafe.length > 0 ? 1 : 0));
  const next = verdict.unsafe.length > 0 ? await rollBackMoves(h, stored, verdict) : stored;
  commitStored(h, rec, next, prep, behind, verdict);
  return true;
}

/** The handovers of the stored moves (./handover.ts); none undecided (else it throws, to retry). */
function judgeStoredMoves(h: TakeoverHost, stored: ClusterConfig, answered: ReadonlySet<number>): HandoverVerdict {
  const verdict = judgeHandovers(handovers(stored), { term: stored.term, answered, connected: (n) => h.connected(n), reportedTerm: (n) => h.reportedTerm(n), leaseExpired: (n) => h.leaseExpired(n) });
  if (verdict.undecided.length > 0) {
    const why = verdict.undecided.map((u) => `shard ${u.task.shard}: ${u.why}`).join('; ');
    throw new RowanError(ErrorCodes.TIMEOUT, `term ${stored.term} cannot be completed yet, nor its move rolled back: ${why}`);
  }
  return verdict;
}

/** Store term + 1 with the unsafe moves undone; returns it (what is committed instead). */
async function rollBackMoves(h: TakeoverHost, stored: ClusterConfig, verdict: HandoverVerdict): Promise<ClusterConfig> {
  const next = undoTasks(stored, verdict.unsafe.map((u) => u.task));
  await h.storeConfig(next);
  for (const u of verdict.unsafe) {
    h.log.warn({ event: 'move-rolled-back', at: h.clock.now(), term: next.term, moves: [{ shard: u.task.shard, from: u.task.source, to: u.task.target }], why: 'takeover' },
      `stored move of shard ${u.task.shard} (node ${u.task.source} -> ${u.task.target}) rolled back at term ${next.term}: ${u.why}`);
  }
  return next;
}

/** Phase 2 for the members behind: `next` with the floors and scatter of `prep`. */
function commitStored(h: TakeoverHost, rec: TakeoverRecord, next: ClusterConfig, prep: Prepared, behind: number[], verdict: HandoverVerdict): void {
  const rolled = new Set(verdict.unsafe.map((u) => u.task.shard));
  const shards = [...new Set([...prep.versions.keys(), ...[...prep.reports.values()].flatMap((r) => r.entries.map((e) => e.s))])].filter((s) => !rolled.has(s)).sort((x, y) => x - y);
  rec.term = next.term;
  rec.moved = shards.map((s) => ({ shard: s, from: -1, to: next.shards[s]!.primary }));
  // Only a member behind promotes (one on the term did so already): wait for those reports.
  h.awaitPromoted(next.term, rec.moved.map((m) => m.to).filter((n) => behind.includes(n)), () => h.mark(rec, 'promoted'));
  const scatter = h.commitRound(next, rec.moved, prep, [], verdict.drained.filter((s) => !rolled.has(s)));
  rec.gathered = scatter.gathered;
  rec.scattered = scatter.scattered;
  h.mark(rec, 'committed');
  h.log.warn({ term: next.term, moved: rec.moved.length, gathered: scatter.gathered, scattered: scatter.scattered, drained: verdict.drained }, `completed term ${next.term} stored by the previous manager: ${rec.moved.length} shard(s) changing primary; ${scatter.gathered} entries gathered, ${scatter.scattered} scattered`);
}
