// What a digest actor does with a Used b-log segment today: parse it in order with the hole-skipping
// b-log scan (runtime/rowan/blog-scan.ts), verifying every block's checksum, and count what it found.
// Updating the backup indexes of the shards this actor owns, reassembling multi-block entries and the
// CommitVerArray/MaxVerArray bookkeeping come with the ROWAN-KV data path (§4.4).
import { defaultLimits } from '../../config/limits.js';
import { newBlogScanStats, scanBlogBlocks } from '../../runtime/rowan/blog-scan.js';
import { shmPaths } from '../../runtime/fabric/shm.js';
import type { PersistenceMode } from '../../config/model.js';
import { Pool } from '../../shm/pool.js';

export class DigestSegments {
  private readonly pool: Pool;
  readonly scan = newBlogScanStats();
  segments = 0;

  constructor(dataDir: string, mode: PersistenceMode) {
    this.pool = Pool.open(shmPaths(dataDir).pool, { mode });
  }

  digest(segment: number): void {
    const start = this.pool.segmentOffset(segment);
    for (const block of scanBlogBlocks(this.pool.region.bytes, start, start + this.pool.segmentBytes, defaultLimits, this.scan)) {
      void block; // index updates for owned shards: ROWAN-KV data path
    }
    this.segments++;
  }

  close(): void {
    this.pool.close();
  }
}
