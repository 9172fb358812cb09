// Running resharding moves (§4.6) on the configuration manager, one batch at a time, between failovers
// (the manager's drain loop, ./manager.ts). The plans are in ./reshard.ts; a move is the failover's two
// phases with a live old primary:
//   stored      term t+1: the new distribution and the migration list (compare-and-set on the term)
//   prepared    every member blocks; the source first drains the shard's writes in flight, so the
//               floors cover every version it claimed (actors/node/lease-client.ts) -- if the source or the
//               target does not acknowledge in time, the move is rolled back: term t+2 restores the
//               old distribution (nobody served term t+1)
//   committed   the target promotes the shard (catches its index up from its b-log, continues after
//               the floor) and serves it; the source is its backup from here
//   done        the target reported; term t+2 clears the migration list
// Each step is a log line with `event` (move-*) and `at` (monotonic ms), for `rowan cluster` and the
// resharding benchmark. A manager that restarts with tasks in the stored list, or a standby that takes
// over, resumes them (resume): their new distribution is in force, so the targets promote again with
// the floors of a fresh prepare -- only where the source drained in that prepare or certainly serves
// the shard no more (./handover.ts); a task for which that is not so is rolled back instead. A task
// whose source or target fails is finished by that failover (./plan.ts).
import type { ClusterConfig, MigrationTask } from '../../config/cluster.js';
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import { defaultTimings } from '../../config/timings.js';
import type { Prepared, RoundsHost } from './rounds.js';
import { clearTasks, moveRefusal, planMoves, rollBack, undoTasks, type Move } from './reshard.js';
import { judgeHandovers, type HandoverVerdict } from './handover.js';

export interface MoveRecord {
  moves: Move[];
  why: string;
  term: number;
  startedAt: number;
  storedAt?: number;
  preparedAt?: number;
  committedAt?: number;
  promotedAt?: number;
  doneAt?: number;
  rolledBackAt?: number;
  /** b-log entries the targets applied while promoting (what they lacked in their indexes). */
  entries?: number;
  error?: string;
}

/** What a move needs of the manager. */
export interface MoveHost extends RoundsHost {
  /** Live members holding a connection and not being failed over. */
  reachable(): Set<number>;
  /** Whether `node` is being (or queued to be) failed over. */
  suspected(node: number): boolean;
  /** The committed term `node` last reported (hello, renew); undefined when not connected. */
  reportedTerm(node: number): number | undefined;
  /** Whether `node`'s lease has certainly expired now. */
  leaseExpired(node: number): boolean;
  /** Grant `node` no lease until it reports `term` (a move's source handed over on its expired lease). */
  fence(node: number, term: number): void;
  storeConfig(next: ClusterConfig): Promise<void>;
  push(next: ClusterConfig): Promise<void>;
  /** Fault tests (--debug-pause): hold a move after this step (ReshardingOptions.pauseAfter). */
  pauseAfter?: { step: string; ms: number } | undefined;
}

export class MoveRunner {
  readonly history: MoveRecord[] = [];
  /** Entries applied by targets, per term, from their `promoted` reports. */
  readonly promotedEntries = new Map<number, number>();

  constructor(private readonly h: MoveHost) {}

  /** Move `moves` (each checked first: MOVE_REFUSED with the reason when one cannot be made now). */
  async run(moves: Move[], why: string): Promise<MoveRecord> {
    const before = this.h.config();
    const live = this.h.reachable();
    for (const m of moves) {
      const refusal = moveRefusal(before, m.shard, m.to, live) ?? (live.has(m.from) ? null : `its primary, node ${m.from}, is not reachable`);
      if (refusal) throw new RowanError(ErrorCodes.MOVE_REFUSED, `cannot move shard ${m.shard} to node ${m.to}: ${refusal}`);
    }
    const rec: MoveRecord = { moves, why, term: before.term + 1, startedAt: this.h.clock.now() };
    this.history.push(rec);
    this.event(rec, 'move-started', `${why}: moving ${moves.map((m) => `shard ${m.shard} ${m.from}->${m.to}`).join(', ')}`);
    const next = planMoves(before, moves);
    await this.h.storeConfig(next);
    this.mark(rec, 'stored');
    await this.pause('stored');
    const shards = moves.map((m) => m.shard);
    const prep = await this.h.prepareRound(next, shards, true);
    const participants = new Set(moves.flatMap((m) => [m.from, m.to]));
    const missing = prep.missing.filter((n) => participants.has(n));
    if (missing.length > 0) {
      // Nobody served term t+1: the sources stay primaries with every write they acknowledged.
      await this.h.push(rollBack(before, next));
      rec.rolledBackAt = this.h.clock.now();
      rec.error = `node ${missing.join(', node ')} did not prepare in time`;
      this.event(rec, 'move-rolled-back', `move rolled back (term ${next.term + 1}): ${rec.error}`);
      throw new RowanError(ErrorCodes.MOVE_REFUSED, `the move was rolled back: ${rec.error}`);
    }
    this.mark(rec, 'prepared');
    await this.pause('prepared'); // a slow participant: the members hold the prepare until the commit
    await this.promote(rec, next, moves, prep, [], shards);
    return rec;
  }

