// The PM pool of one node (DESIGN §3; ROWAN §4.2.1, §5.3): one file, mapped with libpmem2, split into
// segments whose life cycle (Figure 6) is kept in the segment meta table, one 64-bit word per segment
// (shm/pool-layout.ts). Every actor of the node maps the file itself and gets its own Pool object.
//
// Concurrency: correctness comes only from compare-and-swap on the meta words in the mapping, so
// threads and processes that map the same file can allocate, transition and free concurrently without
// a lock. Each Pool keeps a DRAM free-list hint (the paper's DRAM-resident free list), rebuilt at open
// and when exhausted; a stale hint costs a failed CAS, never a double allocation.
//
// Crash order of an allocation: claim (CAS Free -> Claiming, persist the word), zero the segment and
// persist it, then publish (CAS Claiming -> Using, persist the word). A segment that recovery sees as
// Using therefore never holds checksummed entries of its previous life. A segment never allocated
// (seq 0: every Free, Claiming-rolled-back and freed word keeps the seq of its last claim) has no
// previous life: the pool file was created all zero (posix_fallocate of a new file, ./pool-file.ts)
// and only a segment's owner writes into it, so it is not zeroed again -- on a fresh pool that was
// every page of every segment taken, faulted in and written twice (a node's 64 posted b-log buffers of
// 4 MiB: 256 MiB at its first start).

import { randomBytes } from 'node:crypto';
import { closeSync } from 'node:fs';
import { endianness } from 'node:os';
import { defaultLimits } from '../config/limits.js';
import { ErrorCodes, RowanError, invariant } from '../config/base/errors.js';
import type { PoolRegion } from '../config/base/region.js';
import { VIEW_BYTES_MAX, isPersistMode, type PersistMode } from '../native/pmem2.js';
import { mapFd } from '../native/mapping.js';
import { createPoolFile, isPow2, openPoolFd, validatePoolFile } from './pool-file.js';
import {
  POOL_FORMAT_VERSION,
  SUPERBLOCK_BYTES,
  decodeMetaHalves,
  decodeSuperblock,
  encodeSuperblock,
  META_WORD_BYTES,
  OWNER_ID_MAX,
  OwnerRole,
  SB_SEQ_COUNTER,
  SEGMENT_BYTES_MAX,
  SEGMENT_BYTES_MIN,
  SEGMENT_CLAIMING,
  SEGMENT_COUNT_MAX,
  SEQ_MAX,
  SegmentState,
  decodeMeta,
  encodeMeta,
  poolGeometry,
  type MetaFields,
  type MetaState,
  type Superblock,
} from './pool-layout.js';

export { OwnerRole, SegmentState, SEGMENT_CLAIMING } from './pool-layout.js';
export type { MetaState } from './pool-layout.js';

export type SegmentMeta = MetaFields;

export interface PoolCreateOptions {
  segmentCount: number;
  /** Default: the paper's 4 MiB (config/limits.ts). */
  segmentBytes?: number;
  /** Default: pagecache (DESIGN §3: the default for development and benchmarks). */
  mode?: PersistMode;
  /** See PoolOpenOptions.wrapRegion. */
  wrapRegion?: RegionWrapper;
}

export interface PoolOpenOptions {
  mode?: PersistMode;
  /** Free segments kept back for garbage collection (§4.4): an allocation for any role but Clean fails
   *  with PM_FULL once no more than this many are free, so clean actors always have a segment to copy
   *  live entries into and can make room again (allocate's keepFree may lower it for DELs). Default 0. */
  reserveSegments?: number;
  /** Wraps the mapped region before the Pool uses it (runtime/optane/media-file.ts withPoolMedia: the
   *  Optane media model's persist cost); the wrapper's close() must close the region it wraps. */
  wrapRegion?: RegionWrapper;
}

export type RegionWrapper = (region: PoolRegion, path: string) => PoolRegion;

export interface SegmentFilter {
  state?: MetaState;
  role?: OwnerRole;
  ownerId?: number;
}

export type PoolCounts = Record<'free' | 'using' | 'used' | 'committed' | 'claiming', number>;

export const DEFAULT_PERSIST_MODE: PersistMode = 'pagecache';

const STATE_NAMES = ['Free', 'Using', 'Used', 'Committed', 'Claiming'] as const;
function stateName(s: number): string {
  return STATE_NAMES[s] ?? `state ${s}`;
}

