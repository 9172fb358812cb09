// A worker's ROWAN-KV request logic (§4.1), independent of threads and sockets so a test can drive it
// directly (CONVENTIONS 9). The worker actor wires it to its client port and its Rowan connections.
// One class per job, composed here behind the client protocol's handler interface:
//   primary.ts     PUT/DEL/GET of the shards this node is primary of (t-log, replication, index)
//   expired-deletes.ts  the expiry sweep's DELs, one replicated batch per sweep step
//   rpc-backup.ts  REPLICATE: RPC-KV's backup side (replication mode `rpc`)
//   commit.ts of actors/sharedCommitVer tracking and its dissemination every period (§4.4)
//   gate.ts        requests in flight, refused once stopping, quiesced before the pool is unmapped
import type { ClusterConfig } from '../../config/cluster.js';
import { CommitTracker } from '../shared/commit.js';
import { EntryType } from '../../shm/log.js';
import { OP_DEL, OP_GET, OP_PUT } from '../shared/node-metrics.js';
import { WorkerCore, type KvWorkerDeps, type KvWorkerStats } from './core.js';
import { RequestGate } from './gate.js';
import { PrimaryPath, type Live } from './primary.js';
import { TxnPath, type TxnWrite } from './txn-write.js';
import { FlushPath } from './flush.js';
import { ExpiredDeletes } from './expired-deletes.js';
import { RpcBackup } from './rpc-backup.js';
import { CopySource } from './copy-source.js';
import { grantPeerLease } from '../shared/peer-lease.js';
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import { ExpiryKind, type ExpiryKindCode } from '../../runtime/rpc/frames-layout.js';

export type { KvWorkerDeps, KvWorkerStats } from './core.js';
export { DEL_KEEP_FREE, type Live } from './primary.js';
export type { TxnWrite } from './txn-write.js';

export class KvWorker {
  /** Commit tracking (§4.4), when the node keeps GC state. */
  readonly commit: CommitTracker | null = null;
  private readonly core: WorkerCore;
  private readonly gate = new RequestGate();
  private readonly primary: PrimaryPath;
  private readonly txn: TxnPath;
  private readonly flusher: FlushPath;
  private readonly expired: ExpiredDeletes;
  private readonly backup: RpcBackup;
  private readonly copy: CopySource;

  constructor(private readonly d: KvWorkerDeps) {
    this.core = new WorkerCore(d);
    const id = d.workerId ?? 0;
    const gc = d.shared.gc;
    if (gc) this.commit = new CommitTracker(gc.buffers, d.shared.versions, d.config().shardCount, id, d.workers ?? id + 1, d.shared.marks);
    this.primary = new PrimaryPath(this.core, this.commit);
    this.txn = new TxnPath(this.core, this.commit, this.primary);
    this.flusher = new FlushPath(this.core, this.commit, this.primary);
    this.expired = new ExpiredDeletes(this.core, this.commit, this.primary);
    this.backup = new RpcBackup(this.core);
    // A batch rides in a VALUE reply, bounded by the client port's value limit.
    this.copy = new CopySource(this.core, this.commit, d.limits.valueBytesMax);
  }

  get stats(): KvWorkerStats {
    return this.core.stats;
  }

  term(): number {
    return this.d.config().term;
  }

  config(): ClusterConfig {
    return this.d.config();
  }

  /** Resolves when the node's configuration cell changes (a term published or prepared, a lease
   *  renewed), or after `timeoutMs`; without a cell (unit tests) after `timeoutMs`. */
  configChanged(timeoutMs: number): Promise<void> {
    if (this.d.cell) return this.d.cell.changed(timeoutMs);
    return new Promise((r) => setTimeout(r, timeoutMs));
  }

  /** PUT_EXPIRES of the binary protocol: a TTL becomes a deadline by this node's clock, the clock the
   *  primary decides expiry with (as SET PX on the RESP port); a deadline is taken as given (PXAT). */
  async putExpiring(key: Uint8Array, value: Uint8Array, clientTerm: number, expiry: { kind: ExpiryKindCode; ms: number }): Promise<void> {
    await this.put(key, value, clientTerm, expiry.kind === ExpiryKind.TTL_MS ? this.wallNow() + expiry.ms : expiry.ms);
  }

  /** DEL those of `keys` (one shard's) whose entry's expiry deadline has passed, replicated as one
   *  batch (the expiry sweep, under the keys' locks until `claimed` is called); how many were deleted. */
  async deleteExpired(keys: Uint8Array[], clientTerm: number, claimed?: () => void): Promise<number> {
    this.d.onWrite?.();
    return this.gate.track(() => this.expired.write(keys, clientTerm, claimed));
  }

  /** Unix ms as this node decides expiry (never going back within the process). */
  /** Monotonic ms (the node's injected clock). */
  now(): number {
    return this.core.now();
  }

  wallNow(): number {
    return this.core.wallNow();
  }

  /** Requests running now (the worker's tick is idle only when none is). */
  get inFlight(): number {
    return this.gate.inFlight;
  }

  /** PUT; `expiresAt` (Unix ms, 0 = none) is the key's expiry deadline, stored in the entry. */
  async put(key: Uint8Array, value: Uint8Array, clientTerm: number, expiresAt = 0): Promise<void> {
    const t0 = this.started();
    this.d.onWrite?.();
    try {
      await this.gate.track(() => this.primary.write(EntryType.Put, key, value, clientTerm, expiresAt));
    } catch (err) {
      this.timed(OP_PUT, t0, false);
      throw err;
    }
    this.timed(OP_PUT, t0, true);
    this.core.stats.puts++;
  }

