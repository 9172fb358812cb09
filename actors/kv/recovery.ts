// Cold start (§4.7, basic form): rebuild the indexes of every shard this node holds from its logs,
// before any actor runs. t-logs (role Worker) and digest logs (role Digest) are contiguous logs whose
// end is the first entry that does not verify; b-log segments (role Control) are scanned with the
// hole-skipping b-log scan. The highest version of a key wins (version-conditional index updates), and
// every shard version is raised above the versions found, so new writes continue after them.
// b-log segments the previous incarnation left Using are retired to Used (or freed if nothing was written
// to them; the caller closed the old receive queue first): the receiver posts fresh ones. The remote-log
// regions of the one-sided baselines (also role Control) are indexed but keep their state.
// Used b-log segments become Committed: this incarnation's digest actors never see them (the control
// actor hands over only segments it retires itself), and with every entry now indexed from the pool
// they are ordinary candidates for garbage collection. (Gather/scatter, ./gather.ts, runs at a live
// failover only: entries of these segments are not gathered by a later one.) Clean logs (role Clean)
// are contiguous logs like t-logs.
// Finally the live-byte accounting is recounted from the rebuilt indexes.
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import type { Clock } from '../../config/base/clock.js';
import type { Limits } from '../../config/limits.js';
import { PoolEntryReader } from '../../shm/entry-reader.js';
import { hash64Into } from '../../shm/hash.js';
import { EntryType, scanEntries } from '../../shm/log.js';
import { OwnerRole, SegmentState, type Pool } from '../../shm/pool.js';
import { TLog } from '../../shm/tlog.js';
import { scanBlogBlocks } from '../../runtime/rowan/blog-scan.js';
import { BlockApplier } from './apply.js';
import { raiseVersion, type KvShared } from './shared.js';

/** Owner id of the digest log that cold start writes reassembled b-log entries to. */
export { RECOVERY_LOG_OWNER } from '../../config/base/ids.js';
import { RECOVERY_LOG_OWNER } from '../../config/base/ids.js';

export interface RecoveryReport {
  logSegments: number;
  blogSegments: number;
  entries: number;
  indexed: number;
  stale: number;
  retiredUsing: number;
  committedUsed: number;
  /** Posted b-log segments nothing was written to, freed. */
  freedEmpty: number;
  /** Entries whose shard index was at its maximum (counted; cold start goes on). */
  indexFull: number;
  ms: number;
}

/** A b-log segment of the previous incarnation: never written -> Free (its queue is closed); Using or
 *  Used -> Committed (see the header). */
function recycleBlogSegment(pool: Pool, seg: number, state: number, blocks: number, r: RecoveryReport): void {
  if (state === SegmentState.Using && blocks === 0) {
    pool.transition(seg, SegmentState.Using, SegmentState.Free);
    r.freedEmpty++;
    return;
  }
  if (state === SegmentState.Using) {
    pool.transition(seg, SegmentState.Using, SegmentState.Used);
    r.retiredUsing++;
    state = SegmentState.Used;
  }
  if (state === SegmentState.Used) {
    pool.transition(seg, SegmentState.Used, SegmentState.Committed);
    r.committedUsed++;
  }
}

export function rebuildIndexes(pool: Pool, shared: KvShared, limits: Limits, clock: Clock, progress?: (done: number, total: number) => void): RecoveryReport {
  const t0 = clock.now();
  const bytes = pool.region.bytes;
  const reader = new PoolEntryReader(pool.region, limits);
  const hash = { hi: 0, lo: 0 };
  const r: RecoveryReport = { logSegments: 0, blogSegments: 0, entries: 0, indexed: 0, stale: 0, retiredUsing: 0, committedUsed: 0, freedEmpty: 0, indexFull: 0, ms: 0 };
  const live = (s: number) => pool.meta(s).state !== SegmentState.Free;
  const logs = [
    ...pool.segments({ role: OwnerRole.Worker }),
    ...pool.segments({ role: OwnerRole.Digest }),
    ...pool.segments({ role: OwnerRole.Clean }),
  ].filter(live);
  const blog = [...pool.segments({ role: OwnerRole.Control }), ...pool.segments({ role: OwnerRole.Remote })].filter(live);
  const total = logs.length + blog.length;

  for (const seg of logs) {
    const start = pool.segmentOffset(seg);
    for (const e of scanEntries(bytes, start, start + pool.segmentBytes, limits)) {
      r.entries++;
      const index = shared.indexes[e.shard];
      if (!index) continue;
      raiseVersion(shared.versions, e.shard, e.version);
      if (e.type === EntryType.CommitVer) continue;
      let res;
      try {
        res = index.upsert(e.key, hash64Into(e.key, hash), e.offset, e.version, reader);
      } catch (err) {
        // A full index never stops a cold start (the node must come up and serve what it has).
        if (!(err instanceof RowanError && err.code === ErrorCodes.INDEX_FULL)) throw err;
        r.indexFull++;
        continue;
      }
      if (res === 'stale') r.stale++;
      else r.indexed++;
    }
    r.logSegments++;
    progress?.(r.logSegments, total);
  }

  const applier = new BlockApplier(
    pool.region,
    shared,
    () => true,
    TLog.recover(pool, RECOVERY_LOG_OWNER, limits, OwnerRole.Digest),
    limits,
  );
  for (const seg of blog) {
    const start = pool.segmentOffset(seg);
    let blocks = 0;
    for (const b of scanBlogBlocks(bytes, start, start + pool.segmentBytes, limits)) {
      applier.apply(b);
      blocks++;
    }
    const m = pool.meta(seg);
    // A baseline's region (role Remote: rwrite/batch/share) is indexed but left as it is: its sender may
    // still write into it after this node restarted, so it must not be freed or handed to GC.
    if (m.role === OwnerRole.Control) recycleBlogSegment(pool, seg, m.state, blocks, r);
    r.blogSegments++;
    progress?.(r.logSegments + r.blogSegments, total);
  }
  const liveBytes = shared.gc?.live;
  if (liveBytes) {
    liveBytes.reset();
    for (const index of shared.indexes) index?.forEach((addr) => liveBytes.added(addr));
  }
  r.entries += applier.stats.blocks;
  r.indexed += applier.stats.indexed;
  r.stale += applier.stats.stale;
  r.indexFull += applier.stats.indexFull;
  r.ms = clock.now() - t0;
  return r;
}
