// Tailwind's recovery (ATC '18 §3.4.1) on the node's main thread: a promotion's pass over the backup
// buffers (../shared/tailwind-buffers.ts), and what a scan found, in the node's log.
import type { Logger } from '../../config/base/log.js';
import type { Limits } from '../../config/limits.js';
import { EntryType } from '../../shm/log.js';
import type { Pool } from '../../shm/pool.js';
import type { BlockApplier } from '../shared/apply.js';
import { newTailwindScanReport, segmentBlocks, tailwindBuffers, type TailwindScanReport } from '../shared/tailwind-buffers.js';

export { newTailwindScanReport, segmentBlocks, tailwindBuffers, type TailwindScanReport };

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
