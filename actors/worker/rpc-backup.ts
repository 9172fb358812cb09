// REPLICATE (RPC-KV, ROWAN §6.1, cluster replication mode `rpc`): this worker is a backup's worker and
// takes one block a primary's worker sends over the client protocol. It appends the block's entry to
// its backup log (a TLog of role Worker, owner backupLogOwner(workerId), config/base/ids.ts: a
// contiguous log of whole entries, exactly what cold start reads a t-log as), persists it, updates the
// shard's index and only then replies -- the backup's CPU is on the replication path, which is the
// point of the baseline. Multi-block entries are gathered in a BlockAssembler; a non-final block is
// acknowledged from memory (the primary counts an entry replicated only after its final block's reply,
// which comes after the whole entry is persistent here). A transaction's entries (../shared/txn-groups.ts)
// are held the same way and appended and indexed together with its last one: a primary that dies while
// replicating a transaction leaves none of it here.
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import { applyFlush } from '../shared/flush-floor.js';
import { indexEntry, raiseVersion } from '../shared/node-shared.js';
import { hash64Into, type KeyHash } from '../../shm/hash.js';
import { BlockAssembler } from '../../shm/log-assembler.js';
import { EntryType, readBlock, singleBlockEntry, type EntryInput } from '../../shm/log.js';
import type { WorkerCore } from './core.js';
import { TxnGroups } from '../shared/txn-groups.js';

export class RpcBackup {
  private readonly hash: KeyHash = { hi: 0, lo: 0 };
  private assembler: BlockAssembler | null = null;
  private readonly txns = new TxnGroups();

  constructor(private readonly core: WorkerCore) {}

  replicate(block: Uint8Array, clientTerm: number): void {
    const { d, stats } = this.core;
    const c = d.config();
    if (clientTerm !== c.term) {
      throw new RowanError(ErrorCodes.STALE_TERM, `replication routed with term ${clientTerm}, this node is at term ${c.term}`);
    }
    const log = d.backupLog;
    if (!log) throw new RowanError(ErrorCodes.UNKNOWN_OP, `node ${d.nodeId} does not replicate over RPC (cluster mode ${c.replication})`);
    const b = readBlock(block, 0, block.length, d.limits);
    if (b === null) throw new RowanError(ErrorCodes.BAD_FRAME, `REPLICATE carries ${block.length} B that are not one intact log block`);
    const placement = c.shards[b.shard];
    if (!placement || !placement.backups.includes(d.nodeId)) {
      throw new RowanError(ErrorCodes.WRONG_SHARD, `node ${d.nodeId} is no backup of shard ${b.shard}`);
    }
    this.core.indexOf(b.shard); // held here (WRONG_SHARD otherwise), checked before anything is appended
    stats.replicatedBlocks++;
    // Versions seen keep this node's shard version above them (a promoted backup continues after them).
    raiseVersion(d.shared.versions, b.shard, b.version);
    let e: EntryInput;
    if (b.cnt === 1) {
      e = { type: b.type, shard: b.shard, version: b.version };
      const one = singleBlockEntry(b);
      if (b.type !== EntryType.CommitVer && b.type !== EntryType.Flush) e.key = one.key;
      if (b.type === EntryType.Put) {
        e.value = one.value;
        e.expiresAt = one.expiresAt;
      }
    } else {
      this.assembler ??= new BlockAssembler(d.limits);
      const now = this.core.now();
      const whole = this.assembler.add(b, now); // copies the payload: the received bytes may be freed
      stats.partialEntriesDropped += this.assembler.expire(now, d.limits.partialEntryMs, d.limits.partialEntriesMax);
      if (whole === null) return;
      e = { type: whole.type, shard: whole.shard, version: whole.version, key: whole.key, value: whole.value, expiresAt: whole.expiresAt };
    }
    if (b.txn === 0) return this.keep(e);
    const whole = this.txns.add({ type: e.type, shard: e.shard, version: e.version, key: e.key!, value: e.value ?? new Uint8Array(0), expiresAt: e.expiresAt ?? 0 }, b.txn);
    if (whole) for (const x of whole) this.keep(x);
  }

  /** Append the entry to this worker's backup log (persisted, plain) and index it. */
  private keep(e: EntryInput): void {
    const { d, stats } = this.core;
    const addr = d.backupLog!.append({ type: e.type, shard: e.shard, version: e.version, ...(e.key ? { key: e.key } : {}), ...(e.type === EntryType.Put && e.value ? { value: e.value } : {}), ...(e.type === EntryType.Put && e.expiresAt ? { expiresAt: e.expiresAt } : {}) });
    stats.replicatedEntries++;
    if (e.type === EntryType.CommitVer) return;
    this.core.enterEpoch();
    try {
      if (e.type === EntryType.Flush) {
        applyFlush(d.shared, e.shard, e.version, addr, this.core.reader); // ../shared/flush-floor.ts
        return;
      }
      indexEntry(d.shared, e.shard, e.key!, hash64Into(e.key!, this.hash), addr, e.version, this.core.reader);
    } finally {
      this.core.exitEpoch();
    }
  }
}
