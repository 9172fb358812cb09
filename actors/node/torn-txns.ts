// Transactions torn in this node's own t-log by a crash (DESIGN §7: all or none, after a crash too).
// A transaction's entries are appended to a worker's t-log one after another in one synchronous loop,
// each persisted on its own (../worker/txn-write.ts ①; the RPC-KV backup log alike), so a crash between
// two appends leaves a prefix of it: the last entries of that chain, in segments still Using (a segment
// is Committed only once every append in it was released, and a transaction's appends are released
// together). Those entries were never acknowledged. The cold start treats them as failed writes
// (../shared/failed-writes.ts): not indexed, not in the restart tail, so no replica serves part of it.
//
// Only the trailing run of a chain can be such a prefix: nothing is appended after a crash. A finished
// transaction there has its last entry (index count - 1) -- it is the chain's final entry, in the
// segment still being appended to, which GC cannot have reclaimed. Counting members instead would
// misjudge a finished transaction whose older member GC reclaimed after another write superseded it.
import type { Limits } from '../../config/limits.js';
import { scanEntries, type LogEntry } from '../../shm/log.js';
import { txnCount, txnIndex } from '../../shm/log-layout.js';
import { OwnerRole, SegmentState, type Pool } from '../../shm/pool.js';
import { failedKey, type FailedWrites } from '../shared/failed-writes.js';

/** `failed` plus the entries of each t-log chain's trailing transaction prefix, if any (by offset). */
export function withTornTransactions(pool: Pool, limits: Limits, failed: FailedWrites): FailedWrites {
  let out: Map<number, string> | null = null;
  const owners = new Set(pool.segments({ role: OwnerRole.Worker }).map((i) => pool.meta(i).ownerId));
  for (const owner of owners) {
    for (const e of tornTail(pool, limits, owner)) (out ??= new Map(failed)).set(e.offset, failedKey(e.shard, e.version));
  }
  return out ?? failed;
}

/** The entries of the transaction cut short at the end of `owner`'s chain: [] when there is none. */
function tornTail(pool: Pool, limits: Limits, owner: number): LogEntry[] {
  const entries = trailingEntries(pool, limits, owner);
  const last = entries.at(-1);
  if (last === undefined || last.txn === 0) return [];
  const base = last.version - txnIndex(last.txn);
  const run: LogEntry[] = [];
  for (let i = entries.length - 1; i >= 0; i--) {
    const e = entries[i]!;
    if (e.txn === 0 || e.shard !== last.shard || e.version - txnIndex(e.txn) !== base) break;
    run.push(e);
  }
  return run.some((e) => txnIndex(e.txn) === txnCount(e.txn) - 1) ? [] : run;
}

/** Entries of the chain's trailing Using segments (those a pending append can hold), in append order. */
function trailingEntries(pool: Pool, limits: Limits, owner: number): LogEntry[] {
  const chain = pool.segments({ role: OwnerRole.Worker, ownerId: owner }).filter((i) => {
    const s = pool.meta(i).state;
    return s === SegmentState.Using || s === SegmentState.Committed;
  });
  let from = chain.length;
  while (from > 0 && pool.meta(chain[from - 1]!).state === SegmentState.Using) from--;
  const out: LogEntry[] = [];
  for (const seg of chain.slice(from)) {
    const start = pool.segmentOffset(seg);
    for (const e of scanEntries(pool.region.bytes, start, start + pool.segmentBytes, limits)) out.push({ ...e });
  }
  return out;
}