/** Figure 6, plus Using -> Free to roll back an allocation nobody wrote to. */
const LEGAL_TRANSITIONS: ReadonlyArray<readonly [SegmentState, SegmentState]> = [
  [SegmentState.Using, SegmentState.Used],
  [SegmentState.Using, SegmentState.Committed],
  [SegmentState.Used, SegmentState.Committed],
  [SegmentState.Committed, SegmentState.Free],
  [SegmentState.Using, SegmentState.Free],
];

function isLegal(from: number, to: number): boolean {
  return LEGAL_TRANSITIONS.some(([f, t]) => f === from && t === to);
}

function bad(message: string): never {
  throw new RowanError(ErrorCodes.BAD_ARGUMENT, message);
}

/** Lowest-index-first hint of segments that were Free when last seen (allocation in address order). */
class FreeHint {
  private readonly maybeFree: Uint8Array;
  private cursor = 0;

  constructor(count: number) {
    this.maybeFree = new Uint8Array(count);
    this.cursor = count;
  }

  mark(i: number): void {
    this.maybeFree[i] = 1;
    if (i < this.cursor) this.cursor = i;
  }

  clear(i: number): void {
    this.maybeFree[i] = 0;
  }

  /** The lowest hinted index, or -1. */
  next(): number {
    const n = this.maybeFree.length;
    while (this.cursor < n && this.maybeFree[this.cursor] === 0) this.cursor++;
    return this.cursor < n ? this.cursor : -1;
  }
}

export class Pool {
  readonly path: string;
  readonly poolId: string;
  readonly segmentBytes: number;
  readonly segmentCount: number;
  readonly mode: PoolRegion['mode'];
  /** What mapped the file: libpmem2, or libc alone (native/mapping.ts); 'memory' for a DRAM region. */
  readonly backend: NonNullable<PoolRegion['backend']> | 'memory';
  /** The whole mapping; offsets are pool offsets, and data offsets are never 0. */
  readonly region: PoolRegion;
  /** Pool offset of segment 0. */
  readonly dataOffset: number;
  readonly poolBytes: number;
  readonly createdAt: Date;
  private readonly metaOffset: number;
  /** The meta table in the mapping: element i is segment i's word. */
  private readonly words: BigUint64Array;
  /** The same table as 32-bit halves: word i's low half (state, role, owner, seq low bits) is 2i. */
  private readonly halves: Uint32Array;
  /** The superblock's allocation counter (the last seq handed out). */
  private readonly seqCounter: BigUint64Array;
  private readonly hint: FreeHint;
  /** See PoolOpenOptions.reserveSegments. */
  readonly reserveSegments: number;
  private closed = false;

  // ---- lifecycle ------------------------------------------------------------------------------------

  /** Create a new pool file (POOL_EXISTS if `path` exists) and open it. */
  static create(path: string, o: PoolCreateOptions): Pool {
    const segmentBytes = o.segmentBytes ?? defaultLimits.segmentBytes;
    const mode = o.mode ?? DEFAULT_PERSIST_MODE;
    if (!isPersistMode(mode)) bad(`unknown persistence mode '${String(mode)}' (dax|msync|pagecache)`);
    if (!Number.isInteger(o.segmentCount) || o.segmentCount < 1 || o.segmentCount > SEGMENT_COUNT_MAX)
      bad(`segmentCount must be an integer in [1, ${SEGMENT_COUNT_MAX}], got ${o.segmentCount}`);
    if (!isPow2(segmentBytes) || segmentBytes < SEGMENT_BYTES_MIN || segmentBytes > SEGMENT_BYTES_MAX)
      bad(`segmentBytes must be a power of two in [${SEGMENT_BYTES_MIN}, ${SEGMENT_BYTES_MAX}], got ${segmentBytes}`);
    const g = poolGeometry(segmentBytes, o.segmentCount);
    if (g.poolBytes > VIEW_BYTES_MAX)
      bad(`a pool of ${o.segmentCount} x ${segmentBytes} B is ${g.poolBytes} bytes; one mapping view holds at most 4 GiB`);
    createPoolFile(path, g, randomBytes(16).toString('hex'), Date.now());
    return Pool.open(path, o.wrapRegion ? { mode, wrapRegion: o.wrapRegion } : { mode });
  }

