// Active expiry: a key whose deadline has passed is invisible at once (primary.ts lookup), but its
// entry stays indexed, and its bytes live, until something deletes it. This sweep, run from the worker
// actor's tick, walks the indexes of the shards this node is primary of (worker w takes the shards
// s with s mod workers = w) a bounded number of buckets per tick, noting where the PUTs past their
// deadline lie; once a shard is walked it deletes them in log (address) order, DELS_PER_STEP keys at a
// time, each batch written as one replicated batch
// (../expired-deletes.ts): every DEL is versioned, in the t-log and on every backup like a client's
// DEL, so the key is gone on every replica and after any failover or cold start, and its older entries
// become garbage for the clean actors (whose tombstone sweep, actors/clean/tombstones.ts, later drops
// the DEL itself). Letting GC drop an expired PUT without a DEL would instead let an older version of
// the key, still in another segment, win a cold start's version comparison and come back.
// Why a worker and not the clean actor: the DEL must be replicated by the shard's primary (version
// claim, t-log, Rowan writes to the backups) and serialised with the key's other RESP writes (the
// locks), both of which live in the worker; the clean actor has neither.
// The locks: a batch takes its keys' RESP locks, checks under them that each key's indexed entry is
// still the expired PUT, claims the DELs' versions, and lets the locks go before the DELs replicate.
// Held that long they order the DEL after every write of the key that had claimed a version before
// (such a write holds the lock until it is indexed, so the check sees it and skips the key); any write
// taking the lock later claims a higher version, so whichever is indexed first, on the primary, a
// backup or at a cold start, the version comparison keeps the write and the DEL is stale. Meanwhile
// the key reads as absent anyway (its deadline passed). Held while replicating, a batch's 64 keys'
// stripes (actors/shared/key-locks.ts, 4096 of them) kept 1.6 % of the client's keys waiting a whole
// replication, and two batches met on a stripe in two cases of three, so they ran one after another.
// Idle cost: a pass that saw no deadline at all leaves the sweep dormant: a tick then costs one
// Atomics.load of the node's deadline-write counter (node-shared.ts `expiry`) and a term compare, and
// the sweep wakes when any worker of the node writes a deadline, when the configuration changes (a
// promotion brings keys with deadlines), or when the earliest deadline the last pass saw comes.
// Bounded work: a tick walks buckets for at most WALK_BUDGET_MS, or starts one batch of at most
// DELS_PER_STEP DELs, with at most BATCHES_IN_FLIGHT batches replicating at once, so requests
// interleave and a mass expiry cannot stall them, while the sweep's rate does not hang on one batch's
// replication latency. What a mass expiry costs, and why log order: docs/redis.md "Expiry under load".
import { monotonicClock, type Clock } from '../../../config/base/clock.js';
import type { Limits } from '../../../config/limits.js';
import type { PersistentRegion } from '../../../config/base/region.js';
import { ReadEpochs } from '../../shared/gc-state.js';
import type { KvShared } from '../../shared/node-shared.js';
import { EntryType, expiresAtOf, readEntryAt } from '../../../shm/log.js';
import type { KvWorker } from '../kv.js';
import type { KeyLocks } from './context.js';

/** Buckets walked between two looks at the clock. */
const BUCKETS_PER_CHUNK = 1024;
/** The most a tick spends walking an index (it always walks one chunk). */
const WALK_BUDGET_MS = 2;
const DELS_PER_STEP = 64;
/** Batches replicating at once: one batch at a time made the sweep's rate one batch per replication
 *  round trip plus a tick (about 11 batches a second a node under the bench's load: 1 M keys took
 *  longer than 600 s); a tick still starts at most one, so the rate is bounded by the tick period. */
const BATCHES_IN_FLIGHT = 4;
/** The longest a sweep with keys still to expire sleeps between passes (new deadlines wake it anyway). */
const PASS_PAUSE_MAX_MS = 1000;

export interface ExpirySweepDeps {
  worker: KvWorker;
  locks: KeyLocks;
  shared: KvShared;
  region: PersistentRegion;
  limits: Limits;
  workerId: number;
  workers: number;
  /** Monotonic ms that bounds a walk step (monotonicClock unless injected). */
  clock?: Clock;
  log?: { warn(o: object, msg: string): void };
}

export class ExpirySweep {
  /** Keys this sweep deleted (INFO expired_keys). */
  expired = 0;
  private seenWrites = -1; // -1: a first pass at start (keys with deadlines from before a restart)
  private seenTerm = -1;
  private sleepUntil = 0; // 0 with `dormant`: until woken by a write or a term change
  private dormant = false;
  private queue: number[] = [];
  /** The shard whose expired entries `order` holds once walked. */
  private shard = -1;
  private bucket = 0;
  /** Addresses of the expired PUTs the walk of shard queue[0] found so far. */
  private found: number[] = [];
  /** Those of `shard`, in ascending order once its walk ended (empty while a shard is walked): a
   *  typed array's numeric sort, a tenth of the time of a comparator's (tens of milliseconds of the
   *  worker's thread for a shard of 20,000 expired keys). */
  private order = new Float64Array(0);
  /** Where the deletes of `order` are. */
  private cursor = 0;
  private deadlines = 0; // deadlines seen this pass, expired or not
  private earliest = Infinity; // the earliest deadline not yet past seen this pass
  private running = 0;
  private inPass = false;
  private failed = 0;
  private readonly epochSlot: number;

  constructor(private readonly d: ExpirySweepDeps) {
    this.epochSlot = ReadEpochs.slotOf('worker', d.workerId);
  }

