// CommitVer on the primary (§4.4): for each shard, a version such that every PUT/DEL with a version at
// or below it is persistent on all replicas (or has failed and will never be acknowledged). Primaries
// write <shard, CommitVer> into their backups' b-logs every CommitVer period; digest actors there use
// it to tell committed b-log segments from used ones.
//
// A shard's versions are claimed by all workers of the primary (Atomics.add on the shared counter) and
// finish out of order. Each worker publishes, per shard, the lowest version it has claimed and not yet
// finished (0 = none) in the shared inflight table. Before claiming with nothing in flight for the
// shard it first publishes a lower bound (the counter + 1), so the claim is covered from the moment it
// exists. commitVer() reads the counter V first and the table after: a claim included in V was preceded
// by its worker's bound (seq-cst), so the table shows it or a later value published once it finished.
// CommitVer = min(V, every published bound - 1).
// Every claimed version and every CommitVer sent is covered by the shard's persisted version mark
// first (./version-marks.ts): a cold start resumes above both.
import { encodeBlocks, EntryType } from '../../shm/log.js';
import type { Limits } from '../../config/limits.js';
import { INFLIGHT_WORKERS_MAX, type GcSharedBuffers } from './gc-state.js';
import { nextVersion, nextVersions, type ReplicaChannel } from './node-shared.js';
import type { VersionMarks } from './version-marks.js';

export class CommitTracker {
  private readonly inflight: BigInt64Array;
  private readonly sent: BigInt64Array;
  /** This worker's unfinished versions per shard, ascending (claims are monotonic per worker). */
  private readonly mine: number[][] = [];
  sentCount = 0;

  constructor(
    g: GcSharedBuffers,
    private readonly versions: BigInt64Array,
    private readonly shardCount: number,
    private readonly workerId: number,
    /** Workers of this node (the inflight rows to read). */
    private readonly workers: number,
    /** The node's persisted version marks (null: nothing persists, e.g. unit tests without a store). */
    private readonly marks: VersionMarks | null = null,
  ) {
    if (workerId >= INFLIGHT_WORKERS_MAX || workers > INFLIGHT_WORKERS_MAX) throw new RangeError(`at most ${INFLIGHT_WORKERS_MAX} workers per node`);
    this.inflight = new BigInt64Array(g.inflight);
    this.sent = new BigInt64Array(g.sent);
  }

  private slot(worker: number, shard: number): number {
    return worker * this.shardCount + shard;
  }

  /** Claim the shard's next version for a PUT/DEL of this worker; finish() it when the request ends. */
  claim(shard: number): number {
    return this.claimRun(shard, 1);
  }

  /** Claim n consecutive versions (a transaction's writes, actors/worker/txn-write.ts); returns the
   *  first. finish() each of them when the request ends. */
  claimRun(shard: number, n: number): number {
    const mine = (this.mine[shard] ??= []);
    if (mine.length === 0) {
      // Publishes a lower bound of the version we are about to claim, before the claim exists.
      Atomics.store(this.inflight, this.slot(this.workerId, shard), Atomics.load(this.versions, shard) + 1n);
    }
    const v = n === 1 ? nextVersion(this.versions, shard) : nextVersions(this.versions, shard, n);
    for (let i = 0; i < n; i++) mine.push(v + i);
    try {
      this.marks?.cover(shard, v + n - 1); // before the version can leave the node (a t-log entry, a replica)
    } catch (err) {
      for (let i = 0; i < n; i++) this.finish(shard, v + i); // consumed, never used: CommitVer may pass them
      throw err;
    }
    return v;
  }

  /** The request holding version v ended (replicated everywhere, or failed). */
  finish(shard: number, v: number): void {
    const mine = this.mine[shard]!;
    const i = mine.indexOf(v);
    if (i < 0) return;
    mine.splice(i, 1);
    // Publishes the new lowest unfinished version (raising it: everything below is finished).
    if (i === 0) Atomics.store(this.inflight, this.slot(this.workerId, shard), mine.length > 0 ? BigInt(mine[0]!) : 0n);
  }

  /** The shard's CommitVer as of now (see the header). */
  commitVer(shard: number): number {
    return commitVerOf(this.versions, this.inflight, this.shardCount, this.workers, shard);
  }

  /**
   * Write <shard, CommitVer> to every backup of each shard in `shards` whose CommitVer moved past the
   * last one written (by any worker of this node: the shared `sent` word is claimed with a CAS).
   * A failed write gives the claim back, so the next period tries again.
   */
  async disseminate(shards: Iterable<{ shard: number; backups: number[] }>, channel: (node: number, shard: number) => Promise<ReplicaChannel>, limits: Limits): Promise<number> {
    const sends: Promise<void>[] = [];
    for (const { shard, backups } of shards) {
      if (backups.length === 0) continue;
      const c = BigInt(this.commitVer(shard));
      const prev = Atomics.load(this.sent, shard); // the last CommitVer written for this shard
      if (c <= prev || Atomics.compareExchange(this.sent, shard, prev, c) !== prev) continue; // claims this advance
      try {
        this.marks?.cover(shard, Number(c)); // a promoted counter is covered already; this is one load
      } catch {
        Atomics.compareExchange(this.sent, shard, c, prev); // gives the advance back: next period
        continue;
      }
      const [block] = encodeBlocks({ type: EntryType.CommitVer, shard, version: Number(c) }, limits);
      sends.push(
        Promise.all(backups.map(async (b) => (await channel(b, shard)).write(block!))).then(
          () => {
            this.sentCount++;
          },
          () => {
            // Gives the advance back unless a later one was claimed meanwhile.
            Atomics.compareExchange(this.sent, shard, c, prev);
          },
        ),
      );
    }
    await Promise.all(sends);
    return sends.length;
  }
}

/**
 * Whether no worker of this node has a claimed, unfinished version of `shard` (a planned move drains
 * the shards it hands over, §4.6). Reads the same inflight table as CommitTracker.commitVer: a claim
 * is published there before the version exists, and cleared once its request ended.
 */
export function shardDrained(g: GcSharedBuffers, shardCount: number, shard: number): boolean {
  const inflight = new BigInt64Array(g.inflight);
  for (let w = 0; w < INFLIGHT_WORKERS_MAX; w++) {
    if (Atomics.load(inflight, w * shardCount + shard) !== 0n) return false; // that worker has one in flight
  }
  return true;
}

/**
 * The CommitVer of `shard` on its primary as of now, read from the node's shared state alone (the
 * clean actors' tombstone sweep needs it without being a worker): min(the shard version, every worker's
 * lowest unfinished claim - 1) over the first `workers` rows of the inflight table (rows of workers
 * that do not exist stay 0). Every PUT/DEL of the shard with a version at or below it has finished:
 * its entry is persistent in the t-log and its index update is done, or it failed.
 */
export function commitVerOf(versions: BigInt64Array, inflight: BigInt64Array, shardCount: number, workers: number, shard: number): number {
  let c = Atomics.load(versions, shard); // read before the table (see the header)
  for (let w = 0; w < workers; w++) {
    const m = Atomics.load(inflight, w * shardCount + shard); // that worker's lowest unfinished claim
    if (m !== 0n && m - 1n < c) c = m - 1n;
  }
  return Number(c);
}