  /** Open and validate an existing pool file. Writes nothing unless validation passed. */
  static open(path: string, o: PoolOpenOptions = {}): Pool {
    const mode = o.mode ?? DEFAULT_PERSIST_MODE;
    if (!isPersistMode(mode)) bad(`unknown persistence mode '${String(mode)}' (dax|msync|pagecache)`);
    invariant(endianness() === 'LE', 'the pool format is little-endian and so must the host be');
    const fd = openPoolFd(path);
    try {
      const { superblock, maxSeq } = validatePoolFile(fd, path);
      const reserve = o.reserveSegments ?? 0;
      if (!Number.isInteger(reserve) || reserve < 0) bad(`reserveSegments must be a non-negative integer, got ${reserve}`);
      const mapped = mapFd(fd, { mode, length: superblock.poolBytes, label: path });
      let region: PoolRegion = mapped;
      try {
        if (o.wrapRegion) region = o.wrapRegion(mapped, path);
        return new Pool(path, superblock, region, maxSeq, reserve);
      } catch (err) {
        region.close();
        throw err;
      }
    } finally {
      closeSync(fd);
    }
  }

  /**
   * Open `path`, creating it first if it does not exist. Refuses (BAD_CONFIG) a pool whose geometry
   * differs from the one asked for: a node must not silently run on a pool shaped by another config.
   */
  static openOrCreate(path: string, o: PoolCreateOptions): Pool {
    const pool = openOrCreateRaw(path, o);
    const want = o.segmentBytes ?? defaultLimits.segmentBytes;
    if (pool.segmentBytes !== want || pool.segmentCount !== o.segmentCount) {
      pool.close();
      throw new RowanError(
        ErrorCodes.BAD_CONFIG,
        `${path} holds ${pool.segmentCount} segments of ${pool.segmentBytes} B, the configuration asks for ` +
          `${o.segmentCount} of ${want} B`,
      );
    }
    return pool;
  }

  /**
   * A pool in a region that is not a pool file (storage injected, CONVENTIONS 9): the simulator's
   * in-memory PM. A region of zeros is formatted first (superblock, all-Free meta table); a region
   * that holds a pool is validated and opened as it is, which is how a simulated node cold-starts.
   */
  static onRegion(region: PoolRegion, o: { segmentBytes: number; segmentCount: number; poolId?: string; reserveSegments?: number }): Pool {
    const g = poolGeometry(o.segmentBytes, o.segmentCount);
    if (region.size < g.poolBytes) bad(`region of ${region.size} B is smaller than a pool of ${g.poolBytes} B`);
    const head = Buffer.from(region.bytes.buffer, region.bytes.byteOffset, SUPERBLOCK_BYTES);
    if (head.every((b) => b === 0)) {
      const page = encodeSuperblock({ ...g, version: POOL_FORMAT_VERSION, poolId: o.poolId ?? '0'.repeat(32), createdAtMs: 0 });
      region.bytes.set(page, 0);
      region.persist(0, page.length);
    }
    const sb = decodeSuperblock(head);
    if (sb.segmentBytes !== o.segmentBytes || sb.segmentCount !== o.segmentCount)
      bad(`region holds a pool of ${sb.segmentCount} x ${sb.segmentBytes} B, asked for ${o.segmentCount} x ${o.segmentBytes} B`);
    let maxSeq = 0;
    const halves = new Uint32Array(region.bytes.buffer, region.bytes.byteOffset + sb.metaOffset, sb.segmentCount * 2);
    for (let i = 0; i < sb.segmentCount; i++) {
      const d = decodeMetaHalves(halves[2 * i]!, halves[2 * i + 1]!);
      if (!d.ok) throw new RowanError(ErrorCodes.POOL_META_CORRUPT, `meta word of segment ${i} is corrupt (${d.reason})`);
      maxSeq = Math.max(maxSeq, d.fields.seq);
    }
    return new Pool('(region)', sb, region, maxSeq, o.reserveSegments ?? 0);
  }

