// Per-actor counters in a SharedArrayBuffer: the actor writes, the node's main thread reads them to
// answer `rowan status` without asking the actor anything (a stuck actor still shows its last values).
//
//   counters SAB, one per actor
//   +--------------------------------------+------------------------------------------------+
//   | Int32 words @0: STATE, TID, CPU, pad | BigInt64 words @16: MESSAGES_IN ... TICK_AT_MS  |
//   +--------------------------------------+------------------------------------------------+
//
// Single writer (the actor). Counts live in plain JS numbers inside the actor and are published with
// Atomics.store once per loop pass or tick (publish()), so the per-message cost is an increment.

export const ActorState = {
  STARTING: 0,
  READY: 1,
  STOPPING: 2,
  STOPPED: 3,
  FAILED: 4,
} as const;
export type ActorState = (typeof ActorState)[keyof typeof ActorState];
export const actorStateName = ['starting', 'ready', 'stopping', 'stopped', 'failed'] as const;

/** Int32 fields. */
export const I32 = {
  STATE: 0,
  /** Kernel thread id, written once at start. */
  TID: 1,
  /** sched_getcpu() at the last publish: where the thread last ran. */
  CPU: 2,
  WORDS: 4,
} as const;

/** BigInt64 fields (byte offset I32.WORDS * 4 = 16, 8-aligned). */
export const I64 = {
  /** Ring records received (all kinds). */
  MESSAGES_IN: 0,
  /** Ring records published. */
  MESSAGES_OUT: 1,
  /** PINGs answered with a PONG. */
  PINGS: 2,
  /** Periodic ticks run. */
  TICKS: 3,
  /** Times the actor woke from its doorbell. */
  WAKEUPS: 4,
  /** SEGMENT_BATCH records received (control -> digest -> clean hand-over, §4.3). */
  SEGMENT_BATCHES: 5,
  /** Date.now() of the last tick, 0 before the first. */
  TICK_AT_MS: 6,
  /** control: b-log segments posted to the Rowan receive queue (§4.3). */
  BLOG_POSTED: 7,
  /** control: b-log segments declared Used and handed to digest. */
  BLOG_USED: 8,
  /** control: Rowan writes landed in the b-log (completions in the ring CQ, sampled per tick). */
  BLOG_WRITES: 9,
  /** digest: b-log segments parsed. */
  DIGESTED_SEGMENTS: 10,
  /** digest: verified log blocks found in them. */
  DIGESTED_BLOCKS: 11,
  /** digest: b-log segments this digest found committed for its shards (§4.4). */
  COMMITTED_SEGMENTS: 12,
  /** worker: <shard, CommitVer> entries written to backups (§4.4). */
  COMMITVERS_SENT: 13,
  /** clean: segments reclaimed (Committed -> Free). */
  CLEAN_SEGMENTS: 14,
  /** clean: bytes of segments reclaimed. */
  CLEAN_RECLAIMED_BYTES: 15,
  /** clean: bytes of live entries copied out of them. */
  CLEAN_COPIED_BYTES: 16,
  /** clean: microseconds spent cleaning (for GC throughput = reclaimed bytes / this). */
  CLEAN_BUSY_US: 17,
  /** worker: PUT/DEL refused with PM_FULL. */
  PM_FULL_REFUSALS: 18,
  /** clean: tombstones removed from the indexes by the tombstone sweep (actors/clean/tombstones.ts). */
  CLEAN_TOMBSTONES_DROPPED: 19,
  /** clean: of those, tombstones of shards this node backs up (dropped under a persisted floor). */
  CLEAN_TOMBSTONES_DROPPED_BACKUP: 20,
  /** digest: b-log blocks refused as late (at or below their shard's tombstone floor, actors/shared/floors.ts). */
  DIGEST_LATE_BLOCKS: 21,
  /** control, `verbs` fabric only: RC QPs of remote senders connected to this node's receive queue now. */
  VERBS_SENDERS: 22,
  /** control, `verbs` fabric only: receive completions of the ring CQ sampled per tick (SENDs landed). */
  VERBS_RECEIVES: 23,
  /** The wait before the actor's next tick, now (ms): its base period, stretched while ticks find nothing
   *  to do (runtime/tick-schedule.ts); 0 for a role without a tick. */
  TICK_WAIT_MS: 24,
  /** migration: shard copies running now (actors/migration/copy.ts). */
  MIGRATION_COPIES: 25,
  /** migration: shard copies finished (caught up). */
  MIGRATION_COPIED: 26,
  /** migration: entries and bytes copied (finished and running copies). */
  MIGRATION_ENTRIES: 27,
  MIGRATION_BYTES: 28,
  /** migration: milliseconds the finished copies took, summed (their MB/s = bytes / this). */
  MIGRATION_COPY_MS: 29,
  /** digest: of DIGEST_LATE_BLOCKS, DEL blocks (the expiry sweep writes only DELs). */
  DIGEST_LATE_DEL_BLOCKS: 30,
  WORDS: 31,
} as const;

