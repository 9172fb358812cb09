// A manager that was elected (./election.ts) -- or is acting again after a validity lapse -- taking
// over from whoever acted before it, on the configuration manager's behalf (./manager.ts).
//
// With a standby a manager acts only while `activation.valid()`: no grant, no store, no push otherwise.
// Elected, it starts with no lease knowledge: a member it has not heard from is suspected only after
// leaseMs + driftMs + takeoverGraceMs (LeaseTable.startedAt = activation), so it never cuts a lease
// the previous manager granted short. Its first step (completeStoredTerm) completes a failover -- or a
// move (./moves.ts) -- the previous manager stored but may not have pushed: once the members reconnected
// (bounded), every member still below the stored term is prepared and committed for it, with
// gather/scatter and version floors like any failover. A failed node's lease had certainly expired
// before its term was stored (failover() stores only then), so nothing more needs to wait; a move's
// live source drains at the prepare like in any move. Moves left in the stored migration list are then
// resumed by the manager's reconfigure() (./moves.ts resume).
import { defaultTimings } from '../../config/timings.js';
import { notActive } from './election.js';
import type { LeaseTiming } from './leases.js';
import type { ShardMove } from './plan.js';
import type { RoundsHost } from './rounds.js';

/** Whether this manager may act (./election.ts); a manager without an election always may. */
export interface Activation {
  valid(): boolean;
  /** Elected through ZooKeeper: begin with completeStoredTerm and resume after a validity lapse. */
  elected: boolean;
  /** Elected while another manager was seen active: members get takeoverGraceMs, not joinGraceMs (config/timings.ts). */
  takeover: boolean;
  /** Test hook: pause this long after storing a failover's configuration, before pushing it. */
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
 * the term ignore the prepare and the commit; only the ones behind are waited for. Returns whether a
 * term was completed (then the manager looks at re-replication again).
 */
export async function completeStoredTerm(h: TakeoverHost): Promise<boolean> {
  const until = h.activatedAt() + h.timing.leaseMs + h.timing.driftMs + defaultTimings.takeoverGraceMs;
  while (!h.closed() && h.clock.now() < until && h.members().some((n) => !h.connected(n) && !h.suspected(n))) await h.sleep(20);
  if (h.closed()) return false;
  const next = h.config();
  if (!h.activation.valid()) throw notActive(`completing term ${next.term}`);
  const behind = h.members().filter((n) => h.connected(n) && (h.reportedTerm(n) ?? next.term) < next.term);
  const missing = h.members().filter((n) => !h.connected(n));
  h.log.info({ event: 'takeover', term: next.term, behind, missing }, `taking over at term ${next.term}: ${behind.length ? `member(s) ${behind.join(',')} not yet on it; completing it` : 'every connected member is on it'}${missing.length ? `; not connected: ${missing.join(',')}` : ''}`);
  if (behind.length === 0) return false;
  const dead = next.dead ?? [];
  const rec: TakeoverRecord = { node: dead[dead.length - 1] ?? -1, term: next.term, moved: [], detectedAt: h.clock.now() };
  h.begin(rec);
  const prep = await h.prepareRound(next, [], false, new Set(behind));
  if (prep.missing.length > 0) h.log.warn({ term: next.term, missing: prep.missing }, 'prepare not acknowledged by every member in time; committing without them');
  h.mark(rec, 'prepared');
  if (h.closed()) return false;
  const shards = [...new Set([...prep.versions.keys(), ...[...prep.reports.values()].flatMap((r) => r.entries.map((e) => e.s))])].sort((x, y) => x - y);
  rec.moved = shards.map((s) => ({ shard: s, from: -1, to: next.shards[s]!.primary }));
  // Only a member behind promotes (one on the term did so already): wait for those reports.
  h.awaitPromoted(next.term, rec.moved.map((m) => m.to).filter((n) => behind.includes(n)), () => h.mark(rec, 'promoted'));
  const scatter = h.commitRound(next, rec.moved, prep, [], []);
  rec.gathered = scatter.gathered;
  rec.scattered = scatter.scattered;
  h.mark(rec, 'committed');
  h.log.warn({ term: next.term, moved: rec.moved.length, gathered: scatter.gathered, scattered: scatter.scattered }, `completed term ${next.term} stored by the previous manager: ${rec.moved.length} shard(s) changing primary; ${scatter.gathered} entries gathered, ${scatter.scattered} scattered`);
  return true;
}
