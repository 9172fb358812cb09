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
import { FileShardVersionStore, type ShardVersionStore } from './shard-versions-file.js';
import { commitVerOf } from './commit.js';
import { INFLIGHT_WORKERS_MAX, type GcSharedBuffers } from './gc-state.js';

export class CommitPoints {
  private readonly versions: BigInt64Array;
  private readonly inflight: BigInt64Array;
  private readonly published: BigInt64Array;
  private readonly saved: Map<number, number>;

  constructor(
    versions: SharedArrayBuffer,
    gc: GcSharedBuffers,
    private readonly store: ShardVersionStore,
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

  /** Save the points if any moved since the last save; true when it wrote. */
  flush(): boolean {
    let moved = false;
    for (let s = 0; s < this.versions.length; s++) {
      // A point is at most the counter: a shard whose counter did not pass its saved point costs one load
      // (an idle node reads its counters, not the inflight table).
      if (Number(Atomics.load(this.versions, s)) <= (this.saved.get(s) ?? 0)) continue;
      const v = commitVerOf(this.versions, this.inflight, this.versions.length, INFLIGHT_WORKERS_MAX, s);
      if (v > (this.saved.get(s) ?? 0)) {
        this.saved.set(s, v);
        moved = true;
      }
    }
    if (!moved) return false;
    this.store.save(this.saved);
    this.publish();
    return true;
  }

  /** The saved points into the shared words (only ever raised). */
  private publish(): void {
    for (const [s, v] of this.saved) if (s >= 0 && s < this.published.length && BigInt(v) > Atomics.load(this.published, s)) Atomics.store(this.published, s, BigInt(v));
  }
}

/** The commit points of one pool (`poolId`) in `path` (config/base/files.ts COMMIT_POINTS_FILE). */
export class FileCommitPointStore extends FileShardVersionStore {
  constructor(path: string, poolId: string) {
    super(path, poolId, 'commitPoints');
  }
}
