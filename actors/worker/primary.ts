// The primary's request path (§4.1): PUT/DEL and GET of the shards this node is primary of.
//
// PUT/DEL: the next shard version -> append to this worker's t-log and persist -> a Rowan write of
// every block to every backup's b-log -> once all are acknowledged (persistent on every replica),
// update the shard's index -> reply. A reply therefore means the write survives on all replicas.
// GET: the shard's index -> the entry in the pool (checksum verified) -> its value.
// Requests interleave at the awaits, as the coroutines of §5.1 do; the index update is
// version-conditional, so PUTs to one key that finish out of order leave the newest one visible.
// Commit tracking (§4.4, actors/shared/commit.ts): each PUT/DEL claims its version through the node's
// CommitTracker and finishes it when the request ends, and its t-log append stays pending until then,
// so neither CommitVer nor a Committed t-log segment ever covers an entry still being replicated.
// Index reads and updates run inside this worker's read epoch (actors/shared/gc-state.ts), and every
// index change moves live bytes between segments, for the clean actors (actors/clean/gc.ts).
import { isCatchingUp, type ClusterConfig } from '../../config/cluster.js';
import { shardOfKey } from '../../config/slots.js';
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import { backupGoneWaitMsFor, defaultTimings } from '../../config/timings.js';
import type { CommitTracker } from '../shared/commit.js';
import { LoadCounters } from '../shared/shard-load.js';
import { indexEntry, nextVersion, type ReplicaChannel } from '../shared/node-shared.js';
import { hash64Into, type KeyHash } from '../../shm/hash.js';
import { encodeBlocks, entrySize, EntryType, readEntryAt, type EntryInput, type LogEntry } from '../../shm/log.js';
import type { WorkerCore } from './core.js';

/** Free segments a DEL's t-log allocation leaves (the clean actor's next segment): with the default
 *  reserve of 3 (config gc.reserveSegments) one is the clean log in use, one its next, one for DELs. */
export const DEL_KEEP_FREE = 1;

/** Replication failures that mean the backup node is gone (not a refusal of this entry). */
const BACKUP_GONE: ReadonlySet<string> = new Set([ErrorCodes.PEER_GONE, ErrorCodes.RECEIVER_CLOSED, ErrorCodes.REPLICATION_FAILED, ErrorCodes.WRITE_TIMEOUT]);

/** A live key's value and expiry deadline (Unix ms, 0 = none). */
export interface Live {
  value: Uint8Array;
  expiresAt: number;
}

export class PrimaryPath {
  private readonly hash: KeyHash = { hi: 0, lo: 0 };
  /** Requests per shard for resharding (§4.6, actors/shared/shard-load.ts); null when the node does not count. */
  private readonly load: LoadCounters | null;

  constructor(
    private readonly core: WorkerCore,
    private readonly commit: CommitTracker | null,
  ) {
    const sab = core.d.shared.load;
    this.load = sab ? new LoadCounters(sab, core.d.config().shardCount, core.d.workerId ?? 0) : null;
  }

