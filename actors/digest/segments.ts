// What a digest actor does with a Used b-log segment (§4.4): parse it in order with the hole-skipping
// b-log scan (runtime/rowan/blog-scan.ts), verifying every block, and, in a node that serves a cluster,
// apply the blocks of the shards this actor owns to their backup indexes (runtime/kv/apply.ts). Each
// digest actor owns the backup shards s with s % digestCount === its id. Commit tracking (CommitVer
// dissemination, MaxVerArray, handing committed segments to clean) comes with garbage collection.
import { defaultLimits } from '../../config/limits.js';
import type { PersistenceMode } from '../../config/model.js';
import { BlockApplier } from '../../runtime/kv/apply.js';
import { attachKvShared, type KvStart } from '../../runtime/kv/shared.js';
import { newBlogScanStats, scanBlogBlocks } from '../../runtime/rowan/blog-scan.js';
import { shmPaths } from '../../runtime/fabric/shm.js';
import { OwnerRole, Pool } from '../../shm/pool.js';
import { TLog } from '../../shm/tlog.js';

export class DigestSegments {
  private readonly pool: Pool;
  private readonly applier: BlockApplier | null;
  readonly scan = newBlogScanStats();
  segments = 0;

  constructor(dataDir: string, mode: PersistenceMode, digest: { id: number; count: number }, kv: KvStart | undefined) {
    this.pool = Pool.open(shmPaths(dataDir).pool, { mode });
    this.applier = null;
    if (kv) {
      const backupOf = new Set(kv.cluster.shards.filter((s) => s.backups.includes(kv.nodeId)).map((s) => s.id));
      this.applier = new BlockApplier(
        this.pool.region,
        attachKvShared(kv.shared),
        (shard) => backupOf.has(shard) && shard % digest.count === digest.id,
        TLog.recover(this.pool, digest.id, defaultLimits, OwnerRole.Digest),
        defaultLimits,
      );
    }
  }

  digest(segment: number): void {
    const start = this.pool.segmentOffset(segment);
    for (const block of scanBlogBlocks(this.pool.region.bytes, start, start + this.pool.segmentBytes, defaultLimits, this.scan)) {
      this.applier?.apply(block);
    }
    this.segments++;
  }

  get indexed(): number {
    return this.applier?.stats.indexed ?? 0;
  }

  close(): void {
    this.pool.close();
  }
}
