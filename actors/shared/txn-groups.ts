// A transaction's entries gathered until all of them are present (DESIGN §7: a transaction's writes are
// durable and visible as one unit). Entries flagged TXN (shm/log-layout.ts FLAG_TXN) carry count and
// index; entry i of a transaction has version base + i, so ⟨shard, version - index⟩ names the group.
// Whoever rebuilds an index from a b-log (./apply.ts: a backup's digest, a promotion's catch-up, the
// cold start) hands each such entry here and indexes the group's entries only once all `count` are in.
// A primary that died mid-replication left some of them on some replicas, unacknowledged: such a group
// stays here until it is dropped (a CommitVer covering it says the primary finished it without this
// replica getting all of it: it failed; or the caller gives up at the end of a scan), and none of its
// entries is ever indexed. Entries are copied, and the b-log offsets of their blocks are kept: a digest
// holds the segments they lie in out of Committed while the group is open (as it does for a
// multi-block entry's blocks), so a promotion's catch-up or gather, which scan the segments not yet
// Committed, find every entry of a transaction split across segments.
import { txnCount, txnIndex } from '../../shm/log-layout.js';
import type { EntryType } from '../../shm/log.js';

export interface TxnEntry {
  type: EntryType;
  shard: number;
  version: number;
  key: Uint8Array;
  value: Uint8Array;
  /** Expiry deadline, Unix ms (log FLAG_EXPIRES); 0 or absent = none. */
  expiresAt?: number;
}

interface Group {
  shard: number;
  base: number;
  entries: (TxnEntry | undefined)[];
  got: number;
  /** b-log offsets of the blocks of the entries held. */
  offsets: number[];
}

export class TxnGroups {
  private readonly open = new Map<string, Group>();

  get pending(): number {
    return this.open.size;
  }

  /** Take one entry of transaction word `word`; returns the whole group, in index order, once the
   *  last of its entries came (a duplicate of an entry already held is ignored). */
  add(e: TxnEntry, word: number, offsets: readonly number[] = []): TxnEntry[] | null {
    const count = txnCount(word);
    const i = txnIndex(word);
    const base = e.version - i;
    const id = `${e.shard}:${base}`;
    let g = this.open.get(id);
    if (!g) {
      g = { shard: e.shard, base, entries: new Array<TxnEntry | undefined>(count), got: 0, offsets: [] };
      this.open.set(id, g);
    }
    if (g.entries.length !== count || g.entries[i] !== undefined) return null; // a conflicting or repeated block
    g.entries[i] = { type: e.type, shard: e.shard, version: e.version, key: e.key.slice(), value: e.value.slice(), expiresAt: e.expiresAt ?? 0 };
    g.offsets.push(...offsets);
    if (++g.got < count) return null;
    this.open.delete(id);
    return g.entries as TxnEntry[];
  }

  /** Where the blocks of the entries of open groups lie (the segments a digest must not vote Committed). */
  pendingOffsets(): number[] {
    const out: number[] = [];
    for (const g of this.open.values()) out.push(...g.offsets);
    return out;
  }

  /** Drop the groups of the shards `gone` names; returns how many. */
  dropShards(gone: (shard: number) => boolean): number {
    let n = 0;
    for (const [id, g] of this.open) {
      if (gone(g.shard)) {
        this.open.delete(id);
        n++;
      }
    }
    return n;
  }

  /** Drop the groups of `shard` at or below `commitVer` (finished by their primary, never whole here). */
  dropCovered(shard: number, commitVer: number): number {
    let n = 0;
    for (const [id, g] of this.open) {
      if (g.shard === shard && g.base <= commitVer) {
        this.open.delete(id);
        n++;
      }
    }
    return n;
  }

  clear(): number {
    const n = this.open.size;
    this.open.clear();
    return n;
  }
}

/** A listed entry and its transaction word (0: of no transaction). */
export interface WordedEntry {
  shard: number;
  version: number;
  txn: number;
}

/**
 * The ids (`shard:version`) of entries of transactions not all of whose entries are in `entries`
 * (keyed by that id, duplicates already merged): a list that gathers entries for other replicas (a
 * promotion's gather, a restarted primary's tail, ./gather-scatter.ts) leaves them out, so a
 * transaction torn by its primary's crash is scattered to no replica. A transaction reaches each
 * backup in order, so if the union of the replicas holds all of it, the replica with the most of it
 * holds all of it.
 */
export function tornTxnIds(entries: ReadonlyMap<string, WordedEntry>): Set<string> {
  const have = new Map<string, number>();
  for (const e of entries.values()) {
    if (e.txn === 0) continue;
    const g = `${e.shard}:${e.version - txnIndex(e.txn)}`;
    have.set(g, (have.get(g) ?? 0) + 1);
  }
  const torn = new Set<string>();
  for (const [id, e] of entries) {
    if (e.txn !== 0 && have.get(`${e.shard}:${e.version - txnIndex(e.txn)}`)! < txnCount(e.txn)) torn.add(id);
  }
  return torn;
}
