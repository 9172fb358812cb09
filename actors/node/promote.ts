// Promotion (§4.5 phase 2), run on the node's main thread when a commit makes this node the primary of
// shards it backed up. The shard stays blocked (ConfigCell) until this returns:
//   1. catch the index up: every block of the shards in this node's b-log segments that digest may
//      not have applied yet (Using: still being filled; Used: handed to digest, maybe not parsed) is
//      applied here, version-conditionally, so racing the digest actors is harmless -- those of Using
//      segments copied into the promotion log, not indexed in place (a fenced buffer stays Using for
//      good, and a cold start refuses what lies there at or below the tombstone floor);
//   2. scatter: persist and index the entries other surviving replicas gathered that this node did not
//      have (../shared/gather-scatter.ts; the manager sends them in the commit), so every replica of the shard holds
//      the same set -- a node that stays backup absorbs its share through the same function;
//   3. raise the shard version above every version seen: the blocks applied, the entries scattered,
//      and `floors`, the highest version any surviving replica reported in its prepare
//      acknowledgement (./lease-client.ts), so the new primary's first write outranks every entry of the
//      shard on any replica -- and then by PROMOTION_VERSION_GAP more: an old primary that was paused,
//      not killed, may still land blocks it had in flight after the failover (nothing fences a dead
//      sender at the receive queue yet), with versions no survivor reported; the gap keeps the new
//      primary's writes above them, so such a late entry never shadows an acknowledged write.
// Committed segments need no pass: digest parsed them before voting them committed.
// Tailwind's backup buffers (no digest ever reads them) are scanned with its Algorithm 1 in step 1 too:
// every record up to a buffer's last matching checksum, never a torn one (./tailwind-recovery.ts).
// Blocks at or below a shard's effective tombstone floor (../shared/floors.ts) are late wherever step 1 finds
// them (an acknowledged one lies in a Committed segment) and are refused, as are such scattered entries:
// this node may have dropped the tombstone that outranked them.
import { PROMOTION_ACTOR_ID } from '../../config/base/ids.js';
import { VERSION_MAX } from '../../shm/log-layout.js';
import type { Limits } from '../../config/limits.js';
import { scanBlogBlocks } from '../../runtime/rowan/blog-scan.js';
import { EntryType } from '../../shm/log.js';
import { OwnerRole, SegmentState, type Pool } from '../../shm/pool.js';
import { TLog } from '../../shm/tlog.js';
import { BlockApplier } from '../shared/apply.js';
import { absorbScattered, undigested, yieldToRenewals, YIELD_EVERY_BLOCKS, type AbsorbStats } from '../shared/gather-scatter.js';
import type { GatherEntry } from '../shared/manager-protocol.js';
import { ReadEpochs } from '../shared/gc-state.js';
import { ShardFloors } from '../shared/floors.js';
import { raiseVersion, type KvShared } from '../shared/node-shared.js';
import { applyTailwindBuffers, newTailwindScanReport, type TailwindScanReport } from './tailwind-recovery.js';

export interface PromotionReport {
  shards: number[];
  /** Blocks of the shards applied from the b-log. */
  blocks: number;
  indexed: number;
  segments: number;
  /** The version each shard continues after. */
  versions: Record<string, number>;
  /** What became of the scattered entries. */
  scattered: AbsorbStats;
  /** b-log blocks refused as late (at or below their shard's effective floor). */
  late: number;
  /** Tailwind's backup buffers scanned for the shards (./tailwind-recovery.ts). */
  tailwind: TailwindScanReport;
}

/**
 * Steps 1-3 of the header for `shards` (promoted to this node; may be empty) and the scattered entries
 * (of promoted shards and of shards this node stays backup of).
 */
/**
 * Versions a promoted primary skips: more than an old primary can have claimed and not yet landed
 * anywhere at the default limits (64 workers x 1024 connections x 1024 requests in flight = 2^26).
 * 48-bit versions leave room for 2^22 failovers of one shard.
 */
export const PROMOTION_VERSION_GAP = 2 ** 26;


