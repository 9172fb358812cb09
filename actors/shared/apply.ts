// Applying replicated log blocks to a node's backup indexes (§4.4 digest, §4.7 cold start). Used by
// digest actors for Used b-log segments and by the cold start for every b-log segment in the pool.
//
// A single-block entry is indexed where it lies in the b-log. The blocks of a multi-block entry may lie
// apart (Figure 7), and an index item must point at one contiguous entry, so once all blocks are in
// the entry is appended to a log the applier owns (a TLog of role Digest) and indexed there.
// Updates are version-conditional: duplicates from re-issued writes and out-of-order arrival are
// harmless. COMMITVER entries are recorded for commit tracking (§4.4) and not indexed; `maxVer` collects
// the highest version of each owned shard seen since the caller last reset it (MaxVerArray, §4.4).
// Every index change is reflected in the node's live-byte accounting when it keeps one.
// A transaction's entries (flagged TXN, ./txn-groups.ts) are held until all of them are in, then each
// is copied into the applier's log as a plain entry and indexed: a transaction torn by its primary's
// crash never shows in a backup's index, and copies GC and a later cold start find are whole entries.
// A `floor` (./floors.ts) makes the applier refuse PUT/DEL blocks it knows to be late -- below the
// shard's tombstone floor, landed after every acknowledged write under it -- before anything else.
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import type { Limits } from '../../config/limits.js';
import { hash64Into, type KeyHash } from '../../shm/hash.js';
import { PoolEntryReader } from '../../shm/entry-reader.js';
import { BlockAssembler } from '../../shm/log-assembler.js';
import { EntryType, singleBlockEntry, type Block } from '../../shm/log.js';
import { txnIndex } from '../../shm/log-layout.js';
import type { PersistentRegion } from '../../config/base/region.js';
import type { TLog } from '../../shm/tlog.js';
import type { KvShared } from './node-shared.js';
import { applyFlush } from './flush-floor.js';
import { indexEntry, raiseVersion } from './node-shared.js';
import { plausibleVersion } from './trust.js';
import { TxnGroups, type TxnEntry } from './txn-groups.js';

export interface ApplyStats {
  blocks: number;
  indexed: number;
  stale: number;
  /** Blocks of shards another applier (or no replica on this node) owns. */
  skipped: number;
  /** Blocks refused by what the node trusts (./trust.ts): a version out of any shard's plausible range,
   *  or a shard this node cannot legitimately have received the block for. */
  untrusted: number;
  reassembled: number;
  commitVers: number;
  /** Entries that found their shard's index at its maximum (counted, never fatal). */
  indexFull: number;
  /** PUT/DEL blocks refused as late: at or below their shard's tombstone floor (./floors.ts). */
  late: number;
  /** Of those, DEL blocks (the expiry sweep's DELs, which no client waits for, are DELs: a fault test
   *  whose clients write only PUTs tells them apart from acknowledged writes by this count). */
  lateDels: number;
  /** Transactions dropped incomplete (torn by their primary's crash: never acknowledged). */
  txnTorn: number;
  /** Multi-block entries dropped incomplete by a CommitVer that covers them (their sender died
   *  mid-entry: what is missing is not coming, and an acknowledged entry lands whole before it). */
  partialsTorn: number;
  /** FLUSH entries that raised their shard's floor (./flush-floor.ts). */
  flushes: number;
}

/** The tombstone floor as an applier sees it (./floors.ts). */
export interface BlockFloor {
  /** Is a PUT/DEL block of `shard` at `version` late here (never to be applied)? */
  late(shard: number, version: number): boolean;
  /** Called for each late block (digest and cold start invalidate it on PM). */
  refused?(b: Block): void;
  /** A COMMITVER block of a shard the applier owns was applied, in b-log order (digest raises F). */
  commitVer?(shard: number, version: number): void;
}

