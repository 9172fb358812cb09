// Gather and scatter (§4.5 phase 2), a node's side: so that every surviving replica of a shard whose
// primary died holds the same entries ("all", not "none"). When the old primary died mid-replication an
// entry it never acknowledged may have reached one backup and not another.
//
//   prepare  gatherForPrepare(): one pass over this node's Using/Used b-log segments (what digest may
//            not have applied or committed yet) collects, for the shards changing primary, the highest
//            version held (the floors, as before) and every complete PUT/DEL/FLUSH entry with a version above
//            the highest CommitVer seen for the shard in those segments (protocol note in
//            ./manager-protocol.ts). Multi-block entries are reassembled; one missing a block was never
//            acknowledged and is left out, and so are the entries of a transaction not all of whose
//            entries are here (./txn-groups.ts tornTxnIds: torn by the primary's crash). Bounded by GATHER_BYTES_MAX (what does not fit: `truncated`).
//            In tailwind mode the pass also reads the backup buffers their primary never closed, by
//            Algorithm 1 (./tailwind-buffers.ts): no CommitVer there, so all their valid records are
//            listed; a closed buffer's records were all acknowledged, so every replica holds them.
//   commit   absorbScattered(): the entries the manager says this node lacks are persisted -- appended
//            to the promotion log (PROMOTION_ACTOR_ID, role Digest, config/base/ids.ts) -- and indexed
//            version-conditionally, so a newer version already indexed wins and a repeat is skipped
//            without being written again. The shard version is raised above each, so a promoted shard
//            continues after every version gathered.
// Tombstone floors (./floors.ts): an entry at or below its shard's effective floor is late (an
// acknowledged one was applied, and lies in a Committed segment); gather does not list it and a
// scattered one is not absorbed -- this node may have dropped the tombstone that outranked it.
// Re-replication's copies (absorbEntries without floors) come from the primary's index and bypass it.
// The promotion log is a digest-role log: cold start (../node/recovery.ts) scans every non-Free Digest
// segment, so the entries survive a restart; its full segments are sealed Committed and cleaned by GC
// like any digest log's; its newest segment stays Using until a later promotion on this node reopens the
// chain (TLog.recover commits the older ones) -- the same as the promotion's own reassembled entries.
import type { Clock } from '../../config/base/clock.js';
import { plausibleVersion } from './trust.js';
import type { Limits } from '../../config/limits.js';
import { PROMOTION_ACTOR_ID } from '../../config/base/ids.js';
import { newBlogScanStats, scanBlogBlocks } from '../../runtime/rowan/blog-scan.js';
import { PoolEntryReader } from '../../shm/entry-reader.js';
import { hash64Into } from '../../shm/hash.js';
import { BlockAssembler } from '../../shm/log-assembler.js';
import { EntryType, validDeadline } from '../../shm/log.js';
import { OwnerRole, SegmentState, type Pool } from '../../shm/pool.js';
import type { TLog } from '../../shm/tlog.js';
import { ReadEpochs } from './gc-state.js';
import { ShardFloors } from './floors.js';
import { GATHER_BYTES_MAX, gatherEntryBytes, type GatherEntry } from './manager-protocol.js';
import { applyFlush } from './flush-floor.js';
import { indexEntry, raiseVersion, type KvShared } from './node-shared.js';
import { tornTxnIds, type WordedEntry } from './txn-groups.js';
import { newTailwindScanReport, openTailwindBuffers, segmentBlocks } from './tailwind-buffers.js';

/** Blocks scanned between two yields to the event loop in a failover's scans (gather, promotion). */
export const YIELD_EVERY_BLOCKS = 2048;

/** b-log segments digest may not have applied (Using: still being filled; Used: handed to digest,
 *  maybe not parsed) and whose entries are not known to be on every replica. */
export function undigested(pool: Pool): number[] {
  return pool.segments({ role: OwnerRole.Control }).filter((s) => {
    const st = pool.meta(s).state;
    return st === SegmentState.Using || st === SegmentState.Used;
  });
}

/** The scans run on the node's main thread: a long one lets its other work (peer leases, catch-up
 *  copies) run now and then. The manager's lease no longer waits for it (it is renewed on the lease
 *  thread, ../node/lease-thread.ts), so a scan yields per YIELD_EVERY_BLOCKS blocks, not per segment:
 *  an event-loop turn per posted buffer cost a failover's prepare tens of ms on a busy machine. */
export function yieldToRenewals(): Promise<void> {
  return new Promise((r) => setImmediate(r));
}

/** Work slices on the main thread that look at the lease only once `everyMs` of work went by since the
 *  last look: a turn of the event loop per small slice would stretch a long walk, when several run at
 *  once, far beyond the CPU it takes. */
