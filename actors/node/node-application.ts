// A node that serves ROWAN-KV: read the cluster configuration, create the shared shard versions and
// indexes, and rebuild them from the pool (cold start, §4.7) before any actor runs. The result rides in
// every worker's and digest's start message.
import type { TlsMaterial } from '../../runtime/net/tls.js';
import type { ClusterConfig } from '../../config/cluster.js';
import { nodeOf } from '../../config/cluster.js';
import { defaultLimits } from '../../config/limits.js';
import { defaultTimings } from '../../config/timings.js';
import { FileConfigStore } from '../../config/store.js';
import type { Pool } from '../../shm/pool.js';
import { monotonicClock, type Clock } from '../../config/base/clock.js';
import type { NodeApplication } from '../../runtime/application.js';
import { checksumNatively } from '../../shm/log-checksum.js';
import { collectGcStatus } from '../shared/gc-status.js';
import { ACTORS_PER_ROLE_MAX } from '../../config/base/ids.js';
import { RequestHistograms } from '../../shm/histogram.js';
import { REQUEST_OPS, createRequestHistograms, kvMetrics } from '../shared/node-metrics.js';
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import type { Logger } from '../../config/base/log.js';
import { SharedLog } from '../baselines/replication-writers.js';
import { ERDA_NOT_BUILT } from '../baselines/erda.js';
import { shmPaths } from '../../runtime/fabric/shm.js';
import { closeStaleQueue } from '../../runtime/rowan/stale-queue.js';
import { availableParallelism } from 'node:os';
import { rebuildIndexesParallel } from './recovery.js';
import { logTailwindScan } from './tailwind-recovery.js';
import { opLogReplayLine } from './op-log-replay.js';
import { ASYMNVM_CANNOT, ASYMNVM_MODE } from '../../config/asymnvm.js';
import { withTornTransactions } from './torn-txns.js';
import { FileFloorStore } from '../shared/floors.js';
import { FileMarkStore } from '../shared/version-marks.js';
import { dataDirFiles } from '../../config/base/files.js';
import { ConfigCell, holdUnconfirmedMoves } from '../shared/config-cell.js';
import { LeaseThread, spawnLeaseThread, type SpawnedLeaseThread } from './lease-thread-link.js';
import { PeerLeases } from '../shared/peer-lease.js';
import { promotionHooks } from './lease-hooks.js';
import { RestartHold } from './restart-hold.js';
import { CommitPoints, FileCommitPointStore } from '../shared/commit-points.js';
import { FailedWriteFile } from '../shared/failed-writes.js';
import { CopyReporter, copyOnThisThread } from './copy-reports.js';
import { CopyReports } from '../shared/copy-reports.js';
import { TLog } from '../../shm/tlog.js';
import { OwnerRole, SegmentState } from '../../shm/pool.js';
import { PROMOTION_ACTOR_ID } from '../../config/base/ids.js';
import { attachKvShared, createKvShared, heldShards, type KvSharedBuffers, type KvStart } from '../shared/node-shared.js';
import { LoadSampler, primaryShardBytes } from '../shared/shard-load.js';
import { setChecksumSeed } from '../../shm/log-checksum.js';
import { ReplicaRecord, coldStartBlogTrust, receivedShards, remoteOwnersOf } from '../shared/trust.js';
import { evictionLine } from './eviction.js';

export interface NodeKvOptions {
  /** Where the configuration is stored, for messages: the cluster JSON file (the embedded store,
   *  config/store.ts) or zk://host:port/znode. */
  clusterFile: string;
  /** The configuration, read already from a store that cannot be read synchronously (ZooKeeper, §4.7:
   *  a node reads it from the store at cold start). Absent: read clusterFile. */
  cluster?: ClusterConfig;
  nodeId: number;
  /** Keys each shard's index is sized for at start, and the most it may grow to (limits.indexKeysPerShard*). */
  keysPerShard?: number;
  /** The configuration manager ("host:port"): the node holds a lease with it, serves only while the
   *  lease holds, and follows its new configurations (§4.5). Absent: a static configuration, no lease. */
  manager?: string;
  keysPerShardMax?: number;
  /** The cluster secret (re-replication copies from the primary's client port, which demands it). */
  secret?: Uint8Array | null;
  /** TLS (runtime/net/tls.ts) for the lease connection and re-replication's copies: this node's
   *  certificate and the cluster CA; absent or null = plain TCP. */
  tls?: TlsMaterial | null;
  /** Threads that rebuild the indexes from the logs at cold start (default: the CPUs, at most 4). */
  coldStartThreads?: number;
  /** How often load statistics go to the manager (resharding.periodMs, §4.6). */
  loadPeriodMs?: number;
  /** The node was failed over and restarts (`rowan start --rejoin`), with the pool it kept or an empty
   *  one: it asks the manager to take it back as a member holding no shard; re-replication then gives
   *  it some, each reconciled with its primary (or copied) before it counts. A node listed dead that
   *  does not say so is told `evicted`: it never serves its stale data. */
  rejoin?: boolean;
}