export class BlockApplier {
  private readonly assembler: BlockAssembler;
  private readonly txns = new TxnGroups();
  private readonly reader: PoolEntryReader;
  private readonly hash: KeyHash = { hi: 0, lo: 0 };
  readonly stats: ApplyStats = { blocks: 0, indexed: 0, stale: 0, skipped: 0, untrusted: 0, reassembled: 0, commitVers: 0, indexFull: 0, late: 0, lateDels: 0, txnTorn: 0, partialsTorn: 0, flushes: 0 };
  /** Highest CommitVer seen per shard (CommitVerArray, §4.4). */
  readonly commitVer = new Map<number, number>();
  /** Highest PUT/DEL version per owned shard since the caller last replaced it (MaxVerArray, §4.4). */
  maxVer = new Map<number, number>();
  /** Copy single-block entries into `log` too instead of indexing them where they lie: a promotion's
   *  catch-up (../node/promote.ts) sets it for a Using segment, which may never be Committed -- a
   *  buffer the receiver fenced and copied for digest stays Using, out of use
   *  (runtime/rowan/receiver.ts) -- and an index pointing there would lose the entry at a cold start,
   *  which refuses blocks at or below the tombstone floor in such segments as late. */
  copySingle = false;
  /** Blocks come in landing order (a digest parsing its b-log segment by segment): a CommitVer then
   *  follows every block of each transaction it covers that was acknowledged, so it drops the groups
   *  it covers that are still open (torn), and a transaction's block after it starts no group (a late
   *  duplicate, or part of a torn one). Off for a cold start, whose segment order is not landing order. */
  tornByCommitVer = false;
  /** Drop the index items below a FLUSH's floor at once; a cold start turns it off and clears once at
   *  the end (./flush-floor.ts finishFlushes), so a log of many flushes costs one pass per shard. */
  clearOnFlush = true;

  constructor(
    region: PersistentRegion,
    private readonly shared: KvShared,
    /** Which shards this applier updates; given the block's version too, a caller may also refuse
     *  versions it cannot trust for that shard (the cold start: ./trust.ts coldStartBlogTrust). */
    private readonly owns: (shard: number, version: number) => boolean,
    /** Where reassembled multi-block entries are kept. */
    private readonly log: TLog,
    limits: Limits,
    private readonly floor: BlockFloor | null = null,
  ) {
    this.assembler = new BlockAssembler(limits);
    this.reader = new PoolEntryReader(region, limits);
  }

  apply(b: Block): void {
    this.stats.blocks++;
    if (!this.shared.indexes[b.shard]) {
      this.stats.skipped++;
      return;
    }
    // A version no shard can legitimately reach (a forged 2^48-1 would make every later PUT/DEL of the
    // shard fail) is never applied nor raises the shard version, live or at cold start (./trust.ts).
    if (!plausibleVersion(b.version)) {
      this.stats.untrusted++;
      return;
    }
    // Late blocks are refused whoever owns the shard now (digest: a shard promoted here still gets the
    // old primary's late blocks, and a later cold start must not find them valid).
    if (this.floor && b.type !== EntryType.CommitVer && this.floor.late(b.shard, b.version)) {
      this.stats.late++;
      if (b.type === EntryType.Del) this.stats.lateDels++;
      this.floor.refused?.(b);
      return;
    }
    if (!this.owns(b.shard, b.version)) {
      this.stats.skipped++;
      return;
    }
    // Versions seen in replicated entries keep this node's shard version above them, so a backup
    // promoted to primary continues after every version it holds (§4.5 phase 2).
    raiseVersion(this.shared.versions, b.shard, b.version);
    if (b.type === EntryType.CommitVer) {
      this.stats.commitVers++;
      if ((this.commitVer.get(b.shard) ?? 0) < b.version) this.commitVer.set(b.shard, b.version);
      this.floor?.commitVer?.(b.shard, b.version);
      if (this.tornByCommitVer) {
        // Finished by the primary, not whole here: a transaction or a multi-block entry it covers is
        // never completed (what held a b-log segment Used until 32 more were digested -- on a quiet
        // shard, for good).
        this.stats.txnTorn += this.txns.dropCovered(b.shard, b.version);
        if (this.assembler.pending > 0) this.stats.partialsTorn += this.assembler.dropCovered(b.shard, b.version);
      }
      return;
    }
    if ((this.maxVer.get(b.shard) ?? 0) < b.version) this.maxVer.set(b.shard, b.version);
    if (b.type === EntryType.Flush) {
      this.flush(b);
      return;
    }
    if (b.cnt === 1 && !this.copySingle && b.txn === 0) {
      this.index(b.shard, b.payload.subarray(0, b.keyLen), b.offset, b.version);
      return;
    }
    const e = b.cnt === 1 ? { type: b.type, shard: b.shard, version: b.version, ...singleBlockEntry(b) } : this.assembler.add(b);
    if (e === null) return;
    if (b.cnt > 1) this.stats.reassembled++;
    if (b.txn === 0) {
      this.copyAndIndex(e);
      return;
    }
    if (this.tornByCommitVer && b.version - txnIndex(b.txn) <= (this.commitVer.get(b.shard) ?? 0)) {
      this.stats.txnTorn++;
      return;
    }
    const whole = this.txns.add(e, b.txn, b.cnt === 1 ? [b.offset] : (e as { blockOffsets?: number[] }).blockOffsets ?? []);
    if (whole) for (const x of whole) this.copyAndIndex(x);
  }

