// ROWAN-KV's families for GET /metrics (runtime/metrics.ts): request rates, errors and latency
// histograms per op (the workers record them in shared histograms, shm/histogram.ts), Rowan writes and
// b-log progress, digest lag, pool segments by state, GC throughput and the configuration term.
import type { ActorStatus } from '../../runtime/status.js';
import type { Exposition } from '../../runtime/metrics.js';
import { LATENCY_BUCKETS_S, RequestHistograms } from '../../shm/histogram.js';
import type { Pool } from '../../shm/pool.js';
import type { GcStatus } from './gc-status.js';

/** The request kinds recorded, in histogram op order. */
export const REQUEST_OPS = ['put', 'get', 'del'] as const;
export const OP_PUT = 0;
export const OP_GET = 1;
export const OP_DEL = 2;

/** Histograms for every worker a node may run (one slot each). */
export function createRequestHistograms(workers: number): RequestHistograms {
  return RequestHistograms.create(workers, REQUEST_OPS.length);
}

function sum(actors: ActorStatus[], role: string, field: string): number {
  return actors.filter((a) => a.role === role).reduce((acc, a) => acc + Number(a.counters[field as keyof typeof a.counters] ?? 0), 0);
}

export function kvMetrics(e: Exposition, o: { term: number; histograms: RequestHistograms | null; pool: Pool; actors: ActorStatus[]; storage: GcStatus | null }): void {
  e.family('rowan_config_term', 'gauge', 'Term of the cluster configuration this node serves.').sample('rowan_config_term', {}, o.term);

  if (o.histograms) {
    e.family('rowan_requests_total', 'counter', 'Client requests by op and result (error: answered with an error code).');
    const snaps = REQUEST_OPS.map((_, i) => o.histograms!.snapshot(i));
    REQUEST_OPS.forEach((op, i) => {
      e.sample('rowan_requests_total', { op, result: 'ok' }, snaps[i]!.count - snaps[i]!.errors);
      e.sample('rowan_requests_total', { op, result: 'error' }, snaps[i]!.errors);
    });
    e.family('rowan_request_duration_seconds', 'histogram', 'Client request latency at the worker, from decode to reply (PUT/DEL: persistent on every replica).');
    REQUEST_OPS.forEach((op, i) => {
      const s = snaps[i]!;
      LATENCY_BUCKETS_S.forEach((le, b) => e.sample('rowan_request_duration_seconds_bucket', { op, le }, s.cumulative[b]!));
      e.sample('rowan_request_duration_seconds_bucket', { op, le: '+Inf' }, s.count);
      e.sample('rowan_request_duration_seconds_sum', { op }, s.sumSeconds);
      e.sample('rowan_request_duration_seconds_count', { op }, s.count);
    });
  }

  e.family('rowan_blog_writes_total', 'counter', 'Rowan writes landed in this node\'s b-log (completions).').sample('rowan_blog_writes_total', {}, sum(o.actors, 'control', 'BLOG_WRITES'));
  e.family('rowan_verbs_senders', 'gauge', 'Remote senders\' RC QPs connected to this node\'s verbs receive queue (0 unless --fabric verbs).').sample('rowan_verbs_senders', {}, sum(o.actors, 'control', 'VERBS_SENDERS'));
  e.family('rowan_verbs_receives_total', 'counter', 'SENDs landed in this node\'s b-log by the RNIC, from the ring CQ (0 unless --fabric verbs).').sample('rowan_verbs_receives_total', {}, sum(o.actors, 'control', 'VERBS_RECEIVES'));
  e.family('rowan_blog_segments_used_total', 'counter', 'B-log segments the receiver declared Used and handed to digest.').sample('rowan_blog_segments_used_total', {}, sum(o.actors, 'control', 'BLOG_USED'));
  e.family('rowan_digested_segments_total', 'counter', 'B-log segments digest parsed into the backup indexes.').sample('rowan_digested_segments_total', {}, sum(o.actors, 'digest', 'DIGESTED_SEGMENTS'));
  e.family('rowan_digest_lag_segments', 'gauge', 'B-log segments handed to digest and not parsed yet (per digest actor, summed).')
    .sample('rowan_digest_lag_segments', {}, Math.max(0, sum(o.actors, 'control', 'BLOG_USED') * Math.max(1, o.actors.filter((a) => a.role === 'digest').length) - sum(o.actors, 'digest', 'DIGESTED_SEGMENTS')));

  const counts = o.pool.counts() as unknown as Record<string, number>;
  e.family('rowan_pool_segments', 'gauge', 'PM pool segments by state.');
  for (const [state, n] of Object.entries(counts)) e.sample('rowan_pool_segments', { state }, n);
  if (o.storage) {
    e.family('rowan_gc_reclaimed_bytes_total', 'counter', 'Bytes of segments the clean actors reclaimed.').sample('rowan_gc_reclaimed_bytes_total', {}, o.storage.gc.reclaimedBytes);
    e.family('rowan_gc_copied_bytes_total', 'counter', 'Bytes of live entries the clean actors relocated.').sample('rowan_gc_copied_bytes_total', {}, o.storage.gc.copiedBytes);
    e.family('rowan_gc_mb_per_second', 'gauge', 'GC throughput over the uptime, MB reclaimed per second.').sample('rowan_gc_mb_per_second', {}, o.storage.gc.mbPerSecond);
    e.family('rowan_pm_full_refusals_total', 'counter', 'PUT/DEL refused with ROWAN_ERR_PM_FULL.').sample('rowan_pm_full_refusals_total', {}, o.storage.commit.pmFullRefusals);
    e.family('rowan_tombstones_dropped_total', 'counter', 'DEL tombstones the sweep removed from the shard indexes.').sample('rowan_tombstones_dropped_total', {}, o.storage.index.tombstonesDropped);
    e.family('rowan_tombstones_dropped_backup_total', 'counter', 'Of those, tombstones of shards this node backs up (under a persisted floor).').sample('rowan_tombstones_dropped_backup_total', {}, o.storage.index.tombstonesDroppedOnBackup);
    e.family('rowan_blog_late_blocks_total', 'counter', 'b-log blocks digest refused as late: at or below their shard\'s tombstone floor.').sample('rowan_blog_late_blocks_total', {}, o.storage.index.lateBlocks);
    e.family('rowan_blog_late_del_blocks_total', 'counter', 'Of those, DEL blocks (the expiry sweep\'s DELs, which no client waits for, are DELs).').sample('rowan_blog_late_del_blocks_total', {}, o.storage.index.lateDelBlocks);
    if (o.storage.index.items !== null) e.family('rowan_index_items', 'gauge', 'Items in this node\'s shard indexes (keys and tombstones).').sample('rowan_index_items', {}, o.storage.index.items);
    if (o.storage.liveRatio !== null) e.family('rowan_live_ratio', 'gauge', 'Live bytes over the capacity of Used and Committed segments.').sample('rowan_live_ratio', {}, o.storage.liveRatio);
  }
}