export type CounterName = Exclude<keyof typeof I64, 'WORDS'>;
export const counterNames = Object.keys(I64).filter((k) => k !== 'WORDS') as CounterName[];

export const countersBytes = I32.WORDS * 4 + I64.WORDS * 8;

export function createCounters(): SharedArrayBuffer {
  return new SharedArrayBuffer(countersBytes);
}

/** The actor's side: local counts, published in one go. */
export class CounterWriter {
  private readonly i32: Int32Array;
  private readonly i64: BigInt64Array;
  /** Local values, indexed by I64 field; bump these freely, then publish(). */
  readonly local: number[] = new Array<number>(I64.WORDS).fill(0);

  constructor(sab: SharedArrayBuffer) {
    this.i32 = new Int32Array(sab, 0, I32.WORDS);
    this.i64 = new BigInt64Array(sab, I32.WORDS * 4, I64.WORDS);
    // A restarted actor continues the counts of the one it replaces.
    for (let i = 0; i < I64.WORDS; i++) this.local[i] = Number(Atomics.load(this.i64, i));
  }

  setState(s: ActorState): void {
    // Readers see the new state on their next load; state changes are rare and ordered by seq-cst.
    Atomics.store(this.i32, I32.STATE, s);
  }

  setIdentity(tid: number, cpu: number): void {
    // Written once before READY is posted; the status reader loads them afterwards.
    Atomics.store(this.i32, I32.TID, tid);
    Atomics.store(this.i32, I32.CPU, cpu);
  }

  setCpu(cpu: number): void {
    // A snapshot of where the thread runs; readers may see it one publish late.
    Atomics.store(this.i32, I32.CPU, cpu);
  }

  publish(): void {
    // Each field is an independent 64-bit store: a reader may see MESSAGES_IN of this pass and
    // TICKS of the previous one, never a torn value.
    for (let i = 0; i < I64.WORDS; i++) Atomics.store(this.i64, i, BigInt(this.local[i]!));
  }
}

export interface CounterSnapshot {
  state: (typeof actorStateName)[number];
  tid: number;
  cpu: number;
  counts: Record<CounterName, number>;
}

/** The main thread's side. */
export function readCounters(sab: SharedArrayBuffer): CounterSnapshot {
  const i32 = new Int32Array(sab, 0, I32.WORDS);
  const i64 = new BigInt64Array(sab, I32.WORDS * 4, I64.WORDS);
  const counts = {} as Record<CounterName, number>;
  // Loads pair with the actor's publish() stores; values are at most one publish old.
  for (const name of counterNames) counts[name] = Number(Atomics.load(i64, I64[name]));
  return {
    state: actorStateName[Atomics.load(i32, I32.STATE)] ?? 'failed',
    tid: Atomics.load(i32, I32.TID),
    cpu: Atomics.load(i32, I32.CPU),
    counts,
  };
}
