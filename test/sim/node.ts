// One simulated ROWAN-KV node: the real role logic of a node process, composed single-threaded on a
// SimRegion -- the worker's PUT/GET/DEL (KvWorker), the control actor's Rowan receiver over a receive
// queue in memory (RowanReceiver + SharedReceiveQueue), one digest actor (DigestSegments), one clean
// actor (Cleaner), and the cold start (rebuildIndexes) a node runs before its actors. The event loop
// drives each role's periodic work; a crash stops all of it at once and a boot starts a new
// incarnation from the region's durable image, exactly as a node process restarts from its pool.
import type { ClusterConfig } from '../../config/cluster.js';
import { shardOfKey } from '../../config/slots.js';
import { defaultLimits } from '../../config/limits.js';
import { KvWorker } from '../../actors/worker/kv.js';
import { DigestSegments } from '../../actors/digest/segments.js';
import { Cleaner, type CleanerOptions } from '../../actors/clean/gc.js';
import { rebuildIndexes } from '../../actors/kv/recovery.js';
import { ConfigCell } from '../../actors/kv/config-cell.js';
import { attachKvShared, createKvShared, type KvShared, type KvSharedBuffers, type ReplicaChannel } from '../../actors/kv/shared.js';
import { RowanReceiver } from '../../runtime/rowan/receiver.js';
import { SharedReceiveQueue, type ReceiveQueue } from '../../runtime/rowan/srq.js';
import { Pool } from '../../shm/pool.js';
import { poolGeometry } from '../../shm/pool-layout.js';
import { TLog } from '../../shm/tlog.js';
import { MemoryFloorStore, type FloorStore } from '../../actors/kv/floors.js';
import { MemoryShardVersionStore } from '../../actors/kv/shard-versions-file.js';
import type { RowanConnection } from '../../runtime/fabric/fabric.js';
import type { Transport } from '../../runtime/fabric/transport.js';
import type { EventLoop } from './loop.js';
import { SimCrash, SimRegion } from './region.js';

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
  /** Mutation hooks (the mutation test): alter the shared state or the cleaner a node boots with. */
  mutateShared?: (s: KvShared) => void;
  makeCleaner?: (o: CleanerOptions) => Cleaner;
  /** Period of the clean actor's tombstone sweep (ms; actors/clean/tombstones.ts). */
  tombstoneSweepMs: number;
  makeSweep?: CleanerOptions['makeSweep'];
  /** Where a node keeps its persisted tombstone floors across crashes (actors/kv/floors.ts); the
   *  mutation test substitutes a broken one. Default: memory that survives the node's crashes. */
  makeFloorStore?: () => FloorStore;
}

/** The simulated fabric, per incarnation of a node (its connections die with it). */
export type TransportFor = (node: SimNode) => Transport;

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
  private used: number[] = [];
  private channels = new Map<number, RowanConnection & { broken?: boolean }>();
  private transport!: Transport;
  readonly counts = { boots: 0, crashes: 0, digested: 0, cleaned: 0, quarantined: 0, tombstonesDropped: 0, tombstonesDroppedOnBackup: 0 };
  /** The node's persisted tombstone floors: durable, like a file in its data dir. */
  private readonly floorStore: FloorStore;
  /** The node's persisted version marks (actors/kv/version-marks.ts): durable likewise. */
  private readonly markStore = new MemoryShardVersionStore();

  constructor(
    readonly id: number,
    private readonly cluster: ClusterConfig,
    private readonly o: SimNodeOptions,
    private readonly loop: EventLoop,
    private readonly transportFor: TransportFor,
    /** Called when a role's code throws something other than SimCrash (a broken invariant). */
    private readonly onError: (node: number, where: string, err: unknown) => void,
  ) {
    this.region = new SimRegion(poolBytesFor(o), id);
    this.floorStore = o.makeFloorStore?.() ?? new MemoryFloorStore();
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
    this.pool = Pool.onRegion(this.region, { segmentBytes: o.segmentBytes, segmentCount: o.segmentCount, reserveSegments: o.reserveSegments });
    this.buffers = createKvShared(this.cluster, this.id, o.keysPerShard, this.pool, o.keysPerShardMax);
    this.shared = attachKvShared(this.buffers, this.pool.region, this.markStore);
    o.mutateShared?.(this.shared);
    rebuildIndexes(this.pool, this.shared, limits, this.loop.clock, undefined, undefined, { floors: this.floorStore.load(), marks: this.markStore.load() });
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
    this.worker = new KvWorker({
      nodeId: this.id,
      config: () => this.cluster,
      region: this.pool.region,
      tlog: TLog.recover(this.pool, 0, limits),
      shared: this.shared,
      replica: (to) => this.channel(to),
      limits,
      workerId: 0,
      workers: 1,
    });
    this.digest = new DigestSegments(this.pool, { id: 0, count: 1 }, { cluster: this.cluster, cell: ConfigCell.create(this.cluster, false, this.loop.clock).buffer, nodeId: this.id, shared: this.buffers });
    const co: CleanerOptions = {
      pool: this.pool,
      shared: attachKvShared(this.buffers, this.pool.region),
      limits,
      id: 0,
      count: 1,
      liveThresholdPercent: o.liveThresholdPercent,
      // The cluster's configuration never changes in the simulator: a shard's primary is its primary
      // since every boot, and its backups its full backups (rule 1 of the sweep).
      tombstones: {
        eligible: (s) => this.cluster.shards[s]?.primary === this.id,
        backupEligible: (s) => this.cluster.shards[s]?.backups.includes(this.id) ?? false,
        floorStore: this.floorStore,
        now: () => this.loop.clock.now(),
        periodMs: o.tombstoneSweepMs,
      },
      ...(o.makeSweep ? { makeSweep: o.makeSweep } : {}),
    };
    o.mutateShared?.(co.shared);
    this.cleaner = o.makeCleaner ? o.makeCleaner(co) : new Cleaner(co);
    this.up = true;
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
    this.markDown();
    this.region.crash();
  }

  /** The node stops running code (called by crash, and by a torn persist as it fires). */
  markDown(): void {
    if (this.up) this.counts.crashes++;
    this.up = false;
  }

  /** Does this node hold a replica (primary or backup) of `key`'s shard? */
  holds(key: string): boolean {
    return this.shared.indexes[shardOfKey(new TextEncoder().encode(key), this.cluster.shardCount)] != null;
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
