// Running copy moves (./copy-moves.ts) on the configuration manager, from its drain loop between
// failovers. A copy's state lives in the stored configuration (its task, the target's catching-up
// mark), so a manager that restarts or a standby that takes over goes on from there: the target
// reports caught up to whichever manager is active (it says so again until the mark goes), and
// advance() finds the tasks whose copy is done. Steps, each a log line with `event` (copy-*) and `at`:
//   copy-started / copy-stored   term t+1: the target a catching-up backup, the task listed
//   copy-copied                  the target reported its copy (entries, bytes, ms) and the mark went
//   (the move's events)          the source was primary: its role handed over by ./moves.ts
//   copy-done                    the source left the shard, the task is off the list
//   copy-rolled-back             a failover ended the task (a participant died) or it was undone
import type { Clock } from '../../config/base/clock.js';
import { holdsReplica, type ClusterConfig, type CopyTask } from '../../config/cluster.js';
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import type { Logger } from '../../config/base/log.js';
import { copyRefusal, copyStage, planCopies, planCopiesDone } from './copy-moves.js';
import type { MoveRunner } from './moves.js';
import type { Move } from './reshard.js';

export interface CopyRecord {
  moves: Move[];
  why: string;
  term: number;
  startedAt: number;
  storedAt?: number;
  copiedAt?: number;
  handedOverAt?: number;
  doneAt?: number;
  rolledBackAt?: number;
  /** What the target's copy reported: entries and bytes copied, its duration. */
  entries?: number;
  bytes?: number;
  copyMs?: number;
  error?: string;
}

export interface CopyHost {
  config(): ClusterConfig;
  reachable(): Set<number>;
  /** Store `next` (CAS on the term) and commit it to every member. */
  push(next: ClusterConfig): Promise<void>;
  readonly moves: MoveRunner;
  readonly clock: Clock;
  readonly log: Logger;
}

type Reply = (err: Error | null, rec?: CopyRecord) => void;

const sameTask = (a: CopyTask, b: Move) => a.shard === b.shard && a.source === b.from && a.target === b.to;

export class CopyRunner {
  readonly history: CopyRecord[] = [];
  private readonly waiting = new Map<CopyRecord, Reply>();
  /** A handover that failed is not tried again before this (ms, the host's clock). */
  private retryAt = 0;

  constructor(private readonly h: CopyHost) {}

  /** Whether `moves` are copies (every target holds no replica of its shard). */
  static isCopy(c: ClusterConfig, moves: readonly Move[]): boolean {
    return moves.length > 0 && moves.every((m) => c.shards[m.shard] !== undefined && !holdsReplica(c, m.shard, m.to));
  }

  /** Store the copies' term; `reply` comes once they are done or rolled back. */
  async start(moves: Move[], why: string, reply: Reply): Promise<void> {
    const c = this.h.config();
    const live = this.h.reachable();
    for (const m of moves) {
      const refusal = copyRefusal(c, m, live);
      if (refusal) return reply(new RowanError(ErrorCodes.MOVE_REFUSED, `cannot move shard ${m.shard}'s replica on node ${m.from} to node ${m.to}: ${refusal}`));
    }
    const rec: CopyRecord = { moves, why, term: c.term + 1, startedAt: this.h.clock.now() };
    this.history.push(rec);
    this.waiting.set(rec, reply);
    this.event(rec, 'copy-started', `${why}: copying ${describe(moves)}`);
    try {
      await this.h.push(planCopies(c, moves));
    } catch (err) {
      this.finish(rec, err as Error);
      throw err;
    }
    this.mark(rec, 'stored');
  }

  /** The target said it caught up: note what it copied. */
  noteCaughtUp(m: { shard: number; node: number; entries: number; bytes: number; ms: number }): void {
    const rec = this.open().find((r) => r.moves.some((x) => x.shard === m.shard && x.to === m.node));
    if (rec && rec.entries === undefined) Object.assign(rec, { entries: m.entries, bytes: m.bytes, copyMs: m.ms });
  }

  /** Copies a failover ended to report, or tasks past their copy to advance: advance() has work. */
  wanted(): boolean {
    return this.ended().length > 0 || this.handovers().length > 0 || this.drops().length > 0;
  }

