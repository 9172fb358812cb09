// A backup that kept its pool catches up by reconciling, not by a full copy (issue 28; docs/failover.md
// "Rejoin"). A node that restarts after a crash finds its pool intact; cold start indexes it (the node
// serves none of it: it is listed dead, then catching up, and a catching-up replica is never read or
// promoted). Its index of a shard may be behind the primary (writes while it was away), ahead of it
// (writes the old primary never acknowledged, which a failover's gather/scatter left out), or hold
// keys the primary no longer has (a DEL whose tombstone the primary's sweep since dropped). So:
//
//   walk      the primary's index, with `above` = the highest version this node held of the shard at
//             its cold start: entries above it come in full and are absorbed version-conditionally;
//             entries at or below it are listed by key and version, and each whose version this node
//             does not hold is noted. Every version the primary listed or sent is remembered.
//   fix       the noted keys are read from the primary (KEYS) and this node's entry set to the
//             primary's: at its own version where that outranks ours; otherwise (ours is a write the
//             primary never had, or the primary has no entry) *restamped* at the walk's version C.
//   sweep     every entry this node holds of the shard with a version below C that the primary neither
//             listed nor sent, and that is not a DEL, is outranked by a DEL at C.
//
// Why C: the walk's first batch claims C from the primary's version counter and finishes it at once
// (../../actors/worker/copy-source.ts claimUnused), so no write ever holds C; every write claimed before
// it finished before the walk read anything (the first batch's barrier), so the walk saw it or what
// replaced it; every write claimed after it replicates to this node (it was in the configuration
// before the walk was admitted). A restamped entry or DEL at C therefore outranks every stale or
// foreign entry here (each came from a write claimed before C) and is outranked by every later write
// of the key. Versions identify entries within a shard (one counter per shard, and a promotion skips
// far above every version any replica reported), so "the primary listed version v" means "it holds
// this very entry". Restamped entries and DELs go to the promotion log like copied entries: a later
// cold start indexes them, and they outrank the stale ones still on PM there too.
import { hash64Into } from '../../shm/hash.js';
import { PoolEntryReader } from '../../shm/entry-reader.js';
import { EntryType, readEntryAt } from '../../shm/log.js';
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import type { Limits } from '../../config/limits.js';
import type { Pool } from '../../shm/pool.js';
import type { TLog } from '../../shm/tlog.js';
import { absorbEntries, type RawEntry, type RenewalYielder } from '../shared/gather-scatter.js';
import type { KvShared } from '../shared/node-shared.js';
import { KEYS_REQUEST_BYTES_MAX } from '../shared/copy-batch.js';
import { ReadEpochs } from '../shared/gc-state.js';
import { MIGRATION_LOG_OWNER } from '../../config/base/ids.js';

const EMPTY = new Uint8Array(0);
/** Home buckets the sweep walks between two looks at the lease (the main thread renews it). */
const SWEEP_BUCKETS = 256;

export interface ReconcileStats {
  /** Entries listed by key and version (not sent). */
  listed: number;
  /** Keys read again from the primary because this node held another version. */
  fetched: number;
  /** Entries restamped at the walk's counter (this node's own version outranked the primary's). */
  restamped: number;
  /** Stale entries outranked by a DEL at the walk's counter. */
  dropped: number;
}

export class Reconcile {
  /** Versions the primary listed, sent or returned (the entries it holds). */
  private readonly held = new Set<number>();
  /** Keys this node holds at another version than the primary listed. */
  private readonly differ: Uint8Array[] = [];
  private readonly reader: PoolEntryReader;
  private readonly hash = { hi: 0, lo: 0 };
  /** The migration actor's read-epoch slot (its thread's; config/base/ids.ts). */
  private readonly slot = ReadEpochs.slotOf('digest', MIGRATION_LOG_OWNER);
  readonly stats: ReconcileStats = { listed: 0, fetched: 0, restamped: 0, dropped: 0 };
  /** The walk's counter C (see the header); set from its first batch. */
  counter = -1;

  constructor(
    private readonly pool: Pool,
    private readonly shared: KvShared,
    private readonly log: () => TLog,
    private readonly limits: Limits,
    readonly shard: number,
  ) {
    this.reader = new PoolEntryReader(pool.region, limits);
  }

