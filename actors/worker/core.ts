// What the jobs of a ROWAN-KV worker share (actors/worker/kv.ts composes them): its dependencies, the
// pool reader, the request counters, its read-epoch slot and the shard-index lookup.
import type { ClusterConfig } from '../../config/cluster.js';
import type { Limits } from '../../config/limits.js';
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import { ReadEpochs } from '../shared/gc-state.js';
import type { KvShared, ReplicaChannel } from '../shared/node-shared.js';
import type { ConfigCell } from '../shared/config-cell.js';
import { monotonicClock, wallClock, type Clock } from '../../config/base/clock.js';
import { PoolEntryReader } from '../../shm/entry-reader.js';
import type { ShardIndex } from '../../shm/index.js';
import type { PersistentRegion } from '../../config/base/region.js';
import type { TLog } from '../../shm/tlog.js';
import type { RequestHistograms } from '../../shm/histogram.js';

import type { FailedWriteLog } from '../shared/failed-writes.js';

export interface KvWorkerDeps {
  nodeId: number;
  config: () => ClusterConfig;
  /** The node's configuration cell: lease fencing and failover blocks per request (absent in unit
   *  tests that drive a static configuration: then only the term is checked). */
  cell?: ConfigCell;
  /** Monotonic ms, the same in every thread (lease checks). */
  clock?: Clock;
  /** Wall-clock Unix ms for expiry deadlines (config/base/clock.ts wallClock unless injected). */
  wallClock?: Clock;
  region: PersistentRegion;
  tlog: TLog;
  shared: KvShared;
  /** The replication channel to a backup node for a shard (opened lazily by the caller, then cached;
   *  only rpc mode looks at the shard: it picks the backup worker port shard % workerPorts.length). */
  replica: (nodeId: number, shard: number) => Promise<ReplicaChannel>;
  limits: Limits;
  /** rpc mode: the log this worker appends replicated entries to as a backup (absent: REPLICATE refused). */
  backupLog?: TLog;
  /** This worker's id and the node's worker count (commit tracking and read epochs, when shared.gc). */
  workerId?: number;
  workers?: number;
  /** Where a write that fails after its t-log append is recorded (../shared/failed-writes.ts); absent in
   *  unit tests without a data dir. */
  failed?: FailedWriteLog;
  /** Request latency histograms (slot = this worker's id) and the clock that times requests. */
  metrics?: { histograms: RequestHistograms; clock: Clock };
  /** A PUT/DEL is starting: the CommitVer period must run again (the worker actor's wakeTick). */
  onWrite?: () => void;
}

export interface KvWorkerStats {
  puts: number;
  dels: number;
  gets: number;
  replicationWrites: number;
  /** rpc mode, as a backup: REPLICATE blocks taken and entries appended to the backup log. */
  replicatedBlocks: number;
  replicatedEntries: number;
  /** Multi-block REPLICATE entries dropped half-received (limits.partialEntryMs / partialEntriesMax). */
  partialEntriesDropped: number;
  /** PUT/DEL refused because the pool (here or at a backup) had no free segment. */
  pmFull: number;
}

export class WorkerCore {
  readonly reader: PoolEntryReader;
  readonly stats: KvWorkerStats = { puts: 0, dels: 0, gets: 0, replicationWrites: 0, replicatedBlocks: 0, replicatedEntries: 0, partialEntriesDropped: 0, pmFull: 0 };
  private readonly epochSlot: number;
  private lastWall = 0;

  constructor(readonly d: KvWorkerDeps) {
    this.reader = new PoolEntryReader(d.region, d.limits);
    this.epochSlot = ReadEpochs.slotOf('worker', d.workerId ?? 0);
  }

  /** Bracket a synchronous stretch that takes addresses from an index: they stay readable until exit
   *  (read epochs, actors/shared/gc-state.ts). Explicit calls, no closure, on the PUT/GET path. */
  enterEpoch(): void {
    this.d.shared.gc?.epochs.enter(this.epochSlot);
  }

  exitEpoch(): void {
    this.d.shared.gc?.epochs.exit(this.epochSlot);
  }

  /** Monotonic ms (the injected clock; process-wide, see config/base/clock.ts). */
  now(): number {
    return (this.d.clock ?? monotonicClock).now();
  }

  /** The time expiry deadlines are compared with and decided from: the wall clock in Unix ms, never
   *  going back within this process (a clock stepped back does not bring expired keys back here;
   *  docs/redis.md "Expiry" says what bounds it across nodes). */
  wallNow(): number {
    const t = Math.floor((this.d.wallClock ?? wallClock).now());
    if (t > this.lastWall) this.lastWall = t;
    return this.lastWall;
  }

  indexOf(shard: number): ShardIndex {
    const index = this.d.shared.indexes[shard];
    if (!index) throw new RowanError(ErrorCodes.WRONG_SHARD, `this node holds no replica of shard ${shard}`);
    return index;
  }

  /** After a write was replicated: the shard's index, still held. One gone meanwhile leaves the write
   *  on the backups, so the failure is outcome-unknown -- never WRONG_SHARD, which says "not applied"
   *  and which the RESP ports run again (resp/reroute.ts). */
  stillHeld(shard: number): ShardIndex {
    const index = this.d.shared.indexes[shard];
    if (!index) throw new RowanError(ErrorCodes.OUTCOME_UNKNOWN, `shard ${shard} left this node while its write was replicating; it may or may not survive there`);
    return index;
  }
}