export const DEFAULT_KEYS_PER_SHARD = defaultLimits.indexKeysPerShard;

/** ROWAN-KV as the node's application: cold start before the actors, its state in the start messages
 *  of the roles that serve it, and the storage/GC section of the node's status. */
export function kvApplication(o: NodeKvOptions, dataDir: string, clock: Clock = monotonicClock): NodeApplication {
  let start: KvStart | undefined;
  let nodePool: Pool | undefined;
  let lease: { client: LeaseThread; copies: CopyReporter; peers: PeerLeases } | null = null;
  let boot: NodeBoot | undefined;
  let spawned: SpawnedLeaseThread | undefined;
  /** Whether the node runs a migration actor (it copies shards); else this thread does. */
  let migrationActor = false;
  return {
    async prepare(pool, log) {
      nodePool = pool;
      boot = await prepareNodeKvTrusted(o, dataDir, pool, log, clock);
      start = boot.start;
      // The lease thread loads while the actors start; it holds the lease once started() starts it.
      if (o.manager !== undefined) spawned = spawnLeaseThread(o.nodeId, log);
    },
    // The nic takes it too: it grants one-sided regions only to live members (actors/nic/nic-verbs.ts).
    // The migration actor copies shards only with a manager (start.copies).
    payload: (role) => {
      if (role === 'migration' && start?.copies) migrationActor = true;
      return role === 'worker' || role === 'digest' || role === 'clean' || role === 'nic' || (role === 'migration' && start?.copies) ? start : undefined;
    },
    started(log) {
      // This thread verifies b-log blocks only at a failover, in code V8 never optimised (its scans).
      checksumNatively();
      const cell = ConfigCell.attach(start!.cell);
      saveCommitPoints(start!, nodePool!, dataDir, log);
      if (o.manager === undefined) {
        log.info('no configuration manager (--manager): static configuration, no lease, no failover');
        return;
      }
      lease = startLease(o.manager, o.nodeId, cell, nodePool!, start!, clock, log, o.rejoin ?? false, o.secret ?? null, o.tls ?? null, boot!, o.loadPeriodMs ?? 500, dataDir, spawned, migrationActor);
    },
    stopping() {
      lease?.copies.stop();
      lease?.peers.stop();
      lease?.client.stop();
      if (!lease) void spawned?.worker.terminate(); // stopped before it held the lease
    },
    status: (pool, actors, uptimeMs) => {
      const cell = start ? ConfigCell.attach(start.cell) : null;
      const until = cell?.leaseUntil() ?? Infinity;
      return {
        ...collectGcStatus(pool, start?.shared.gc, actors, uptimeMs, start?.shared.indexes),
        ...(cell
          ? {
              config: {
                term: cell.term(),
                pendingTerm: cell.pendingTerm(),
                lease: o.manager === undefined ? 'none' : cell.evicted() ? 'evicted' : until > clock.now() ? `valid ${(until - clock.now()).toFixed(0)} ms` : 'expired',
                ...(lease ? { leaseThread: leaseThreadPriority(lease.client) } : {}),
              },
            }
          : {}),
      };
    },
    metrics: (e, pool, actors, uptimeMs) =>
      kvMetrics(e, {
        term: start ? ConfigCell.attach(start.cell).term() : 0,
        histograms: start?.metrics ? new RequestHistograms(start.metrics, ACTORS_PER_ROLE_MAX, REQUEST_OPS.length) : null,
        pool,
        actors,
        storage: collectGcStatus(pool, start?.shared.gc, actors, uptimeMs, start?.shared.indexes),
      }),
  };
}

/** --manager host:port[,host:port...]: the configuration managers, active and standbys (tried in turn). */
export function parseManagers(manager: string): { host: string; port: number }[] {
  return manager.split(',').map((one) => {
    const at = one.lastIndexOf(':');
    const host = one.slice(0, at);
    const port = Number(one.slice(at + 1));
    if (at <= 0 || !Number.isInteger(port) || port < 1 || port > 65535) throw new RowanError(ErrorCodes.BAD_ARGUMENT, `--manager: '${one}' is not host:port`);
    return { host, port };
  });
}

/** The CommitVers the workers computed, saved now and then (../shared/commit-points.ts): a later
 *  restart's tail starts above them, and a primary's tombstone sweep drops nothing above them. */