  /** A PUT (with `expiresAt`, Unix ms, 0 = none: the deadline is stored in the entry) or a DEL. */
  async write(type: EntryType, key: Uint8Array, value: Uint8Array | undefined, clientTerm: number, expiresAt = 0): Promise<void> {
    const { d, stats } = this.core;
    const { c, shard, hash } = await this.admit(key, clientTerm, false);
    this.load?.count(shard, true);
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
    const e: EntryInput = { type, shard, version: 0, key, ...(value ? { value } : {}), ...(expiresAt ? { expiresAt } : {}) };
    const size = entrySize(e, d.limits); // size and shape checks before a version is consumed
    const commit = this.commit;
    e.version = commit ? commit.claim(shard) : nextVersion(d.shared.versions, shard);
    const backups = this.backupsSince(placement, shard);
    let addr = -1;
    try {
      // A configuration prepared since the admission (a failover or a shard moving away, §4.6) may be
      // draining this shard: its prepare waits for every claimed version to finish (lease.ts), and this
      // claim, published above before this load, is either seen there or sees the pending term here.
      const cell = d.cell;
      if (cell && (cell.reconfiguring(shard) || cell.term() !== c.term)) {
        throw new RowanError(ErrorCodes.STALE_TERM, `node ${d.nodeId} is reconfiguring (term ${cell.term()}, pending ${cell.pendingTerm()}); not applied, retry`);
      }
      // Persisted in our t-log (①); pending: its segment is not committed before we are done with it.
      // A DEL makes room (its key's older entries become garbage), so it may use the GC reserve down to
      // DEL_KEEP_FREE segments: a store full of live data can still be emptied. Clean keeps the rest.
      addr = d.tlog.append(e, true, type === EntryType.Del ? DEL_KEEP_FREE : undefined);
      if (backups.length > 0) {
        // A single-block entry is replicated as the very bytes just persisted in the t-log (immutable
        // while indexed), not encoded and checksummed a second time; larger entries go block by block.
        const blocks = size <= d.limits.mtuBytes ? [d.region.bytes.subarray(addr, addr + size)] : encodeBlocks(e, d.limits);
        await this.replicateAll(backups, shard, blocks); // on every backup (②)
      }
      this.core.stillHeld(shard); // OUTCOME_UNKNOWN otherwise
      // Lease safety (§4.5): acknowledge only while the lease still holds. The manager reassigns this
      // node's shards only after the lease has certainly expired, so an acknowledged write is never
      // one the new primary's scan can have missed. Past it the entry may or may not survive there.
      if (cell && !cell.leaseValid(this.core.now())) {
        throw new RowanError(ErrorCodes.OUTCOME_UNKNOWN, `the lease expired while shard ${shard}'s write was replicating; it may or may not survive the failover`);
      }
      // Role safety (DESIGN §6): and only while this node still holds the primary role it was admitted
      // under -- one load on this path; the configuration is re-read only when a commit came meanwhile.
      if (cell && cell.term() !== c.term) this.checkStillPrimary(shard); // TERM is stored after a config's bytes (publish): same term = no commit since
      this.core.enterEpoch();
      try {
        indexEntry(d.shared, shard, key, hash, addr, e.version, this.core.reader); // now visible (③)
      } finally {
        this.core.exitEpoch();
      }
      // Wakes the node's expiry sweeps: they load it on their next tick (resp/expiry-sweep.ts).
      if (expiresAt !== 0 && d.shared.expiryWrites) Atomics.add(d.shared.expiryWrites, 0, 1);
    } catch (err) {
      if (err instanceof RowanError && err.code === ErrorCodes.PM_FULL) stats.pmFull++;
      // Persisted in the t-log and not acknowledged: recorded before its version is finished, so no
      // cold start serves it (actors/shared/failed-writes.ts).
      if (addr >= 0) d.failed?.record(shard, e.version, addr);
      throw err;
    } finally {
      if (addr >= 0) d.tlog.release(addr);
      commit?.finish(shard, e.version);
    }
  }

  /** The backups to replicate to, read right after a version claim: `placement` is the shard's at the
   *  admission. The backups as of the claim, not of the admission: a configuration published in
   *  between that adds a backup (re-replication, §4.5 phase 3) must see this write, whose version is
   *  past the copy's start (actors/worker/copy-source.ts). Backups only grow this way; a removed one is
   *  skipped as before. */
  backupsSince(placement: ClusterConfig['shards'][number], shard: number): number[] {
    const now = this.core.d.config().shards[shard]!;
    return now === placement || now.primary !== this.core.d.nodeId ? placement.backups : [...new Set([...placement.backups, ...now.backups])];
  }

  /**
   * Replicate to every backup, all settled before the outcome is decided. A backup whose pool is full
   * (PM_FULL, QUOTA) means "not applied" only when every backup refused: the entry is then only in
   * this t-log, recorded as a failed write. Once another backup holds it, a failover may promote that
   * backup and serve it, so the outcome is unknown (issue 27: a reply never claims what did not happen).
   */
  async replicateAll(backups: number[], shard: number, blocks: Uint8Array[]): Promise<void> {
    const writes = backups.map((b) => this.replicateOrOutlive(b, shard, blocks));
    try {
      await Promise.all(writes); // the common case: every backup took it (no per-backup result objects)
      return;
    } catch {
      // one failed: wait for the others too, then decide below
    }
    const rs = await Promise.allSettled(writes);
    const failed = rs.flatMap((r, i) => (r.status === 'rejected' ? [{ node: backups[i]!, err: r.reason as unknown }] : []));
    if (failed.length === 0) return;
    const full = (e: unknown): e is RowanError => e instanceof RowanError && (e.code === ErrorCodes.PM_FULL || e.code === ErrorCodes.QUOTA);
    const first = failed.find((f) => !full(f.err)) ?? failed[0]!;
    if (!full(first.err) || failed.length === backups.length) throw first.err;
    throw new RowanError(
      ErrorCodes.OUTCOME_UNKNOWN,
      `backup node ${first.node} refused shard ${shard}'s entry (${first.err.code}: ${first.err.message}) after another backup took it; it may or may not survive a failover`,
    );
  }