export class RenewalYielder {
  private last: number;

  constructor(
    private readonly clock: Clock,
    private readonly everyMs = 4,
  ) {
    this.last = clock.now();
  }

  async slice(): Promise<void> {
    if (this.clock.now() - this.last < this.everyMs) return;
    await yieldToRenewals();
    this.last = this.clock.now();
  }
}

export interface PrepareReport {
  /** Highest version held per shard: the shard version and every block in the b-log segments. */
  versions: Record<string, number>;
  entries: GatherEntry[];
  /** Entries left out because the list reached `bytesMax`. */
  truncated: boolean;
  /** Entries at or below their shard's CommitVer (or its tombstone floor), not listed. */
  committed: number;
  /** What the pass read: b-log segments, verified blocks (for the prepare's log line). */
  scanned: { segments: number; blocks: number };
}

export async function gatherForPrepare(pool: Pool, shared: KvShared, shards: number[], limits: Limits, bytesMax = GATHER_BYTES_MAX): Promise<PrepareReport> {
  const want = new Set(shards);
  const versions: Record<string, number> = {};
  for (const s of shards) versions[s] = Number(Atomics.load(shared.versions, s));
  const commitVer = new Map<number, number>();
  const found = new Map<string, GatherEntry>(); // by shard:version (a re-issued write lands twice)
  const words = new Map<string, WordedEntry>(); // the same ids, with their transaction words
  const assembler = new BlockAssembler(limits);
  const segs = undigested(pool);
  const stats = newBlogScanStats();
  const tailwind = newTailwindScanReport();
  const open = openTailwindBuffers(pool);
  for (const seg of [...segs, ...open]) {
    const start = pool.segmentOffset(seg);
    const blocks = pool.meta(seg).role === OwnerRole.Remote ? segmentBlocks(pool, seg, limits, tailwind) : scanBlogBlocks(pool.region.bytes, start, start + pool.segmentBytes, limits, stats);
    for (const b of blocks) {
      if ((stats.blocks + tailwind.blocks) % YIELD_EVERY_BLOCKS === 0) await yieldToRenewals();
      if (!want.has(b.shard)) continue;
      if (b.version > versions[b.shard]!) versions[b.shard] = b.version;
      if (b.type === EntryType.CommitVer) {
        if ((commitVer.get(b.shard) ?? 0) < b.version) commitVer.set(b.shard, b.version);
        continue;
      }
      const e = assembler.add(b); // copies what it keeps; single-block entries are views, encoded now
      if (e === null) continue;
      const id = `${e.shard}:${e.version}`;
      if (!found.has(id)) found.set(id, { s: e.shard, v: e.version, t: e.type, k: b64(e.key), x: b64(e.value), ...(e.expiresAt ? { e: e.expiresAt } : {}) });
      if (!words.has(id)) words.set(id, { shard: e.shard, version: e.version, txn: e.txn });
    }
  }
  for (const id of tornTxnIds(words)) found.delete(id);
  const r: PrepareReport = { versions, entries: [], truncated: false, committed: 0, scanned: { segments: segs.length + open.length, blocks: stats.blocks + tailwind.blocks } };
  const floors = shared.gc ? new ShardFloors(shared.gc.buffers.floors) : null;
  const listed: GatherEntry[] = [];
  for (const e of found.values()) {
    if (e.v <= (commitVer.get(e.s) ?? 0) || (floors !== null && e.v <= floors.effective(e.s))) r.committed++;
    else listed.push(e);
  }
  const cut = newestWithin(listed, bytesMax);
  r.entries = cut.kept;
  r.truncated = cut.truncated;
  return r;
}

/** The newest of `entries` whose encoded size, added to `used` bytes, fits in `bytesMax`, newest first
 *  (if a list must be cut, the entries most likely still in flight are kept); `truncated` when some
 *  were left out. */
export function newestWithin(entries: Iterable<GatherEntry>, bytesMax: number, used = 0): { kept: GatherEntry[]; truncated: boolean } {
  const kept: GatherEntry[] = [];
  let bytes = used;
  for (const e of [...entries].sort((a, b) => b.v - a.v)) {
    bytes += gatherEntryBytes(e);
    if (bytes > bytesMax) return { kept, truncated: true };
    kept.push(e);
  }
  return { kept, truncated: false };
}

export function b64(u: Uint8Array): string {
  return Buffer.from(u.buffer, u.byteOffset, u.byteLength).toString('base64');
}

