// Re-replication's receiving end for whole batches (./copy.ts): the entries of a COPY_SHARD batch
// arrive as the primary's log stores them (../shared/copy-batch.ts, RAW). Each is verified -- every block's
// checksum, its shard, type and a plausible version -- before anything is written (data is checked
// before it is persisted), then the batch is appended to the migration actor's log as it came, one persist per
// segment it lands in, and indexed version-conditionally: what replication brought that is newer (or a
// DEL) stays; a copied entry that lost is garbage in the log for GC, as a stale b-log block is. A walk's
// packed batches (../shared/copy-packed.ts, verified as they are decoded) land through absorbPacked;
// verifyRaw checks the raw entries of KEYS batches (./reconcile.ts writes them); absorbRaw lands v2
// batches (what `npm run bench -- copybatch` compares packed ones with).
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import { MIGRATION_LOG_OWNER } from '../../config/base/ids.js';
import type { Limits } from '../../config/limits.js';
import { PoolEntryReader } from '../../shm/entry-reader.js';
import { hash64Into } from '../../shm/hash.js';
import { EntryType, readEntryAt, type LogEntry } from '../../shm/log.js';
import type { Pool } from '../../shm/pool.js';
import type { TLog } from '../../shm/tlog.js';
import { ReadEpochs } from '../shared/gc-state.js';
import type { PackedBatch } from '../shared/copy-packed.js';
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

/** Entries [from, to) of a verified packed batch (../shared/copy-packed.ts): landed in `log` with one
 *  copy and one persist per segment, the shard's version raised once to their highest, then indexed
 *  version-conditionally from where they landed (a key is viewed in place, not copied). Landing and
 *  indexing run in one go, so no segment they landed in is sealed and cleaned before they are indexed.
 *  Returns how many the index took. */
export function absorbPacked(pool: Pool, shared: KvShared, log: TLog, b: PackedBatch, from: number, to: number, limits: Limits, slot = ReadEpochs.slotOf('digest', MIGRATION_LOG_OWNER)): number {
  if (to <= from) return 0;
  const addrs = log.appendPacked(b.packed, b.offs, from, to);
  let top = 0;
  for (let i = from; i < to; i++) top = Math.max(top, b.versions[i]!);
  raiseVersion(shared.versions, b.shard, top);
  const bytes = pool.region.bytes;
  const reader = new PoolEntryReader(pool.region, limits);
  const hash = { hi: 0, lo: 0 };
  let taken = 0;
  shared.gc?.epochs.enterShared(slot); // index lookups read entries in the pool
  try {
    for (let i = from; i < to; i++) {
      const addr = addrs[i - from]!;
      const k = b.keyAt[i]!;
      const key = k >= 0 ? bytes.subarray(addr + k, addr + k + b.keyLens[i]!) : readEntryAt(bytes, addr, limits)!.key;
      if (indexEntry(shared, b.shard, key, hash64Into(key, hash), addr, b.versions[i]!, reader) !== 'stale') taken++;
    }
  } finally {
    shared.gc?.epochs.exitShared(slot);
  }
  return taken;
}