  /** Tasks in the stored list (a manager restarted mid-move): confirm them with a fresh prepare. */
  async resume(): Promise<MoveRecord | null> {
    const c = this.h.config();
    const live = this.h.reachable();
    const tasks = c.migrations.filter((t) => live.has(t.source) && live.has(t.target) && c.shards[t.shard]?.primary === t.target);
    if (tasks.length === 0) return null;
    const moves = tasks.map((t) => ({ shard: t.shard, from: t.source, to: t.target }));
    const rec: MoveRecord = { moves, why: 'resume', term: c.term + 1, startedAt: this.h.clock.now() };
    this.history.push(rec);
    this.event(rec, 'move-started', `resuming ${moves.map((m) => `shard ${m.shard} ${m.from}->${m.to}`).join(', ')} from the stored migration list`);
    const next = { ...structuredClone(c), term: c.term + 1 };
    await this.h.storeConfig(next);
    this.mark(rec, 'stored');
    const prep = await this.h.prepareRound(next, moves.map((m) => m.shard), false);
    this.mark(rec, 'prepared');
    const verdict = this.judge(tasks, c.term, prep);
    // A source that acknowledged drained first (planned: no gap, no peer-lease wait on the target);
    // one that did not may have crashed mid-move: its late blocks are covered by the promotion gap.
    // Fenced before anything is awaited: a renew granted after the judgement would renew the lease
    // it counted as expired.
    for (const t of verdict.expired) this.h.fence(t.source, next.term + (verdict.unsafe.length > 0 ? 1 : 0));
    if (verdict.unsafe.length === 0) {
      await this.promote(rec, next, moves, prep, moves.map((m) => m.shard), verdict.drained);
      return rec;
    }
    const back = undoTasks(next, verdict.unsafe.map((u) => u.task));
    const kept = moves.filter((m) => !verdict.unsafe.some((u) => u.task.shard === m.shard));
    rec.error = verdict.unsafe.map((u) => `shard ${u.task.shard}: ${u.why}`).join('; ');
    if (kept.length === 0) await this.h.push(back);
    else await this.h.storeConfig(back);
    rec.rolledBackAt = this.h.clock.now();
    this.event(rec, 'move-rolled-back', `resumed move rolled back (term ${back.term}): ${rec.error}`);
    if (kept.length > 0) {
      rec.term = back.term;
      await this.promote(rec, back, kept, prep, kept.map((m) => m.shard), verdict.drained);
    }
    return rec;
  }

  /** Which resumed tasks may hand their shard over (./handover.ts); throws while one is undecided. */
  private judge(tasks: readonly MigrationTask[], term: number, prep: Prepared): HandoverVerdict {
    const h = this.h;
    const verdict = judgeHandovers(tasks, { term, answered: new Set(prep.reports.keys()), connected: (n) => h.reachable().has(n), reportedTerm: (n) => h.reportedTerm(n), leaseExpired: (n) => h.leaseExpired(n) });
    if (verdict.undecided.length > 0) {
      throw new RowanError(ErrorCodes.TIMEOUT, `the resumed move cannot go on nor be rolled back yet: ${verdict.undecided.map((u) => `shard ${u.task.shard}: ${u.why}`).join('; ')}`);
    }
    return verdict;
  }

  private async promote(rec: MoveRecord, next: ClusterConfig, moves: Move[], prep: Omit<Prepared, 'missing'>, again: number[], planned: number[]): Promise<void> {
    let reported = false;
    this.h.awaitPromoted(next.term, moves.map((m) => m.to), () => (reported = true));
    this.h.commitRound(next, moves, prep, again, planned);
    this.mark(rec, 'committed');
    await this.pause('committed');
    // Until the targets report -- or one of them is suspected failed: its failover (next in the
    // manager's queue, not behind this wait) finishes the task.
    const t0 = this.h.clock.now();
    while (!reported && this.h.clock.now() - t0 < defaultTimings.movePromoteTimeoutMs && !moves.some((m) => this.h.suspected(m.to))) await this.h.sleep(2);
    if (!reported) {
      rec.error = moves.some((m) => this.h.suspected(m.to)) ? 'a target failed before it reported its promotion' : `a target did not report its promotion within ${defaultTimings.movePromoteTimeoutMs} ms`;
      this.event(rec, 'move-stalled', `${rec.error}; the task stays listed (a failover of the target finishes it)`);
      return;
    }
    this.mark(rec, 'promoted');
    rec.entries = this.promotedEntries.get(next.term) ?? 0;
    await this.h.push(clearTasks(this.h.config(), moves.map((m) => m.shard)));
    this.mark(rec, 'done');
  }

  private async pause(step: string): Promise<void> {
    const p = this.h.pauseAfter;
    if (p && p.step === step) {
      this.h.log.warn({ event: 'debug-pause', step, ms: p.ms }, `--debug-pause: holding the move ${p.ms} ms after ${step}`);
      await this.h.sleep(p.ms);
    }
  }

  private mark(rec: MoveRecord, step: 'stored' | 'prepared' | 'committed' | 'promoted' | 'done'): void {
    rec[`${step}At`] = this.h.clock.now();
    this.event(rec, `move-${step}`, `move ${step}: term ${rec.term}, ${rec.moves.map((m) => `shard ${m.shard} ${m.from}->${m.to}`).join(', ')}`);
  }

  private event(rec: MoveRecord, event: string, msg: string): void {
    const at = this.h.clock.now();
    this.h.log.info({ event, at, term: rec.term, moves: rec.moves, why: rec.why, sinceStartMs: +(at - rec.startedAt).toFixed(2), ...(rec.entries !== undefined ? { entries: rec.entries } : {}) }, msg);
  }
}
