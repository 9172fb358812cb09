// Key locks every worker of a node shares (DESIGN §7: "counters are read-modify-write under the key's
// lock"). Any worker of a node serves any key whose shard the node is primary of (RESP on both its
// ports, actors/worker/resp/node-view.ts), so a per-worker lock alone would let INCR through worker 0
// and INCR through worker 1 read the same value and both write value + 1. The node's main thread makes
// one table (createKeyLocks) and hands it to every worker in its start message (./node-shared.ts).
//
// A key maps to a stripe (its 64-bit hash, folded, mod STRIPES); a stripe is a ticket lock:
//
//   Int32 [ NEXT_0 | SERVING_0 | NEXT_1 | SERVING_1 | ... | NEXT_{STRIPES-1} | SERVING_{STRIPES-1} ]
//
//   NEXT     the next ticket to hand out: a waiter takes one with Atomics.add
//   SERVING  the ticket that holds the stripe now: the holder bumps it when done
//
// Tickets make the lock FIFO across threads: a worker whose requests keep arriving cannot starve
// another worker's waiter (a compare-and-swap lock let the releasing worker's next request win every
// time). Waiting is Atomics.waitAsync on SERVING, so a waiting request blocks no thread. Two keys in
// one stripe serialize (4096 stripes: rare, and only costs waiting); a request that needs several keys
// takes their distinct stripes in ascending order, so two such requests cannot deadlock. A ticket is
// always used: acquire() completes (it does not time out) and its caller releases in a finally.
// Nothing here is persistent: a lock is held only while a request runs, and a node that dies loses
// its requests with it.
import { hash64Into, type KeyHash } from '../../shm/hash.js';

export const KEY_LOCK_STRIPES = 4096;
/** Int32 fields per stripe, and their offsets. */
const STRIPE_FIELDS = 2;
const NEXT = 0;
const SERVING = 1;
/** Atomics.waitAsync bound while a stripe is held: a backoff, not a correctness device (release notifies). */
const WAIT_MS = 250;

export function createKeyLocks(): SharedArrayBuffer {
  return new SharedArrayBuffer(4 * STRIPE_FIELDS * KEY_LOCK_STRIPES);
}

export class SharedKeyLocks {
  private readonly i32: Int32Array;
  private readonly hash: KeyHash = { hi: 0, lo: 0 };

  constructor(sab: SharedArrayBuffer = createKeyLocks()) {
    this.i32 = new Int32Array(sab);
  }

  /** The distinct stripes of these keys, ascending (the order they are taken in). */
  stripesOf(keys: Uint8Array[]): number[] {
    if (keys.length === 1) return [this.stripeOf(keys[0]!)];
    return [...new Set(keys.map((k) => this.stripeOf(k)))].sort((a, b) => a - b);
  }

  private stripeOf(key: Uint8Array): number {
    const h = hash64Into(key, this.hash);
    return ((h.lo ^ h.hi) >>> 0) % KEY_LOCK_STRIPES;
  }

  /** Run f holding the stripes of `keys` (every worker of the node sees the same stripes). A free
   *  stripe is taken without a wait (the common case: one key, no contention). */
  run<T>(keys: Uint8Array[], f: () => Promise<T>): Promise<T> {
    const stripes = this.stripesOf(keys);
    for (let i = 0; i < stripes.length; i++) {
      // A ticket of the next stripe only once the previous ones are held: a ticket is a place in the
      // queue, and places taken out of order would let two requests each hold what the other waits for.
      const ticket = this.take(stripes[i]!);
      if (this.serving(stripes[i]!) !== ticket) return this.takeRest(stripes, i, ticket).then(() => this.holding(stripes, f));
    }
    return this.holding(stripes, f);
  }

  /** Wait for `ticket` on stripes[i], then take the stripes after it one by one. */
  private async takeRest(stripes: number[], i: number, ticket: number): Promise<void> {
    await this.wait(stripes[i]!, ticket);
    for (let j = i + 1; j < stripes.length; j++) await this.wait(stripes[j]!, this.take(stripes[j]!));
  }

  private take(stripe: number): number {
    return Atomics.add(this.i32, STRIPE_FIELDS * stripe + NEXT, 1); // publishes our place in the stripe's queue
  }

  private holding<T>(stripes: number[], f: () => Promise<T>): Promise<T> {
    const release = () => {
      for (let i = stripes.length - 1; i >= 0; i--) this.release(stripes[i]!);
    };
    let p: Promise<T>;
    try {
      p = f();
    } catch (e) {
      release();
      throw e;
    }
    return p.then(
      (r) => {
        release();
        return r;
      },
      (e: unknown) => {
        release();
        throw e;
      },
    );
  }

  private serving(stripe: number): number {
    return Atomics.load(this.i32, STRIPE_FIELDS * stripe + SERVING); // the holder's ticket
  }

  /** Resolves once `ticket` is served on `stripe`. */
  private async wait(stripe: number, ticket: number): Promise<void> {
    for (;;) {
      const serving = this.serving(stripe);
      if (serving === ticket) return;
      const w = Atomics.waitAsync(this.i32, STRIPE_FIELDS * stripe + SERVING, serving, WAIT_MS); // woken by release()'s notify
      if (w.async) await w.value;
    }
  }

  private release(stripe: number): void {
    const at = STRIPE_FIELDS * stripe + SERVING;
    Atomics.add(this.i32, at, 1); // publishes "next ticket's turn" (wraps at 2^32 like NEXT: equality still holds)
    Atomics.notify(this.i32, at); // wakes every waiter of the stripe: each checks whether its ticket is up
  }
}
