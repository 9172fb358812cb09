// Re-replication's receiving end for whole batches (./copy.ts): the entries of a COPY_SHARD batch
// arrive as the primary's log stores them (../shared/copy-batch.ts, RAW). Each is verified -- every block's
// checksum, its shard, type and a plausible version -- before anything is written (data is checked
// before it is persisted), then the batch is appended to the migration actor's log as it came, one persist per
// segment it lands in, and indexed version-conditionally: what replication brought that is newer (or a
// DEL) stays; a copied entry that lost is garbage in the log for GC, as a stale b-log block is.
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import { MIGRATION_LOG_OWNER } from '../../config/base/ids.js';
import type { Limits } from '../../config/limits.js';
import { PoolEntryReader } from '../../shm/entry-reader.js';
import { hash64Into } from '../../shm/hash.js';
import { EntryType, readEntryAt, type LogEntry } from '../../shm/log.js';
import type { Pool } from '../../shm/pool.js';
import type { TLog } from '../../shm/tlog.js';
import { ReadEpochs } from '../shared/gc-state.js';
import type { RawEntry } from '../shared/gather-scatter.js';
import { indexEntry, raiseVersion, type KvShared } from '../shared/node-shared.js';
import { plausibleVersion } from '../shared/trust.js';

/** Verify the stored entries `raws` of `shard`; throws BAD_FRAME at the first that is not one. */
export function verifyRaw(raws: readonly Uint8Array[], shard: number, limits: Limits): LogEntry[] {
  return raws.map((raw) => {
    const e = readEntryAt(raw, 0, limits, raw.length);
    if (e === null || e.bytes !== raw.length) throw new RowanError(ErrorCodes.BAD_FRAME, `COPY_SHARD batch: an entry of ${raw.length} B of shard ${shard} does not verify`);
    if (e.shard !== shard || (e.type !== EntryType.Put && e.type !== EntryType.Del) || !plausibleVersion(e.version)) {
      throw new RowanError(ErrorCodes.BAD_FRAME, `COPY_SHARD batch: an entry of shard ${e.shard}, type ${e.type}, version ${e.version} in a batch of shard ${shard}`);
    }
    return e;
  });
}

/** A verified stored entry as a RawEntry (what Reconcile.fix and absorbEntries take), its expiry
 *  deadline included: a key read again by name keeps its TTL wherever it is written. */
export function rawEntryOf(e: LogEntry): RawEntry {
  return { s: e.shard, v: e.version, t: e.type, key: e.key, value: e.value, ...(e.expiresAt ? { exp: e.expiresAt } : {}) };
}

/** Append the verified entries `es` (their stored bytes `raws`) to `log` and index them; returns how
 *  many the index took (the others it held at that version or a newer one). */
export function absorbRaw(pool: Pool, shared: KvShared, log: TLog, raws: readonly Uint8Array[], es: readonly LogEntry[], limits: Limits, slot = ReadEpochs.slotOf('digest', MIGRATION_LOG_OWNER)): number {
  if (raws.length === 0) return 0;
  const offsets = log.appendRawMany(raws);
  const reader = new PoolEntryReader(pool.region, limits);
  const hash = { hi: 0, lo: 0 };
  let taken = 0;
  shared.gc?.epochs.enterShared(slot); // index lookups read entries in the pool
  try {
    for (let i = 0; i < es.length; i++) {
      const e = es[i]!;
      raiseVersion(shared.versions, e.shard, e.version);
      if (indexEntry(shared, e.shard, e.key, hash64Into(e.key, hash), offsets[i]!, e.version, reader) !== 'stale') taken++;
    }
  } finally {
    shared.gc?.epochs.exitShared(slot);
  }
  return taken;
}
