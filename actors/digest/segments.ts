// What a digest actor does with a Used b-log segment (§4.4): parse it in order with the hole-skipping
// b-log scan (runtime/rowan/blog-scan.ts), verifying every block, and, in a node that serves a cluster,
// apply the blocks of the shards this actor owns to their backup indexes (actors/shared/apply.ts). Each
// digest actor owns the backup shards s with s % digestCount === its id.
//
// Committed detection (§4.4): while parsing a segment the applier collects its MaxVerArray (highest
// version per owned shard) and keeps the CommitVerArray from the <shard, CommitVer> entries primaries
// write. The segment is committed for this actor once every shard's max version is at or below that
// shard's CommitVer, and no multi-block entry still waiting for blocks has a block in it (its copy in
// the digest log does not exist yet). Only shards the node still backs up count: one promoted here or
// moved away gets no CommitVer from its primary any more (its last blocks would hold the segment Used
// for good, and with it every floor raised after it; the simulator's digest check). Each digest actor
// owns only some shards, so it votes in the shared `votes` word of the segment; the last vote moves
// the segment Used -> Committed, where clean actors can reclaim it. Partial entries that stay incomplete for PARTIAL_GIVE_UP_SEGMENTS further
// segments are dropped (a sender that died mid-entry; its write was never acknowledged).
//
// Tombstone floors (actors/shared/floors.ts): applying a <shard, CommitVer> block of a shard this node is a
// full backup of (no configuration pending) raises the shard's raw floor to it, at that point of the
// b-log; every later PUT/DEL block of an owned shard at or below the raw floor is late, refused and
// invalidated on PM. Once a digested segment and all before it have left Used, the floors raised up to
// its end become effective (FloorTracker), which is what the tombstone sweep may persist and drop under.
import { ConfigCell } from '../shared/config-cell.js';
import { actorOwner } from '../../config/base/ids.js';
import { defaultLimits } from '../../config/limits.js';
import { BlockApplier, invalidateBlock } from '../shared/apply.js';
import { isCatchingUp } from '../../config/cluster.js';
import { FloorTracker, ShardFloors } from '../shared/floors.js';
import { ReadEpochs } from '../shared/gc-state.js';
import { attachKvShared, type KvShared, type KvStart } from '../shared/node-shared.js';
import { newBlogScanStats, scanBlogBlocks } from '../../runtime/rowan/blog-scan.js';
import { OwnerRole, Pool, SegmentState } from '../../shm/pool.js';
import { TLog } from '../../shm/tlog.js';

/** A partial multi-block entry holds back its segments' commit for at most this many later segments. */
export const PARTIAL_GIVE_UP_SEGMENTS = 32;

interface Pending {
  segment: number;
  maxVer: Map<number, number>;
  /** Segments digested since this one was first held back by a partial entry. */
  heldFor: number;
}

export class DigestSegments {
  private readonly applier: BlockApplier | null;
  private readonly shared: KvShared | null = null;
  private readonly votes: Int32Array | null = null;
  private readonly pending: Pending[] = [];
  private readonly epochSlot: number;
  private readonly floors: ShardFloors | null = null;
  private readonly tracker = new FloorTracker();
  /** Whether `shard` is gone from this node's backups for the commit rule: not backed up in the
   *  configuration now, and not still being promoted here (a promotion scans the Used segments: they
   *  stay Used until it is done). Never, without a cluster. */
  private gone: (shard: number) => boolean = () => false;
  /** Raw floors raised while digesting the current segment. */
  private raised: Map<number, number> | null = null;
  readonly scan = newBlogScanStats();
  segments = 0;
  /** Segments this actor voted committed, and those its vote made Committed. */
  voted = 0;
  committed = 0;
  droppedPartials = 0;

  constructor(
    private readonly pool: Pool,
    private readonly who: { id: number; count: number },
    kv: KvStart | undefined,
    /** Told of every block refused as late, with the floor it fell under: a refusal is never silent
     *  (an acknowledged write refused here would be lost at the next failover). */
    onLate?: (shard: number, version: number, floor: number) => void,
  ) {
    this.applier = null;
    this.epochSlot = ReadEpochs.slotOf('digest', who.id);
    if (kv) {
      // The shards this node backs up follow the node's configuration cell: a shard promoted here
      // (§4.5 phase 2) is no longer taken from the b-log, whoever still writes into it.
      const cell = ConfigCell.attach(kv.cell);
      let backupOf = new Set<number>();
      let fullBackupOf = new Set<number>();
      let term = -1;
      const refresh = (): void => {
        if (cell.term() === term) return;
        const c = cell.config();
        term = c.term;
        backupOf = new Set(c.shards.filter((s) => s.backups.includes(kv.nodeId)).map((s) => s.id));
        fullBackupOf = new Set([...backupOf].filter((s) => !isCatchingUp(c, s, kv.nodeId)));
      };
      const backs = (shard: number): boolean => {
        refresh();
        return backupOf.has(shard);
      };
      this.gone = (shard) => !backs(shard) && !cell.shardBlocked(shard);
      const mine = (shard: number): boolean => shard % who.count === who.id;
      this.shared = attachKvShared(kv.shared, this.pool.region);
      if (this.shared.gc) this.votes = new Int32Array(this.shared.gc.buffers.votes);
      const floors = this.shared.gc ? new ShardFloors(this.shared.gc.buffers.floors) : null;
      this.floors = floors;
      const region = this.pool.region;
      this.applier = new BlockApplier(
        region,
        this.shared,
        (shard) => mine(shard) && backs(shard),
        TLog.recover(this.pool, actorOwner(who.id), defaultLimits, OwnerRole.Digest),
        defaultLimits,
        floors
          ? {
              late: (shard, version) => mine(shard) && version <= floors.raw(shard),
              refused: (b) => {
                invalidateBlock(region, b.offset);
                onLate?.(b.shard, b.version, floors.raw(b.shard));
              },
              commitVer: (shard, version) => {
                // Only while this node is a full backup of the shard in a settled configuration: a
                // configuration being prepared may bring scattered entries this node must absorb first.
                refresh();
                if (!fullBackupOf.has(shard) || cell.reconfiguring(shard) || version <= floors.raw(shard)) return;
                floors.raiseRaw(shard, version);
                (this.raised ??= new Map()).set(shard, version);
              },
            }
          : null,
      );
      this.applier.tornByCommitVer = true; // blocks in landing order (../shared/apply.ts)
    }
  }

