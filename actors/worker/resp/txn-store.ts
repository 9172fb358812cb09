// The store a transaction's queued commands run against at EXEC (./transaction.ts): reads see the
// shard's index overlaid with the transaction's own earlier writes, and writes are only recorded, with
// the checks the write path would refuse them with (key and value bounds: "not applied" errors, so a
// command's runtime error is its own reply and the others run, as in Redis). EXEC then commits every
// recorded write as one unit (KvWorker.commitTxn: consecutive versions, one index update once all are
// persistent on every replica). The commands are the ordinary ones (keys.ts, counters.ts, ...), given
// this store as their `ctx.worker`: they call get/put/del/term and nothing else of the worker.
import type { Limits } from '../../../config/limits.js';
import type { KvWorker, TxnWrite } from '../kv.js';
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

  async get(key: Uint8Array, clientTerm: number): Promise<Uint8Array | null> {
    const w = this.pending.get(nameOf(key));
    if (w) return w.value;
    return this.worker.get(key, clientTerm);
  }

  put(key: Uint8Array, value: Uint8Array, _clientTerm: number): Promise<void> {
    checkWrite(this.limits, key, value); // throws KEY_EMPTY / KEY_TOO_LARGE / VALUE_TOO_LARGE / ENTRY_TOO_LARGE
    this.record(key, Uint8Array.from(value));
    return Promise.resolve();
  }

  del(key: Uint8Array, _clientTerm: number): Promise<void> {
    checkWrite(this.limits, key, null);
    this.record(key, null);
    return Promise.resolve();
  }

  /** The transaction's writes, one per key (its last), in first-write order. */
  writes(): TxnWrite[] {
    return [...this.pending.values()];
  }

  private record(key: Uint8Array, value: Uint8Array | null): void {
    const name = nameOf(key);
    const had = this.pending.get(name);
    if (had) had.value = value;
    else this.pending.set(name, { key: Uint8Array.from(key), value });
  }

  /** This store as the `worker` of a command's context (the commands use only get/put/del/term). */
  asWorker(): KvWorker {
    return this as unknown as KvWorker;
  }
}

function nameOf(key: Uint8Array): string {
  return Buffer.from(key.buffer, key.byteOffset, key.length).toString('latin1');
}
