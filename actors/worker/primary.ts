// The primary's request path (§4.1): PUT/DEL and GET of the shards this node is primary of.
//
// PUT/DEL: the next shard version -> append to this worker's t-log and persist -> a Rowan write of
// every block to every backup's b-log -> once all are acknowledged (persistent on every replica),
// update the shard's index -> reply. A reply therefore means the write survives on all replicas.
// GET: the shard's index -> the entry in the pool (checksum verified) -> its value.
// Requests interleave at the awaits, as the coroutines of §5.1 do; the index update is
// version-conditional, so PUTs to one key that finish out of order leave the newest one visible.
// Commit tracking (§4.4, actors/kv/commit.ts): each PUT/DEL claims its version through the node's
// CommitTracker and finishes it when the request ends, and its t-log append stays pending until then,
// so neither CommitVer nor a Committed t-log segment ever covers an entry still being replicated.
// Index reads and updates run inside this worker's read epoch (actors/kv/gc-state.ts), and every
// index change moves live bytes between segments, for the clean actors (actors/clean/gc.ts).
import type { ClusterConfig } from '../../config/cluster.js';
import { shardOfKey } from '../../config/slots.js';
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import type { CommitTracker } from '../kv/commit.js';
import { indexEntry, nextVersion, type ReplicaChannel } from '../kv/shared.js';
import { hash64Into, type KeyHash } from '../../shm/hash.js';
import { encodeBlocks, entrySize, EntryType, readEntryAt, type EntryInput } from '../../shm/log.js';
import type { WorkerCore } from './core.js';

/** Free segments a DEL's t-log allocation leaves (the clean actor's next segment): with the default
 *  reserve of 3 (config gc.reserveSegments) one is the clean log in use, one its next, one for DELs. */
export const DEL_KEEP_FREE = 1;

export class PrimaryPath {
  private readonly hash: KeyHash = { hi: 0, lo: 0 };

  constructor(
    private readonly core: WorkerCore,
    private readonly commit: CommitTracker | null,
  ) {}

  async write(type: EntryType, key: Uint8Array, value: Uint8Array | undefined, clientTerm: number): Promise<void> {
    const { d, stats } = this.core;
    const { c, shard, hash } = this.route(key, clientTerm, false);
    const placement = c.shards[shard]!;
    if (type === EntryType.Del || this.core.indexOf(shard).freeOverflowBuckets() < d.limits.indexHeadroomBuckets) {
      // Only a key the index holds needs a DEL; and near its maximum the index takes no new key. Both
      // are decided before a version is consumed or anything is persisted ("not applied").
      if (!this.present(shard, key, hash)) {
        if (type === EntryType.Del) return;
        throw new RowanError(
          ErrorCodes.INDEX_FULL,
          `shard ${shard}'s index is at its maximum (limits.indexKeysPerShardMax ${d.limits.indexKeysPerShardMax} keys): a PUT of a new key is refused, not applied`,
        );
      }
    }
    const e: EntryInput = { type, shard, version: 0, key, ...(value ? { value } : {}) };
    const size = entrySize(e, d.limits); // size and shape checks before a version is consumed
    const commit = this.commit;
    e.version = commit ? commit.claim(shard) : nextVersion(d.shared.versions, shard);
    let addr = -1;
    try {
      // Persisted in our t-log (①); pending: its segment is not committed before we are done with it.
      // A DEL makes room (its key's older entries become garbage), so it may use the GC reserve down to
      // DEL_KEEP_FREE segments: a store full of live data can still be emptied. Clean keeps the rest.
      addr = d.tlog.append(e, true, type === EntryType.Del ? DEL_KEEP_FREE : undefined);
      if (placement.backups.length > 0) {
        // A single-block entry is replicated as the very bytes just persisted in the t-log (immutable
        // while indexed), not encoded and checksummed a second time; larger entries go block by block.
        const blocks = size <= d.limits.mtuBytes ? [d.region.bytes.subarray(addr, addr + size)] : encodeBlocks(e, d.limits);
        await Promise.all(placement.backups.map((b) => this.replicateTo(b, shard, blocks))); // on every backup (②)
      }
      this.core.indexOf(shard); // still held (WRONG_SHARD otherwise)
      this.core.enterEpoch();
      try {
        indexEntry(d.shared, shard, key, hash, addr, e.version, this.core.reader); // now visible (③)
      } finally {
        this.core.exitEpoch();
      }
    } catch (err) {
      if (err instanceof RowanError && err.code === ErrorCodes.PM_FULL) stats.pmFull++;
      throw err;
    } finally {
      if (addr >= 0) d.tlog.release(addr);
      commit?.finish(shard, e.version);
    }
  }