  /** A configuration committed while a write of `shard` was replicating: acknowledge it only if this
   *  node is still the shard's primary there (a shard taken away may already be served elsewhere, by a
   *  primary whose promotion scan never saw this entry). */
  checkStillPrimary(shard: number): void {
    const { d } = this.core;
    const now = d.config();
    const primary = now.shards[shard]!.primary;
    if (primary !== d.nodeId) {
      throw new RowanError(ErrorCodes.OUTCOME_UNKNOWN, `shard ${shard} passed to node ${primary} at term ${now.term} while this write was replicating; it may or may not survive there`);
    }
  }

  async get(key: Uint8Array, clientTerm: number): Promise<Live | null> {
    const { shard, hash } = await this.admit(key, clientTerm, true);
    this.load?.count(shard, false);
    this.core.stats.gets++;
    return this.lookup(shard, key, hash, this.core.wallNow()); // the hash admit() computed to route the key
  }

  /** The deadline (Unix ms) of the key's indexed entry if it is a PUT with one; 0 otherwise (absent,
   *  deleted, or without a deadline). */
  deadlineOf(shard: number, key: Uint8Array, hash: KeyHash): number {
    return this.lookup(shard, key, hash, 0)?.expiresAt ?? 0;
  }

  /** This node's copy of a key, whether it is the shard's primary or a backup (for inspection/tests).
   *  Refused where this node holds no counted replica of the shard -- none, or one still catching up
   *  (which may hold entries kept through a restart that its primary no longer has). */
  getReplica(key: Uint8Array): Uint8Array | null {
    const c = this.core.d.config();
    const shard = shardOfKey(key, c.shardCount);
    const s = c.shards[shard]!;
    const me = this.core.d.nodeId;
    if ((s.primary !== me && !s.backups.includes(me)) || isCatchingUp(c, shard, me)) {
      throw new RowanError(ErrorCodes.WRONG_SHARD, `node ${me} holds no caught-up replica of shard ${shard}`);
    }
    return this.lookup(shard, key, hash64Into(key, this.hash), 0)?.value ?? null;
  }

  present(shard: number, key: Uint8Array, hash: KeyHash): boolean {
    this.core.enterEpoch();
    try {
      return this.addrOf(shard, key, hash) !== 0;
    } finally {
      this.core.exitEpoch();
    }
  }

  /** The key's live value and deadline: null when absent, deleted, or (now > 0) expired at `now`. A
   *  key is expired once now >= its deadline (Redis's rule), whether or not its DEL was written yet. */
  private lookup(shard: number, key: Uint8Array, hash: KeyHash, now: number): Live | null {
    this.core.enterEpoch();
    try {
      const e = this.indexed(shard, key, hash);
      if (e === null || e.type === EntryType.Del || (now > 0 && e.expiresAt !== 0 && now >= e.expiresAt)) return null;
      return { value: e.value.slice(), expiresAt: e.expiresAt };
    } finally {
      this.core.exitEpoch();
    }
  }

  /** What WATCH compares (actors/worker/resp/transaction.ts): the version of the key's indexed entry (0
   *  when the index holds none) and whether a GET would see a value. Every acknowledged write of the key
   *  (PUT, DEL, a transaction's) indexes a new, higher version; whatever else hides a value (GET's
   *  rule) flips the second part. */
  async watchState(key: Uint8Array, clientTerm: number): Promise<string> {
    const { shard, hash } = await this.admit(key, clientTerm, true);
    this.core.enterEpoch();
    try {
      const e = this.indexed(shard, key, hash);
      // Live or not, by the same clock reads use: a key that expires after WATCH changes its state.
      const expired = e !== null && e.expiresAt !== 0 && this.core.wallNow() >= e.expiresAt;
      return e === null ? '0:0' : `${e.version}:${e.type === EntryType.Del || expired ? 0 : 1}`;
    } finally {
      this.core.exitEpoch();
    }
  }

  /** The address of the key's indexed entry, 0 for none -- or for one below the shard's flush floor: a
   *  flush hides every key at once, before its pass over the index has removed them all. */
  private addrOf(shard: number, key: Uint8Array, hash: KeyHash): number {
    const index = this.core.indexOf(shard);
    const addr = index.get(key, hash, this.core.reader);
    return addr !== 0 && this.core.reader.versionAt(addr) < index.floor() ? 0 : addr;
  }

