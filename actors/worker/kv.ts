// A worker's ROWAN-KV request logic (§4.1), independent of threads and sockets so a test can drive it
// directly (CONVENTIONS 9). The worker actor wires it to its client port and its Rowan connections.
//
// PUT/DEL: the next shard version -> append to this worker's t-log and persist -> a Rowan write of
// every block to every backup's b-log -> once all are acknowledged (persistent on every replica),
// update the shard's index -> reply. A reply therefore means the write survives on all replicas.
// GET: the shard's index -> the entry in the pool (checksum verified) -> its value.
// Requests interleave at the awaits, as the coroutines of §5.1 do; the index update is
// version-conditional, so PUTs to one key that finish out of order leave the newest one visible.
// Commit tracking (§4.4, runtime/kv/commit.ts): each PUT/DEL claims its version through the node's
// CommitTracker and finishes it when the request ends, and its t-log append stays pending until then,
// so neither CommitVer nor a Committed t-log segment ever covers an entry still being replicated.
// Index reads and updates run inside this worker's read epoch (runtime/kv/gc-state.ts), and every
// index change moves live bytes between segments, for the clean actors (actors/clean/gc.ts).
//
// REPLICATE (RPC-KV, ROWAN §6.1, cluster replication mode `rpc`): this worker is a backup's worker and
// takes one block a primary's worker sends over the client protocol. It appends the block's entry to
// its backup log (a TLog of role Worker, owner BACKUP_LOG_OWNER_BASE + workerId: a contiguous log of
// whole entries, exactly what cold start reads a t-log as), persists it, updates the shard's index and
// only then replies -- the backup's CPU is on the replication path, which is the point of the baseline.
// Multi-block entries are gathered in a BlockAssembler; a non-final block is acknowledged from memory
// (the primary counts an entry replicated only after its final block's reply, which comes after the
// whole entry is persistent here).
import type { ClusterConfig } from '../../config/cluster.js';
import { shardOfKey } from '../../config/slots.js';
import type { Limits } from '../../config/limits.js';
import { ErrorCodes, RowanError } from '../../runtime/errors.js';
import { CommitTracker } from '../../runtime/kv/commit.js';
import { ReadEpochs } from '../../runtime/kv/gc-state.js';
import { indexEntry, nextVersion, raiseVersion, type KvShared } from '../../runtime/kv/shared.js';
import { PoolEntryReader } from '../../shm/entry-reader.js';
import { hash64Into, type KeyHash } from '../../shm/hash.js';
import type { ShardIndex } from '../../shm/index.js';
import { BlockAssembler, encodeBlocks, entrySize, EntryType, readBlock, readEntryAt, type EntryInput } from '../../shm/log.js';
import type { PersistentRegion } from '../../shm/region.js';
import type { TLog } from '../../shm/tlog.js';

/** Where a worker lands replication writes for one backup node (a Rowan connection or a baseline). */
export interface ReplicaChannel {
  write(bytes: Uint8Array): Promise<number>;
}

export interface KvWorkerDeps {
  nodeId: number;
  config: () => ClusterConfig;
  region: PersistentRegion;
  tlog: TLog;
  shared: KvShared;
  /** The replication channel to a backup node for a shard (opened lazily by the caller, then cached;
   *  only rpc mode looks at the shard: it picks the backup worker port shard % workerPorts.length). */
  replica: (nodeId: number, shard: number) => Promise<ReplicaChannel>;
  limits: Limits;
  /** rpc mode: the log this worker appends replicated entries to as a backup (absent: REPLICATE refused). */
  backupLog?: TLog;
  /** This worker's id and the node's worker count (commit tracking and read epochs, when shared.gc). */
  workerId?: number;
  workers?: number;
}

/** Owner ids of the backup logs RPC-KV workers keep (role Worker, BACKUP_LOG_OWNER_BASE + workerId),
 *  clear of the t-logs' owner ids (the worker ids themselves). */
export const BACKUP_LOG_OWNER_BASE = 512;