  private constructor(path: string, sb: Superblock, region: PoolRegion, maxSeq: number, reserveSegments: number) {
    this.path = path;
    this.reserveSegments = reserveSegments;
    this.poolId = sb.poolId;
    this.segmentBytes = sb.segmentBytes;
    this.segmentCount = sb.segmentCount;
    this.mode = region.mode;
    this.backend = region.backend ?? 'memory';
    this.region = region;
    this.dataOffset = sb.dataOffset;
    this.poolBytes = sb.poolBytes;
    this.createdAt = new Date(sb.createdAtMs);
    this.metaOffset = sb.metaOffset;
    const buf = region.bytes.buffer;
    this.words = new BigUint64Array(buf, region.bytes.byteOffset + sb.metaOffset, sb.segmentCount);
    this.halves = new Uint32Array(buf, region.bytes.byteOffset + sb.metaOffset, sb.segmentCount * 2);
    this.seqCounter = new BigUint64Array(buf, region.bytes.byteOffset + SB_SEQ_COUNTER, 1);
    this.hint = new FreeHint(sb.segmentCount);
    this.raiseSeqCounter(maxSeq);
    this.rebuildHint();
  }

  /** Unmap. Idempotent; any later use of this Pool is an invariant error. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.region.close();
  }

  // ---- geometry -------------------------------------------------------------------------------------

  segmentOffset(i: number): number {
    this.checkIndex(i);
    return this.dataOffset + i * this.segmentBytes;
  }

  segmentOf(poolOffset: number): number {
    invariant(
      Number.isInteger(poolOffset) && poolOffset >= this.dataOffset && poolOffset < this.poolBytes,
      `pool offset ${poolOffset} is not inside a segment of ${this.path}`,
    );
    return Math.floor((poolOffset - this.dataOffset) / this.segmentBytes);
  }

  // ---- meta table -----------------------------------------------------------------------------------

  meta(i: number): SegmentMeta {
    this.checkIndex(i);
    return this.decodeWord(i, Atomics.load(this.words, i)); // reads the latest published state of i
  }

  /**
   * Take a Free segment for (role, ownerId): claim, zero + persist (unless never used: see the header),
   * publish as Using.
   * The segment gets the next pool-wide seq. Throws PM_FULL when no segment is Free, or (for any role
   * but Clean) when no more than `keepFree` are: by default the whole GC reserve; an allocation that
   * makes room (a t-log segment for DELs) may pass less, never more than the reserve.
   */
  allocate(role: OwnerRole, ownerId: number, keepFree = this.reserveSegments): number {
    this.checkOpen();
    if (!Number.isInteger(role) || role <= OwnerRole.None || role > OwnerRole.Remote) bad(`invalid owner role ${role}`);
    if (!Number.isInteger(ownerId) || ownerId < 0 || ownerId > OWNER_ID_MAX)
      bad(`owner id must be an integer in [0, ${OWNER_ID_MAX}], got ${ownerId}`);
    if (role !== OwnerRole.Clean && this.reserveSegments > 0) {
      const free = this.freeCount();
      if (free <= Math.min(keepFree, this.reserveSegments)) {
        throw new RowanError(
          ErrorCodes.PM_FULL,
          `${this.path}: ${free} free segment(s) left of ${this.segmentCount}, all kept back for garbage collection`,
          { counts: this.counts(), reserveSegments: this.reserveSegments },
        );
      }
    }
    for (let pass = 0; pass < 2; pass++) {
      for (let i = this.hint.next(); i !== -1; i = this.hint.next()) {
        this.hint.clear(i);
        const claimed = this.tryClaim(i, role, ownerId);
        if (claimed === null) continue;
        if (!claimed.pristine) this.zeroSegment(i);
        this.publishUsing(i, claimed.claim);
        return i;
      }
      // Other mappers of the pool may have freed segments this Pool's hint never saw.
      if (pass === 0) this.rebuildHint();
    }
    throw new RowanError(ErrorCodes.PM_FULL, `${this.path}: no free segment among ${this.segmentCount}`, {
      counts: this.counts(),
    });
  }

  /** Move segment i from `from` to `to`; only Figure 6's transitions. Persisted before returning. */
  transition(i: number, from: SegmentState, to: SegmentState): void {
    this.checkIndex(i);
    if (!isLegal(from, to))
      throw new RowanError(ErrorCodes.SEGMENT_STATE, `segment ${i}: ${stateName(from)} -> ${stateName(to)} is not a legal transition`, {
        segment: i,
        from,
        to,
      });
    for (;;) {
      const w = Atomics.load(this.words, i); // the state we check `from` against
      const f = this.decodeWord(i, w);
      if (f.state !== from)
        throw new RowanError(ErrorCodes.SEGMENT_STATE, `segment ${i} is ${stateName(f.state)}, not ${stateName(from)}`, {
          segment: i,
          state: f.state,
          from,
          to,
        });
      const next =
        to === SegmentState.Free
          ? encodeMeta({ state: SegmentState.Free, role: OwnerRole.None, ownerId: 0, seq: f.seq })
          : encodeMeta({ ...f, state: to });
      // Publishes i's new state to every mapper in one 8-byte store; fails if someone changed it since.
      if (Atomics.compareExchange(this.words, i, w, next) === w) break;
    }
    this.persistWord(i);
    if (to === SegmentState.Free) this.hint.mark(i);
  }

