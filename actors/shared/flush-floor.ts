// FLUSHDB/FLUSHALL of a shard (issue 27), as every replica applies it. A FLUSH log entry (shm/log-layout.ts,
// type 4) carries no key; its version, a version of the shard like any PUT's, is the shard's *flush
// floor*: every PUT/DEL of the shard below it is dead, wherever it lies (t-log, b-log, digest or clean
// log). The floor lives in the shard index's header (shm/index.ts): the index refuses lower versions
// from then on, and one pass over the table removes the items below it -- no log write per key, the
// entries become garbage that GC reclaims like any replaced entry.
// The FLUSH entry itself stays live (counted in the live bytes, relocated by GC) as long as it is its
// shard's floor: a cold start rebuilds the floor from it and drops whatever lies below, so it must
// outlive every older entry left on PM. A higher floor supersedes it and it becomes garbage too.
// Applied by the primary's worker (../worker/flush.ts), a backup's digest and a promotion's catch-up
// (./apply.ts), and a cold start (../node/recovery.ts finishFlushes), in whatever order they meet the
// entry: a raise is monotonic and the walk removes only what lies below.
import type { EntryReader } from '../../shm/index.js';
import type { KvShared } from './node-shared.js';

/** Raise `shard`'s floor to `version` (the FLUSH entry at `addr`) and drop the index items under it,
 *  with their live bytes (`clear` false: leave that to finishFlushes). Returns the items removed, or -1
 *  if the floor was already that high. */
export function applyFlush(s: KvShared, shard: number, version: number, addr: number, reader: EntryReader, clear = true): number {
  const index = s.indexes[shard];
  if (!index) return -1;
  const prev = index.raiseFloor(version, addr);
  if (prev < 0) return -1;
  const live = s.gc?.live;
  if (live) {
    if (prev > 0) live.removed(prev); // the superseded FLUSH entry is garbage now
    live.added(addr);
  }
  // A cold start raises the floors as its scans meet FLUSH entries and clears once at the end.
  return clear ? index.clearBelow(version, reader, (a) => live?.removed(a)) : 0;
}

/** After a cold start's scans raised the floors (applyFlush without clearing): drop what the scans
 *  indexed under each floor before they met its FLUSH entry, or in another thread meanwhile. */
export function finishFlushes(s: KvShared, reader: EntryReader): number {
  let n = 0;
  for (const index of s.indexes) {
    if (index && index.floor() > 0) n += index.clearBelow(index.floor(), reader, (a) => s.gc?.live.removed(a));
  }
  return n;
}