/** Free segments a DEL's t-log allocation leaves (the clean actor's next segment): with the default
 *  reserve of 3 (config gc.reserveSegments) one is the clean log in use, one its next, one for DELs. */
export const DEL_KEEP_FREE = 1;

export interface KvWorkerStats {
  puts: number;
  dels: number;
  gets: number;
  replicationWrites: number;
  /** rpc mode, as a backup: REPLICATE blocks taken and entries appended to the backup log. */
  replicatedBlocks: number;
  replicatedEntries: number;
  /** PUT/DEL refused because the pool (here or at a backup) had no free segment. */
  pmFull: number;
}

export class KvWorker {
  private readonly reader: PoolEntryReader;
  private readonly hash: KeyHash = { hi: 0, lo: 0 };
  readonly stats: KvWorkerStats = { puts: 0, dels: 0, gets: 0, replicationWrites: 0, replicatedBlocks: 0, replicatedEntries: 0, pmFull: 0 };
  private assembler: BlockAssembler | null = null;
  /** Commit tracking (§4.4), when the node keeps GC state. */
  readonly commit: CommitTracker | null = null;
  private readonly epochSlot: number;

  constructor(private readonly d: KvWorkerDeps) {
    this.reader = new PoolEntryReader(d.region, d.limits);
    const id = d.workerId ?? 0;
    this.epochSlot = ReadEpochs.slotOf('worker', id);
    const gc = d.shared.gc;
    if (gc) this.commit = new CommitTracker(gc.buffers, d.shared.versions, d.config().shardCount, id, d.workers ?? id + 1);
  }

  /** Write <shard, CommitVer> to the backups of the shards this node is primary of (every CommitVer
   *  period, §4.4; only in Rowan mode: digest reads them from the b-log). */
  async disseminateCommitVers(): Promise<number> {
    const c = this.d.config();
    if (!this.commit || this.stopping || c.replication !== 'rowan') return 0;
    const mine = c.shards.filter((s) => s.primary === this.d.nodeId).map((s) => ({ shard: s.id, backups: s.backups }));
    return this.track(() => this.commit!.disseminate(mine, (n, s) => this.d.replica(n, s), this.d.limits));
  }

  /** Bracket a synchronous stretch that takes addresses from an index: they stay readable until exit
   *  (read epochs, runtime/kv/gc-state.ts). Explicit calls, no closure, on the PUT/GET path. */
  private enterEpoch(): void {
    this.d.shared.gc?.epochs.enter(this.epochSlot);
  }

  private exitEpoch(): void {
    this.d.shared.gc?.epochs.exit(this.epochSlot);
  }

  term(): number {
    return this.d.config().term;
  }

  config(): ClusterConfig {
    return this.d.config();
  }

  async put(key: Uint8Array, value: Uint8Array, clientTerm: number): Promise<void> {
    await this.track(() => this.write(EntryType.Put, key, value, clientTerm));
    this.stats.puts++;
  }

  async del(key: Uint8Array, clientTerm: number): Promise<void> {
    await this.track(() => this.write(EntryType.Del, key, undefined, clientTerm));
    this.stats.dels++;
  }

  // ---- stopping: requests span awaits, and the pool must not be unmapped under one ----------------

  private inFlight = 0;
  private stopping = false;
  private quiet: (() => void) | null = null;

  private async track<T>(f: () => Promise<T>): Promise<T> {
    if (this.stopping) throw new RowanError(ErrorCodes.NODE_NOT_RUNNING, 'this worker is stopping');
    this.inFlight++;
    try {
      return await f();
    } finally {
      if (--this.inFlight === 0) this.quiet?.();
    }
  }