  /** One bounded step; true while the sweep has work now (the tick should not back off). */
  tick(): boolean {
    if (this.running >= BATCHES_IN_FLIGHT) return true;
    const writes = this.d.shared.expiryWrites ? Atomics.load(this.d.shared.expiryWrites, 0) : 0; // what any worker's deadline PUTs published
    const term = this.d.worker.term();
    const now = this.d.worker.wallNow();
    if (writes !== this.seenWrites || term !== this.seenTerm) {
      this.seenWrites = writes;
      this.seenTerm = term;
      this.dormant = false;
      this.sleepUntil = 0;
    }
    if (this.dormant || now < this.sleepUntil) return this.running > 0;
    if (!this.inPass) {
      if (this.running > 0) return true; // the last pass's batches finish before a new pass looks
      this.startPass();
    }
    if (this.cursor < this.order.length) {
      // One batch per tick at most: a slice of the index can hold thousands of expired keys, and all
      // of them written at once queued every client request behind them (bench -- expiry).
      const batch = this.keysAt(this.order.subarray(this.cursor, this.cursor + DELS_PER_STEP), now);
      this.cursor = Math.min(this.order.length, this.cursor + DELS_PER_STEP);
      if (batch.length > 0) this.remove(batch);
      return true;
    }
    if (this.queue.length === 0) {
      if (this.running > 0) return true; // its failures are counted before the pass ends
      this.endPass(now);
      return false;
    }
    this.walk(now);
    return true;
  }

  private startPass(): void {
    const c = this.d.worker.config();
    this.inPass = true;
    this.sleepUntil = 0;
    this.queue = c.shards.filter((s) => s.primary === this.d.shared.nodeId && s.id % this.d.workers === this.d.workerId).map((s) => s.id);
    this.bucket = 0;
    this.found = [];
    this.order = new Float64Array(0);
    this.cursor = 0;
    this.deadlines = 0;
    this.earliest = Infinity;
  }

  private endPass(now: number): void {
    this.inPass = false;
    if (this.failed > 0) this.d.log?.warn({ failed: this.failed }, 'expiry sweep: DELs failed (the keys stay invisible); retried next pass');
    this.failed = 0;
    if (this.deadlines === 0) this.dormant = true;
    else this.sleepUntil = Math.min(this.earliest, now + PASS_PAUSE_MAX_MS);
  }

  /** Walk shard queue[0]'s buckets for up to WALK_BUDGET_MS, noting where its expired PUTs are. Once
   *  the shard is walked, its addresses are sorted: they are deleted in log order, so the segments the
   *  keys were written into empty one after the other and GC frees them whole. In the index's (hash)
   *  order every segment lost its entries a few at a time, fell under the clean threshold long before
   *  it was empty, and GC copied its expired-but-not-yet-deleted entries, again and again. */
  private walk(now: number): void {
    const index = this.d.shared.indexes[this.queue[0]!];
    if (this.bucket === 0) {
      this.found = [];
      this.order = new Float64Array(0); // the previous shard's are all deleted (or given up)
      this.cursor = 0;
    }
    if (index && this.bucket < index.bucketCount) {
      const bytes = this.d.region.bytes;
      const gc = this.d.shared.gc;
      gc?.epochs.enter(this.epochSlot); // addresses taken from the index stay readable until exit
      const note = (addr: number) => {
        if (bytes[addr] !== EntryType.Put) return;
        const at = expiresAtOf(bytes, addr);
        if (at === 0) return;
        this.deadlines++;
        if (at > now) this.earliest = Math.min(this.earliest, at);
        else this.found.push(addr);
      };
      const clock = this.d.clock ?? monotonicClock;
      const until = clock.now() + WALK_BUDGET_MS;
      try {
        do this.bucket = index.forEachInBuckets(this.bucket, BUCKETS_PER_CHUNK, note);
        while (this.bucket < index.bucketCount && clock.now() < until);
      } finally {
        gc?.epochs.exit(this.epochSlot);
      }
      if (this.bucket < index.bucketCount) return; // still walking: nothing to delete yet
    }
    this.shard = this.queue.shift()!;
    this.bucket = 0;
    this.order = Float64Array.from(this.found).sort();
    this.found = [];
    this.cursor = 0;
  }

  /** The keys of the expired PUTs at `addrs` (copies), read now: an entry GC moved meanwhile is
   *  skipped (a later pass finds it where it went), and the batch checks each key again under its
   *  lock against what the index holds (expired-deletes.ts). */
  private keysAt(addrs: Float64Array, now: number): Buffer[] {
    const out: Buffer[] = [];
    const gc = this.d.shared.gc;
    gc?.epochs.enter(this.epochSlot);
    try {
      for (const addr of addrs) {
        const e = readEntryAt(this.d.region.bytes, addr, this.d.limits);
        if (e !== null && e.type === EntryType.Put && e.shard === this.shard && e.expiresAt !== 0 && e.expiresAt <= now) out.push(Buffer.from(e.key));
      }
    } finally {
      gc?.epochs.exit(this.epochSlot);
    }
    return out;
  }

  /** DEL a step's expired keys (one shard's) as one replicated batch, holding their locks until the
   *  DELs' versions are claimed (not while they replicate). */
  private remove(keys: Buffer[]): void {
    this.running++;
    const t = this.d.worker.term();
    let outcome!: Promise<number>;
    const locked = this.d.locks.runAll(keys, () => {
      let claimed!: () => void;
      const decided = new Promise<void>((r) => (claimed = r));
      outcome = this.d.worker.deleteExpired(keys, t, claimed);
      const settled = outcome.then(
        () => undefined,
        () => undefined,
      );
      return Promise.race([decided, settled]);
    });
    // A DEL not done now (the node stopping or reconfiguring, a backup gone): the keys stay invisible
    // and a later pass deletes them.
    void locked
      .then(() => outcome)
      .then((n) => (this.expired += n), () => (this.failed += keys.length))
      .finally(() => this.running--);
  }
}
