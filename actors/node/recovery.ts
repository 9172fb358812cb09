// Cold start (§4.7, basic form): rebuild the indexes of every shard this node holds from its logs,
// before any actor runs. t-logs (role Worker) and digest logs (role Digest) are contiguous logs whose
// end is the first entry that does not verify; b-log segments (role Control) are scanned with the
// hole-skipping b-log scan. The highest version of a key wins (version-conditional index updates), and
// every shard version is raised above the versions found, so new writes continue after them.
// b-log segments the previous incarnation left Using are retired to Used (or freed if nothing was written
// to them; the caller closed the old receive queue first): the receiver posts fresh ones. The remote-log
// regions of the one-sided baselines (role Remote) are indexed but keep their state; Tailwind's buffers
// among them are read with its Algorithm 1 (./tailwind-recovery.ts), so a torn record is never applied,
// and an asymnvm op-log region is replayed record by record, up to its first torn record (./op-log-replay.ts).
// Used b-log segments become Committed: this incarnation's digest actors never see them (the control
// actor hands over only segments it retires itself), and with every entry now indexed from the pool
// they are ordinary candidates for garbage collection. (Gather/scatter, ../shared/gather-scatter.ts, runs at a live
// failover only: entries of these segments are not gathered by a later one.) Clean logs (role Clean)
// are contiguous logs like t-logs.
// What the b-log pass trusts (../shared/trust.ts, docs/security.md): with a ColdStartTrust, b-log blocks
// are applied only to shards this node legitimately received them for, below the version its promotion
// started from for shards promoted here, and regions of role Remote whose owner id names no other node
// of the configuration are freed unread (no member can have written them; they only held free space
// hostage). Without one (unit tests, tools) every shard this node indexes is applied, as before;
// versions out of the plausible range are refused either way (../shared/apply.ts).
// Tombstone floors (../shared/floors.ts): given the floors a backup persisted before dropping tombstones under
// them, a b-log block of shard s at or below s's floor found in a segment left Using or Used (never
// digested, or digested with its late blocks already invalidated) is late: refused, and invalidated on
// PM before the segment is recycled to Committed -- where the next cold start would take it for an
// acknowledged block. The shared floors then start at the persisted ones.
// Version marks (../shared/version-marks.ts): every shard counter is raised to at least the mark the node
// persisted before it handed out or told any version above the counter (a CommitVer, a promotion
// gap, a tombstone whose segment is gone may be above every version left on PM), and to at least its
// persisted tombstone floor (a CommitVer this node saw as a backup).
// The live-byte accounting starts from zero and follows every index change as it is made (a scanned
// entry's size is known: no second pass over the indexes reading each live entry's header from PM).
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import type { Clock } from '../../config/base/clock.js';
import type { Limits } from '../../config/limits.js';
import { PoolEntryReader } from '../../shm/entry-reader.js';
import { hash64Into } from '../../shm/hash.js';
import { EntryType, scanEntries } from '../../shm/log.js';
import { OwnerRole, SegmentState, type Pool } from '../../shm/pool.js';
import { TLog } from '../../shm/tlog.js';
import { newTailwindScanReport, segmentBlocks, type TailwindScanReport } from '../shared/tailwind-buffers.js';
import { isOpLogRegion, newOpLogReplayStats, replayOpLogRegion, type OpLogReplayStats } from './op-log-replay.js';
import { BlockApplier, invalidateBlock } from '../shared/apply.js';
import { applyFlush, finishFlushes } from '../shared/flush-floor.js';
import { ShardFloors } from '../shared/floors.js';
import { plausibleVersion } from '../shared/trust.js';
import { checksumSeed } from '../../shm/log-checksum.js';
import { attachKvShared, raiseVersion, type KvShared, type KvSharedBuffers } from '../shared/node-shared.js';
import { runPoolThreads } from '../../runtime/pool-threads.js';
import { failedKey, type FailedWrites } from '../shared/failed-writes.js';
import type { PersistMode } from '../../native/pmem2.js';

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
  /** b-log blocks not applied because this node does not trust them (../shared/trust.ts). */
  untrusted: number;
  /** One-sided regions (role Remote) of owner ids no other node of the configuration holds, freed. */
  freedForeign: number;
  /** b-log blocks refused and invalidated as late (at or below their shard's persisted floor). */
  late: number;
  /** t-log entries of writes that failed after their append, not indexed (../shared/failed-writes.ts). */
  failed: number;
  /** Index items dropped at the end as below their shard's flush floor (../shared/flush-floor.ts). */
  flushed: number;
  /** Tailwind backup buffers read with Algorithm 1 (./tailwind-recovery.ts). */
  tailwind: TailwindScanReport;
  /** asymnvm: op-log regions replayed, their intact records, and regions that ended at a torn record. */
  opLog: OpLogReplayStats;
  ms: number;
}