  /** Digest one Used segment; returns the segments that became Committed (by this actor's vote). */
  digest(segment: number): number[] {
    const start = this.pool.segmentOffset(segment);
    const ep = this.shared?.gc?.epochs;
    ep?.enter(this.epochSlot);
    this.raised = null;
    try {
      if (this.applier) this.applier.maxVer = new Map();
      for (const block of scanBlogBlocks(this.pool.region.bytes, start, start + this.pool.segmentBytes, defaultLimits, this.scan)) {
        this.applier?.apply(block);
      }
    } finally {
      ep?.exit(this.epochSlot);
    }
    this.segments++;
    if (this.floors) this.tracker.digested(segment, this.pool.meta(segment).seq, this.raised);
    if (!this.applier || !this.votes) return [];
    this.pending.push({ segment, maxVer: this.applier.maxVer, heldFor: 0 });
    return this.checkCommitted();
  }

  /** Pending segments held back only by shards this node no longer backs up (none: see
   *  checkCommitted), after checking them again now (which may vote some committed, as the next
   *  digested segment would). Its own test of "held", apart from checkCommitted's: the simulator's
   *  check, which fails if that rule goes. */
  heldByShardsGone(): { segment: number; shards: number[] }[] {
    if (this.applier) this.checkCommitted();
    const commitVer = this.applier?.commitVer ?? new Map<number, number>();
    return this.pending
      .map((p) => ({ segment: p.segment, over: [...p.maxVer].filter(([s, mv]) => mv > (commitVer.get(s) ?? 0)).map(([s]) => s) }))
      .filter((p) => p.over.length > 0 && p.over.every(this.gone))
      .map((p) => ({ segment: p.segment, shards: p.over }));
  }

  /** Vote for every pending segment now committed for this actor's shards (see the header). */
  private checkCommitted(): number[] {
    const applier = this.applier!;
    this.droppedPartials += applier.dropShards(this.gone);
    const held = new Set(applier.pendingBlockOffsets().map((o) => this.pool.segmentOf(o)));
    const done: number[] = [];
    let giveUp = false;
    for (let i = 0; i < this.pending.length; ) {
      const p = this.pending[i]!;
      let ready = true;
      for (const [shard, mv] of p.maxVer) {
        // A shard this node no longer backs up (promoted here, once its promotion has scanned the Used
        // segments; or moved away) gets no CommitVer from its primary any more: it holds nothing back.
        if (mv > (applier.commitVer.get(shard) ?? 0) && !this.gone(shard)) {
          ready = false;
          break;
        }
      }
      if (ready && held.has(p.segment)) {
        ready = false;
        if (++p.heldFor > PARTIAL_GIVE_UP_SEGMENTS) giveUp = true;
      }
      if (!ready) {
        i++;
        continue;
      }
      this.pending.splice(i, 1);
      this.voted++;
      // Publishes our vote; the actor whose vote completes the count (every digest actor of the node
      // parses every b-log segment) makes the segment Committed.
      if (Atomics.add(this.votes!, p.segment, 1) + 1 === this.who.count) {
        Atomics.store(this.votes!, p.segment, 0); // reset for the segment's next life; nobody votes now
        this.pool.transition(p.segment, SegmentState.Used, SegmentState.Committed);
        this.committed++;
        done.push(p.segment);
      }
    }
    if (giveUp) {
      this.droppedPartials += applier.dropPending();
      return [...done, ...this.checkCommitted()];
    }
    this.advanceFloors();
    return done;
  }

  /** Raise the effective floors of segments now out of Used (see the header). */
  advanceFloors(): void {
    const floors = this.floors;
    if (!floors) return;
    const ef = this.tracker.advance((seg, seq) => {
      const m = this.pool.meta(seg);
      return m.seq === seq && m.state === SegmentState.Used;
    });
    for (const [s, v] of ef) floors.raiseEffective(s, v);
  }

  /** Blocks refused as late (at or below their shard's raw floor). */
  get late(): number {
    return this.applier?.stats.late ?? 0;
  }

  /** Of those, DEL blocks. */
  get lateDels(): number {
    return this.applier?.stats.lateDels ?? 0;
  }

  /** Segments digested but not yet committed (waiting for a CommitVer). */
  get waiting(): number {
    return this.pending.length;
  }

  get indexed(): number {
    return this.applier?.stats.indexed ?? 0;
  }

  close(): void {
  }
}
