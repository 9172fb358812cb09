// The expiry sweep's DELs (resp/expiry-sweep.ts), one batch per sweep step: the path of a DEL
// (./primary.ts) for up to a step's keys of one shard at once.
//
//   admit once -> keep the keys whose indexed entry is a PUT past its deadline -> claim consecutive
//   versions -> append every DEL to this worker's t-log (persist) -> Rowan writes to every backup,
//   several DELs per write (replication mode rowan: the t-log bytes of consecutive entries, each 64 B
//   aligned, packed up to limits.mtuBytes; the backup's b-log scan reads them one by one as if each had
//   landed alone) -> once all are acknowledged, index every DEL -> done.
//
// Why a batch: one DEL at a time cost the sweep a Rowan write per key and backup, plus an admission,
// a lock, and a promise chain per key; at 64 keys per step a worker wrote ~2.8 K single-entry writes
// a second to each backup and the client requests of a loaded node got a tenth of their throughput
// (bench -- expiry, docs/redis.md). The entries are not a transaction (no TXN flag): each DEL is
// applied on its own by a backup's digest, a promotion or a cold start, as a client's DEL would be;
// a primary dying mid-batch leaves some of them on some backups, which is harmless (every replica
// already hides the expired keys at read time, and a DEL that did not survive is written again by the
// new primary's sweep). Nothing here is acknowledged to a client.
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import { shardOfKey } from '../../config/slots.js';
import type { CommitTracker } from '../shared/commit.js';
import { indexEntry, nextVersions } from '../shared/node-shared.js';
import { hash64Into, type KeyHash } from '../../shm/hash.js';
import { encodeBlocks, entrySize, EntryType, type EntryInput } from '../../shm/log.js';
import type { WorkerCore } from './core.js';
import { DEL_KEEP_FREE, type PrimaryPath } from './primary.js';

interface Planned {
  e: EntryInput;
  hash: KeyHash;
  size: number;
  addr: number;
}

export class ExpiredDeletes {
  constructor(
    private readonly core: WorkerCore,
    private readonly commit: CommitTracker | null,
    private readonly primary: PrimaryPath,
  ) {}

  /** DEL every key of `keys` (all of one shard; the caller holds their RESP locks) whose indexed entry
   *  is a PUT past its deadline, replicated as one batch; the number of DELs written. `claimed` is
   *  called once the DELs' versions are claimed: the caller may let the keys' locks go then (see
   *  the header of resp/expiry-sweep.ts), it is not called when nothing is to be deleted. */
  async write(keys: Uint8Array[], clientTerm: number, claimed?: () => void): Promise<number> {
    if (keys.length === 0) return 0;
    const { c, shard } = await this.primary.admit(keys[0]!, clientTerm, false);
    const planned = this.plan(keys, shard, c.shardCount);
    if (planned.length === 0) return 0;
    const { d } = this.core;
    const base = this.commit ? this.commit.claimRun(shard, planned.length) : nextVersions(d.shared.versions, shard, planned.length);
    for (let i = 0; i < planned.length; i++) planned[i]!.e.version = base + i;
    claimed?.();
    const backups = this.primary.backupsSince(c.shards[shard]!, shard);
    try {
      const cell = d.cell;
      if (cell && (cell.reconfiguring(shard) || cell.term() !== c.term)) {
        throw new RowanError(ErrorCodes.STALE_TERM, `node ${d.nodeId} is reconfiguring (term ${cell.term()}, pending ${cell.pendingTerm()}); not applied, retry`);
      }
      for (const p of planned) p.addr = d.tlog.append(p.e, true, DEL_KEEP_FREE); // ①
      if (backups.length > 0) await this.primary.replicateAll(backups, shard, this.writes(planned, c.replication === 'rowan')); // ②
      this.core.stillHeld(shard); // OUTCOME_UNKNOWN otherwise
      if (cell && !cell.leaseValid(this.core.now())) {
        throw new RowanError(ErrorCodes.OUTCOME_UNKNOWN, `the lease expired while shard ${shard}'s expired keys' DELs were replicating`);
      }
      if (cell && cell.term() !== c.term) this.primary.checkStillPrimary(shard);
      this.core.enterEpoch();
      try {
        for (const p of planned) indexEntry(d.shared, shard, p.e.key!, p.hash, p.addr, p.e.version, this.core.reader); // ③
      } finally {
        this.core.exitEpoch();
      }
    } catch (err) {
      // Persisted in the t-log and not acknowledged: no cold start serves them (failed-writes.ts).
      for (const p of planned) if (p.addr >= 0) d.failed?.record(shard, p.e.version, p.addr);
      throw err;
    } finally {
      for (const p of planned) {
        if (p.addr >= 0) d.tlog.release(p.addr);
        this.commit?.finish(shard, p.e.version);
      }
    }
    this.core.stats.dels += planned.length;
    return planned.length;
  }

  /** The keys of `shard` whose indexed entry is a PUT whose deadline has passed, as DELs to write. */
  private plan(keys: Uint8Array[], shard: number, shardCount: number): Planned[] {
    const now = this.core.wallNow();
    const out: Planned[] = [];
    for (const key of keys) {
      if (shardOfKey(key, shardCount) !== shard) throw new RowanError(ErrorCodes.BAD_ARGUMENT, `a batch of expired keys is of one shard (${shard})`);
      const hash = hash64Into(key, { hi: 0, lo: 0 });
      const at = this.primary.deadlineOf(shard, key, hash);
      if (at === 0 || at > now) continue; // gone, deleted, persistent, or given a new deadline meanwhile
      const e: EntryInput = { type: EntryType.Del, shard, version: 0, key };
      out.push({ e, hash, size: entrySize(e, this.core.d.limits), addr: -1 });
    }
    return out;
  }

  /** The Rowan writes carrying `planned`: with `pack`, consecutive single-block DELs share a write of
   *  at most mtuBytes (the t-log bytes just persisted, copied once); otherwise a write per block. */
  private writes(planned: Planned[], pack: boolean): Uint8Array[] {
    const { region, limits } = this.core.d;
    const out: Uint8Array[] = [];
    let run: Planned[] = [];
    let runBytes = 0;
    const flush = () => {
      if (run.length === 1) out.push(region.bytes.subarray(run[0]!.addr, run[0]!.addr + run[0]!.size));
      else if (run.length > 1) {
        const w = new Uint8Array(runBytes);
        let at = 0;
        for (const p of run) at += (w.set(region.bytes.subarray(p.addr, p.addr + p.size), at), p.size);
        out.push(w);
      }
      run = [];
      runBytes = 0;
    };
    for (const p of planned) {
      if (p.size > limits.mtuBytes) {
        flush();
        out.push(...encodeBlocks(p.e, limits));
        continue;
      }
      if (!pack || runBytes + p.size > limits.mtuBytes) flush();
      run.push(p);
      runBytes += p.size;
    }
    flush();
    return out;
  }
}
