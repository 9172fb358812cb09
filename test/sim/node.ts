// One simulated ROWAN-KV node: the real role logic of a node process, composed single-threaded on a
// SimRegion -- the worker's PUT/GET/DEL (KvWorker), the control actor's Rowan receiver over a receive
// queue in memory (RowanReceiver + SharedReceiveQueue), one digest actor (DigestSegments), one clean
// actor (Cleaner), the cold start (rebuildIndexes) a node runs before its actors, and the node's side
// of the control plane (./control.ts: configuration cell, lease, prepare/commit, promotion, peer
// leases). The event loop drives each role's periodic work; a crash stops all of it at once and a boot
// starts a new incarnation from the region's durable image and the stored configuration, exactly as a
// node process restarts from its pool and the cluster file.
import type { ClusterConfig } from '../../config/cluster.js';
import { shardOfKey } from '../../config/slots.js';
import { defaultLimits } from '../../config/limits.js';
import { KvWorker } from '../../actors/worker/kv.js';
import { DigestSegments } from '../../actors/digest/segments.js';
import { Cleaner, type CleanerOptions } from '../../actors/clean/gc.js';
import { rebuildIndexes } from '../../actors/node/recovery.js';
import { MemoryFailedWrites } from '../../actors/shared/failed-writes.js';
import type { ConfigCell } from '../../actors/shared/config-cell.js';
import { backupNow, primarySinceStart } from '../../actors/clean/tombstones.js';
import { ReplicaRecord, coldStartBlogTrust, receivedShards, remoteOwnersOf } from '../../actors/shared/trust.js';
import { isCatchingUp } from '../../config/cluster.js';
import type { Logger } from '../../config/base/log.js';
import { attachKvShared, createKvShared, type KvShared, type KvSharedBuffers, type ReplicaChannel } from '../../actors/shared/node-shared.js';
import { RowanReceiver } from '../../runtime/rowan/receiver.js';
import { SharedReceiveQueue, type ReceiveQueue } from '../../runtime/rowan/srq.js';
import { Pool } from '../../shm/pool.js';
import { poolGeometry } from '../../shm/pool-layout.js';
import { TLog } from '../../shm/tlog.js';
import { MemoryFloorStore, type FloorStore } from '../../actors/shared/floors.js';
import { MemoryShardVersionStore, type ShardVersionStore } from '../../actors/shared/shard-versions-file.js';
import type { RowanConnection } from '../../runtime/fabric/fabric.js';
import type { Transport } from '../../runtime/fabric/transport.js';
import type { EventLoop } from './loop.js';
import { SimCrash, SimRegion } from './region.js';
import { askPeer, NodeControl } from './control.js';
import type { SimManager, SimStore } from './manager.js';
import type { SimNet } from './net.js';
import { SimTimers } from './timers.js';

export interface SimNodeOptions {
  segmentBytes: number;
  segmentCount: number;
  reserveSegments: number;
  keysPerShard: number;
  /** The most an index may grow to (small: a growable buffer reserves its maximum). */
  keysPerShardMax: number;
  /** Receiver: segments kept posted, per batch, and the Used grace (ms). */
  preallocate: number;
  batch: number;
  graceMs: number;
  /** Periods of the roles' loops (ms). */
  controlTickMs: number;
  cleanPeriodMs: number;
  commitVerPeriodMs: number;
  liveThresholdPercent: number;
  /** Receiver: how long a Used buffer waits for copies still to come before it is fenced (ms). */
  holdTimeoutMs: number;
  /** The receiver as it was before issue 10's fix: it hands buffers on without looking at the
   *  queue's holds (to show the stalled-sender seed still fails without the fix). */
  receiverIgnoresHolds?: boolean;
  /** Mutation: the writes that failed after their t-log append are not remembered (a cold start indexes them). */
  forgetsFailedWrites?: boolean;
  /** Mutation: a restarted primary serves at once, unconfirmed (actors/node/restart-hold.ts not used). */
  servesUnconfirmed?: boolean;
  /** False: no manager (a static configuration, no lease: ./control.ts); default true. */
  managed?: boolean;
  /** Mutation hooks (the mutation test): alter the shared state or the cleaner a node boots with. */
  mutateShared?: (s: KvShared) => void;
  makeCleaner?: (o: CleanerOptions) => Cleaner;
  /** Period of the clean actor's tombstone sweep (ms; actors/clean/tombstones.ts). */
  tombstoneSweepMs: number;
  makeSweep?: CleanerOptions['makeSweep'];
  /** Where a node keeps its persisted tombstone floors across crashes (actors/shared/floors.ts); the
   *  mutation test substitutes a broken one. Default: memory that survives the node's crashes. */
  makeFloorStore?: () => FloorStore;
  /** Likewise the persisted version marks (actors/shared/version-marks.ts). */
  makeMarkStore?: () => ShardVersionStore;
}

