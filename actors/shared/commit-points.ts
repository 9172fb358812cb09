// Commit points: per shard, the highest CommitVer this node has computed as the shard's primary, saved
// now and then to a data-dir file (issue 24). A restarted primary sets aside, as its restart tail, the
// writes of its t-log above it (../node/restart-hold.ts). Any CommitVer ever computed is below every
// write unfinished at that moment or claimed later (./commit.ts: CommitVer = min(counter, every lowest
// unfinished claim - 1)), so whatever was unfinished at a crash lies above every saved point; a point
// saved late only makes the tail longer. The workers publish the points in the shared `sent` words
// (./gc-state.ts: the highest CommitVer claimed for writing to the backups; one that failed to land was
// computed all the same); the node's main thread saves them when they moved, never on the write path,
// and publishes what it saved in the shared `points` words. Two readers rely on them being durable:
//   - a primary's tombstone sweep drops a tombstone only at or below its shard's saved point
//     (../../actors/clean/tombstones.ts, rule 2P), so every tombstone a primary ever dropped is at or
//     below the point its next cold start reads;
//   - so that restarted primary, confirmed by the manager (../node/restart-hold.ts), refuses scattered
//     entries of its shards at or below that point (../node/promote.ts): every write it finished there
//     is in its own t-log, and an older entry a backup still lists may be one a dropped tombstone
//     outranked.
import { FileShardVersionStore, type ShardVersionStore } from './shard-versions-file.js';

export class CommitPoints {
  private readonly sent: BigInt64Array;
  private readonly published: BigInt64Array;
  private readonly saved: Map<number, number>;

  constructor(
    sent: SharedArrayBuffer,
    points: SharedArrayBuffer,
    private readonly store: ShardVersionStore,
  ) {
    this.sent = new BigInt64Array(sent);
    this.published = new BigInt64Array(points);
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
    for (let s = 0; s < this.sent.length; s++) {
      const v = Number(Atomics.load(this.sent, s));
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
