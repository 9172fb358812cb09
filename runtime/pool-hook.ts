// The node's PM pool: `<dataDir>/pool.pm`, opened (or created) by the node's main thread at start,
// before any actor runs, and closed on shutdown. Each actor maps the same file itself (DESIGN §3).
// Opening it here first does the cold-start work that must happen before anyone allocates: segments
// left Claiming by an allocation that a crash interrupted are freed again.
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { RowanConfig } from '../config/model.js';
import { Pool } from '../shm/pool.js';
import type { Logger } from '../config/base/log.js';
import { createPoolMedia, removePoolMedia, withPoolMedia } from './optane/media-file.js';

export { POOL_FILE as poolFileName } from '../config/base/files.js';
import { POOL_FILE } from '../config/base/files.js';

/** The node's own handle on its pool (actors map the file themselves). */
export type NodePool = Pool;

/**
 * Open or create the node's pool and recover interrupted allocations. With `pm.media: optane` the
 * pool's media model starts empty (runtime/optane/media-file.ts), before anyone maps the pool, so every
 * actor and same-host peer that opens it afterwards pays the model; with none, a model left by an
 * earlier start is removed.
 */
export async function openNodePool(cfg: RowanConfig, log: Logger): Promise<{ pool: NodePool; path: string }> {
  const path = join(cfg.dataDir, POOL_FILE);
  if (cfg.pm.media === 'optane') {
    createPoolMedia(path, cfg.pm).close();
    log.info({ dimms: cfg.pm.dimms, dimmWriteMBps: cfg.pm.dimmWriteMBps }, 'pm media: optane model (persists pay modelled media time)');
  } else removePoolMedia(path);
  const pool = Pool.openOrCreate(path, {
    segmentCount: cfg.pool.segmentCount,
    segmentBytes: cfg.pool.segmentBytes,
    mode: cfg.persistence,
    wrapRegion: withPoolMedia,
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
