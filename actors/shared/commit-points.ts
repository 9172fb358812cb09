// Commit points: per shard, a CommitVer of the shard as this node computes it (./commit.ts commitVerOf:
// min(counter, every worker's lowest unfinished claim - 1), from the shared counters and inflight
// table), saved now and then to a data-dir file (issue 24). A restarted primary sets aside, as its
// restart tail, the writes of its t-log above it (../node/restart-hold.ts). A CommitVer is below every
// write unfinished at that moment or claimed later, so whatever was unfinished at a crash lies above
// every saved point; a point saved late only makes the tail longer. (For a shard it only backs up the
// point is its counter -- the highest version it saw -- and nothing of its t-log is the shard's.) The
// node's main thread computes and saves them when they moved, never on the write path, shards with
// backups or without, and publishes what it saved in the shared `points` words. Two readers rely on
// them being durable:
//   - a primary's tombstone sweep drops a tombstone only at or below its shard's saved point
//     (../../actors/clean/tombstones.ts, rule 2P), so every tombstone a primary ever dropped is at or
//     below the point its next cold start reads;
//   - so that restarted primary, confirmed by the manager (../node/restart-hold.ts), refuses scattered
//     entries of its shards at or below that point (../node/promote.ts): every write it finished there
//     is in its own t-log, and an older entry a backup still lists may be one a dropped tombstone
//     outranked.
import { FileShardVersionStore } from './shard-versions-file.js';
import { commitVerOf } from './commit.js';
import { INFLIGHT_WORKERS_MAX, type GcSharedBuffers } from './gc-state.js';

/** Where the points are kept: a save may finish later (the file store's, off the event loop: the node's
 *  main thread holds the lease); the points count as saved, and are published, only once it has. */
export interface CommitPointStore {
  load(): Map<number, number>;
  save(points: ReadonlyMap<number, number>): void | Promise<void>;
}

export class CommitPoints {
  private readonly versions: BigInt64Array;
  private readonly inflight: BigInt64Array;
  private readonly published: BigInt64Array;
  private saved: Map<number, number>;
  /** A save is under way: the next flush waits for it (saves never overlap or reorder). */
  private saving = false;

  constructor(
    versions: SharedArrayBuffer,
    gc: GcSharedBuffers,
    private readonly store: CommitPointStore,
  ) {
    this.versions = new BigInt64Array(versions);
    this.inflight = new BigInt64Array(gc.inflight);
    this.published = new BigInt64Array(gc.points);
    this.saved = store.load();
    this.publish();
  }

  /** The points as last saved (what a cold start bounds the restart tail with). */
  points(): ReadonlyMap<number, number> {
    return this.saved;
  }

  /** Save the points if any moved since the last save: true (or a promise of true) when it wrote;
   *  false when nothing moved or a save is still under way. A failed save throws (rejects) and
   *  changes nothing: the next flush tries again. */
  flush(): boolean | Promise<boolean> {
    if (this.saving) return false;
    const next = new Map(this.saved);
    let moved = false;
    for (let s = 0; s < this.versions.length; s++) {
      // A point is at most the counter: a shard whose counter did not pass its saved point costs one load
      // (an idle node reads its counters, not the inflight table).
      if (Number(Atomics.load(this.versions, s)) <= (next.get(s) ?? 0)) continue;
      const v = commitVerOf(this.versions, this.inflight, this.versions.length, INFLIGHT_WORKERS_MAX, s);
      if (v > (next.get(s) ?? 0)) {
        next.set(s, v);
        moved = true;
      }
    }
    if (!moved) return false;
    const done = this.store.save(next);
    if (!(done instanceof Promise)) return this.becameDurable(next);
    this.saving = true;
    return done.then(() => this.becameDurable(next)).finally(() => (this.saving = false));
  }

  /** `next` is durable: it is what a cold start reads, so it may bound the tombstone sweep. */
  private becameDurable(next: Map<number, number>): true {
    this.saved = next;
    this.publish();
    return true;
  }

  /** The saved points into the shared words (only ever raised). */
  private publish(): void {
    for (const [s, v] of this.saved) if (s >= 0 && s < this.published.length && BigInt(v) > Atomics.load(this.published, s)) Atomics.store(this.published, s, BigInt(v));
  }
}

/** The commit points of one pool (`poolId`) in `path` (config/base/files.ts COMMIT_POINTS_FILE), saved
 *  off the event loop. */
export class FileCommitPointStore implements CommitPointStore {
  private readonly file: FileShardVersionStore;

  constructor(path: string, poolId: string) {
    this.file = new FileShardVersionStore(path, poolId, 'commitPoints');
  }

  load(): Map<number, number> {
    return this.file.load();
  }

  save(points: ReadonlyMap<number, number>): Promise<void> {
    return this.file.saveAsync(points);
  }
}