  async del(key: Uint8Array, clientTerm: number): Promise<void> {
    const t0 = this.started();
    this.d.onWrite?.();
    try {
      await this.gate.track(() => this.primary.write(EntryType.Del, key, undefined, clientTerm));
    } catch (err) {
      this.timed(OP_DEL, t0, false);
      throw err;
    }
    this.timed(OP_DEL, t0, true);
    this.core.stats.dels++;
  }

  async get(key: Uint8Array, clientTerm: number): Promise<Uint8Array | null> {
    return (await this.getLive(key, clientTerm))?.value ?? null;
  }

  /** The key's value and expiry deadline; null when it is absent or expired (by wallNow()). */
  async getLive(key: Uint8Array, clientTerm: number): Promise<Live | null> {
    const t0 = this.started();
    this.gate.check();
    let v: Live | null;
    try {
      v = await this.primary.get(key, clientTerm);
    } catch (err) {
      this.timed(OP_GET, t0, false);
      throw err;
    }
    this.timed(OP_GET, t0, true);
    return v;
  }

  /** A transaction's writes (all of one shard) as one unit: all persistent on every replica, then all
   *  visible at once (txn-write.ts). The caller holds the keys' locks. */
  async commitTxn(writes: TxnWrite[], clientTerm: number): Promise<void> {
    const t0 = this.started();
    this.d.onWrite?.();
    try {
      await this.gate.track(() => this.txn.write(writes, clientTerm));
    } catch (err) {
      this.timed(OP_PUT, t0, false);
      throw err;
    }
    this.timed(OP_PUT, t0, true);
  }

  /** FLUSHDB/FLUSHALL of one shard this node is primary of (flush.ts): one replicated FLUSH entry, the
   *  shard's index emptied below it. Resolves with the index items dropped. */
  async flushShard(shard: number, clientTerm: number): Promise<number> {
    this.d.onWrite?.();
    return this.gate.track(() => this.flusher.flushShard(shard, clientTerm));
  }

  /** What WATCH records of a key and EXEC compares (primary.ts watchState). */
  async watchState(key: Uint8Array, clientTerm: number): Promise<string> {
    this.gate.check();
    return this.primary.watchState(key, clientTerm);
  }

  // ---- request metrics (actors/shared/node-metrics.ts): a clock read at each end, no allocation ----------

  private started(): number {
    return this.d.metrics ? this.d.metrics.clock.now() : 0;
  }

  private timed(op: number, t0: number, ok: boolean): void {
    const m = this.d.metrics;
    if (m) m.histograms.record(this.d.workerId ?? 0, op, (m.clock.now() - t0) / 1000, ok);
  }

  /** This node's copy of a key, whether it is the shard's primary or a backup (for inspection/tests). */
  async getReplica(key: Uint8Array): Promise<Uint8Array | null> {
    this.gate.check();
    return this.primary.getReplica(key);
  }

  /** Re-replication (§4.5 phase 3): a batch of a shard this node is primary of, for a new backup. */
  async copyShard(request: Uint8Array, clientTerm: number): Promise<Uint8Array> {
    this.gate.check();
    return this.copy.copyShard(request, clientTerm);
  }

  /** A peer lease (docs/failover.md "Partitions", actors/shared/peer-lease.ts): promise the asking node not to take
   *  over its shards for a lease, if this node may. Without a configuration manager there is no lease. */
  async peerLease(request: Uint8Array, clientTerm: number): Promise<void> {
    this.gate.check();
    const cell = this.d.cell;
    if (!cell) throw new RowanError(ErrorCodes.UNKNOWN_OP, 'this node runs without a configuration manager: no leases');
    grantPeerLease(cell, request, clientTerm, this.core.now(), this.d.nodeId);
  }

  /** RPC-KV backup side: append the block's entry to the backup log (persist), index it, then reply. */
  async replicate(block: Uint8Array, clientTerm: number): Promise<void> {
    return this.gate.track(async () => this.backup.replicate(block, clientTerm));
  }

  /** Write <shard, CommitVer> to the backups of the shards this node is primary of (every CommitVer
   *  period, §4.4; only in Rowan mode: digest reads them from the b-log). */
  async disseminateCommitVers(): Promise<number> {
    const c = this.d.config();
    if (!this.commit || this.gate.stopping || c.replication !== 'rowan') return 0;
    // Not a shard still blocked here (being promoted, or a move's target waiting for the manager's
    // commit after a restart, actors/shared/config-cell.ts holdUnconfirmedMoves): its counter is not yet
    // the shard's, and a CommitVer from it would raise the backups' floors over the real primary's.
    const cell = this.d.cell;
    const mine = c.shards.filter((s) => s.primary === this.d.nodeId && !cell?.shardBlocked(s.id)).map((s) => ({ shard: s.id, backups: s.backups }));
    return this.gate.track(() => this.commit!.disseminate(mine, (n, s) => this.d.replica(n, s), this.d.limits));
  }

  /** Refuse new requests and wait (at most timeoutMs) for those in flight; true once none is left. */
  quiesce(timeoutMs: number): Promise<boolean> {
    return this.gate.quiesce(timeoutMs);
  }
}
