// Tailwind's backup buffers in this node's pool (role Remote segments opening with a Tailwind buffer
// head, shm/tailwind-log.ts), read with Algorithm 1: a buffer's records up to its last checksum that
// matches, never a torn one. Read only at recovery -- a cold start (../node/recovery.ts), a promotion
// (../node/promote.ts) and a failover's gather (./gather-scatter.ts), all on the node's main thread; no
// actor looks at them before (backups do nothing until recovery).
//
// A closed buffer whose scan does not end where its head says is corrupt (§3.4.2): its valid prefix is
// still applied (each block's own checksum verified), and the report counts it so the caller says so.
import type { Limits } from '../../config/limits.js';
import { scanBlogBlocks } from '../../runtime/rowan/blog-scan.js';
import type { Block } from '../../shm/log.js';
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

/** Buffers their primary has not closed: only these can hold a record not on every replica (a buffer
 *  is closed once every write into it was acknowledged, so by all replicas). */
export function openTailwindBuffers(pool: Pool): number[] {
  return tailwindBuffers(pool).filter((s) => readHead(pool.region.bytes, pool.segmentOffset(s))!.closed === null);
}