  /** A FLUSH block (./flush-floor.ts): raise the shard's floor and drop its index items below it. The
   *  floor names where the FLUSH entry lies (GC keeps it while it is the floor): the block itself, or
   *  its copy in the applier's log where single blocks are copied (copySingle). */
  private flush(b: Block): void {
    if (this.shared.indexes[b.shard]!.floor() >= b.version) {
      this.stats.stale++;
      return;
    }
    const at = this.copySingle ? this.log.append({ type: EntryType.Flush, shard: b.shard, version: b.version }) : b.offset;
    const n = applyFlush(this.shared, b.shard, b.version, at, this.reader, this.clearOnFlush);
    if (n >= 0) this.stats.flushes++;
  }

  /** Append the entry to the applier's log (plain: no transaction flag) and index it there. */
  private copyAndIndex(e: TxnEntry): void {
    // Already indexed at this version or newer (a re-issued write, or a cold start that met this entry
    // in the digest log first): copying it again would only grow the log.
    const have = this.shared.indexes[e.shard]!.get(e.key, hash64Into(e.key, this.hash), this.reader);
    if (have !== 0 && this.reader.versionAt(have) >= e.version) {
      this.stats.stale++;
      return;
    }
    const at = this.log.append({ type: e.type, shard: e.shard, version: e.version, key: e.key, value: e.value, expiresAt: e.expiresAt });
    this.index(e.shard, e.key, at, e.version);
  }

  /** Offsets of the blocks of multi-block entries still waiting for more blocks, and of the entries of
   *  transactions still waiting for more entries. */
  pendingBlockOffsets(): number[] {
    const out = this.assembler.pendingOffsets();
    return this.txns.pending === 0 ? out : out.concat(this.txns.pendingOffsets());
  }

  /** Give up the partial entries and incomplete transactions of the shards `gone` names (no longer
   *  backed up here: what is missing of them will not come, nor a CommitVer covering them). */
  dropShards(gone: (shard: number) => boolean): number {
    if (this.assembler.pending === 0 && this.txns.pending === 0) return 0;
    return this.assembler.dropShards(gone) + this.txns.dropShards(gone);
  }

  /** Give up partial entries (their remaining blocks are not coming). Incomplete transactions stay
   *  until a CommitVer covers them (their segments are held until then, see pendingBlockOffsets). */
  dropPending(): number {
    const n = this.assembler.pending;
    this.assembler.clear();
    return n;
  }

  /** Transactions waiting for more of their entries. */
  get pendingTxns(): number {
    return this.txns.pending;
  }

  private index(shard: number, key: Uint8Array, addr: number, version: number): void {
    let r;
    try {
      r = indexEntry(this.shared, shard, key, hash64Into(key, this.hash), addr, version, this.reader);
    } catch (err) {
      // A full index never stops digest or cold start (the node keeps serving). It cannot happen while
      // primaries keep their headroom (limits.indexHeadroomBuckets; a backup's index of a shard holds
      // the same keys as the primary's); the entry stays in the pool and is counted, not lost silently.
      if (!(err instanceof RowanError && err.code === ErrorCodes.INDEX_FULL)) throw err;
      this.stats.indexFull++;
      return;
    }
    if (r === 'stale') this.stats.stale++;
    else this.stats.indexed++;
  }
}

/** Bytes zeroed at a block's start to invalidate it: its type and checksum, one 8-byte persist. */
export const INVALIDATE_BYTES = 8;

/** Make the block at `offset` unreadable for good (a type of 0 is no entry type), persisted. */
export function invalidateBlock(region: PersistentRegion, offset: number): void {
  region.bytes.fill(0, offset, offset + INVALIDATE_BYTES);
  region.persist(offset, INVALIDATE_BYTES);
}
