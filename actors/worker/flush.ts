// FLUSHDB/FLUSHALL on the primary (issue 27): one FLUSH entry per shard, not a DEL per key. The path of
// a PUT (./primary.ts) without a key:
//
//   claim the shard's next version f -> append FLUSH(shard, f) to this worker's t-log and persist ->
//   Rowan writes to every backup -> once all are acknowledged (lease and role still held), raise the
//   shard index's floor to f and drop the index items below it in one pass (../shared/flush-floor.ts)
//   -> done.
//
// The flush is ordered with the shard's other writes by its version: a PUT that claimed a lower version
// is flushed (if it indexes after the floor rose, the index refuses or removes it), one that claimed a
// higher version survives. Every replica applies the same entry at the same floor (digest, promotion,
// cold start), and GC reclaims the entries below it like any replaced entry -- later, on every replica.
import type { ClusterConfig } from '../../config/cluster.js';
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import { defaultTimings } from '../../config/timings.js';
import type { CommitTracker } from '../shared/commit.js';
import { applyFlush } from '../shared/flush-floor.js';
import { nextVersion } from '../shared/node-shared.js';
import { encodeBlocks, EntryType, type EntryInput } from '../../shm/log.js';
import type { WorkerCore } from './core.js';
import { DEL_KEEP_FREE, type PrimaryPath } from './primary.js';

export class FlushPath {
  constructor(
    private readonly core: WorkerCore,
    private readonly commit: CommitTracker | null,
    private readonly primary: PrimaryPath,
  ) {}

  /** Flush one shard this node is primary of; returns the index items it dropped. */
  async flushShard(shard: number, clientTerm: number): Promise<number> {
    const { d } = this.core;
    const c = await this.admit(shard, clientTerm);
    const e: EntryInput = { type: EntryType.Flush, shard, version: 0 };
    e.version = this.commit ? this.commit.claim(shard) : nextVersion(d.shared.versions, shard);
    const now = d.config().shards[shard]!;
    const placement = c.shards[shard]!;
    const backups = now === placement || now.primary !== d.nodeId ? placement.backups : [...new Set([...placement.backups, ...now.backups])];
    let addr = -1;
    try {
      const cell = d.cell;
      if (cell && (cell.reconfiguring(shard) || cell.term() !== c.term)) {
        throw new RowanError(ErrorCodes.STALE_TERM, `node ${d.nodeId} is reconfiguring (term ${cell.term()}, pending ${cell.pendingTerm()}); not applied, retry`);
      }
      addr = d.tlog.append(e, true, DEL_KEEP_FREE); // ① a flush makes room, as a DEL does
      if (backups.length > 0) await this.primary.replicateAll(backups, shard, encodeBlocks(e, d.limits)); // ②
      this.core.stillHeld(shard); // OUTCOME_UNKNOWN otherwise
      if (cell && !cell.leaseValid(this.core.now())) {
        throw new RowanError(ErrorCodes.OUTCOME_UNKNOWN, `the lease expired while shard ${shard}'s flush was replicating; it may or may not survive the failover`);
      }
      if (cell && cell.term() !== c.term) this.primary.checkStillPrimary(shard);
      this.core.enterEpoch();
      try {
        return Math.max(0, applyFlush(d.shared, shard, e.version, addr, this.core.reader)); // ③
      } finally {
        this.core.exitEpoch();
      }
    } catch (err) {
      if (addr >= 0) d.failed?.record(shard, e.version, addr);
      throw err;
    } finally {
      if (addr >= 0) d.tlog.release(addr);
      this.commit?.finish(shard, e.version);
    }
  }

  /** The admission of a write (primary.ts admit), for a shard rather than a key. */
  private async admit(shard: number, clientTerm: number): Promise<ClusterConfig> {
    const { d } = this.core;
    const cell = d.cell;
    let waitedMs = 0;
    for (;;) {
      const t0 = this.core.now();
      if (!cell || cell.admit(clientTerm, t0) === 'ok') {
        const c = d.config();
        if (clientTerm !== c.term) throw new RowanError(ErrorCodes.STALE_TERM, `request routed with term ${clientTerm}, this node is at term ${c.term}`);
        if (c.shards[shard]?.primary !== d.nodeId) throw new RowanError(ErrorCodes.WRONG_SHARD, `shard ${shard} is not served by node ${d.nodeId}`);
        if (!cell?.shardBlocked(shard)) return c;
      }
      if (!cell || waitedMs >= defaultTimings.admitWaitMs) {
        throw new RowanError(ErrorCodes.STALE_TERM, `node ${d.nodeId} is reconfiguring (shard ${shard} blocked); retry`);
      }
      await cell.changed(defaultTimings.admitWaitMs - waitedMs);
      waitedMs += this.core.now() - t0;
    }
  }
}
