// A restarted primary serves nothing until the manager confirms it (issue 24; DESIGN §6 "a primary
// role changes hands only through a completed prepare" -- here the hand is its own previous
// incarnation's).
//
// A node that crashed (or lost power with the whole cluster) while writes were replicating comes back
// with those writes in its t-log: appended and persisted before they were sent, on some backups or on
// none. Its cold start indexes them (../node/recovery.ts), so serving at once would show a write its
// backups may lack -- and a later failover to such a backup would take it back (a read that saw it,
// then one that does not). So at cold start every shard this node is primary of is held (blocked in the
// configuration cell) and its *restart tail* is set aside: the complete PUT/DEL entries of those shards
// in the t-log segments the crash left Using (a segment is Committed only once every append in it was
// released, ../../shm/tlog.ts) with a version above the last CommitVer this node computed for the shard
// (persisted, possibly stale: ../shared/commit-points.ts; every write unfinished at the crash is above
// any CommitVer ever computed, ../shared/commit.ts) -- but not the writes that failed while the node
// ran (../shared/failed-writes.ts: the cold start does not index them either). The hello says which shards are held; the manager
// runs a prepare/commit round confirming this node as their primary (actors/manager/reconfirm.ts):
// the tail goes into this node's `prepared` beside what the backups gather from their b-logs, every
// replica is sent the union it lacks, and the commit promotes the shards here again (`promote`, no gap:
// the counters already resumed above every version the previous incarnation handed out). Only then
// do they serve.
// Collected before the workers start: TLog.recover commits the older Using segments of each chain. A
// node whose pool is empty (its first start) holds nothing.
import type { ClusterConfig } from '../../config/cluster.js';
import type { Limits } from '../../config/limits.js';
import { EntryType, scanEntries } from '../../shm/log.js';
import { OwnerRole, SegmentState, type Pool } from '../../shm/pool.js';
import type { ConfigCell } from '../shared/config-cell.js';
import { GATHER_BYTES_MAX, type GatherEntry } from '../shared/manager-protocol.js';
import { b64, newestWithin } from '../shared/gather-scatter.js';
import { failedKey, type FailedWrites } from '../shared/failed-writes.js';
import { tornTxnIds, type WordedEntry } from '../shared/txn-groups.js';

/** Replication modes with a manager that confirms restarted primaries (those that fail over). */
const CONFIRMED_MODES: readonly string[] = ['rowan', 'rpc',
  'tailwind'];

export class RestartHold {
  private readonly held = new Set<number>();
  private tail: GatherEntry[] = [];
  /** Tail entries left out because the list reached GATHER_BYTES_MAX. */
  truncated = false;

  /** A hold with nothing held (a node without a manager, or a mode that does not fail over). */
  static none(): RestartHold {
    return new RestartHold();
  }

  /**
   * At cold start, after the indexes are rebuilt and before any actor runs: hold the shards `c` names
   * this node primary of, and set their restart tail aside (see the header). `above`: the persisted
   * CommitVer per shard (missing: 0, the whole Using segments are the tail).
   */
  static atColdStart(pool: Pool, cell: ConfigCell, c: ClusterConfig, nodeId: number, limits: Limits, above: ReadonlyMap<number, number>, failed: FailedWrites = new Map(), bytesMax = GATHER_BYTES_MAX): RestartHold {
    const h = new RestartHold();
    if (!CONFIRMED_MODES.includes(c.replication)) return h;
    // A pool nothing was ever written to: no previous incarnation, nothing to confirm (a cluster's
    // first start stays at its first term).
    if (pool.segmentsInState(SegmentState.Free).length === pool.segmentCount) return h;
    for (const s of c.shards) if (s.primary === nodeId) h.held.add(s.id);
    if (h.held.size === 0) return h;
    for (const s of h.held) cell.setShardBlocked(s, true);
    const found = new Map<string, GatherEntry>(); // by shard:version
    const words = new Map<string, WordedEntry>(); // the same ids, with their transaction words
    for (const seg of pool.segments({ role: OwnerRole.Worker })) {
      if (pool.meta(seg).state !== SegmentState.Using) continue;
      const start = pool.segmentOffset(seg);
      for (const e of scanEntries(pool.region.bytes, start, start + pool.segmentBytes, limits)) {
        if (!h.held.has(e.shard) || (e.type !== EntryType.Put && e.type !== EntryType.Del && e.type !== EntryType.Flush) || e.version <= (above.get(e.shard) ?? 0)) continue;
        if (failed.get(e.offset) === failedKey(e.shard, e.version)) continue; // failed while it ran: never served
        found.set(`${e.shard}:${e.version}`, { s: e.shard, v: e.version, t: e.type, k: b64(e.key), x: b64(e.value), ...(e.expiresAt ? { e: e.expiresAt } : {}) });
        words.set(`${e.shard}:${e.version}`, { shard: e.shard, version: e.version, txn: e.txn });
      }
    }
    for (const id of tornTxnIds(words)) found.delete(id); // a transaction the crash cut short in the t-log
    const cut = newestWithin(found.values(), bytesMax);
    h.tail = cut.kept;
    h.truncated = cut.truncated;
    return h;
  }

  /** The shards held now, after dropping those `c` no longer names this node primary of (a commit
   *  moved them while it was down: nothing of them to confirm; they are no longer blocked here). */
  unconfirmed(c: ClusterConfig, nodeId: number, cell: ConfigCell): number[] {
    for (const s of [...this.held]) {
      if (c.shards[s]?.primary === nodeId) continue;
      this.held.delete(s);
      this.tail = this.tail.filter((e) => e.s !== s);
      cell.setShardBlocked(s, false);
    }
    return [...this.held].sort((a, b) => a - b);
  }

  /** The restart tail of those of `shards` still held (what this node adds to its `prepared`). */
  tailOf(shards: readonly number[]): GatherEntry[] {
    const want = new Set(shards.filter((s) => this.held.has(s)));
    return want.size === 0 ? [] : this.tail.filter((e) => want.has(e.s));
  }

  /** A commit promoted `shards` here again: they are confirmed (the promotion unblocks them). */
  confirmed(shards: readonly number[]): void {
    for (const s of shards) this.held.delete(s);
    this.tail = this.tail.filter((e) => this.held.has(e.s));
  }

  get size(): number {
    return this.held.size;
  }

  get tailEntries(): number {
    return this.tail.length;
  }
}
