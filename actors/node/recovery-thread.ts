// One cold-start helper thread (./recovery.ts rebuildIndexesParallel, through runtime/pool-threads.ts):
// attach the node's shared indexes with this thread's pool mapping and index its share of the
// contiguous log segments, reporting after each segment.
import type { Pool } from '../../shm/pool.js';
import { scanLogSegments, type LogScanCounts, type RecoveryThreadPayload } from './recovery.js';
import { attachKvShared } from '../shared/node-shared.js';
import { setChecksumSeed } from '../../shm/log-checksum.js';

export function onPoolThread(pool: Pool, p: RecoveryThreadPayload, report: (c: LogScanCounts) => void): LogScanCounts {
  setChecksumSeed(p.checksumSeed); // the node's cluster's key, before the first block is verified
  const shared = attachKvShared(p.buffers, pool.region);
  let n = 0;
  return scanLogSegments(pool, shared, p.segs, p.limits, (c) => {
    if (++n % 4 === 0) report({ ...c });
  }, new Map(p.failed));
}
