// Tailwind's recovery (ATC '18 §3.4.1), on the node's main thread: the backup buffers primaries wrote
// into this node's pool (role Remote segments opening with a Tailwind buffer head, shm/tailwind-log.ts)
// are read only here -- at a cold start (./recovery.ts) and at a promotion (./promote.ts) -- with
// Algorithm 1: a buffer's records up to its last checksum that matches, never a torn one. No actor
// looks at them before (backups do nothing until recovery).
//
// A closed buffer whose scan does not end where its head says is corrupt (§3.4.2): its valid prefix is
// still applied (each block's own checksum verified), and the report counts it so the caller says so.
import type { Logger } from '../../config/base/log.js';
import type { Limits } from '../../config/limits.js';
import { scanBlogBlocks } from '../../runtime/rowan/blog-scan.js';
import { EntryType, type Block } from '../../shm/log.js';
import type { BlockApplier } from '../shared/apply.js';
import { OwnerRole, SegmentState, type Pool } from '../../shm/pool.js';
import { closedMatches, newTwScanStats, readHead, scanTailwindBuffer } from '../../shm/tailwind-log.js';

export interface TailwindScanReport {
  /** Tailwind buffers scanned, and how many of them were still open (the primary never closed them). */
  buffers: number;
  open: number;
  /** Records whose checksum matched, and their blocks (yielded to the caller). */
  records: number;
  blocks: number;
  /** Buffers whose scan stopped at a torn record (a block that does not verify) or a checksum that
   *  does not match, and the blocks dropped there: writes never acknowledged. */
  torn: number;
  droppedBlocks: number;
  /** Closed buffers whose records do not end at the closed length and checksum. */
  corrupt: number;
}

export function newTailwindScanReport(): TailwindScanReport {
  return { buffers: 0, open: 0, records: 0, blocks: 0, torn: 0, droppedBlocks: 0, corrupt: 0 };
}

/** Role-Remote segments in use that hold a Tailwind buffer. */
export function tailwindBuffers(pool: Pool): number[] {
  return pool.segments({ role: OwnerRole.Remote }).filter((s) => pool.meta(s).state !== SegmentState.Free && readHead(pool.region.bytes, pool.segmentOffset(s)) !== null);
}

/** The verified blocks of segment `seg`: Algorithm 1 over a Tailwind buffer (counted in `r`), the
 *  hole-skipping b-log scan over anything else (a b-log segment, another baseline's region). */
export function* segmentBlocks(pool: Pool, seg: number, limits: Limits, r: TailwindScanReport): Generator<Block> {
  const bytes = pool.region.bytes;
  const start = pool.segmentOffset(seg);
  const head = pool.meta(seg).role === OwnerRole.Remote ? readHead(bytes, start) : null;
  if (head === null) {
    yield* scanBlogBlocks(bytes, start, start + pool.segmentBytes, limits);
    return;
  }
  const st = newTwScanStats();
  yield* scanTailwindBuffer(bytes, start, start + pool.segmentBytes, limits, st);
  r.buffers++;
  if (head.closed === null) r.open++;
  r.records += st.records;
  r.blocks += st.blocks;
  if (st.dropped > 0 || st.stop === 'torn' || st.stop === 'checksum') r.torn++;
  r.droppedBlocks += st.dropped;
  if (!closedMatches(head, start, st)) r.corrupt++;
}

/** What a scan found, in the node's log: torn records (never acknowledged) at info, corrupt closed
 *  buffers as an error (that replica of their records cannot be trusted past the valid prefix). */
export function logTailwindScan(log: Logger, what: string, r: TailwindScanReport): void {
  const msg = `${what}: tailwind recovery scan (Algorithm 1) of ${r.buffers} backup buffer(s) (${r.open} open): ${r.records} record(s) applied, ${r.torn} buffer(s) ended in a torn record or checksum (${r.droppedBlocks} block(s) not applied)`;
  log.info({ event: 'tailwind-scan', ...r }, msg);
  if (r.corrupt > 0) log.error({ event: 'tailwind-corrupt', corrupt: r.corrupt }, `${what}: ${r.corrupt} closed tailwind buffer(s) do not end at the length and checksum their close recorded: corrupt, only their valid prefix applied`);
}

/** A promotion's pass (./promote.ts): every Tailwind buffer's valid records of the shards `want`
 *  applied, version-conditionally (so buffers of any primary, old or current, are harmless). Copied
 *  into the promotion log, not indexed in place: a dead primary's buffers are freed once the
 *  configuration no longer names it (actors/nic/nic-verbs.ts). Yields now and then like the b-log pass. */
export async function applyTailwindBuffers(
  pool: Pool,
  applier: BlockApplier,
  want: ReadonlySet<number>,
  limits: Limits,
  pause: () => Promise<void>,
  everyBlocks: number,
): Promise<TailwindScanReport> {
  const r = newTailwindScanReport();
  const copy = applier.copySingle;
  applier.copySingle = true;
  try {
    let n = 0;
    for (const seg of tailwindBuffers(pool)) {
      for (const b of segmentBlocks(pool, seg, limits, r)) {
        if (want.has(b.shard) && b.type !== EntryType.CommitVer) applier.apply(b);
        if (++n % everyBlocks === 0) await pause();
      }
    }
  } finally {
    applier.copySingle = copy;
  }
  return r;
}
