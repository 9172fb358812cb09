// Version high-water marks (DESIGN §6 "Versions never go backwards"; issue 24, hazard 1).
//
// A shard's counter (./node-shared.ts versions) lives in memory, and a cold start used to rebuild it from
// the versions still on the node's PM alone. But versions leave the node with nothing persisted at
// them here: CommitVer is the counter itself (the promotion gap, PROMOTION_VERSION_GAP, is in it
// before any write), a dropped tombstone's segment is freed, a failed claim persists nothing. Backups
// raise and persist their tombstone floors to CommitVer (./floors.ts) and refuse every later block at
// or below them as late -- so a primary that came back below its CommitVer had its next acknowledged
// writes thrown away by its backups, unseen until a failover.
//
// Now every version a node hands out or tells another node is covered first: per shard a mark M,
// persisted (a data-dir file, written with a rename) *before* any version above it is used, and a cold
// start raises the counter to at least M. Claims (./commit.ts), CommitVer (the counter, which only
// claims, promotions and cold starts move) and promotions (../node/promote.ts) call cover(s, v); cover
// persists M = v + MARK_STRIDE once v comes within half a stride of the persisted mark, so the file is
// written once per half a million versions of a shard (a restart skips at most a stride: 2^47 / 2^20
// leaves room for 2^27 restarts). The fast path is one Atomics.load and a comparison.
//
// Layout of the shared buffer (one per node, attached by every worker and the main thread):
//   [0, 4)     Int32 lock: 0 free, 1 held (whoever extends a mark writes the file under it)
//   [8, 8+8n)  BigInt64 per shard: the persisted mark (0: none yet)
import { FileShardVersionStore, type ShardVersionStore } from './shard-versions-file.js';

/** How far beyond a version a mark is persisted: the versions a restart may skip. */
export const MARK_STRIDE = 2 ** 20;
/** A mark is extended once a covered version comes within this of it. */
const MARK_LOW_WATER = MARK_STRIDE / 2;
/** Atomics.wait bound while another thread writes the file: a backoff, not a correctness device. */
const LOCK_WAIT_MS = 5;
const MARKS_OFFSET = 8;

export function createMarkBuffer(shardCount: number): SharedArrayBuffer {
  return new SharedArrayBuffer(MARKS_OFFSET + 8 * shardCount);
}

export class VersionMarks {
  private readonly lock: Int32Array;
  private readonly marks: BigInt64Array;

  constructor(
    buffer: SharedArrayBuffer,
    /** Where marks are persisted; null: a node without a data dir (unit tests), nothing to cover. */
    private readonly store: ShardVersionStore | null,
  ) {
    this.lock = new Int32Array(buffer, 0, 1);
    this.marks = new BigInt64Array(buffer, MARKS_OFFSET);
  }

  /** The persisted mark of `shard` (0: none). */
  mark(shard: number): number {
    return Number(Atomics.load(this.marks, shard)); // a mark is published only once persisted
  }

  /**
   * Make sure `version` of `shard` may leave this node: the persisted mark is at or above it, and
   * far enough above that the next half a stride of versions needs no write. Synchronous: a caller
   * that goes on has its version covered on disk.
   */
  cover(shard: number, version: number): void {
    if (version + MARK_LOW_WATER <= this.mark(shard) || !this.store) return;
    this.extend(new Map([[shard, version + MARK_STRIDE]]));
  }

  /** cover() for many shards at once, with at most one write (a promotion of many shards: one file
   *  write, not one per shard, on the thread that also renews the lease). */
  coverAll(versions: ReadonlyMap<number, number>): void {
    if (!this.store) return;
    const want = new Map<number, number>();
    for (const [s, v] of versions) if (v + MARK_LOW_WATER > this.mark(s)) want.set(s, v + MARK_STRIDE);
    if (want.size > 0) this.extend(want);
  }

  /** Cold start: the marks the node persisted, before any version is handed out. */
  seed(persisted: ReadonlyMap<number, number>): void {
    for (const [s, v] of persisted) if (s >= 0 && s < this.marks.length && BigInt(v) > Atomics.load(this.marks, s)) Atomics.store(this.marks, s, BigInt(v));
  }

  private extend(wanted: ReadonlyMap<number, number>): void {
    this.acquire();
    try {
      // Not those another thread extended meanwhile.
      const want = [...wanted].filter(([shard, v]) => v - MARK_LOW_WATER > this.mark(shard));
      if (want.length === 0) return;
      const all = new Map<number, number>();
      for (let s = 0; s < this.marks.length; s++) if (this.mark(s) > 0) all.set(s, this.mark(s));
      for (const [shard, v] of want) all.set(shard, v);
      this.store!.save(all); // durable before the marks are published (a failure throws: nothing is handed out)
      for (const [shard, v] of want) Atomics.store(this.marks, shard, BigInt(v)); // publishes: versions up to v may leave the node
    } finally {
      Atomics.store(this.lock, 0, 0); // releases the file to the next writer
      Atomics.notify(this.lock, 0, 1);
    }
  }

  private acquire(): void {
    while (Atomics.compareExchange(this.lock, 0, 0, 1) !== 0) Atomics.wait(this.lock, 0, 1, LOCK_WAIT_MS); // takes the lock
  }
}

/** The marks of one pool (`poolId`) in `path` (config/base/files.ts VERSION_MARKS_FILE). */
export class FileMarkStore extends FileShardVersionStore {
  constructor(path: string, poolId: string) {
    super(path, poolId, 'marks');
  }
}
