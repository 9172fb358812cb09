// The store a transaction's queued commands run against at EXEC (./transaction.ts): reads see the
// shard's index overlaid with the transaction's own earlier writes, and writes are only recorded, with
// the checks the write path would refuse them with (key and value bounds: "not applied" errors, so a
// command's runtime error is its own reply and the others run, as in Redis). EXEC then commits every
// recorded write as one unit (KvWorker.commitTxn: consecutive versions, one index update once all are
// persistent on every replica). The commands are the ordinary ones (keys.ts, counters.ts, ...), given
// this store as their `ctx.worker`: they call get/getLive/put/del/term/wallNow and nothing else of the
// worker; a write's expiry deadline travels with it into the transaction's entry.
import type { Limits } from '../../../config/limits.js';
import type { KvWorker, Live, TxnWrite } from '../kv.js';
import { checkWrite } from './multi-key.js';

export class TxnStore {
  /** The last write of each key (latin1 name), in the order keys were first written. */
  private readonly pending = new Map<string, TxnWrite>();

  constructor(
    private readonly worker: KvWorker,
    private readonly limits: Limits,
  ) {}

  term(): number {
    return this.worker.term();
  }

  /** Unix ms by the worker's clock, as reads and deadlines are judged outside a transaction. */
  wallNow(): number {
    return this.worker.wallNow();
  }

  async get(key: Uint8Array, clientTerm: number): Promise<Uint8Array | null> {
    return (await this.getLive(key, clientTerm))?.value ?? null;
  }

  /** The key's value and deadline as the transaction sees it: its own last write, else the store's. */
  async getLive(key: Uint8Array, clientTerm: number): Promise<Live | null> {
    const w = this.pending.get(nameOf(key));
    if (!w) return this.worker.getLive(key, clientTerm);
    if (w.value === null || (w.expiresAt && this.wallNow() >= w.expiresAt)) return null;
    return { value: w.value, expiresAt: w.expiresAt ?? 0 };
  }

  put(key: Uint8Array, value: Uint8Array, _clientTerm: number, expiresAt = 0): Promise<void> {
    checkWrite(this.limits, key, value, expiresAt); // throws KEY_EMPTY / KEY_TOO_LARGE / VALUE_TOO_LARGE / ENTRY_TOO_LARGE
    this.record(key, Uint8Array.from(value), expiresAt);
    return Promise.resolve();
  }

  del(key: Uint8Array, _clientTerm: number): Promise<void> {
    checkWrite(this.limits, key, null);
    this.record(key, null, 0);
    return Promise.resolve();
  }

  /** The transaction's writes, one per key (its last), in first-write order. */
  writes(): TxnWrite[] {
    return [...this.pending.values()];
  }

  private record(key: Uint8Array, value: Uint8Array | null, expiresAt: number): void {
    const name = nameOf(key);
    const had = this.pending.get(name);
    if (had) (had.value = value), (had.expiresAt = expiresAt);
    else this.pending.set(name, { key: Uint8Array.from(key), value, expiresAt });
  }

  /** This store as the `worker` of a command's context (the commands use only the methods above). */
  asWorker(): KvWorker {
    return this as unknown as KvWorker;
  }
}

function nameOf(key: Uint8Array): string {
  return Buffer.from(key.buffer, key.byteOffset, key.length).toString('latin1');
}