/** The simulated fabric, per incarnation of a node (its connections die with it). */
export type TransportFor = (node: SimNode) => Transport;

/** The rest of the simulated cluster a node talks to. */
export interface SimEnv {
  loop: EventLoop;
  net: SimNet;
  store: SimStore;
  manager: SimManager;
  nodes: SimNode[];
  log: (node: number) => Logger;
}

export class SimNode {
  readonly region: SimRegion;
  up = false;
  /** Incarnation: bumped at every boot. Work scheduled by an older incarnation does nothing. */
  inc = 0;
  pool!: Pool;
  srq: SharedReceiveQueue | null = null;
  receiver!: RowanReceiver;
  buffers!: KvSharedBuffers;
  shared!: KvShared;
  worker!: KvWorker;
  digest!: DigestSegments;
  cleaner!: Cleaner;
  control!: NodeControl;
  cell!: ConfigCell;
  /** The manager removed this node (a failover): it stays down (it would come back with --rejoin). */
  evicted = false;
  /** Told of every entry the worker appends to its t-log, with the version it claimed (the simulator's
   *  own bookkeeping: ./clients.ts records the version of each PUT/DEL it sent). */
  onAppend: ((key: Uint8Array, version: number) => void) | null = null;
  private used: number[] = [];
  private channels = new Map<number, RowanConnection & { broken?: boolean }>();
  private transport!: Transport;
  readonly counts = { boots: 0, crashes: 0, digested: 0, cleaned: 0, quarantined: 0, tombstonesDropped: 0, tombstonesDroppedOnBackup: 0 };
  /** The node's persisted tombstone floors: durable, like a file in its data dir. */
  private readonly floorStore: FloorStore;
  /** The node's persisted version marks (actors/shared/version-marks.ts): durable likewise. */
  private readonly markStore: ShardVersionStore;
  /** The commit points a primary saves (actors/shared/commit-points.ts), outliving crashes like a file. */
  private readonly pointStore = new MemoryShardVersionStore();
  /** The writes that failed after their t-log append (actors/shared/failed-writes.ts), outliving crashes. */
  private readonly failedStore = new MemoryFailedWrites();
  /** The node's replica record (actors/shared/trust.ts): durable, like replicas.json in its data dir. */
  private readonly record = ReplicaRecord.inMemory();
  /** The configuration this incarnation started with (read from the store at boot). */
  private cluster!: ClusterConfig;
  private readonly loop: EventLoop;

  constructor(
    readonly id: number,
    private readonly env: SimEnv,
    private readonly o: SimNodeOptions,
    private readonly transportFor: TransportFor,
    /** Called when a role's code throws something other than SimCrash (a broken invariant). */
    private readonly onError: (node: number, where: string, err: unknown) => void,
  ) {
    this.loop = env.loop;
    this.region = new SimRegion(poolBytesFor(o), id);
    this.floorStore = o.makeFloorStore?.() ?? new MemoryFloorStore();
    this.markStore = o.makeMarkStore?.() ?? new MemoryShardVersionStore();
  }

  /** Whether the stored configuration names this node (a spare is added later, a decommissioned
   *  node removed: neither starts). */
  member(): boolean {
    return this.env.store.cfg.nodes.some((n) => n.id === this.id);
  }