/** What the cold start trusts (see the header; ../shared/trust.ts builds one from the configuration). */
/** What the node persisted beside its pool that bounds a cold start: shard -> version maps. */
export interface PersistedBounds {
  /** The tombstone floors a backup persisted (../shared/floors.ts FloorStore). */
  floors?: ReadonlyMap<number, number>;
  /** The version marks (../shared/version-marks.ts): each counter resumes at or above its shard's. */
  marks?: ReadonlyMap<number, number>;
  /** The writes that failed after their t-log append (../shared/failed-writes.ts): not indexed. */
  failed?: FailedWrites;
}

export interface ColdStartTrust {
  /** Whether a b-log block of `shard` at `version` may be applied. */
  blog: (shard: number, version: number) => boolean;
  /** Owner ids of role-Remote regions that may hold replicated data; the others are freed. */
  remoteOwners: ReadonlySet<number>;
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

function emptyReport(): RecoveryReport {
  return { logSegments: 0, blogSegments: 0, entries: 0, indexed: 0, stale: 0, retiredUsing: 0, committedUsed: 0, freedEmpty: 0, indexFull: 0, untrusted: 0, freedForeign: 0, late: 0, failed: 0, flushed: 0, tailwind: newTailwindScanReport(), opLog: newOpLogReplayStats(), ms: 0 };
}

/** The segments cold start reads: contiguous logs, and b-log (and baseline remote-log) segments. */
function recoverySegments(pool: Pool): { logs: number[]; blog: number[] } {
  const live = (s: number) => pool.meta(s).state !== SegmentState.Free;
  const logs = [
    ...pool.segments({ role: OwnerRole.Worker }),
    ...pool.segments({ role: OwnerRole.Digest }),
    ...pool.segments({ role: OwnerRole.Clean }),
  ].filter(live);
  const blog = [...pool.segments({ role: OwnerRole.Control }), ...pool.segments({ role: OwnerRole.Remote })].filter(live);
  return { logs, blog };
}

/** Free the role-Remote regions whose owner id `trust` does not list (see the header). */
function freeForeignRegions(pool: Pool, trust: ColdStartTrust | undefined, r: RecoveryReport): void {
  if (!trust) return;
  for (const seg of pool.segments({ role: OwnerRole.Remote })) {
    const m = pool.meta(seg);
    if (trust.remoteOwners.has(m.ownerId)) continue;
    if (m.state === SegmentState.Used) pool.transition(seg, SegmentState.Used, SegmentState.Committed);
    if (m.state === SegmentState.Using || m.state === SegmentState.Used || m.state === SegmentState.Committed) {
      pool.free(seg);
      r.freedForeign++;
    }
  }
}

export function rebuildIndexes(
  pool: Pool,
  shared: KvShared,
  limits: Limits,
  clock: Clock,
  progress?: (done: number, total: number) => void,
  trust?: ColdStartTrust,
  persisted: PersistedBounds = {},
): RecoveryReport {
  const t0 = clock.now();
  const r = emptyReport();
  freeForeignRegions(pool, trust, r);
  const { logs, blog } = recoverySegments(pool);
  const total = logs.length + blog.length;
  shared.gc?.live.reset(); // before any upsert: every index change below is accounted as it is made

  const counts = scanLogSegments(pool, shared, logs, limits, (c) => progress?.(c.logSegments, total), persisted.failed);
  Object.assign(r, counts);
  return rebuildBlog(pool, shared, limits, blog, r, () => progress?.(r.logSegments + r.blogSegments, total), t0, clock, trust, persisted);
}

/**
 * Cold start with `threads` helper threads for the contiguous logs (the bulk of a node's entries):
 * each maps the pool (runtime/pool-threads.ts) and indexes an interleaved share of the log segments
 * (./recovery-thread.ts) -- safe at once: index upserts are version-conditional under bucket locks, the
 * shard versions and live bytes atomic. The b-log pass that follows stays on this thread (multi-block
 * entries are reassembled across segments). `threads` 1 is rebuildIndexes() itself.
 */
export async function rebuildIndexesParallel(
  pool: Pool,
  buffers: KvSharedBuffers,
  limits: Limits,
  clock: Clock,
  threads: number,
  progress?: (done: number, total: number) => void,
  trust?: ColdStartTrust,
  persisted: PersistedBounds = {},
): Promise<RecoveryReport> {
  const shared = attachKvShared(buffers, pool.region);
  const { logs } = recoverySegments(pool);
  // Few segments, or a pool that is not a file (the simulator's memory): one thread.
  if (threads <= 1 || logs.length < 2 * threads || pool.mode === 'memory') return rebuildIndexes(pool, shared, limits, clock, progress, trust, persisted);
  const t0 = clock.now();
  const r = emptyReport();
  freeForeignRegions(pool, trust, r);
  const { blog } = recoverySegments(pool);
  const total = logs.length + blog.length;
  shared.gc?.live.reset(); // before any upsert, in any thread
  const shares = Array.from({ length: threads }, (_, i) => logs.filter((_, j) => j % threads === i));
  const done = new Array<number>(threads).fill(0);
  const results = await runPoolThreads<RecoveryThreadPayload, LogScanCounts>({
    poolPath: pool.path,
    mode: pool.mode as PersistMode,
    module: new URL('./recovery-thread.js', import.meta.url).href,
    payloads: shares.map((segs) => ({ buffers, segs, limits, checksumSeed: checksumSeed(), failed: [...(persisted.failed ?? [])] })),
    onProgress: (i, p) => {
      done[i] = (p as LogScanCounts).logSegments;
      progress?.(done.reduce((a, b) => a + b, 0), total);
    },
  });
  for (const c of results) for (const k of Object.keys(c) as (keyof LogScanCounts)[]) r[k] += c[k];
  return rebuildBlog(pool, shared, limits, blog, r, () => progress?.(r.logSegments + r.blogSegments, total), t0, clock, trust, persisted);
}

/** What one cold-start helper thread (./recovery-thread.ts) gets. */
export interface RecoveryThreadPayload {
  buffers: KvSharedBuffers;
  segs: number[];
  limits: Limits;
  /** The cluster's checksum seed (shm/log-checksum.ts): the helper thread keys its scans with it. */
  checksumSeed: number;
  /** The failed writes to skip (PersistedBounds.failed, as entries). */
  failed: [number, string][];
}

export interface LogScanCounts {
  logSegments: number;
  entries: number;
  indexed: number;
  stale: number;
  indexFull: number;
  /** t-log entries of writes that failed after their append (PersistedBounds.failed), not indexed. */
  failed: number;
}

/** Index every entry of the contiguous log segments `segs` (t-logs, digest and clean logs) but the
 *  failed writes `failed` lists. */
export function scanLogSegments(pool: Pool, shared: KvShared, segs: number[], limits: Limits, onSegment?: (c: LogScanCounts) => void, failed?: FailedWrites): LogScanCounts {
  const bytes = pool.region.bytes;
  const reader = new PoolEntryReader(pool.region, limits);
  const hash = { hi: 0, lo: 0 };
  const liveBytes = shared.gc?.live ?? null;
  const r: LogScanCounts = { logSegments: 0, entries: 0, indexed: 0, stale: 0, indexFull: 0, failed: 0 };
  for (const seg of segs) {
    const start = pool.segmentOffset(seg);
    for (const e of scanEntries(bytes, start, start + pool.segmentBytes, limits)) {
      r.entries++;
      const index = shared.indexes[e.shard];
      // A version out of any shard's range is not this node's own write (../shared/trust.ts): skipped.
      if (!index || !plausibleVersion(e.version)) continue;
      raiseVersion(shared.versions, e.shard, e.version);
      if (e.type === EntryType.CommitVer) continue;
      if (failed !== undefined && failed.size > 0 && failed.get(e.offset) === failedKey(e.shard, e.version)) {
        r.failed++;
        continue;
      }
      if (e.type === EntryType.Flush) {
        applyFlush(shared, e.shard, e.version, e.offset, reader, false); // cleared once all scans are done (rebuildBlog)
        continue;
      }
      let res;
      try {
        res = index.upsert(e.key, hash64Into(e.key, hash), e.offset, e.version, reader);
      } catch (err) {
        // A full index never stops a cold start (the node must come up and serve what it has).
        if (!(err instanceof RowanError && err.code === ErrorCodes.INDEX_FULL)) throw err;
        r.indexFull++;
        continue;
      }
      liveBytes?.upsertedSized(res, index.replaced, e.offset, e.bytes);
      if (res === 'stale') r.stale++;
      else r.indexed++;
    }
    r.logSegments++;
    onSegment?.(r);
  }
  return r;
}

function rebuildBlog(
  pool: Pool,
  shared: KvShared,
  limits: Limits,
  blog: number[],
  r: RecoveryReport,
  onSegment: () => void,
  t0: number,
  clock: Clock,
  trust: ColdStartTrust | undefined,
  persisted: PersistedBounds,
): RecoveryReport {
  const floors = persisted.floors ?? new Map<number, number>();
  const filter = trust?.blog;
  let refused = 0;
  /** Whether the segment being scanned is a b-log segment left Using or Used (see the header). */
  let undigested = false;
  const applier = new BlockApplier(
    pool.region,
    shared,
    // b-log blocks only for shards this node received them for (../shared/trust.ts); without a trust, all.
    filter ? (shard, version) => filter(shard, version) || (refused++, false) : () => true,
    TLog.recover(pool, RECOVERY_LOG_OWNER, limits, OwnerRole.Digest),
    limits,
    floors.size > 0 ? { late: (shard, version) => undigested && version <= (floors.get(shard) ?? 0), refused: (b) => invalidateBlock(pool.region, b.offset) } : null,
  );
  applier.clearOnFlush = false;
  if (shared.gc) new ShardFloors(shared.gc.buffers.floors).seed(floors);
  for (const seg of blog) {
    const before = pool.meta(seg);
    undigested = before.role === OwnerRole.Control && (before.state === SegmentState.Using || before.state === SegmentState.Used);
    let blocks = 0;
    const start = pool.segmentOffset(seg);
    if (before.role === OwnerRole.Remote && isOpLogRegion(pool.region.bytes, start)) {
      // asymnvm: an op log, replayed record by record up to a torn one (./op-log-replay.ts).
      replayOpLogRegion(pool.region.bytes, start, start + pool.segmentBytes, limits, (b) => applier.apply(b), r.opLog);
    } else {
      for (const b of segmentBlocks(pool, seg, limits, r.tailwind)) {
        applier.apply(b);
        blocks++;
      }
    }
    const m = pool.meta(seg);
    // A baseline's region (role Remote: rwrite/batch/share) is indexed but left as it is: its sender may
    // still write into it after this node restarted, so it must not be freed or handed to GC.
    if (m.role === OwnerRole.Control) recycleBlogSegment(pool, seg, m.state, blocks, r);
    r.blogSegments++;
    onSegment();
  }
  r.entries += applier.stats.blocks;
  r.indexed += applier.stats.indexed;
  r.stale += applier.stats.stale;
  r.indexFull += applier.stats.indexFull;
  r.untrusted += applier.stats.untrusted + refused;
  r.late += applier.stats.late;
  // The flush floors every scan raised (../shared/flush-floor.ts): what was indexed under them goes now.
  r.flushed = finishFlushes(shared, new PoolEntryReader(pool.region, limits));
  resumeCounters(shared, persisted);
  r.ms = clock.now() - t0;
  return r;
}

/**
 * Every shard counter at or above its persisted mark, and the shared marks seeded (see the header). A
 * backup's counter also resumes at or above its persisted floor: the floor is a CommitVer it saw (the
 * CommitVer block that raised it may be in a segment GC freed since), and the counter is what the node
 * reports at a prepare -- a promotion must continue above every floor a survivor holds.
 */
function resumeCounters(shared: KvShared, persisted: PersistedBounds): void {
  if (persisted.marks) shared.marks?.seed(persisted.marks);
  for (const bound of [persisted.marks, persisted.floors]) {
    for (const [s, v] of bound ?? []) if (s >= 0 && s < shared.versions.length) raiseVersion(shared.versions, s, v);
  }
}