  /** Refuse new requests and wait (at most timeoutMs) for those in flight; true once none is left. */
  quiesce(timeoutMs: number): Promise<boolean> {
    this.stopping = true;
    if (this.inFlight === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const t = setTimeout(() => resolve(this.inFlight === 0), timeoutMs);
      this.quiet = () => {
        clearTimeout(t);
        resolve(true);
      };
    });
  }

  async get(key: Uint8Array, clientTerm: number): Promise<Uint8Array | null> {
    if (this.stopping) throw new RowanError(ErrorCodes.NODE_NOT_RUNNING, 'this worker is stopping');
    const { shard } = this.route(key, clientTerm, true);
    this.stats.gets++;
    return this.lookup(shard, key);
  }

  /** This node's copy of a key, whether it is the shard's primary or a backup (for inspection/tests). */
  async getReplica(key: Uint8Array): Promise<Uint8Array | null> {
    if (this.stopping) throw new RowanError(ErrorCodes.NODE_NOT_RUNNING, 'this worker is stopping');
    const c = this.d.config();
    const shard = shardOfKey(key, c.shardCount);
    return this.lookup(shard, key);
  }

  private lookup(shard: number, key: Uint8Array): Uint8Array | null {
    this.enterEpoch();
    try {
      return this.lookupHere(shard, key);
    } finally {
      this.exitEpoch();
    }
  }

  private lookupHere(shard: number, key: Uint8Array): Uint8Array | null {
    const index = this.indexOf(shard);
    const addr = index.get(key, hash64Into(key, this.hash), this.reader);
    if (addr === 0) return null;
    const e = readEntryAt(this.d.region.bytes, addr, this.d.limits);
    // An indexed entry that no longer verifies is a broken invariant (entries are immutable while indexed).
    if (e === null) throw new RowanError(ErrorCodes.POOL_META_CORRUPT, `entry at ${addr} for shard ${shard} failed its checksum`);
    return e.type === EntryType.Del ? null : e.value.slice();
  }

  /** RPC-KV backup side: append the block's entry to the backup log (persist), index it, then reply. */
  async replicate(block: Uint8Array, clientTerm: number): Promise<void> {
    return this.track(() => this.replicateHere(block, clientTerm));
  }

  private async replicateHere(block: Uint8Array, clientTerm: number): Promise<void> {
    const c = this.d.config();
    if (clientTerm !== c.term) {
      throw new RowanError(ErrorCodes.STALE_TERM, `replication routed with term ${clientTerm}, this node is at term ${c.term}`);
    }
    const log = this.d.backupLog;
    if (!log) throw new RowanError(ErrorCodes.UNKNOWN_OP, `node ${this.d.nodeId} does not replicate over RPC (cluster mode ${c.replication})`);
    const b = readBlock(block, 0, block.length, this.d.limits);
    if (b === null) throw new RowanError(ErrorCodes.BAD_FRAME, `REPLICATE carries ${block.length} B that are not one intact log block`);
    const placement = c.shards[b.shard];
    if (!placement || !placement.backups.includes(this.d.nodeId)) {
      throw new RowanError(ErrorCodes.WRONG_SHARD, `node ${this.d.nodeId} is no backup of shard ${b.shard}`);
    }
    this.indexOf(b.shard); // held here (WRONG_SHARD otherwise), checked before anything is appended
    this.stats.replicatedBlocks++;
    // Versions seen keep this node's shard version above them (a promoted backup continues after them).
    raiseVersion(this.d.shared.versions, b.shard, b.version);
    let e: EntryInput;
    if (b.cnt === 1) {
      e = { type: b.type, shard: b.shard, version: b.version };
      if (b.type !== EntryType.CommitVer) e.key = b.payload.subarray(0, b.keyLen);
      if (b.type === EntryType.Put) e.value = b.payload.subarray(b.keyLen, b.keyLen + b.valueLen);
    } else {
      this.assembler ??= new BlockAssembler(this.d.limits);
      const whole = this.assembler.add(b); // copies the payload: the received bytes may be freed
      if (whole === null) return;
      e = { type: whole.type, shard: whole.shard, version: whole.version, key: whole.key, value: whole.value };
    }
    const addr = log.append(e); // persisted in this worker's backup log
    this.stats.replicatedEntries++;
    if (e.type === EntryType.CommitVer) return;
    this.enterEpoch();
    try {
      indexEntry(this.d.shared, b.shard, e.key!, hash64Into(e.key!, this.hash), addr, e.version, this.reader);
    } finally {
      this.exitEpoch();
    }
  }

  private async write(type: EntryType, key: Uint8Array, value: Uint8Array | undefined, clientTerm: number): Promise<void> {
    const { c, shard, hash } = this.route(key, clientTerm, false);
    const placement = c.shards[shard]!;
    const e: EntryInput = { type, shard, version: 0, key, ...(value ? { value } : {}) };
    const size = entrySize(e, this.d.limits); // size and shape checks before a version is consumed
    const commit = this.commit;
    e.version = commit ? commit.claim(shard) : nextVersion(this.d.shared.versions, shard);
    let addr = -1;
    try {
      // Persisted in our t-log (①); pending: its segment is not committed before we are done with it.
      // A DEL makes room (its key's older entries become garbage), so it may use the GC reserve down to
      // DEL_KEEP_FREE segments: a store full of live data can still be emptied. Clean keeps the rest.
      addr = this.d.tlog.append(e, true, type === EntryType.Del ? DEL_KEEP_FREE : undefined);
      if (placement.backups.length > 0) {
        // A single-block entry is replicated as the very bytes just persisted in the t-log (immutable
        // while indexed), not encoded and checksummed a second time; larger entries go block by block.
        const blocks = size <= this.d.limits.mtuBytes ? [this.d.region.bytes.subarray(addr, addr + size)] : encodeBlocks(e, this.d.limits);
        await Promise.all(placement.backups.map((b) => this.replicateTo(b, shard, blocks))); // on every backup (②)
      }
      this.indexOf(shard); // still held (WRONG_SHARD otherwise)
      this.enterEpoch();
      try {
        indexEntry(this.d.shared, shard, key, hash, addr, e.version, this.reader); // now visible (③)
      } finally {
        this.exitEpoch();
      }
    } catch (err) {
      if (err instanceof RowanError && err.code === ErrorCodes.PM_FULL) this.stats.pmFull++;
      throw err;
    } finally {
      if (addr >= 0) this.d.tlog.release(addr);
      commit?.finish(shard, e.version);
    }
  }

  private async replicateTo(node: number, shard: number, blocks: Uint8Array[]): Promise<void> {
    let ch: ReplicaChannel;
    try {
      ch = await this.d.replica(node, shard);
    } catch (err) {
      throw new RowanError(ErrorCodes.REPLICATION_FAILED, `backup node ${node} unreachable: ${(err as Error).message}`);
    }
    for (const b of blocks) {
      await ch.write(b);
      this.stats.replicationWrites++;
    }
  }

  /** Check the term and that this node is the key's primary; a fresh hash copy for the caller. */
  private route(key: Uint8Array, clientTerm: number, read: boolean): { c: ClusterConfig; shard: number; hash: KeyHash } {
    const c = this.d.config();
    if (clientTerm !== c.term) {
      throw new RowanError(ErrorCodes.STALE_TERM, `request routed with term ${clientTerm}, this node is at term ${c.term}`);
    }
    if (key.length === 0 || key.length > this.d.limits.keyBytesMax) {
      throw new RowanError(ErrorCodes.KEY_TOO_LARGE, `key of ${key.length} bytes (1..${this.d.limits.keyBytesMax})`);
    }
    const h = hash64Into(key, { hi: 0, lo: 0 });
    const shard = shardOfKey(key, c.shardCount);
    if (c.shards[shard]!.primary !== this.d.nodeId) {
      throw new RowanError(ErrorCodes.WRONG_SHARD, `shard ${shard} is served by node ${c.shards[shard]!.primary}, not ${this.d.nodeId}${read ? '' : ' (writes go to the primary)'}`);
    }
    return { c, shard, hash: h };
  }

  private indexOf(shard: number): ShardIndex {
    const index = this.d.shared.indexes[shard];
    if (!index) throw new RowanError(ErrorCodes.WRONG_SHARD, `this node holds no replica of shard ${shard}`);
    return index;
  }
}
