// The node's PM pool: `<dataDir>/pool.pm`, opened (or created) by the node's main thread at start,
// before any actor runs, and closed on shutdown. Each actor maps the same file itself (DESIGN §3).
// Opening it here first does the cold-start work that must happen before anyone allocates: segments
// left Claiming by an allocation that a crash interrupted are freed again.
import { join } from 'node:path';
import type { RowanConfig } from '../config/model.js';
import { Pool } from '../shm/pool.js';
import type { Logger } from '../config/base/log.js';

export { POOL_FILE as poolFileName } from '../config/base/files.js';
import { POOL_FILE } from '../config/base/files.js';

/** The node's own handle on its pool (actors map the file themselves). */
export type NodePool = Pool;

/** Open or create the node's pool and recover interrupted allocations. */
export async function openNodePool(cfg: RowanConfig, log: Logger): Promise<{ pool: NodePool; path: string }> {
  const path = join(cfg.dataDir, POOL_FILE);
  const pool = Pool.openOrCreate(path, {
    segmentCount: cfg.pool.segmentCount,
    segmentBytes: cfg.pool.segmentBytes,
    mode: cfg.persistence,
  });
  const freed = pool.recoverInterruptedAllocations();
  if (freed.length > 0) log.warn({ segments: freed }, 'freed segments left Claiming by an interrupted allocation');
  return { pool, path };
}