export async function promoteShards(
  pool: Pool,
  shared: KvShared,
  shards: number[],
  floors: Record<string, number>,
  limits: Limits,
  scatter: GatherEntry[] = [],
  promotionLog?: TLog,
  /** Shards handed over by a live, drained primary (a planned move, §4.6): no late blocks of the old
   *  primary can exist (it finished every write it claimed before acknowledging the prepare, and
   *  refuses the rest), so they continue right after the floor instead of skipping the gap. */
  planned: ReadonlySet<number> = new Set(),
  /** Shards this node was primary of already (a restarted primary confirmed, ../node/restart-hold.ts):
   *  no b-log catch-up -- what its b-log holds of them predates its own writes, and a tombstone it
   *  dropped since may be all that outranked an older PUT there. Scatter and counters as for the rest. */
  already: ReadonlySet<number> = new Set(),
): Promise<PromotionReport> {
  const want = new Set(shards.filter((s) => !already.has(s)));
  // The one promotion log, on the node's main thread: appended to synchronously by this function and by
  // re-replication (../migration/copy.ts) through the one instance the caller passes, else recovered here.
  const log = promotionLog ?? TLog.recover(pool, PROMOTION_ACTOR_ID, limits, OwnerRole.Digest);
  const tomb = shared.gc ? new ShardFloors(shared.gc.buffers.floors) : null;
  const applier = new BlockApplier(pool.region, shared, (s) => want.has(s), log, limits, tomb ? { late: (s, v) => want.has(s) && v <= tomb.effective(s) } : null);
  const slot = ReadEpochs.slotOf('digest', PROMOTION_ACTOR_ID);
  const segs = want.size > 0 ? undigested(pool) : [];
  for (const seg of segs) {
    const start = pool.segmentOffset(seg);
    // The entries of a Using segment are copied into the promotion log (copySingle): it may never be
    // Committed (a fenced buffer, ../shared/apply.ts), and a later cold start must still find them. A
    // Used one is indexed in place: digest commits it.
    applier.copySingle = pool.meta(seg).state === SegmentState.Using;
    // A read epoch per segment (the applier reads indexed entries; and no segment is freed under the
    // scan): held across the yields inside a segment, so a long scan lets the main thread's other work
    // run without the segment going away.
    shared.gc?.epochs.enterShared(slot);
    try {
      let n = 0;
      for (const b of scanBlogBlocks(pool.region.bytes, start, start + pool.segmentBytes, limits)) {
        if (want.has(b.shard) && b.type !== EntryType.CommitVer) applier.apply(b);
        if (++n % YIELD_EVERY_BLOCKS === 0) await yieldToRenewals();
      }
    } finally {
      shared.gc?.epochs.exitShared(slot);
    }
  }
  // Tailwind (cluster mode tailwind): the old primary's backup buffers, by Algorithm 1. None elsewhere.
  const tailwind = want.size > 0 ? await applyTailwindBuffers(pool, applier, want, limits, yieldToRenewals, YIELD_EVERY_BLOCKS) : newTailwindScanReport();
  applier.dropPending(); // a multi-block entry missing blocks was never acknowledged
  const scattered = absorbScattered(pool, shared, log, scatter, limits, already);
  const versions: Record<string, number> = {};
  for (const s of shards) {
    const seen = Math.max(floors[s] ?? 0, Number(Atomics.load(shared.versions, s)));
    raiseVersion(shared.versions, s, planned.has(s) ? seen : Math.min(seen + PROMOTION_VERSION_GAP, VERSION_MAX - PROMOTION_VERSION_GAP));
    versions[s] = Number(Atomics.load(shared.versions, s));
  }
  // A shard's first CommitVer is its counter, gap included: persisted under the mark before the shard
  // serves (../shared/version-marks.ts), so a restart never resumes below what the backups were told.
  // One write for all the shards (a restarted primary confirms all of its shards at once).
  shared.marks?.coverAll(new Map(shards.map((s) => [s, versions[s]!])));
  return { shards, blocks: applier.stats.blocks, indexed: applier.stats.indexed, segments: segs.length, versions, scattered, late: applier.stats.late, tailwind };
}
