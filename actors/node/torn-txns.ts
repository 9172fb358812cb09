// Transactions torn in this node's own t-log by a crash (DESIGN §7: all or none, after a crash too).
// A transaction's entries are appended to the t-log one after another, each persisted on its own
// (../worker/txn-write.ts ①), so a crash between two appends leaves a prefix of it. Those entries were
// never acknowledged and sit in t-log segments the crash left Using (a segment is Committed only once
// every append in it was released, ../../shm/tlog.ts; a transaction's appends are released together).
// The cold start treats them as failed writes (../shared/failed-writes.ts): not indexed, not in the
// restart tail, so no replica ever serves part of the transaction.
import type { Limits } from '../../config/limits.js';
import { scanEntries } from '../../shm/log.js';
import { OwnerRole, SegmentState, type Pool } from '../../shm/pool.js';
import { failedKey, type FailedWrites } from '../shared/failed-writes.js';
import { tornTxnIds, type WordedEntry } from '../shared/txn-groups.js';

/** `failed` plus the entries of every transaction torn in a Using t-log segment (by offset). */
export function withTornTransactions(pool: Pool, limits: Limits, failed: FailedWrites): FailedWrites {
  const words = new Map<string, WordedEntry>();
  const offsets = new Map<string, number>();
  for (const seg of pool.segments({ role: OwnerRole.Worker })) {
    if (pool.meta(seg).state !== SegmentState.Using) continue;
    const start = pool.segmentOffset(seg);
    for (const e of scanEntries(pool.region.bytes, start, start + pool.segmentBytes, limits)) {
      if (e.txn === 0) continue;
      const id = failedKey(e.shard, e.version);
      words.set(id, { shard: e.shard, version: e.version, txn: e.txn });
      offsets.set(id, e.offset);
    }
  }
  const torn = tornTxnIds(words);
  if (torn.size === 0) return failed;
  const out = new Map(failed);
  for (const id of torn) out.set(offsets.get(id)!, id);
  return out;
}