  /** The version this node's index holds of `key` (0: none). */
  private own(key: Uint8Array): { addr: number; version: number } {
    const addr = this.shared.indexes[this.shard]!.get(key, hash64Into(key, this.hash), this.reader);
    return { addr, version: addr === 0 ? 0 : this.reader.versionAt(addr) };
  }

  /** One walk batch: its full entries (`sent`: their versions) were absorbed; note them and check the
   *  listed ones. */
  noteBatch(sent: readonly number[], listed: readonly RawEntry[]): void {
    for (const v of sent) this.held.add(v);
    this.inEpoch(() => {
      for (const e of listed) {
        this.held.add(e.v);
        this.stats.listed++;
        if (this.own(e.key).version !== e.v) this.differ.push(Buffer.from(e.key));
      }
    });
  }

  /** The noted keys in KEYS-request-sized groups. */
  fetchGroups(): Uint8Array[][] {
    const groups: Uint8Array[][] = [];
    let cur: Uint8Array[] = [];
    let bytes = 0;
    for (const k of this.differ) {
      if (bytes + k.length + 2 > KEYS_REQUEST_BYTES_MAX && cur.length > 0) {
        groups.push(cur);
        cur = [];
        bytes = 0;
      }
      cur.push(k);
      bytes += k.length + 2;
    }
    if (cur.length > 0) groups.push(cur);
    return groups;
  }

  /** What the primary returned for one group of noted keys: set each as the header says. */
  fix(asked: readonly Uint8Array[], got: readonly RawEntry[]): void {
    const byKey = new Map(got.map((e) => [Buffer.from(e.key).toString('latin1'), e]));
    const out: RawEntry[] = [];
    this.inEpoch(() => {
      for (const key of asked) {
        this.stats.fetched++;
        const theirs = byKey.get(Buffer.from(key).toString('latin1')) ?? null;
        if (theirs) this.held.add(theirs.v);
        const mine = this.own(key).version;
        if (mine > this.counter) continue; // a later write replicated here: it outranks both
        if (theirs && theirs.v === mine) continue;
        if (theirs && theirs.v > mine) out.push(theirs); // one this node lacks: at its own version
        else if (mine !== 0) out.push(this.restamp(key, mine, theirs));
      }
    });
    this.absorb(out);
  }

  /** The primary's state of `key` (its entry, or none: a DEL) at the walk's counter C, above `mine`. */
  private restamp(key: Uint8Array, mine: number, theirs: RawEntry | null): RawEntry {
    // C is a version no write holds (../../actors/worker/copy-source.ts claimUnused): never ours.
    if (mine === this.counter) throw new RowanError(ErrorCodes.INTERNAL, `shard ${this.shard}: this node holds an entry at the walk's own version ${this.counter}`);
    if (theirs) this.stats.restamped++;
    else this.stats.dropped++;
    return theirs ? { ...theirs, v: this.counter } : { s: this.shard, v: this.counter, t: EntryType.Del, key: Buffer.from(key), value: EMPTY };
  }

  /** Index reads here read keys and versions at pool addresses: GC must not free them meanwhile. */
  private inEpoch<T>(f: () => T): T {
    const epochs = this.shared.gc?.epochs;
    epochs?.enterShared(this.slot);
    try {
      return f();
    } finally {
      epochs?.exitShared(this.slot);
    }
  }

  /** After the walk and the fixes: outrank what this node holds that the primary does not. */
  async sweep(yielder: RenewalYielder): Promise<void> {
    const index = this.shared.indexes[this.shard]!;
    const bytes = this.pool.region.bytes;
    const stale: RawEntry[] = [];
    for (let b = 0; b < index.bucketCount; await yielder.slice()) {
      this.inEpoch(() => {
        b = index.forEachInBuckets(b, SWEEP_BUCKETS, (addr) => {
          const v = this.reader.versionAt(addr);
          if (v >= this.counter || this.held.has(v)) return;
          const e = readEntryAt(bytes, addr, this.limits);
          if (e === null || e.type === EntryType.Del) return; // a DEL reads as the primary's "none"
          stale.push({ s: this.shard, v: this.counter, t: EntryType.Del, key: Buffer.from(e.key), value: EMPTY });
        });
      });
    }
    this.stats.dropped += stale.length;
    this.absorb(stale);
  }

  private absorb(entries: RawEntry[]): void {
    if (entries.length === 0) return;
    absorbEntries(this.pool, this.shared, this.log(), entries, this.limits, undefined, this.slot);
  }
}