  /** Committed -> Free (reclaimed) or Using -> Free (rolled back). */
  free(i: number): void {
    const s = this.meta(i).state;
    if (s !== SegmentState.Committed && s !== SegmentState.Using)
      throw new RowanError(ErrorCodes.SEGMENT_STATE, `segment ${i} is ${stateName(s)}; only Committed or Using segments can be freed`, {
        segment: i,
        state: s,
      });
    this.transition(i, s, SegmentState.Free);
  }

  /** Segments matching `filter` (all when omitted), ordered by seq (allocation order), then index. */
  segments(filter: SegmentFilter = {}): number[] {
    this.checkOpen();
    const found: Array<{ i: number; seq: number }> = [];
    for (let i = 0; i < this.segmentCount; i++) {
      const f = this.decodeWord(i, Atomics.load(this.words, i)); // latest published state of i
      if (filter.state !== undefined && f.state !== filter.state) continue;
      if (filter.role !== undefined && f.role !== filter.role) continue;
      if (filter.ownerId !== undefined && f.ownerId !== filter.ownerId) continue;
      found.push({ i, seq: f.seq });
    }
    found.sort((a, b) => a.seq - b.seq || a.i - b.i);
    return found.map((x) => x.i);
  }

  /**
   * Segments whose state is `state` right now, in index order: a fast scan for pollers (clean actors
   * look for Committed segments every few ms). It reads only each word's low half, without BigInts or
   * the check bits; a word that is corrupt shows up the next time meta() or segments() decodes it.
   */
  segmentsInState(state: MetaState): number[] {
    this.checkOpen();
    const out: number[] = [];
    const h = this.halves;
    for (let i = 0; i < this.segmentCount; i++) {
      // The low half of i's latest published word (a CAS publishes both halves at once).
      if ((Atomics.load(h, 2 * i) & 0b111) === state) out.push(i);
    }
    return out;
  }

  /** Segments Free right now (one pass over the meta table). */
  freeCount(): number {
    return this.segmentsInState(SegmentState.Free).length;
  }

  counts(): PoolCounts {
    this.checkOpen();
    const c: PoolCounts = { free: 0, using: 0, used: 0, committed: 0, claiming: 0 };
    const keys = ['free', 'using', 'used', 'committed', 'claiming'] as const;
    for (let i = 0; i < this.segmentCount; i++) {
      c[keys[this.decodeWord(i, Atomics.load(this.words, i)).state]]++; // latest published state of i
    }
    return c;
  }

  /**
   * Free every segment left Claiming by an allocation that a crash interrupted. Call only at node cold
   * start, before any actor allocates: a Claiming word of a live allocator looks the same.
   */
  recoverInterruptedAllocations(): number[] {
    this.checkOpen();
    const freed: number[] = [];
    for (let i = 0; i < this.segmentCount; i++) {
      const w = Atomics.load(this.words, i); // the word we may replace
      const f = this.decodeWord(i, w);
      if (f.state !== SEGMENT_CLAIMING) continue;
      const free = encodeMeta({ state: SegmentState.Free, role: OwnerRole.None, ownerId: 0, seq: f.seq });
      // Publishes the abandoned claim as Free again; skipped if the word changed under us.
      if (Atomics.compareExchange(this.words, i, w, free) !== w) continue;
      this.persistWord(i);
      this.hint.mark(i);
      freed.push(i);
    }
    return freed;
  }

  // ---- allocation steps ----------------------------------------------------------------------------

  /** CAS segment i from Free to Claiming(role, owner, next seq); null if it is not Free (any more).
   *  `pristine`: it was never claimed before (seq 0), so its bytes are the new file's zeros. */
  private tryClaim(i: number, role: OwnerRole, ownerId: number): { claim: bigint; pristine: boolean } | null {
    const w = Atomics.load(this.words, i); // the Free word we expect to replace
    const was = this.decodeWord(i, w);
    if (was.state !== SegmentState.Free) return null;
    const claim = encodeMeta({ state: SEGMENT_CLAIMING, role, ownerId, seq: this.nextSeq() });
    // Publishes the claim: from here on no other allocator (thread or process) can take segment i.
    if (Atomics.compareExchange(this.words, i, w, claim) !== w) return null;
    this.persistWord(i);
    return { claim, pristine: was.seq === 0 };
  }

