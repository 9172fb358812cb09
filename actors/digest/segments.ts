// What a digest actor does with a Used b-log segment (§4.4): parse it in order with the hole-skipping
// b-log scan (runtime/rowan/blog-scan.ts), verifying every block, and, in a node that serves a cluster,
// apply the blocks of the shards this actor owns to their backup indexes (actors/kv/apply.ts). Each
// digest actor owns the backup shards s with s % digestCount === its id.
//
// Committed detection (§4.4): while parsing a segment the applier collects its MaxVerArray (highest
// version per owned shard) and keeps the CommitVerArray from the <shard, CommitVer> entries primaries
// write. The segment is committed for this actor once every shard's max version is at or below that
// shard's CommitVer, and no multi-block entry still waiting for blocks has a block in it (its copy in
// the digest log does not exist yet). Each digest actor owns only some shards, so it votes in the
// shared `votes` word of the segment; the last vote moves the segment Used -> Committed, where clean
// actors can reclaim it. Partial entries that stay incomplete for PARTIAL_GIVE_UP_SEGMENTS further
// segments are dropped (a sender that died mid-entry; its write was never acknowledged).
import { ConfigCell } from '../kv/config-cell.js';
import { actorOwner } from '../../config/base/ids.js';
import { defaultLimits } from '../../config/limits.js';
import { BlockApplier } from '../kv/apply.js';
import { ReadEpochs } from '../kv/gc-state.js';
import { attachKvShared, type KvShared, type KvStart } from '../kv/shared.js';
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
  ) {
    this.applier = null;
    this.epochSlot = ReadEpochs.slotOf('digest', who.id);
    if (kv) {
      // The shards this node backs up follow the node's configuration cell: a shard promoted here
      // (§4.5 phase 2) is no longer taken from the b-log, whoever still writes into it.
      const cell = ConfigCell.attach(kv.cell);
      let backupOf = new Set<number>();
      let term = -1;
      const backs = (shard: number): boolean => {
        if (cell.term() !== term) {
          const c = cell.config();
          term = c.term;
          backupOf = new Set(c.shards.filter((s) => s.backups.includes(kv.nodeId)).map((s) => s.id));
        }
        return backupOf.has(shard);
      };
      this.shared = attachKvShared(kv.shared, this.pool.region);
      if (this.shared.gc) this.votes = new Int32Array(this.shared.gc.buffers.votes);
      this.applier = new BlockApplier(
        this.pool.region,
        this.shared,
        (shard) => shard % who.count === who.id && backs(shard),
        TLog.recover(this.pool, actorOwner(who.id), defaultLimits, OwnerRole.Digest),
        defaultLimits,
      );
    }
  }

  /** Digest one Used segment; returns the segments that became Committed (by this actor's vote). */
  digest(segment: number): number[] {
    const start = this.pool.segmentOffset(segment);
    const ep = this.shared?.gc?.epochs;
    ep?.enter(this.epochSlot);
    try {
      if (this.applier) this.applier.maxVer = new Map();
      for (const block of scanBlogBlocks(this.pool.region.bytes, start, start + this.pool.segmentBytes, defaultLimits, this.scan)) {
        this.applier?.apply(block);
      }
    } finally {
      ep?.exit(this.epochSlot);
    }
    this.segments++;
    if (!this.applier || !this.votes) return [];
    this.pending.push({ segment, maxVer: this.applier.maxVer, heldFor: 0 });
    return this.checkCommitted();
  }

  /** Vote for every pending segment now committed for this actor's shards (see the header). */
  private checkCommitted(): number[] {
    const applier = this.applier!;
    const held = new Set(applier.pendingBlockOffsets().map((o) => this.pool.segmentOf(o)));
    const done: number[] = [];
    let giveUp = false;
    for (let i = 0; i < this.pending.length; ) {
      const p = this.pending[i]!;
      let ready = true;
      for (const [shard, mv] of p.maxVer) {
        if (mv > (applier.commitVer.get(shard) ?? 0)) {
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
    return done;
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
