// The node's PM pool: `<dataDir>/pool.pm`, opened (or created) by the node's main thread at start,
// before any actor runs, and closed on shutdown. Each actor maps the same file itself (DESIGN §3).
// Opening it here first does the cold-start work that must happen before anyone allocates: segments
// left Claiming by an allocation that a crash interrupted are freed again.
import { existsSync, rmSync } from 'node:fs';
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

/**
 * A failed-over node rejoining (`rowan start --rejoin`) keeps its pool when it is intact: the manager
 * takes it back holding no shard, and each shard re-replication gives it is reconciled with its
 * primary before it counts (actors/migration/reconcile.ts). A pool that does not open -- torn or
 * corrupt superblock or meta table, another geometry than the configuration's -- is removed here, so
 * the node starts empty and gets full copies. Returns why it was removed, or null when kept (or absent).
 */
export function discardUnusablePool(cfg: RowanConfig): string | null {
  const path = join(cfg.dataDir, POOL_FILE);
  if (!existsSync(path)) return null;
  try {
    const pool = Pool.open(path, { mode: cfg.persistence });
    const shaped = pool.segmentCount === cfg.pool.segmentCount && pool.segmentBytes === cfg.pool.segmentBytes;
    pool.close();
    if (shaped) return null;
    rmSync(path, { force: true });
    return `its geometry differs from the configuration's`;
  } catch (err) {
    rmSync(path, { force: true });
    return (err as Error).message;
  }
}
