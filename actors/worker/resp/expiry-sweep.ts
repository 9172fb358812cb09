// Active expiry: a key whose deadline has passed is invisible at once (primary.ts lookup), but its
// entry stays indexed, and its bytes live, until something deletes it. This sweep, run from the worker
// actor's tick, walks the indexes of the shards this node is primary of (worker w takes the shards
// s with s mod workers = w) a bounded number of buckets per tick, and for each key whose indexed PUT is
// past its deadline writes a DEL through the ordinary write path, under the key's RESP lock: the DEL is
// versioned, in the t-log and on every backup like a client's DEL, so the key is gone on every replica
// and after any failover or cold start, and its older entries become garbage for the clean actors
// (whose tombstone sweep, actors/clean/tombstones.ts, later drops the DEL itself). Letting GC drop an
// expired PUT without a DEL would instead let an older version of the key, still in another segment,
// win a cold start's version comparison and come back.
// Why a worker and not the clean actor: the DEL must be replicated by the shard's primary (version
// claim, t-log, Rowan writes to the backups) and serialised with the key's other RESP writes (the
// locks), both of which live in the worker; the clean actor has neither.
// Idle cost: a pass that saw no deadline at all leaves the sweep dormant: a tick then costs one
// Atomics.load of the node's deadline-write counter (node-shared.ts `expiry`) and a term compare, and
// the sweep wakes when any worker of the node writes a deadline, when the configuration changes (a
// promotion brings keys with deadlines), or when the earliest deadline the last pass saw comes.
// Bounded work: BUCKETS_PER_STEP buckets and DELS_PER_STEP deletes per tick, the next step only once
// the previous deletes finished, so requests interleave and a mass expiry cannot stall them.
import type { Limits } from '../../../config/limits.js';
import type { PersistentRegion } from '../../../config/base/region.js';
import { ReadEpochs } from '../../shared/gc-state.js';
import type { KvShared } from '../../shared/node-shared.js';
import { EntryType, expiresAtOf, readEntryAt } from '../../../shm/log.js';
import type { KvWorker } from '../kv.js';
import type { KeyLocks } from './context.js';

const BUCKETS_PER_STEP = 4096;
const DELS_PER_STEP = 64;
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
  private bucket = 0;
  private deadlines = 0; // deadlines seen this pass, expired or not
  private earliest = Infinity; // the earliest deadline not yet past seen this pass
  private running = false;
  private inPass = false;
  private failed = 0;
  private readonly epochSlot: number;

  constructor(private readonly d: ExpirySweepDeps) {
    this.epochSlot = ReadEpochs.slotOf('worker', d.workerId);
  }

  /** One bounded step; true while the sweep has work now (the tick should not back off). */
  tick(): boolean {
    if (this.running) return true;
    const writes = this.d.shared.expiryWrites ? Atomics.load(this.d.shared.expiryWrites, 0) : 0; // what any worker's deadline PUTs published
    const term = this.d.worker.term();
    const now = this.d.worker.wallNow();
    if (writes !== this.seenWrites || term !== this.seenTerm) {
      this.seenWrites = writes;
      this.seenTerm = term;
      this.dormant = false;
      this.sleepUntil = 0;
    }
    if (this.dormant || now < this.sleepUntil) return false;
    if (!this.inPass) this.startPass();
    if (this.queue.length === 0) {
      this.endPass(now);
      return false;
    }
    const expired = this.step(now);
    if (expired.length > 0) this.remove(expired);
    return true;
  }

  private startPass(): void {
    const c = this.d.worker.config();
    this.inPass = true;
    this.sleepUntil = 0;
    this.queue = c.shards.filter((s) => s.primary === this.d.shared.nodeId && s.id % this.d.workers === this.d.workerId).map((s) => s.id);
    this.bucket = 0;
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

  /** Walk up to BUCKETS_PER_STEP buckets of the current shard; the expired keys found (copies). */
  private step(now: number): Buffer[] {
    const out: Buffer[] = [];
    const bytes = this.d.region.bytes;
    const gc = this.d.shared.gc;
    gc?.epochs.enter(this.epochSlot); // addresses taken from the index stay readable until exit
    try {
      while (this.queue.length > 0 && out.length < DELS_PER_STEP) {
        const index = this.d.shared.indexes[this.queue[0]!];
        if (!index || this.bucket >= index.bucketCount) {
          this.queue.shift();
          this.bucket = 0;
          continue;
        }
        this.bucket = index.forEachInBuckets(this.bucket, BUCKETS_PER_STEP, (addr) => {
          if (bytes[addr] !== EntryType.Put) return;
          const at = expiresAtOf(bytes, addr);
          if (at === 0) return;
          this.deadlines++;
          if (at > now) this.earliest = Math.min(this.earliest, at);
          else {
            const e = readEntryAt(bytes, addr, this.d.limits);
            if (e !== null) out.push(Buffer.from(e.key));
          }
        });
        break; // one slice of buckets per tick
      }
    } finally {
      gc?.epochs.exit(this.epochSlot);
    }
    return out;
  }

  private remove(keys: Buffer[]): void {
    this.running = true;
    const t = this.d.worker.term();
    const one = (k: Buffer) => this.d.locks.run(k, () => this.d.worker.deleteExpired(k, t)).then((deleted) => {
      if (deleted) this.expired++;
    });
    // A DEL not done now (the node stopping or reconfiguring, a backup gone): the key stays invisible
    // and a later pass deletes it.
    void Promise.all(keys.map((k) => one(k).catch(() => this.failed++))).finally(() => (this.running = false));
  }
}