  /** Copied tasks whose source is still the primary, both ends reachable, no move in progress (a
   *  handover that failed waits a second). */
  private handovers(): CopyTask[] {
    const c = this.h.config();
    if (c.migrations.length > 0 || this.h.clock.now() < this.retryAt) return [];
    const live = this.h.reachable();
    return (c.copies ?? []).filter((t) => copyStage(c, t) === 'handover' && live.has(t.source) && live.has(t.target));
  }

  /** Tasks whose source may leave the shard: not its primary, and no move of the shard listed (a
   *  stalled handover is finished by a failover first). */
  private drops(): CopyTask[] {
    const c = this.h.config();
    return (c.copies ?? []).filter((t) => copyStage(c, t) === 'drop' && !c.migrations.some((m) => m.shard === t.shard));
  }

  /** Hand over and drop the sources of finished copies; report the copies a failover ended. */
  async advance(): Promise<void> {
    for (const rec of this.ended()) {
      rec.rolledBackAt = this.h.clock.now();
      rec.error ??= 'a participant failed during the copy: the failover ended it (the source kept serving)';
      this.event(rec, 'copy-rolled-back', `copy rolled back: ${rec.error}`);
      this.finish(rec, new RowanError(ErrorCodes.MOVE_REFUSED, `the move was rolled back: ${rec.error}`));
    }
    for (const t of this.handovers()) await this.handOver(t);
    const drop = this.drops();
    if (drop.length === 0) return;
    await this.h.push(planCopiesDone(this.h.config(), drop));
    for (const t of drop) {
      const rec = this.recordOf(t);
      if (!rec) continue;
      rec.copiedAt ??= this.h.clock.now();
      if (rec.moves.every((m) => !(this.h.config().copies ?? []).some((x) => sameTask(x, m)))) {
        this.mark(rec, 'done');
        this.finish(rec, null);
      }
    }
  }

  /** The source is still the primary: hand its role over with a move (prepare, drain, promote). */
  private async handOver(t: CopyTask): Promise<void> {
    const rec = this.recordOf(t);
    if (rec) {
      rec.copiedAt ??= this.h.clock.now();
      this.event(rec, 'copy-copied', `shard ${t.shard} copied to node ${t.target}; handing node ${t.source}'s primary role over`);
    }
    try {
      await this.h.moves.run([{ shard: t.shard, from: t.source, to: t.target }], 'copy');
      if (rec) rec.handedOverAt = this.h.clock.now();
    } catch (err) {
      // Rolled back (a participant did not prepare): the source still serves; try again later.
      this.retryAt = this.h.clock.now() + 1000;
      this.h.log.warn({ shard: t.shard, err: (err as Error).message }, `copy of shard ${t.shard}: handover not made (${(err as Error).message}); trying again`);
    }
  }

  /** Records still waiting whose tasks are no longer listed with their copy unfinished. */
  private ended(): CopyRecord[] {
    const c = this.h.config();
    return this.open().filter((r) => r.storedAt !== undefined && !r.moves.some((m) => (c.copies ?? []).some((x) => sameTask(x, m))) && r.doneAt === undefined);
  }

  private open(): CopyRecord[] {
    return [...this.waiting.keys()];
  }

  private recordOf(t: CopyTask): CopyRecord | undefined {
    for (let i = this.history.length - 1; i >= 0; i--) if (this.history[i]!.moves.some((m) => sameTask(t, m))) return this.history[i];
    return undefined;
  }

  private finish(rec: CopyRecord, err: Error | null): void {
    const reply = this.waiting.get(rec);
    this.waiting.delete(rec);
    reply?.(err, err ? undefined : rec);
  }

  private mark(rec: CopyRecord, step: 'stored' | 'done'): void {
    rec[`${step}At`] = this.h.clock.now();
    this.event(rec, `copy-${step}`, `copy ${step}: ${describe(rec.moves)}`);
  }

  private event(rec: CopyRecord, event: string, msg: string): void {
    const at = this.h.clock.now();
    this.h.log.info({ event, at, term: rec.term, moves: rec.moves, why: rec.why, sinceStartMs: +(at - rec.startedAt).toFixed(2), ...(rec.entries !== undefined ? { entries: rec.entries, bytes: rec.bytes, copyMs: rec.copyMs } : {}) }, msg);
  }
}

function describe(moves: readonly Move[]): string {
  return moves.map((m) => `shard ${m.shard} ${m.from}->${m.to}`).join(', ');
}