export interface AbsorbStats {
  /** Appended to the promotion log and indexed. */
  absorbed: number;
  /** Already held at that version or a newer one (nothing written). */
  held: number;
  /** Of a shard this node holds no index for (not a replica of it). */
  skipped: number;
  /** At or below their shard's effective tombstone floor (scattered entries only): late, not taken. */
  late: number;
}

/** An entry to absorb, binary: shard, version, type (PUT or DEL), key, value. */
export interface RawEntry {
  s: number;
  v: number;
  t: number;
  key: Uint8Array;
  value: Uint8Array;
  /** Expiry deadline (Unix ms) of a PUT; absent or 0: none. */
  exp?: number;
}

/**
 * Persist and index scattered entries. `log` is the promotion log (TLog.recover(pool, PROMOTION_ACTOR_ID,
 * limits, OwnerRole.Digest)); the caller owns it and must be the only one appending to it.
 */
export function absorbScattered(pool: Pool, shared: KvShared, log: TLog, entries: GatherEntry[], limits: Limits, own: ReadonlySet<number> = new Set()): AbsorbStats {
  const floors = shared.gc ? new ShardFloors(shared.gc.buffers.floors) : undefined;
  // Shards this node was primary of already (a restarted primary confirmed): nothing at or below the
  // commit point it saved (./commit-points.ts) -- it holds every write it finished there, and its
  // tombstone sweep dropped tombstones only there.
  const points = shared.gc && own.size > 0 ? new BigInt64Array(shared.gc.buffers.points) : null;
  const floor = (s: number): number => Math.max(floors?.effective(s) ?? 0, points && own.has(s) ? Number(Atomics.load(points, s)) : 0);
  return absorbEntries(pool, shared, log, entries.map((g) => ({ s: g.s, v: g.v, t: g.t, key: Buffer.from(g.k, 'base64'), value: Buffer.from(g.x, 'base64'), exp: g.t === EntryType.Put && typeof g.e === 'number' && validDeadline(g.e) ? g.e : 0 })), limits, floors || points ? floor : undefined);
}

/**
 * absorbScattered for binary entries (also re-replication's copied batches, ../migration/copy.ts): each is
 * appended to `log` and indexed unless the index holds its key at that version or a newer one.
 */
export function absorbEntries(pool: Pool, shared: KvShared, log: TLog, entries: Iterable<RawEntry>, limits: Limits, floor?: (shard: number) => number, slot = ReadEpochs.slotOf('digest', PROMOTION_ACTOR_ID)): AbsorbStats {
  const st: AbsorbStats = { absorbed: 0, held: 0, skipped: 0, late: 0 };
  const reader = new PoolEntryReader(pool.region, limits);
  const hash = { hi: 0, lo: 0 };
  // A read epoch (the caller's slot: the promotion's, or the migration actor's) while index lookups read entries in the pool (GC must not free them underneath).
  shared.gc?.epochs.enterShared(slot);
  try {
    for (const g of entries) {
      const index = shared.indexes[g.s];
      // Scattered and copied entries come from other nodes like b-log blocks: a version no shard can
      // legitimately reach is not taken (./trust.ts; it would make the shard's later writes fail).
      if (!index || (g.t !== EntryType.Put && g.t !== EntryType.Del && g.t !== EntryType.Flush) || !plausibleVersion(g.v)) {
        st.skipped++;
        continue;
      }
      if (floor && g.v <= floor(g.s)) {
        st.late++;
        continue;
      }
      raiseVersion(shared.versions, g.s, g.v);
      if (g.t === EntryType.Flush) {
        absorbFlush(shared, log, g, reader, st);
        continue;
      }
      const key = g.key;
      hash64Into(key, hash);
      const have = index.get(key, hash, reader);
      if (have !== 0 && reader.versionAt(have) >= g.v) {
        st.held++;
        continue;
      }
      const at = log.append({ type: g.t, shard: g.s, version: g.v, key, value: g.value, expiresAt: g.exp ?? 0 });
      indexEntry(shared, g.s, key, hash, at, g.v, reader);
      st.absorbed++;
    }
  } finally {
    shared.gc?.epochs.exitShared(slot);
  }
  return st;
}

/** A scattered FLUSH (./flush-floor.ts): persisted in the promotion log and applied, unless this node's
 *  floor of the shard is already that high. */
function absorbFlush(shared: KvShared, log: TLog, g: RawEntry, reader: PoolEntryReader, st: AbsorbStats): void {
  if (shared.indexes[g.s]!.floor() >= g.v) {
    st.held++;
    return;
  }
  const at = log.append({ type: EntryType.Flush, shard: g.s, version: g.v });
  applyFlush(shared, g.s, g.v, at, reader);
  st.absorbed++;
}