  /** Start a new incarnation from the region's durable image (the first boot formats it). */
  boot(): void {
    if (this.region.crashed) this.region.restart();
    // Senders still holding the previous incarnation's queue get SRQ_CLOSED (closeStaleQueue's job).
    this.srq?.shutdown();
    this.inc++;
    this.counts.boots++;
    this.used = [];
    this.channels.clear();
    this.transport = this.transportFor(this);
    const o = this.o;
    const limits = defaultLimits;
    const inc = this.inc;
    this.cluster = structuredClone(this.env.store.cfg);
    const cluster = this.cluster;
    const timers = new SimTimers(this.loop, ['node', this.id, inc], () => this.up && this.inc === inc, (w, e) => this.onError(this.id, w, e));
    this.pool = Pool.onRegion(this.region, { segmentBytes: o.segmentBytes, segmentCount: o.segmentCount, reserveSegments: o.reserveSegments });
    // With a manager every shard gets an index (a node may be given any shard later), as in node-kv.ts.
    const managed = o.managed ?? true;
    this.buffers = createKvShared(cluster, this.id, o.keysPerShard, this.pool, o.keysPerShardMax, managed);
    this.shared = attachKvShared(this.buffers, this.pool.region, this.markStore);
    o.mutateShared?.(this.shared);
    this.record.noteBackups(receivedShards(cluster, this.id));
    const trust = { blog: coldStartBlogTrust(cluster, this.id, this.record), remoteOwners: remoteOwnersOf(cluster, this.id) };
    const rep = rebuildIndexes(this.pool, this.shared, limits, this.loop.clock, undefined, trust, { floors: this.floorStore.load(), marks: this.markStore.load(), failed: o.forgetsFailedWrites ? new Map() : this.failedStore.writes });
    const env = this.env;
    env.log(this.id).info(`cold start at term ${cluster.term}: ${rep.indexed} entries indexed, ${rep.untrusted} b-log block(s) not trusted, ${rep.late} refused as late, versions ${Array.from(this.shared.versions).join(',')}, promoted ${JSON.stringify([...this.record.promoted])}`);
    this.control = new NodeControl({
      id: this.id,
      pool: this.pool,
      shared: this.shared,
      record: this.record,
      timers,
      net: env.net,
      manager: env.manager,
      points: this.pointStore,
      failed: o.forgetsFailedWrites ? new Map() : this.failedStore.writes,
      holdPrimaries: !o.servesUnconfirmed,
      managed,
      askPeer: (peer, term, body, ms) => askPeer(env.net, this.id, timers.alive, (p) => (env.nodes[p]?.up ? env.nodes[p]!.worker : null), peer, term, body, ms),
      evicted: () => {
        this.evicted = true;
        this.loop.at(0, ['evicted', this.id], () => this.crash());
      },
      log: env.log(this.id),
    }, cluster);
    this.cell = this.control.cell;
    const cell = this.cell;
    const incBytes = new Uint8Array(8);
    new DataView(incBytes.buffer).setUint32(0, this.id * 65536 + this.inc, true);
    this.srq = SharedReceiveQueue.inMemory({ postCap: o.preallocate * 2 + 2, cqCap: 64, bufferBytesMax: o.segmentBytes }, incBytes);
    const srq = this.srq;
    this.receiver = new RowanReceiver({
      pool: this.pool,
      srq: o.receiverIgnoresHolds ? withoutHolds(srq) : srq,
      holdTimeoutMs: o.holdTimeoutMs,
      ownerId: 0,
      preallocate: o.preallocate,
      batch: o.batch,
      graceMs: o.graceMs,
      clock: this.loop.clock,
      onUsed: (segs) => this.used.push(...segs),
    });
    this.receiver.start();
    const tlog = TLog.recover(this.pool, 0, limits);
    const append = tlog.append.bind(tlog);
    tlog.append = (e, pending, keepFree) => {
      const at = append(e, pending, keepFree);
      if (e.key) this.onAppend?.(e.key, e.version);
      return at;
    };
    this.worker = new KvWorker({
      nodeId: this.id,
      config: () => cell.config(),
      cell,
      clock: this.loop.clock,
      region: this.pool.region,
      tlog,
      shared: this.shared,
      replica: (to) => this.channel(to),
      limits,
      workerId: 0,
      workers: 1,
      failed: this.failedStore,
    });
    this.digest = new DigestSegments(this.pool, { id: 0, count: 1 }, { cluster, cell: cell.buffer, nodeId: this.id, shared: this.buffers });
    const co: CleanerOptions = {
      pool: this.pool,
      shared: attachKvShared(this.buffers, this.pool.region),
      limits,
      id: 0,
      count: 1,
      liveThresholdPercent: o.liveThresholdPercent,
      cpuMicros: () => this.loop.now() * 1000,
      // Rule 1 of the sweep as the clean actor applies it (actors/clean/thread.ts).
      tombstones: {
        eligible: primarySinceStart({ cell: cell.buffer, cluster, nodeId: this.id }),
        backupEligible: backupNow({ cell: cell.buffer, nodeId: this.id }),
        floorStore: this.floorStore,
        savedPoints: true,
        now: () => this.loop.clock.now(),
        periodMs: o.tombstoneSweepMs,
      },
      ...(o.makeSweep ? { makeSweep: o.makeSweep } : {}),
    };
    o.mutateShared?.(co.shared);
    this.cleaner = o.makeCleaner ? o.makeCleaner(co) : new Cleaner(co);
    this.up = true;
    this.control.start();
    this.every(o.controlTickMs, 'control', () => {
      const q = this.receiver.quarantined.length;
      this.receiver.tick();
      this.counts.quarantined += this.receiver.quarantined.length - q;
      const segs = this.used;
      this.used = [];
      for (const s of segs) {
        this.digest.digest(s);
        this.counts.digested++;
      }
    });
    this.every(o.cleanPeriodMs, 'clean', () => {
      const dropped = this.cleaner.sweep?.stats.dropped ?? 0;
      const onBackup = this.cleaner.sweep?.stats.droppedOnBackup ?? 0;
      this.counts.cleaned += this.cleaner.pass();
      this.counts.tombstonesDropped += (this.cleaner.sweep?.stats.dropped ?? 0) - dropped;
      this.counts.tombstonesDroppedOnBackup += (this.cleaner.sweep?.stats.droppedOnBackup ?? 0) - onBackup;
    });
    this.every(o.commitVerPeriodMs, 'commitver', () => {
      this.worker.disseminateCommitVers().catch(() => {}); // a failed write gives the advance back
    }, true);
  }

