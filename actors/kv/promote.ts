// Promotion (§4.5 phase 2), run on the node's main thread when a commit makes this node the primary of
// shards it backed up. The shard stays blocked (ConfigCell) until this returns:
//   1. catch the index up: every block of the shards in this node's b-log segments that digest may
//      not have applied yet (Using: still being filled; Used: handed to digest, maybe not parsed) is
//      applied here, version-conditionally, so racing the digest actors is harmless;
//   2. raise the shard version above every version seen: the blocks applied, and `floors`, the
//      highest version any surviving replica reported in its prepare acknowledgement (./lease.ts),
//      so the new primary's first write outranks every entry of the shard on any replica.
// Committed segments need no pass: digest parsed them before voting them committed.
//
// Not done (the next issue): gathering the entries only another backup received and scattering
// them, so every replica holds the same set. Step 2 keeps that gap harmless for reads: an entry the
// old primary never acknowledged that sits on a surviving backup only is outranked by the new
// primary's next write of its key, on every replica.
import { PROMOTION_ACTOR_ID } from '../../config/base/ids.js';
import type { Limits } from '../../config/limits.js';
import { scanBlogBlocks } from '../../runtime/rowan/blog-scan.js';
import { EntryType } from '../../shm/log.js';
import { OwnerRole, SegmentState, type Pool } from '../../shm/pool.js';
import { TLog } from '../../shm/tlog.js';
import { BlockApplier } from './apply.js';
import { ReadEpochs } from './gc-state.js';
import { raiseVersion, type KvShared } from './shared.js';

export interface PromotionReport {
  shards: number[];
  /** Blocks of the shards applied from the b-log. */
  blocks: number;
  indexed: number;
  segments: number;
  /** The version each shard continues after. */
  versions: Record<string, number>;
}

/** b-log segments digest may not have applied yet. */
function undigested(pool: Pool): number[] {
  return pool.segments({ role: OwnerRole.Control }).filter((s) => {
    const st = pool.meta(s).state;
    return st === SegmentState.Using || st === SegmentState.Used;
  });
}

/** Highest version of each of `shards` this node holds: its shard versions (raised by digest and
 *  RPC-KV backups) and the blocks in its undigested b-log segments. For the prepare acknowledgement. */
export async function heldVersions(pool: Pool, shared: KvShared, shards: number[], limits: Limits): Promise<Record<string, number>> {
  const want = new Set(shards);
  const out: Record<string, number> = {};
  for (const s of shards) out[s] = Number(Atomics.load(shared.versions, s));
  for (const seg of undigested(pool)) {
    const start = pool.segmentOffset(seg);
    for (const b of scanBlogBlocks(pool.region.bytes, start, start + pool.segmentBytes, limits)) {
      if (want.has(b.shard) && b.version > out[b.shard]!) out[b.shard] = b.version;
    }
    await yieldToRenewals();
  }
  return out;
}

/** The scans run on the node's main thread, which also renews the lease: a scan of many segments
 *  must not hold back a renewal (the manager would take the node for dead). */
function yieldToRenewals(): Promise<void> {
  return new Promise((r) => setImmediate(r));
}

export async function promoteShards(pool: Pool, shared: KvShared, shards: number[], floors: Record<string, number>, limits: Limits): Promise<PromotionReport> {
  const want = new Set(shards);
  const log = TLog.recover(pool, PROMOTION_ACTOR_ID, limits, OwnerRole.Digest);
  const applier = new BlockApplier(pool.region, shared, (s) => want.has(s), log, limits);
  const slot = ReadEpochs.slotOf('digest', PROMOTION_ACTOR_ID);
  const segs = undigested(pool);
  for (const seg of segs) {
    const start = pool.segmentOffset(seg);
    // A read epoch per segment (the applier reads indexed entries), released before yielding.
    shared.gc?.epochs.enter(slot);
    try {
      for (const b of scanBlogBlocks(pool.region.bytes, start, start + pool.segmentBytes, limits)) {
        if (want.has(b.shard) && b.type !== EntryType.CommitVer) applier.apply(b);
      }
    } finally {
      shared.gc?.epochs.exit(slot);
    }
    await yieldToRenewals();
  }
  applier.dropPending(); // a multi-block entry missing blocks was never acknowledged
  const versions: Record<string, number> = {};
  for (const s of shards) {
    raiseVersion(shared.versions, s, floors[s] ?? 0);
    versions[s] = Number(Atomics.load(shared.versions, s));
  }
  return { shards, blocks: applier.stats.blocks, indexed: applier.stats.indexed, segments: segs.length, versions };
}