function saveCommitPoints(start: KvStart, pool: Pool, dataDir: string, log: Logger): void {
  const g = start.shared.gc;
  if (!g) return;
  const points = new CommitPoints(start.shared.versions, g, new FileCommitPointStore(dataDirFiles(dataDir).commitPoints, pool.poolId));
  const failed = (err: unknown) => log.warn({ err: (err as Error).message }, 'could not save the commit points (a later restart lists a longer tail; tombstones wait)');
  // Saved off the event loop (the lease is renewed on it); a save still under way skips the turn.
  setInterval(() => {
    try {
      const r = points.flush();
      if (r instanceof Promise) r.catch(failed);
    } catch (err) {
      failed(err);
    }
  }, defaultTimings.commitPointsSaveMs).unref();
}

/** How the lease thread is scheduled, for status: `SCHED_FIFO 1`, `nice -10 (SCHED_FIFO refused:
 *  EPERM)`, `ordinary (...)`. */
function leaseThreadPriority(t: LeaseThread): string {
  const p = t.priority;
  if (p === null) return 'starting';
  const why = p.refused.length > 0 ? ` (refused: ${p.refused.join('; ')})` : '';
  return p.kind === 'fifo' ? `SCHED_FIFO ${p.level}` : p.kind === 'nice' ? `nice ${p.level}${why}` : `ordinary${why}`;
}

function startLease(
  manager: string,
  nodeId: number,
  cell: ConfigCell,
  pool: Pool,
  start: KvStart,
  clock: Clock,
  log: Logger,
  rejoin: boolean,
  secret: Uint8Array | null,
  tls: TlsMaterial | null,
  boot: NodeBoot,
  loadPeriodMs: number,
  dataDir: string,
  spawned: SpawnedLeaseThread | undefined,
  migrationActor: boolean,
): { client: LeaseThread; copies: CopyReporter; peers: PeerLeases } {
  const { record, hold } = boot;
  const managers = parseManagers(manager);
  // Promotions hand out versions (their gap): this thread covers them with the node's marks.
  const shared = attachKvShared(start.shared, pool.region, new FileMarkStore(dataDirFiles(dataDir).marks, pool.poolId));
  // The promotion log: one instance on this thread, appended to by promotions and re-replication.
  let plog: TLog | null = null;
  const promotionLog = (): TLog => (plog ??= TLog.recover(pool, PROMOTION_ACTOR_ID, defaultLimits, OwnerRole.Digest));
  let client: LeaseThread | null = null;
  let peers: PeerLeases | null = null;
  // The migration actor copies (../migration/copy.ts); this thread reports its copies to the manager.
  // A node run without one (--roles without migration) copies on this thread: the same code, slower
  // (its absorbing shares this thread with promotions).
  const reports = CopyReports.attach(start.copies!.reports, start.cluster.shardCount);
  const copies = new CopyReporter(nodeId, cell, reports, clock, (m) => client?.notify(m));
  const here = migrationActor ? null : copyOnThisThread({ nodeId, cell, pool, shared, limits: defaultLimits, clock, logger: log, reports, secret, tls, kept: boot.kept });
  const sampler = shared.load ? new LoadSampler(shared.load, start.cluster.shardCount) : null;
  // The lease is renewed on a thread of its own (./lease-thread.ts); the rounds are followed here.
  client = new LeaseThread({ managers, nodeId, cell, clock, log, rejoin, secret, tls, loadPeriodMs, ...(spawned ? { spawned } : {}), hooks: {
    ...promotionHooks({ nodeId, cell, pool, shared, shardCount: start.cluster.shardCount, record, clock, log, promotionLog, hold }),
    configured: () => {
      record.noteBackups(receivedShards(cell.config(), nodeId));
      here?.onConfig();
    },
    ...(sampler ? { load: () => sampler.sample() } : {}),
    ...(shared.gc ? { bytes: () => primaryShardBytes(cell.config(), nodeId, shared.gc!.live) } : {}),
    tick: () => peers?.tick(), // the lease thread says when peer leases have something to do (no timer here)
    // An evicted node's data is stale and it is no member: it stops, after answering LEASE_EXPIRED for
    // a moment to clients that still route to it, so that its supervisor (rowan cluster) restarts it
    // with --rejoin -- it does not sit in the cluster serving nothing (a lease lost to a stall of the
    // machine, not a crash, would otherwise leave the cluster a replica short for good).
    evicted: (retired) => {
      log.error({ exitInMs: defaultTimings.evictedExitMs, retired }, evictionLine(retired, defaultTimings.evictedExitMs));
      setTimeout(() => process.kill(process.pid, 'SIGTERM'), defaultTimings.evictedExitMs).unref();
    },
  } });
  // Peer leases (../shared/peer-lease.ts): the node serves on while the manager is unreachable, as long as
  // every other member vouches that nothing can have taken its shards.
  const lc = client;
  peers = new PeerLeases(nodeId, cell, clock, log, secret, defaultLimits, tls, () => lc.leaseTiming(), (until) => cell.setPeerLease(until), () => cell.managerLeaseUntil());
  client.start();
  copies.start();
  here?.onConfig(); // resume copies the stored configuration still marks (a restart mid-copy)
  log.info({ manager, rejoin }, `holding a lease with the configuration manager at ${manager}${rejoin ? ' (rejoining: it holds no shard until re-replication gives it some)' : ''}`);
  return { client, copies, peers };
}