  private zeroSegment(i: number): void {
    const off = this.segmentOffset(i);
    this.region.bytes.fill(0, off, off + this.segmentBytes);
    this.region.persist(off, this.segmentBytes);
  }

  private publishUsing(i: number, claim: bigint): void {
    const f = this.decodeWord(i, claim);
    const using = encodeMeta({ ...f, state: SegmentState.Using });
    // Publishes the zeroed segment as Using (part of its owner's log); nobody else may touch a claim.
    const prev = Atomics.compareExchange(this.words, i, claim, using);
    invariant(prev === claim, `segment ${i}: claim word changed during allocation`);
    this.persistWord(i);
  }

  /** The last seq handed out so far (a segment claimed from now on gets a higher one). */
  currentSeq(): number {
    return Number(Atomics.load(this.seqCounter, 0)); // the latest counter any mapper published
  }

  /** The next pool-wide seq; gaps are fine (a lost CAS burns one), order is what recovery needs. */
  private nextSeq(): number {
    // Publishes the new counter to all mappers; the returned old value + 1 is ours alone.
    const seq = Atomics.add(this.seqCounter, 0, 1n) + 1n;
    if (seq > BigInt(SEQ_MAX))
      throw new RowanError(ErrorCodes.PM_FULL, `${this.path}: segment sequence numbers (32 bits) are exhausted`);
    return Number(seq);
  }

  /**
   * The counter is not persisted on every bump; after a crash it may lag the seqs in the meta table.
   * Raise it to at least the highest seq found (a monotonic max, safe against concurrent openers).
   */
  private raiseSeqCounter(maxSeq: number): void {
    const want = BigInt(maxSeq);
    let cur = Atomics.load(this.seqCounter, 0); // the counter other mappers may be bumping
    while (cur < want) {
      // Publishes the raised counter unless another mapper moved it first; then re-check.
      const prev = Atomics.compareExchange(this.seqCounter, 0, cur, want);
      if (prev === cur) {
        this.region.persist(SB_SEQ_COUNTER, 8);
        return;
      }
      cur = prev;
    }
  }

  private rebuildHint(): void {
    for (let i = 0; i < this.segmentCount; i++) {
      // Reads the latest published state of i.
      if (this.decodeWord(i, Atomics.load(this.words, i)).state === SegmentState.Free) this.hint.mark(i);
    }
  }

  // ---- helpers --------------------------------------------------------------------------------------

  private persistWord(i: number): void {
    this.region.persist(this.metaOffset + i * META_WORD_BYTES, META_WORD_BYTES);
  }

  /** A word that fails its check at run time is corruption of the live pool: report, do not guess. */
  private decodeWord(i: number, w: bigint): MetaFields {
    const d = decodeMeta(w);
    if (!d.ok)
      throw new RowanError(ErrorCodes.POOL_META_CORRUPT, `${this.path}: meta word of segment ${i} is corrupt (${d.reason})`, {
        segment: i,
      });
    return d.fields;
  }

  private checkOpen(): void {
    invariant(!this.closed, `pool ${this.path} used after close`);
  }

  private checkIndex(i: number): void {
    this.checkOpen();
    invariant(Number.isInteger(i) && i >= 0 && i < this.segmentCount, `segment ${i} is outside 0..${this.segmentCount - 1}`);
  }
}

/** open, else create, else (a concurrent creator won) open. */
function openOrCreateRaw(path: string, o: PoolCreateOptions): Pool {
  const openOpts: PoolOpenOptions = o.mode === undefined ? {} : { mode: o.mode };
  if (o.wrapRegion) openOpts.wrapRegion = o.wrapRegion;
  try {
    return Pool.open(path, openOpts);
  } catch (err) {
    if (!(err instanceof RowanError) || err.code !== ErrorCodes.POOL_NOT_FOUND) throw err;
  }
  try {
    return Pool.create(path, o);
  } catch (err) {
    if (!(err instanceof RowanError) || err.code !== ErrorCodes.POOL_EXISTS) throw err;
    return Pool.open(path, openOpts);
  }
}