  /** Power loss now: the CPU's view and every role stop; the durable image stays. */
  crash(): void {
    if (!this.up && this.region.crashed) return;
    this.control?.kill();
    this.markDown();
    this.region.crash();
  }

  /** The node stops running code (called by crash, and by a torn persist as it fires). */
  markDown(): void {
    if (this.up) this.counts.crashes++;
    if (this.up) this.control?.kill();
    this.up = false;
  }

  /** Whether this node would serve a request for `shard` now: up, its lease valid, no configuration
   *  pending, primary of the shard in the configuration it holds, the shard not blocked. */
  serves(shard: number): boolean {
    if (!this.up) return false;
    const cell = this.cell;
    return cell.leaseValid(this.loop.clock.now()) && !cell.evicted() && cell.pendingTerm() === 0 && cell.config().shards[shard]?.primary === this.id && !cell.shardBlocked(shard);
  }

  /** The tombstone floors this node persisted (they survive its crashes). */
  persistedFloors(): ReadonlyMap<number, number> {
    return this.floorStore.load();
  }

  /**
   * Right after a cold start: each shard this node is primary of whose counter resumed below a floor
   * another member persisted for it -- a CommitVer this node (or a primary before it) told that
   * member. Its next writes would come at versions the member refuses as late at its next cold start
   * (issue 24, hazard 1: "versions never go backwards").
   */
  countersBelowFloors(): string[] {
    const out: string[] = [];
    const c = this.cluster;
    for (const s of c.shards) {
      if (s.primary !== this.id) continue;
      const counter = Number(Atomics.load(this.shared.versions, s.id));
      for (const m of this.env.nodes) {
        if (m.id === this.id || m.evicted || (c.dead ?? []).includes(m.id)) continue;
        const floor = m.persistedFloors().get(s.id) ?? 0;
        if (counter < floor) out.push(`shard ${s.id}: node ${this.id}'s counter resumed at ${counter} at its cold start (term ${c.term}), below the floor ${floor} node ${m.id} persisted`);
      }
    }
    return out;
  }

  /** Does this node hold a full replica (primary, or a backup not catching up) of `key`'s shard in `c`? */
  holds(key: string, c: ClusterConfig): boolean {
    const shard = shardOfKey(new TextEncoder().encode(key), c.shardCount);
    const s = c.shards[shard]!;
    return s.primary === this.id || (s.backups.includes(this.id) && !isCatchingUp(c, shard, this.id));
  }

  /** Where a Rowan write to this node lands now, or null while it is down. */
  landTarget(): { srq: SharedReceiveQueue; region: SimRegion; inc: number } | null {
    return this.up && this.srq ? { srq: this.srq, region: this.region, inc: this.inc } : null;
  }

  /** The worker's Rowan connection to node `to` (a new one once the last broke). */
  private async channel(to: number): Promise<ReplicaChannel> {
    let c = this.channels.get(to);
    if (!c || c.broken) {
      const n = this.cluster.nodes.find((x) => x.id === to)!;
      this.channels.set(to, (c = await this.transport.connect({ id: to, dataDir: n.dataDir, fabric: n.fabric })));
    }
    return c;
  }

  /** Run `fn` every `periodMs` while this incarnation is up. */
  private every(periodMs: number, what: string, fn: () => void, async = false): void {
    const inc = this.inc;
    const tick = (): void => {
      if (!this.up || this.inc !== inc) return;
      try {
        fn();
      } catch (err) {
        if (!(err instanceof SimCrash)) this.onError(this.id, what, err);
      }
      if (this.up && this.inc === inc) this.loop.at(periodMs, [what, this.id], tick, async);
    };
    this.loop.at(periodMs, [what, this.id], tick, async);
  }
}

/** The queue as the receiver saw it before the fix: no holds to wait for. */
function withoutHolds(q: SharedReceiveQueue): ReceiveQueue {
  return {
    postCap: q.postCap,
    post: (b) => q.post(b),
    posted: () => q.posted(),
    outstanding: () => q.outstanding(),
    markUsedBelow: (seq) => q.markUsedBelow(seq),
    markStarved: (starved) => q.markStarved(starved),
  };
}

/** Bytes of a region holding a pool of this geometry. */
export function poolBytesFor(o: { segmentBytes: number; segmentCount: number }): number {
  return poolGeometry(o.segmentBytes, o.segmentCount).poolBytes;
}