export async function prepareNodeKv(o: NodeKvOptions, dataDir: string, pool: Pool, log: Logger, clock: Clock = monotonicClock): Promise<KvStart> {
  return (await prepareNodeKvTrusted(o, dataDir, pool, log, clock)).start;
}

/** What the cold start hands the lease: the node's replica record (../shared/trust.ts), which the lease
 *  keeps up to date, and the primaries held until the manager confirms them (./restart-hold.ts). */
interface NodeBoot {
  start: KvStart;
  record: ReplicaRecord;
  hold: RestartHold;
  /** Shards the cold start found entries of: the highest version held of each (keptShards). */
  kept: ReadonlyMap<number, number>;
}

/** prepareNodeKv, also returning what the lease needs of the cold start (NodeBoot). */
async function prepareNodeKvTrusted(o: NodeKvOptions, dataDir: string, pool: Pool, log: Logger, clock: Clock): Promise<NodeBoot> {
  const cluster: ClusterConfig = o.cluster ?? new FileConfigStore(o.clusterFile).readSync();
  const me = nodeOf(cluster, o.nodeId);
  if (me.dataDir !== dataDir) {
    throw new RowanError(ErrorCodes.BAD_CONFIG, `node ${o.nodeId} of ${o.clusterFile} keeps its data in ${me.dataDir}, not ${dataDir}`);
  }
  // Senders of other nodes may still have the previous incarnation's receive queue mapped (after a
  // crash it was never shut down): close it and wait for the copies they reserved before reading the
  // b-log and recycling its segments, so nothing lands behind the scan or in a reused segment.
  const stale = await closeStaleQueue(shmPaths(dataDir).srq);
  if (stale && stale.holds > 0) {
    log.warn({ ...stale }, `cold start: the previous receive queue had ${stale.holds} copy(ies) in flight; waited ${stale.waitedMs.toFixed(0)} ms for them (${stale.voided} left by senders that died mid-write)`);
  }
  // With a manager the node may be given any shard later (re-replication, §4.5 phase 3): every shard
  // gets an index now (they are SharedArrayBuffers handed to the actors at start; unused ones stay small).
  const buffers = createKvShared(cluster, o.nodeId, o.keysPerShard ?? DEFAULT_KEYS_PER_SHARD, pool, o.keysPerShardMax, o.manager !== undefined);
  // What the b-log pass may apply (../shared/trust.ts): the record of shards this node received replicated data
  // of, first brought up to date with this configuration's backups (before anything can land).
  // Every block this node writes or reads is keyed with the cluster's seed (shm/log-checksum.ts); the
  // record refuses a seed other than the one the pool was written with.
  const seed = cluster.checksumSeed ?? 0;
  const poolHadData = pool.segmentsInState(SegmentState.Free).length < pool.segmentCount;
  const record = ReplicaRecord.load(dataDir, pool.poolId, poolHadData, heldShards(cluster, o.nodeId), seed);
  setChecksumSeed(seed);
  record.noteBackups(receivedShards(cluster, o.nodeId));
  const trust = { blog: coldStartBlogTrust(cluster, o.nodeId, record), remoteOwners: remoteOwnersOf(cluster, o.nodeId) };
  // The tombstone floors this node persisted as a backup (../shared/floors.ts): late b-log blocks under them
  // are refused by the b-log pass, and the shared floors start there.
  const floors = new FileFloorStore(dataDirFiles(dataDir).floors, pool.poolId).load();
  // Every counter resumes at or above the mark persisted before its versions left the node.
  const marks = new FileMarkStore(dataDirFiles(dataDir).marks, pool.poolId).load();
  // Writes that failed after their t-log append, and transactions a crash cut short there
  // (./torn-txns.ts): not indexed, not in the restart tail.
  const failed = withTornTransactions(pool, defaultLimits, FailedWriteFile.load(dataDirFiles(dataDir).failedWrites, pool.poolId));
  let last = 0;
  const threads = o.coldStartThreads ?? Math.min(4, availableParallelism());
  const rep = await rebuildIndexesParallel(pool, buffers, defaultLimits, clock, threads, (done, total) => {
    const now = clock.now();
    if (now - last > 1000 || done === total) {
      last = now;
      log.info({ done, total, threads }, `cold start: rebuilding indexes from the logs, ${done} of ${total} segments`);
    }
  }, trust, { floors, marks, failed });
  if (rep.untrusted > 0 || rep.freedForeign > 0) {
    log.warn(
      { untrusted: rep.untrusted, freedForeign: rep.freedForeign },
      `cold start: ${rep.untrusted} b-log block(s) not applied (a shard this node did not receive them for, or an implausible version) and ${rep.freedForeign} region(s) of owner ids no other node holds freed`,
    );
  }
  if (rep.tailwind.buffers > 0) logTailwindScan(log, 'cold start', rep.tailwind);
  if (rep.late > 0) {
    log.error({ late: rep.late, event: 'late-block' }, `cold start: refused ${rep.late} b-log block(s) as late (at or below a persisted tombstone floor, in a segment digest never finished): only writes that were never acknowledged may be`);
  }
  const kept = o.manager !== undefined ? keptShards(buffers) : new Map<number, number>();
  if (o.rejoin && kept.size > 0) {
    log.warn({ shards: [...kept.keys()], entries: rep.indexed }, `rejoin: the pool kept ${rep.indexed} entries of ${kept.size} shard(s); none is served or counted as a replica until reconciled with its primary (docs/failover.md "Rejoin")`);
  }
  log.info(
    { ...rep, term: cluster.term, shards: heldShards(cluster, o.nodeId).length, nodes: cluster.nodes.length },
    `cold start: ${rep.indexed} entries indexed from ${rep.logSegments} log and ${rep.blogSegments} b-log segments in ${rep.ms.toFixed(0)} ms`,
  );
  if (cluster.replication === ASYMNVM_MODE) log.warn({ opLog: rep.opLog }, `cold start: ${opLogReplayLine(rep.opLog)}; ${ASYMNVM_CANNOT}`);
  const cell = ConfigCell.create(cluster, o.manager !== undefined, clock);
  const held = o.manager !== undefined ? holdUnconfirmedMoves(cell, cluster, o.nodeId) : [];
  if (held.length > 0) log.warn({ shards: held, term: cluster.term }, `cold start: shard(s) ${held.join(', ')} moving here at term ${cluster.term} wait for the manager's commit (the move may never have been prepared)`);
  const hold = o.manager !== undefined ? RestartHold.atColdStart(pool, cell, cluster, o.nodeId, defaultLimits, new FileCommitPointStore(dataDirFiles(dataDir).commitPoints, pool.poolId).load(), failed) : RestartHold.none();
  if (hold.size > 0) {
    log.warn({ shards: hold.size, tail: hold.tailEntries, truncated: hold.truncated, term: cluster.term }, `cold start: the ${hold.size} shard(s) this node is primary of wait for the manager to confirm it (${hold.tailEntries} entries of their restart tail to spread to their backups first)`);
  }
  const start: KvStart = { cluster, cell: cell.buffer, nodeId: o.nodeId, shared: buffers, metrics: createRequestHistograms(ACTORS_PER_ROLE_MAX).buffer };
  if (cluster.replication === 'erda') log.warn({ mode: 'erda' }, ERDA_NOT_BUILT);
  if (cluster.replication === 'share') {
    // Share-KV: one remote log per (this node, backup node), its cursor shared by all our workers.
    start.shareLogs = {};
    for (const n of cluster.nodes) if (n.id !== o.nodeId) start.shareLogs[n.id] = SharedLog.create({ nodeId: o.nodeId }).buffer;
  }
  if (o.manager !== undefined) start.copies = { reports: CopyReports.create(cluster.shardCount).buffer, kept: [...kept], tls: o.tls ?? null };
  return { start, record, hold, kept };
}

/** Shards whose index the cold start filled, with the highest version held of each (a backup that
 *  catches up on one reconciles with its primary instead of copying it all: ../migration/reconcile.ts). */
function keptShards(buffers: KvSharedBuffers): Map<number, number> {
  const shared = attachKvShared(buffers);
  const kept = new Map<number, number>();
  shared.indexes.forEach((index, s) => {
    if (index && index.items() > 0) kept.set(s, Number(Atomics.load(shared.versions, s)));
  });
  return kept;
}
