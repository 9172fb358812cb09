// INFO's rowan section, as a worker actor sees its node: the pool's segments by state and by owner
// (Figure 6 life cycle), the live share GC works on, this worker's KV and Rowan counters. The clean and
// digest actors' own counters (bytes reclaimed, committed segments) live in their threads' counters,
// read by the node's main thread: `rowan status --data-dir` shows them.
import { collectGcStatus } from '../../shared/gc-status.js';
import type { GcSharedBuffers } from '../../shared/gc-state.js';
import { counterNames, I64 } from '../../../shm/counters.js';
import type { Pool } from '../../../shm/pool.js';
import type { KvWorker } from '../kv.js';

export function rowanInfo(pool: Pool, gc: GcSharedBuffers | undefined, worker: KvWorker, counters: number[]): Record<string, string | number> {
  const out: Record<string, string | number> = {};
  const counts = pool.counts();
  out.pool_segment_bytes = pool.segmentBytes;
  out.pool_segments = pool.segmentCount;
  for (const [state, n] of Object.entries(counts)) out[`pool_segments_${state}`] = n;
  const g = collectGcStatus(pool, gc, [], 0);
  for (const grp of g.groups) out[`segments_${grp.owner}_${grp.state}`] = grp.segments;
  out.gc_live_ratio = g.liveRatio === null ? 'n/a' : g.liveRatio.toFixed(4);
  const w = worker.stats;
  out.kv_puts = w.puts;
  out.kv_gets = w.gets;
  out.kv_dels = w.dels;
  out.kv_replication_writes = w.replicationWrites;
  out.kv_pm_full_refusals = w.pmFull;
  out.commitvers_sent = worker.commit?.sentCount ?? 0;
  for (const name of counterNames) {
    const v = counters[I64[name]];
    if (v) out[`counter_${name.toLowerCase()}`] = v;
  }
  return out;
}
