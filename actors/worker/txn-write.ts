// A transaction's writes on the primary (MULTI/EXEC, actors/worker/resp/transaction.ts), durable and
// visible as one unit (DESIGN §7). The path of a PUT (./primary.ts) for several entries of one shard:
//
//   claim count consecutive versions base .. base+count-1 -> append every entry to this worker's t-log,
//   flagged TXN with reserved = count | index << 16 (shm/log-layout.ts FLAG_TXN), and persist -> Rowan
//   writes of every block of every entry to every backup -> once all are acknowledged, index all of
//   them in one synchronous pass -> reply.
//
// The caller holds the node's key locks of every key (RESP writes of those keys wait), and index
// readers that need several keys at once (MGET, EXISTS, TOUCH) take them too, so no reader sees some of the entries
// indexed and not the others. Whatever rebuilds state from a log (a backup's digest, promotion,
// cold start) applies a transaction's entries only once all `count` are present (shm/txn-entries.ts):
// a primary that dies mid-replication leaves some of them on some backups, unacknowledged, and none
// of them becomes visible anywhere.
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import { shardOfKey } from '../../config/slots.js';
import type { CommitTracker } from '../shared/commit.js';
import { indexEntry, nextVersions } from '../shared/node-shared.js';
import { hash64Into, type KeyHash } from '../../shm/hash.js';
import { encodeBlocks, entrySize, EntryType, type EntryInput } from '../../shm/log.js';
import { txnWord } from '../../shm/log-layout.js';
import type { WorkerCore } from './core.js';
import { DEL_KEEP_FREE, type PrimaryPath } from './primary.js';

/** One write of a transaction: the key's new value, or null to delete it. */
export interface TxnWrite {
  key: Uint8Array;
  value: Uint8Array | null;
  /** The new value's expiry deadline, Unix ms (0 or absent: none). */
  expiresAt?: number;
}

/** Most entries one transaction may write (the count is a u16 in the entry header). */
export const TXN_ENTRIES_MAX = 0xffff;

interface Planned {
  e: EntryInput;
  hash: KeyHash;
  addr: number;
}

export class TxnPath {
  constructor(
    private readonly core: WorkerCore,
    private readonly commit: CommitTracker | null,
    private readonly primary: PrimaryPath,
  ) {}

  /** Write every entry of `writes` (all of one shard) as one unit; a DEL of an absent key is dropped. */
  async write(writes: TxnWrite[], clientTerm: number): Promise<void> {
    if (writes.length === 0) return;
    const { c, shard } = await this.primary.admit(writes[0]!.key, clientTerm, false);
    const planned = this.plan(writes, shard, c.shardCount);
    if (planned.length === 0) return;
    const { d } = this.core;
    const base = this.commit ? this.commit.claimRun(shard, planned.length) : nextVersions(d.shared.versions, shard, planned.length);
    for (let i = 0; i < planned.length; i++) planned[i]!.e.version = base + i;
    const backups = d.config().shards[shard]!.backups;
    try {
      const cell = d.cell;
      if (cell && (cell.reconfiguring(shard) || cell.term() !== c.term)) {
        throw new RowanError(ErrorCodes.STALE_TERM, `node ${d.nodeId} is reconfiguring (term ${cell.term()}, pending ${cell.pendingTerm()}); not applied, retry`);
      }
      for (const p of planned) p.addr = d.tlog.append(p.e, true, p.e.type === EntryType.Del ? DEL_KEEP_FREE : undefined); // ①
      const blocks = planned.flatMap((p) => encodeBlocks(p.e, d.limits));
      await this.primary.replicateAll(backups, shard, blocks); // ② (a full backup pool: not applied only if every backup refused)
      this.core.stillHeld(shard); // OUTCOME_UNKNOWN otherwise
      if (cell && !cell.leaseValid(this.core.now())) {
        throw new RowanError(ErrorCodes.OUTCOME_UNKNOWN, `the lease expired while shard ${shard}'s transaction was replicating; it may or may not survive the failover`);
      }
      if (cell && cell.term() !== c.term) this.primary.checkStillPrimary(shard);
      this.core.enterEpoch();
      try {
        for (const p of planned) indexEntry(d.shared, shard, p.e.key!, p.hash, p.addr, p.e.version, this.core.reader); // ③ all in one pass
      } finally {
        this.core.exitEpoch();
      }
    } catch (err) {
      // Entries persisted in the t-log and not acknowledged: no cold start serves them (failed-writes.ts).
      for (const p of planned) if (p.addr >= 0) d.failed?.record(shard, p.e.version, p.addr);
      throw err;
    } finally {
      for (const p of planned) {
        if (p.addr >= 0) d.tlog.release(p.addr);
        this.commit?.finish(shard, p.e.version);
      }
    }
    this.core.stats.puts += planned.length;
  }

  /** The entries to write, checked before a version is claimed ("not applied" on any refusal). */
  private plan(writes: TxnWrite[], shard: number, shardCount: number): Planned[] {
    const { d } = this.core;
    if (writes.length > TXN_ENTRIES_MAX) throw new RowanError(ErrorCodes.BAD_ARGUMENT, `a transaction writes at most ${TXN_ENTRIES_MAX} keys (${writes.length})`);
    const out: Planned[] = [];
    const index = this.core.indexOf(shard);
    for (const w of writes) {
      if (shardOfKey(w.key, shardCount) !== shard) throw new RowanError(ErrorCodes.BAD_ARGUMENT, `a transaction's keys are of one shard (${shard})`);
      const hash = hash64Into(w.key, { hi: 0, lo: 0 });
      const present = this.primary.present(shard, w.key, hash);
      if (w.value === null && !present) continue; // nothing to delete
      if (w.value !== null && !present && index.freeOverflowBuckets() < d.limits.indexHeadroomBuckets) {
        throw new RowanError(ErrorCodes.INDEX_FULL, `shard ${shard}'s index is at its maximum: a transaction writing a new key is refused, not applied`);
      }
      const e: EntryInput = { type: w.value === null ? EntryType.Del : EntryType.Put, shard, version: 0, key: w.key, ...(w.value ? { value: w.value } : {}), ...(w.value && w.expiresAt ? { expiresAt: w.expiresAt } : {}) };
      entrySize(e, d.limits); // size and shape checks before a version is consumed
      out.push({ e, hash, addr: -1 });
    }
    for (let i = 0; i < out.length; i++) out[i]!.e.txn = txnWord(out.length, i);
    return out;
  }
}