  get(key: Uint8Array, clientTerm: number): Uint8Array | null {
    const { shard } = this.route(key, clientTerm, true);
    this.core.stats.gets++;
    return this.lookup(shard, key);
  }

  /** This node's copy of a key, whether it is the shard's primary or a backup (for inspection/tests). */
  getReplica(key: Uint8Array): Uint8Array | null {
    const c = this.core.d.config();
    const shard = shardOfKey(key, c.shardCount);
    return this.lookup(shard, key);
  }

  private present(shard: number, key: Uint8Array, hash: KeyHash): boolean {
    this.core.enterEpoch();
    try {
      return this.core.indexOf(shard).get(key, hash, this.core.reader) !== 0;
    } finally {
      this.core.exitEpoch();
    }
  }

  private lookup(shard: number, key: Uint8Array): Uint8Array | null {
    this.core.enterEpoch();
    try {
      const index = this.core.indexOf(shard);
      const addr = index.get(key, hash64Into(key, this.hash), this.core.reader);
      if (addr === 0) return null;
      const e = readEntryAt(this.core.d.region.bytes, addr, this.core.d.limits);
      // An indexed entry that no longer verifies is a broken invariant (entries are immutable while indexed).
      if (e === null) throw new RowanError(ErrorCodes.POOL_META_CORRUPT, `entry at ${addr} for shard ${shard} failed its checksum`);
      return e.type === EntryType.Del ? null : e.value.slice();
    } finally {
      this.core.exitEpoch();
    }
  }

  private async replicateTo(node: number, shard: number, blocks: Uint8Array[]): Promise<void> {
    let ch: ReplicaChannel;
    try {
      ch = await this.core.d.replica(node, shard);
    } catch (err) {
      throw new RowanError(ErrorCodes.REPLICATION_FAILED, `backup node ${node} unreachable: ${(err as Error).message}`);
    }
    for (const b of blocks) {
      await ch.write(b);
      this.core.stats.replicationWrites++;
    }
  }

  /** Check the term and that this node is the key's primary; a fresh hash copy for the caller. */
  private route(key: Uint8Array, clientTerm: number, read: boolean): { c: ClusterConfig; shard: number; hash: KeyHash } {
    const { d } = this.core;
    const c = d.config();
    if (clientTerm !== c.term) {
      throw new RowanError(ErrorCodes.STALE_TERM, `request routed with term ${clientTerm}, this node is at term ${c.term}`);
    }
    if (key.length === 0) throw new RowanError(ErrorCodes.KEY_EMPTY, 'the key is empty (1..' + d.limits.keyBytesMax + ' bytes)');
    if (key.length > d.limits.keyBytesMax) {
      throw new RowanError(ErrorCodes.KEY_TOO_LARGE, `key of ${key.length} bytes (1..${d.limits.keyBytesMax})`);
    }
    const h = hash64Into(key, { hi: 0, lo: 0 });
    const shard = shardOfKey(key, c.shardCount);
    if (c.shards[shard]!.primary !== d.nodeId) {
      throw new RowanError(ErrorCodes.WRONG_SHARD, `shard ${shard} is served by node ${c.shards[shard]!.primary}, not ${d.nodeId}${read ? '' : ' (writes go to the primary)'}`);
    }
    return { c, shard, hash: h };
  }
}
