// The node's side of a configuration change (§4.5, §4.6), as the lease client calls it: prepare
// (drain a move's source, report versions or gather) and promote (scatter, catch up, raise the
// counters). One builder, used by the node process (./node-application.ts) and by the deterministic simulator
// (test/sim/control.ts), so the simulator runs exactly the product's hooks.
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import type { Clock } from '../../config/base/clock.js';
import type { Logger } from '../../config/base/log.js';
import { defaultLimits } from '../../config/limits.js';
import { defaultTimings } from '../../config/timings.js';
import type { Pool } from '../../shm/pool.js';
import type { TLog } from '../../shm/tlog.js';
import { shardDrained } from '../shared/commit.js';
import type { ConfigCell } from '../shared/config-cell.js';
import { gatherForPrepare, newestWithin } from '../shared/gather-scatter.js';
import type { FollowerHooks } from './config-follower.js';
import { promoteShards } from './promote.js';
import type { KvShared } from '../shared/node-shared.js';
import { receivedShards, type ReplicaRecord } from '../shared/trust.js';
import { GATHER_BYTES_MAX, gatherEntryBytes } from '../shared/manager-protocol.js';
import { RestartHold } from './restart-hold.js';
import { logTailwindScan } from './tailwind-recovery.js';

/** A move's source waits at most drainTimeoutMs (config/timings.ts) for the writes it claimed for the
 *  shards it hands over to end; past it the prepare is not acknowledged and the manager rolls the move
 *  back. */
export async function drainShards(shared: KvShared, shards: number[], shardCount: number, clock: Clock, sleep: (ms: number) => Promise<void> = (ms) => new Promise((r) => setTimeout(r, ms))): Promise<void> {
  const g = shared.gc?.buffers;
  if (!g) return; // no commit tracking without a pool: nothing is tracked in flight
  const t0 = clock.now();
  for (;;) {
    const busy = shards.filter((s) => !shardDrained(g, shardCount, s));
    if (busy.length === 0) return;
    if (clock.now() - t0 > defaultTimings.drainTimeoutMs) {
      throw new RowanError(ErrorCodes.TIMEOUT, `shard(s) ${busy.join(', ')} still have writes in flight after ${defaultTimings.drainTimeoutMs} ms; the move is not acknowledged`);
    }
    await sleep(1);
  }
}

export interface PromotionHooksOptions {
  nodeId: number;
  cell: ConfigCell;
  pool: Pool;
  /** The shared state as this thread attached it, with the node's version marks (promotions and a
   *  move's versions are covered before they are told). */
  shared: KvShared;
  shardCount: number;
  /** The node's replica record (../shared/trust.ts), what a later cold start trusts. */
  record: ReplicaRecord;
  clock: Clock;
  log: Logger;
  /** The promotion log (one instance per thread, shared with re-replication). */
  promotionLog: () => TLog;
  /** The drain's wait between looks (default: a real timer). */
  sleep?: (ms: number) => Promise<void>;
  /** The shards this node was primary of at cold start, held until the manager confirms them, and
   *  their restart tail (./restart-hold.ts); default: nothing held. */
  hold?: RestartHold;
}

/** The follower's prepare and promote hooks of a node (./config-follower.ts). */
export function promotionHooks(o: PromotionHooksOptions): Required<Pick<FollowerHooks, 'prepare' | 'promote' | 'unconfirmed'>> {
  const { nodeId, cell, pool, shared, record, log } = o;
  const hold = o.hold ?? RestartHold.none();
  return {
    unconfirmed: () => hold.unconfirmed(cell.config(), nodeId, cell),
    prepare: async (shards, drain, planned) => {
      // Before the acknowledgement that lets the configuration commit: this node is still a backup of
      // the shards it may now be promoted for (../shared/trust.ts, what a later cold start applies).
      record.noteBackups(receivedShards(cell.config(), nodeId));
      if (drain.length > 0) await drainShards(shared, drain, o.shardCount, o.clock, o.sleep);
      if (planned) {
        // A move from a live primary that drained (§4.6): every version of the shard came from its
        // counter, so the counters are the floors; what a failed write left on some replicas only was
        // never acknowledged and stays below them. No b-log scan.
        const versions: Record<string, number> = {};
        for (const s of shards) {
          versions[s] = Number(Atomics.load(shared.versions, s));
          shared.marks?.cover(s, versions[s]); // told to the manager: the target continues after it
        }
        return { versions, entries: [], truncated: false };
      }
      const r = await gatherForPrepare(pool, shared, shards.filter((s) => shared.indexes[s]), defaultLimits);
      // A shard held since the restart (./restart-hold.ts): its restart tail goes in beside the b-log's.
      const tail = hold.tailOf(shards);
      const cut = newestWithin(tail, GATHER_BYTES_MAX, r.entries.reduce((n, e) => n + gatherEntryBytes(e), 0));
      r.entries.push(...cut.kept);
      if (cut.truncated) r.truncated = true;
      if (hold.truncated && tail.length > 0) r.truncated = true;
      return r;
    },
    promote: async (shards, floors, scatter, planned, already) => {
      const t0 = o.clock.now();
      const r = await promoteShards(pool, shared, shards, floors, defaultLimits, scatter, o.promotionLog(), planned, already);
      const t1 = o.clock.now();
      if (r.late > 0) log.error({ shards, late: r.late, event: 'late-block' }, `promotion of shard(s) ${shards.join(', ')} refused ${r.late} b-log block(s) as late (at or below a tombstone floor): only writes that were never acknowledged may be`);
      // Recorded before the promotion is reported done (and the shard serves): b-log blocks of these
      // shards at or above this version landed after the promotion and are never applied at cold start.
      // A shard promoted again on its own primary (a restart confirmed) keeps the version it was first
      // promoted at: nothing of it in the b-log is newer than that -- unless that promotion never ran
      // (the node was killed between the prepare and the promotion: nothing recorded for this tenure,
      // ../shared/trust.ts 3), and this confirmation is its promotion. One write for all the shards.
      record.notePromotedAll(new Map(shards.filter((s) => !already?.has(s) || !record.hasPromotion(s)).map((s) => [s, r.versions[s]!])));
      if (r.tailwind.buffers > 0) logTailwindScan(log, `promotion of shard(s) ${shards.join(', ')}`, r.tailwind);
      log.info({ shards, scanMs: +(t1 - t0).toFixed(1), recordMs: +(o.clock.now() - t1).toFixed(1), segments: r.segments, blocks: r.blocks }, 'promotion steps');
      hold.confirmed(shards);
      return { entries: r.indexed, scattered: r.scattered.absorbed };
    },
  };
}