  /** The key's indexed entry (checksum verified), or null; call inside the read epoch. */
  private indexed(shard: number, key: Uint8Array, hash: KeyHash): LogEntry | null {
    const addr = this.addrOf(shard, key, hash);
    if (addr === 0) return null;
    const e = readEntryAt(this.core.d.region.bytes, addr, this.core.d.limits);
    // An indexed entry that no longer verifies is a broken invariant (entries are immutable while indexed).
    if (e === null) throw new RowanError(ErrorCodes.POOL_META_CORRUPT, `entry at ${addr} for shard ${shard} failed its checksum`);
    return e;
  }

  /**
   * Replicate to backup `node`; if it is gone (its receiver closed, its connection dropped), wait for
   * the configuration manager's next configuration: once it no longer lists `node` as a backup of the
   * shard, the entry is on every replica that configuration has, and the write may complete (§4.5:
   * a write is acknowledged once persistent on all replicas of the configuration it completes in).
   * Without a configuration cell, or if the node stays listed, the failure stands.
   */
  async replicateOrOutlive(node: number, shard: number, blocks: Uint8Array[]): Promise<void> {
    try {
      await this.replicateTo(node, shard, blocks);
    } catch (err) {
      const cell = this.core.d.cell;
      if (!(err instanceof RowanError)) throw err;
      // The entry is in our t-log and maybe on other backups: whatever the backup said (even a
      // STALE_TERM from an RPC-KV backup that moved on), for the client the outcome is unknown.
      if (!BACKUP_GONE.has(err.code) && err.code !== ErrorCodes.PM_FULL && err.code !== ErrorCodes.QUOTA) {
        throw new RowanError(ErrorCodes.REPLICATION_FAILED, `backup node ${node} refused shard ${shard}'s entry: ${err.code}: ${err.message}`);
      }
      if (!cell || !BACKUP_GONE.has(err.code)) throw err;
      const t0 = this.core.now();
      const waitMs = backupGoneWaitMsFor(defaultTimings, cell.leaseSpanMs()); // until the manager may have failed the backup over
      for (;;) {
        const c = cell.config();
        if (!c.shards[shard]!.backups.includes(node)) return;
        const waited = this.core.now() - t0;
        if (waited >= waitMs || !cell.leaseValid(this.core.now())) throw err;
        await cell.changed(waitMs - waited);
      }
    }
  }

  private async replicateTo(node: number, shard: number, blocks: Uint8Array[]): Promise<void> {
    let ch: ReplicaChannel;
    try {
      ch = await this.core.d.replica(node, shard);
    } catch (err) {
      throw new RowanError(ErrorCodes.REPLICATION_FAILED, `backup node ${node} unreachable: ${(err as Error).message}`);
    }
    if (ch.writeMany && blocks.length > 1) {
      await ch.writeMany(blocks);
      this.core.stats.replicationWrites++;
      return;
    }
    for (const b of blocks) {
      await ch.write(b);
      this.core.stats.replicationWrites++;
    }
  }

  /**
   * Admission (§4.5): refuse when the lease expired (LEASE_EXPIRED) or the term differs (STALE_TERM);
   * wait while a configuration is prepared but not committed, or while the key's shard is being
   * promoted here (phase 2), at most admitWaitMs, then STALE_TERM (the client refreshes and retries).
   */
  async admit(key: Uint8Array, clientTerm: number, read: boolean): Promise<{ c: ClusterConfig; shard: number; hash: KeyHash }> {
    const cell = this.core.d.cell;
    if (!cell) return this.route(key, clientTerm, read);
    let waitedMs = 0;
    for (;;) {
      const t0 = this.core.now();
      if (cell.admit(clientTerm, t0) === 'ok') {
        const r = this.route(key, clientTerm, read);
        if (!cell.shardBlocked(r.shard)) return r;
      }
      if (waitedMs >= defaultTimings.admitWaitMs) {
        throw new RowanError(ErrorCodes.STALE_TERM, `node ${this.core.d.nodeId} is reconfiguring (term ${cell.term()}, pending ${cell.pendingTerm()}); retry`);
      }
      await cell.changed(defaultTimings.admitWaitMs - waitedMs);
      waitedMs += this.core.now() - t0;
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
