// Tombstone floors: what lets a backup drop tombstones (actors/clean/tombstones.ts, rule B). Per shard
// s, three versions, each only ever raised:
//
//   raw F        set by the digest actor that owns s when it applies a <s, CommitVer> block of the
//                primary (and this node is a full backup of s, no configuration pending). Every write
//                of s acknowledged with a version <= CV landed in this node's b-log *before* that block
//                (its landing finished before the primary counted it finished, before it computed CV,
//                before it sent the block: reservations follow real time), and digest applies the b-log
//                in order, so at that point every acknowledged entry <= CV is applied. A PUT/DEL block
//                of s <= F that digest meets later is therefore late -- a write that failed or whose
//                outcome was unknown, or a re-issued duplicate -- and digest refuses it and invalidates
//                it on PM (zeroes its first 8 bytes, one atomic persist), so no cold start sees it.
//   effective EF F as it stood after some digested segment S once S and every segment the actor
//                digested before it have left Used (Committed, or later): every acknowledged block
//                <= EF lies in a Committed segment (or its segment was cleaned), so a block <= EF found
//                in a Using or Used b-log segment is late. Promotion, scatter and gather refuse those.
//   persisted PF EF as the tombstone sweep last wrote it durably (a FloorStore) before dropping
//                anything under it; the cold start reads it and refuses (and invalidates) every b-log
//                block <= PF in a segment it finds Using or Used, then starts F = EF = PF.
// PF <= EF <= F: every path that can put an entry of s into the index refuses what lies at or below
// the bound the sweep drops under. The layout: one BigInt64 per (word, shard), word-major.
import { FileShardVersionStore, MemoryShardVersionStore, type ShardVersionStore } from './shard-versions-file.js';

const RAW = 0;
const EFFECTIVE = 1;
const PERSISTED = 2;
const WORDS = 3;

export function createFloorBuffer(shardCount: number): SharedArrayBuffer {
  return new SharedArrayBuffer(8 * WORDS * shardCount);
}

export class ShardFloors {
  private readonly w: BigInt64Array;
  private readonly shardCount: number;

  constructor(buffer: SharedArrayBuffer) {
    this.w = new BigInt64Array(buffer);
    this.shardCount = this.w.length / WORDS;
  }

  raw(shard: number): number {
    return Number(Atomics.load(this.w, RAW * this.shardCount + shard));
  }

  effective(shard: number): number {
    return Number(Atomics.load(this.w, EFFECTIVE * this.shardCount + shard));
  }

  persisted(shard: number): number {
    return Number(Atomics.load(this.w, PERSISTED * this.shardCount + shard));
  }

  raiseRaw(shard: number, v: number): void {
    this.raise(RAW, shard, v);
  }

  raiseEffective(shard: number, v: number): void {
    this.raise(EFFECTIVE, shard, v);
  }

  raisePersisted(shard: number, v: number): void {
    this.raise(PERSISTED, shard, v);
  }

  /** Cold start: all three start at what was persisted. */
  seed(persisted: ReadonlyMap<number, number>): void {
    for (const [s, v] of persisted) {
      if (s < 0 || s >= this.shardCount) continue;
      for (const word of [RAW, EFFECTIVE, PERSISTED]) this.raise(word, s, v);
    }
  }

  private raise(word: number, shard: number, v: number): void {
    const i = word * this.shardCount + shard;
    for (;;) {
      const cur = Atomics.load(this.w, i); // the floor the CAS below replaces
      if (cur >= BigInt(v)) return;
      if (Atomics.compareExchange(this.w, i, cur, BigInt(v)) === cur) return; // publishes the raise
    }
  }
}

/**
 * The effective floors of one digest actor (see the header): it notes each segment it digested with the
 * raw floors it raised in it; once that segment and all before it have left Used, those floors are
 * effective. Pure: the caller says whether a noted segment is still Used in its noted life.
 */
export class FloorTracker {
  private readonly queue: { segment: number; seq: number; raised: Map<number, number> | null }[] = [];

  /** `segment` (pool seq `seq`) was digested; `raised`: shard -> raw floor after it, for shards raised in it. */
  digested(segment: number, seq: number, raised: Map<number, number> | null): void {
    this.queue.push({ segment, seq, raised: raised && raised.size > 0 ? raised : null });
  }

  /** Pop the segments no longer Used, oldest first; returns the floors that became effective. */
  advance(stillUsed: (segment: number, seq: number) => boolean): Map<number, number> {
    const out = new Map<number, number>();
    while (this.queue.length > 0 && !stillUsed(this.queue[0]!.segment, this.queue[0]!.seq)) {
      const q = this.queue.shift()!;
      for (const [s, v] of q.raised ?? []) if ((out.get(s) ?? 0) < v) out.set(s, v);
    }
    return out;
  }

  /** Digested segments still waiting to leave Used. */
  get waiting(): number {
    return this.queue.length;
  }
}

/** Where the persisted floors live: a file in the data dir, or the simulator's memory. */
export type FloorStore = ShardVersionStore;

/** The floors of one pool (`poolId`) in `path`; a file of another pool reads as no floors. */
export class FileFloorStore extends FileShardVersionStore {
  constructor(path: string, poolId: string) {
    super(path, poolId, 'floors');
  }
}

/** A store in memory that outlives a simulated node's crashes (a write is atomic, like a rename). */
export class MemoryFloorStore extends MemoryShardVersionStore {}
