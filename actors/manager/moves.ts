// Running resharding moves (§4.6) on the configuration manager, one batch at a time, between failovers
// (the manager's drain loop, ./manager.ts). The plans are in ./reshard.ts; a move is the failover's two
// phases with a live old primary:
//   stored      term t+1: the new distribution and the migration list (compare-and-set on the term)
//   prepared    every member blocks; the source first drains the shard's writes in flight, so the
//               floors cover every version it claimed (actors/kv/lease.ts) -- if the source or the
//               target does not acknowledge in time, the move is rolled back: term t+2 restores the
//               old distribution (nobody served term t+1)
//   committed   the target promotes the shard (catches its index up from its b-log, continues after
//               the floor) and serves it; the source is its backup from here
//   done        the target reported; term t+2 clears the migration list
// Each step is a log line with `event` (move-*) and `at` (monotonic ms), for `rowan cluster` and the
// resharding benchmark. A manager that restarts with tasks in the stored list, or a standby that takes
// over, resumes them (resume): their new distribution is in force, so the targets promote again with
// the floors of a fresh prepare; a task whose source or target fails is finished by that failover
// (./plan.ts).
import type { ClusterConfig } from '../../config/cluster.js';
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import { defaultTimings } from '../../config/timings.js';
import type { Prepared, RoundsHost } from './rounds.js';
import { clearTasks, moveRefusal, planMoves, rollBack, type Move } from './reshard.js';

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
  storeConfig(next: ClusterConfig): Promise<void>;
  push(next: ClusterConfig): Promise<void>;
  /** Tests only: hold a move after this step (ReshardingOptions.pauseAfter). */
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
    const shards = moves.map((m) => m.shard);
    const prep = await this.h.prepareRound(next, shards, false);
    this.mark(rec, 'prepared');
    // The sources may have crashed mid-move: their late blocks are covered by the promotion gap.
    await this.promote(rec, next, moves, prep, shards, []);
    return rec;
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
      this.h.log.warn({ step, ms: p.ms }, `test hook: holding the move ${p.ms} ms after ${step}`);
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
