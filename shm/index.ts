// Per-shard DRAM index of ROWAN-KV (§5.3): a concurrent bucket hash table in one SharedArrayBuffer
// (layout in shm/index-layout.ts), attachable by any number of worker_threads (`ShardIndex.attach`).
// Items are tag:16 | PM address:48; the index never stores keys or versions and resolves them through
// an injected EntryReader (the log). Bucket = (hash.lo & 0x7fffffff) % bucketCount, tag = hash.hi & 0xffff
// (shm/hash.ts says why these bits).
//
// Concurrency design
// - Lookups are lock-free: walk the chain, filter slots by reading the 32-bit hi word (tag), load the
//   full 64-bit item only on a tag match, confirm the key with reader.keyEquals.
// - Updating a present key is a CAS loop on its slot: load item, resolve the old entry's version, stop
//   ('stale') if ours is not newer, else compareExchange(old -> new); on failure start over, so the
//   version we beat is exactly the one we replace and an older version can never win a race.
// - Inserting an absent key takes the chain's lock word (head bucket), re-scans the chain under it and
//   only then fills an empty slot or links a new overflow bucket: two inserters of one key serialise, the
//   second finds the first's slot and becomes an update. Only lock holders fill empty slots; updates
//   and removes never move an item between slots, so a key lives in at most one slot.
// - Growth: the buffer is a growable SharedArrayBuffer. The primary buckets are fixed; the overflow
//   area starts at `overflowBuckets` and doubles on demand (SharedArrayBuffer.prototype.grow, visible
//   to every thread that attached it: the typed-array views here track the buffer's length) up to
//   `overflowBucketsMax`. So the table never fills below its configured maximum; past the primary
//   buckets' planned load, chains grow longer (lookups slow down linearly) instead of failing.
//   INDEX_FULL means the maximum itself is reached.
// - Overflow buckets are never unlinked; removed items leave holes that later inserts reuse. A key that
//   is removed and re-inserted (into another slot) may be missed by a lookup racing with both; a key
//   that stays present is never missed, because it never leaves its slot.
// - Hot path cost: tags are compared on int32 reads; a BigInt is made once per upsert (the new item)
//   and once per tag match (the 64-bit snapshot CAS needs); no other allocation.
// - Addresses are immutable log entries. Reusing a PM address for another key while some thread may
//   still hold the old item (GC freeing a segment) needs a grace period in the caller, as with any
//   lock-free structure (a CAS could otherwise succeed on an identical tag|address of a new entry).
import { ErrorCodes, RowanError, invariant } from '../config/base/errors.js';
import { defaultLimits } from '../config/limits.js';
import type { KeyHash } from './hash.js';
import * as L from './index-layout.js';
import { checkIndexBuffer, createIndexBuffer, indexOptionsFor, type ShardIndexOptions, type ShardIndexStats } from './index-buffer.js';

export type { ShardIndexOptions, ShardIndexStats } from './index-buffer.js';

export interface EntryReader {
  /** Does the log entry at `addr` have exactly this key? */
  keyEquals(addr: number, key: Uint8Array): boolean;
  /** The entry's 48-bit version (a JS number). */
  versionAt(addr: number): number;
}

export type UpsertResult = 'inserted' | 'updated' | 'stale';

const NOT_FOUND = -1;
/** Spins on a held chain lock before sleeping on it. */
const LOCK_SPINS = 1024;
/** Atomics.wait timeout: a backoff bound, not a correctness device (unlock notifies waiters). */
const LOCK_WAIT_MS = 1;

export class ShardIndex {
  readonly buffer: SharedArrayBuffer;
  readonly bucketCount: number;
  /** Overflow buckets the table may grow to. */
  readonly overflowMax: number;
  readonly bucketSlots: number;
  readonly itemsPerBucket: number;
  // Fixed-length views over the (growable) buffer, remade when it has grown (refreshViews): V8 reads a
  // fixed-length view as fast as one over a plain SharedArrayBuffer, a length-tracking one ~3x slower.
  private i32: Int32Array;
  private i64: BigInt64Array;
  /** The header as int64s (the flush floor and its entry's address). */
  private readonly hdr64: BigInt64Array;
  /** Buckets the current views cover. */
  private viewBuckets = 0;
  // Per-instance (per-thread) scratch to convert between a BigInt item and its int32 halves without
  // BigInt arithmetic; an instance is used by one thread, so no sharing.
  private readonly scratch64 = new BigInt64Array(1);
  private readonly scratch32 = new Uint32Array(this.scratch64.buffer);
  // Out-values of find() (kept in fields so a lookup allocates nothing).
  private foundItem = 0n;
  private foundAddr = 0;
  private decodedTag = 0;

  private constructor(sab: SharedArrayBuffer) {
    this.buffer = sab;
    this.i32 = new Int32Array(sab, 0, L.HEADER_I32);
    this.bucketCount = this.i32[L.H_BUCKET_COUNT]!;
    this.overflowMax = this.i32[L.H_OVERFLOW_MAX]!;
    this.bucketSlots = this.i32[L.H_BUCKET_SLOTS]!;
    this.itemsPerBucket = this.bucketSlots - 1;
    this.i64 = new BigInt64Array(0);
    this.hdr64 = new BigInt64Array(sab, 0, L.HEADER_BYTES / 8);
    this.refreshViews();
  }

  /** Remake the views over the buffer's current length (another thread may have grown it). */
  private refreshViews(): void {
    // byteLength of a growable SharedArrayBuffer is a sequentially consistent read: a bucket whose link
    // we loaded (published after the grow that made room for it) is inside it.
    const len = this.buffer.byteLength;
    this.i32 = new Int32Array(this.buffer, 0, len / 4);
    this.i64 = new BigInt64Array(this.buffer, L.HEADER_BYTES, (len - L.HEADER_BYTES) / 8);
    this.viewBuckets = (len - L.HEADER_BYTES) / (this.bucketSlots * L.SLOT_BYTES);
  }

  /** Overflow buckets the buffer holds now (its byte length is read sequentially consistently). */
  get overflowCapacity(): number {
    return L.overflowCapacityOf(this.buffer.byteLength, this.bucketCount, this.bucketSlots);
  }

  /** Overflow buckets not handed out yet, up to the maximum: how many chain extensions are left. */
  freeOverflowBuckets(): number {
    return Math.max(0, this.overflowMax - Atomics.load(this.i32, L.H_OVERFLOW_USED));
  }

  static create(opts: ShardIndexOptions): ShardIndex {
    return new ShardIndex(createIndexBuffer(opts));
  }

  static attach(sab: SharedArrayBuffer): ShardIndex {
    return new ShardIndex(checkIndexBuffer(sab));
  }

  /** Options for a table of about `items` keys that may grow to `itemsMax` (./index-buffer.ts). */
  static optionsFor(items: number, loadFactor = 0.6, bucketItems = defaultLimits.indexBucketItems, itemsMax = items): ShardIndexOptions {
    return indexOptionsFor(items, loadFactor, bucketItems, itemsMax);
  }

  /** After an upsert that returned 'updated': the address it replaced (live-byte accounting). */
  replaced = 0;

  /** Address of `key`'s entry, or 0 if absent. Lock-free. */
  get(key: Uint8Array, hash: KeyHash, reader: EntryReader): number {
    const slot = this.find(this.headOf(hash), hash.hi & L.TAG_MASK, key, reader);
    return slot === NOT_FOUND ? 0 : this.foundAddr;
  }

  /**
   * Point `key` at `addr` (an entry with `version`) unless the index already points at an entry of
   * `key` with a version >= `version` ('stale'). Throws INDEX_FULL when a chain must grow and no
   * overflow bucket is left.
   */
  upsert(key: Uint8Array, hash: KeyHash, addr: number, version: number, reader: EntryReader): UpsertResult {
    if (!(Number.isInteger(addr) && addr > 0 && addr <= L.ADDR_MAX)) invariant(false, `index address ${addr} not in [1, 2^48)`);
    if (version < this.floor()) return 'stale'; // flushed before it was indexed (see floor())
    const head = this.headOf(hash);
    const tag = hash.hi & L.TAG_MASK;
    const item = this.encode(tag, addr);
    const r = this.updateExisting(head, tag, key, item, version, reader);
    if (r !== null) return r;
    this.lock(head);
    try {
      // Re-scan under the lock: another inserter of the same key may have won the race.
      const again = this.updateExisting(head, tag, key, item, version, reader);
      if (again !== null) return again;
      this.insertLocked(head, item);
      return 'inserted';
    } finally {
      this.unlock(head);
    }
  }

  /** CAS the slot holding exactly (tag of `hash`, `expectedAddr`) to empty. For GC. */
  remove(_key: Uint8Array, hash: KeyHash, expectedAddr: number): boolean {
    return this.replaceItem(hash, expectedAddr, 0);
  }

  /**
   * CAS the slot holding exactly (tag, `expectedAddr`) to (tag, `newAddr`) regardless of versions: GC
   * moving a live entry keeps its version, which upsert would call 'stale'. False if the slot moved on.
   */
  relocate(_key: Uint8Array, hash: KeyHash, expectedAddr: number, newAddr: number): boolean {
    if (!(Number.isInteger(newAddr) && newAddr > 0 && newAddr <= L.ADDR_MAX)) invariant(false, `index address ${newAddr} not in [1, 2^48)`);
    return this.replaceItem(hash, expectedAddr, newAddr);
  }

  /**
   * Call `cb` with every address in the table (scans, migration, re-replication). Weakly consistent
   * under concurrent writers: an item changed during the walk is reported as its old or new address.
   */
  forEach(cb: (addr: number) => void): void {
    // Buckets claimed so far; one claimed but not yet linked is still empty (all-zero items), so harmless.
    const used = Math.min(Atomics.load(this.i32, L.H_OVERFLOW_USED), this.overflowCapacity);
    const end = this.bucketCount + used;
    if (end > this.viewBuckets) this.refreshViews();
    for (let b = 0; b < end; b++) this.visitBucket(b, cb);
  }

  /**
   * Call `cb` with the addresses in home buckets [from, from + count) and their overflow chains; returns
   * the next home bucket (bucketCount once the table is done). For SCAN (DESIGN §7): a key never leaves
   * its home bucket's chain (the table never resizes), so a walk split over any number of calls visits
   * every key present for the whole walk at least once. Weakly consistent like forEach.
   */
  forEachInBuckets(from: number, count: number, cb: (addr: number) => void): number {
    const end = Math.min(this.bucketCount, from + count);
    // One link load per bucket; the hop bound is only a guard against a cycle. (The growable buffer's
    // length read per bucket, two link loads and atomics for every slot took 45 ms for 238 K empty
    // buckets; 8 ms now, with visitBucket's plain-read look.)
    for (let h = from; h < end; h++) {
      for (let b = h, hops = 0; hops <= this.overflowMax; hops++) {
        this.visitBucket(b, cb);
        b = this.linkOf(b);
        if (b === L.LINK_NONE) break;
      }
    }
    return end;
  }

  /**
   * `cb` with each address in bucket `b` (forEach, forEachInBuckets). Most buckets of a table sized for
   * the pool are empty, so a slot is first looked at with plain reads (~1 ns each here; an Atomics.load
   * ~8 ns: Node 20's V8 does not inline it) and only one not all zero is read again with atomics
   * (addrNow: as of some moment; a concurrent CAS may replace it right after). A zero read of a slot
   * being filled during the walk is that insert not yet seen, which the walks allow; a reader that read
   * changes() before walking synchronised with every change it counts, so its plain reads see those
   * slots filled. clearBelow keeps atomic reads (emptyNow): its argument with racing writers needs them.
   */
  private visitBucket(b: number, cb: (addr: number) => void): void {
    const i32 = this.i32;
    const base = b * this.bucketSlots;
    for (let s = base; s < base + this.itemsPerBucket; s++) {
      if (i32[L.slotLoWord(s)] === 0 && i32[L.slotHiWord(s)] === 0) continue;
      const addr = this.addrNow(s);
      if (addr !== 0) cb(addr);
    }
  }

  // ---- the flush floor (actors/shared/flush-floor.ts): entries of the shard below it are dead. upsert()
  // refuses them, clearBelow() removes the items a raise leaves; a writer that indexed under a floor
  // raised meanwhile re-reads it after its CAS and removes its item (node-shared.ts indexEntry): with
  // sequentially consistent atomics either that re-read sees the raise or the walk sees the item.

  /** The shard's flush floor (0 = never flushed), from its int32 halves (no BigInt on the GET/PUT path):
   *  it only rises, so a high half read alike before and after the low one belongs with it. */
  floor(): number {
    for (const h = this.i32; ; ) {
      const hi = Atomics.load(h, L.H_FLOOR_HI);
      const lo = Atomics.load(h, L.H_FLOOR_LO) >>> 0;
      if (Atomics.load(h, L.H_FLOOR_HI) === hi) return hi * L.TWO_POW_32 + lo;
    }
  }

  /** The pool address of the FLUSH entry that set the floor (0 = none). */
  floorAddr(): number { return Number(Atomics.load(this.hdr64, L.H64_FLOOR_ADDR)); } // published under the floor lock

  /** Raise the floor to `version` (the FLUSH entry at `addr`): the address of the FLUSH entry it
   *  supersedes (0: none), or -1 when the floor is already at or above `version` (nothing done). */
  raiseFloor(version: number, addr: number): number {
    return this.floorLocked(() => {
      if (version <= this.floor()) return -1;
      const prev = this.floorAddr();
      Atomics.store(this.hdr64, L.H64_FLOOR, BigInt(version)); // from here on upsert refuses lower versions
      Atomics.store(this.hdr64, L.H64_FLOOR_ADDR, BigInt(addr));
      Atomics.add(this.i32, L.H_CHANGES, 1);
      return prev;
    });
  }

  /** GC moved the floor's FLUSH entry from `expectedAddr` to `newAddr`; false if a raise replaced it. */
  relocateFloor(expectedAddr: number, newAddr: number): boolean {
    return this.floorLocked(() => {
      if (this.floorAddr() !== expectedAddr) return false;
      Atomics.store(this.hdr64, L.H64_FLOOR_ADDR, BigInt(newAddr)); // the entry GC copied is the floor's
      return true;
    });
  }

  /** Run f holding the floor lock, a short spin lock (raises are rare: one per shard per flush). */
  private floorLocked<T>(f: () => T): T {
    const h = this.i32; // takes the lock below; waits (1 ms backoff) while another thread holds it
    while (Atomics.compareExchange(h, L.H_FLOOR_LOCK, 0, 1) !== 0) Atomics.wait(h, L.H_FLOOR_LOCK, 1, 1);
    try {
      return f();
    } finally {
      Atomics.store(h, L.H_FLOOR_LOCK, 0); // releases it: the next holder sees our stores
      Atomics.notify(h, L.H_FLOOR_LOCK, 1);
    }
  }

  /** Remove every item below `floor` (one pass, no log write), calling `removed` with each address. */
  clearBelow(floor: number, reader: EntryReader, removed: (addr: number) => void): number {
    const used = Math.min(Atomics.load(this.i32, L.H_OVERFLOW_USED), this.overflowCapacity);
    const end = this.bucketCount + used;
    if (end > this.viewBuckets) this.refreshViews();
    let n = 0;
    for (let b = 0; b < end; b++) {
      const base = b * this.bucketSlots;
      for (let s = base; s < base + this.itemsPerBucket; s++) {
        if (this.emptyNow(s)) continue;
        const addr = this.removeIfBelow(s, floor, reader);
        if (addr !== 0) n++, removed(addr);
      }
    }
    return n;
  }

  /** Empty slot `s` if its entry is below `floor`: the address removed, or 0 (a slot replaced under
   *  us, by a newer version or GC moving the same one, is looked at again). */
  private removeIfBelow(s: number, floor: number, reader: EntryReader): number {
    for (;;) {
      const item = Atomics.load(this.i64, s); // one moment's item; the CAS below removes exactly it
      const addr = this.decode(item);
      if (addr === 0 || reader.versionAt(addr) >= floor) return 0;
      if (Atomics.compareExchange(this.i64, s, item, 0n) === item) {
        this.countItem(-1);
        return addr;
      }
    }
  }

  /** Items in the table as of some recent moment (cheap: one counter, no walk). */
  items(): number {
    return Atomics.load(this.i32, L.H_ITEMS); // statistics only, like stats().items
  }

  /** Changes published so far (L.H_CHANGES; an int32 that wraps): a walk that began after this
   *  count was read saw every change it includes, so while the count stays the same the walk's result
   *  still holds. Updates and removals bump it after their CAS, inserts after filling the slot. */
  changes(): number {
    return Atomics.load(this.i32, L.H_CHANGES);
  }

  /** items() of the table in `sab` without attaching it (status readers on another thread). */
  static itemsIn(sab: SharedArrayBuffer): number {
    return Atomics.load(new Int32Array(sab, 0, L.HEADER_I32), L.H_ITEMS); // statistics only
  }

  stats(): ShardIndexStats {
    let maxChain = 0;
    for (let b = 0; b < this.bucketCount; b++) {
      let n = 1;
      for (let next = this.linkOf(b); next !== L.LINK_NONE; next = this.linkOf(next)) n++;
      if (n > maxChain) maxChain = n;
    }
    // Counters as of some recent moment; under concurrent writers they are approximate.
    const items = Atomics.load(this.i32, L.H_ITEMS);
    return {
      buckets: this.bucketCount,
      overflowBuckets: this.overflowCapacity,
      overflowBucketsMax: this.overflowMax,
      overflowUsed: Math.min(Atomics.load(this.i32, L.H_OVERFLOW_USED), this.overflowCapacity),
      itemsPerBucket: this.itemsPerBucket,
      items,
      loadFactor: items / (this.bucketCount * this.itemsPerBucket),
      maxChain,
      bytes: this.buffer.byteLength,
    };
  }

  // ---- internals -------------------------------------------------------------------------------

  private headOf(hash: KeyHash): number {
    // The low 31 bits of `lo`, so V8 stays on int32 modulo (a full uint32 would become a double and
    // call fmod). The bias for any table below 2^30 buckets is negligible, and the index lives in
    // DRAM and is rebuilt at start, so this choice is not a persistent format.
    return (hash.lo & 0x7fffffff) % this.bucketCount;
  }

  private linkOf(bucket: number): number {
    // Sees LINK_NONE or a published overflow bucket whose item store precedes this link (insertLocked).
    const next = Atomics.load(this.i32, L.slotLoWord(bucket * this.bucketSlots + this.itemsPerBucket));
    if (next >= this.viewBuckets) this.refreshViews(); // linked after a grow this thread has not seen
    return next;
  }

  /** Slot of `key`'s item in the chain at `head` (foundItem/foundAddr set), or NOT_FOUND. */
  private find(head: number, tag: number, key: Uint8Array, reader: EntryReader): number {
    let i32 = this.i32;
    const items = this.itemsPerBucket;
    let bucket = head;
    for (;;) {
      const base = bucket * this.bucketSlots;
      for (let s = base, hiWord = L.slotHiWord(base); s < base + items; s++, hiWord += 2) {
        // Tag filter on the hi word alone; may be stale or from a newer item, the 64-bit load decides.
        if (Atomics.load(i32, hiWord) >>> L.TAG_SHIFT_IN_HI_WORD !== tag) continue;
        // One consistent snapshot of the item (tag and address from the same write).
        const item = Atomics.load(this.i64, s);
        const addr = this.decode(item);
        if (addr === 0 || this.decodedTag !== tag || !reader.keyEquals(addr, key)) continue;
        this.foundItem = item;
        this.foundAddr = addr;
        return s;
      }
      bucket = this.linkOf(bucket);
      if (bucket === L.LINK_NONE) return NOT_FOUND;
      i32 = this.i32; // linkOf may have remade the views
    }
  }

  /** The version-conditional CAS loop on `key`'s slot; null if the key is not in the chain. */
  private updateExisting(
    head: number,
    tag: number,
    key: Uint8Array,
    item: bigint,
    version: number,
    reader: EntryReader,
  ): UpsertResult | null {
    for (;;) {
      const slot = this.find(head, tag, key, reader);
      if (slot === NOT_FOUND) return null;
      const current = this.foundItem;
      if (version <= reader.versionAt(this.foundAddr)) return 'stale';
      // Publishes our address iff the slot still holds the item whose version we beat; readers see the
      // old or the new item, never a mix. On failure someone else changed the slot: re-run the search.
      if (Atomics.compareExchange(this.i64, slot, current, item) === current) {
        this.replaced = this.foundAddr;
        Atomics.add(this.i32, L.H_CHANGES, 1);
        return 'updated';
      }
    }
  }

  /** Put `item` in the first empty slot of the chain, or in a new overflow bucket. Chain lock held. */
  private insertLocked(head: number, item: bigint): void {
    let i32 = this.i32;
    let bucket = head;
    for (;;) {
      const base = bucket * this.bucketSlots;
      for (let s = base; s < base + this.itemsPerBucket; s++) {
        // Only lock holders fill empty slots, so an empty slot seen here stays empty until our CAS.
        if (Atomics.load(i32, L.slotLoWord(s)) !== 0 || Atomics.load(i32, L.slotHiWord(s)) !== 0) continue;
        // Publishes the new item to lock-free readers (and to updaters, who may CAS it from now on).
        const prev = Atomics.compareExchange(this.i64, s, 0n, item);
        invariant(prev === 0n, 'index: empty slot filled without the chain lock');
        this.countItem(1);
        return;
      }
      const next = this.linkOf(bucket);
      if (next === L.LINK_NONE) break;
      bucket = next;
      i32 = this.i32; // linkOf may have remade the views
    }
    // Claims the next overflow bucket; other inserters (any chain) get distinct ones. Past the maximum
    // the counter just keeps overshooting (every later claim fails too); stats() clamps it.
    const claimed = Atomics.add(i32, L.H_OVERFLOW_USED, 1);
    if (claimed >= this.overflowMax) {
      throw new RowanError(ErrorCodes.INDEX_FULL, `index full: all ${this.overflowMax} overflow buckets in use (its configured maximum)`, {
        buckets: this.bucketCount,
        overflowBuckets: this.overflowMax,
      });
    }
    if (claimed >= this.overflowCapacity) this.grow(claimed + 1);
    const fresh = this.bucketCount + claimed;
    if (fresh >= this.viewBuckets) this.refreshViews(); // grown, by us or by another thread
    i32 = this.i32;
    // Fills the unreachable bucket first; nobody can observe it before the link store below.
    Atomics.store(this.i64, fresh * this.bucketSlots, item);
    // Publishes the chain extension: a reader that follows the link sees the item stored above.
    Atomics.store(i32, L.slotLoWord(bucket * this.bucketSlots + this.itemsPerBucket), fresh);
    this.countItem(1);
  }

  /**
   * Grow the overflow area to hold at least `buckets` buckets: double it, up to the maximum. Several
   * threads may grow at once (each holds some chain's lock, not a table lock); grow() only ever makes
   * the buffer longer, so whoever asks for less than it already has has nothing to do.
   */
  private grow(buckets: number): void {
    const want = Math.min(this.overflowMax, Math.max(buckets, 2 * this.overflowCapacity));
    const bytes = L.indexBytes(this.bucketCount, want, this.bucketSlots);
    try {
      if (this.buffer.byteLength < bytes) this.buffer.grow(bytes);
    } catch (err) {
      // Another thread grew it first (to at least what we need), or the memory is not there.
      if (this.buffer.byteLength < L.indexBytes(this.bucketCount, buckets, this.bucketSlots)) {
        throw new RowanError(ErrorCodes.INDEX_FULL, `index cannot grow to ${want} overflow buckets: ${(err as Error).message}`);
      }
    }
    // Statistics and attach() only: readers derive the capacity from the buffer's length.
    Atomics.store(this.i32, L.H_OVERFLOW_CAPACITY, this.overflowCapacity);
  }

  private replaceItem(hash: KeyHash, expectedAddr: number, newAddr: number): boolean {
    if (!(expectedAddr > 0 && expectedAddr <= L.ADDR_MAX)) return false;
    const tag = hash.hi & L.TAG_MASK;
    const expected = this.encode(tag, expectedAddr);
    const lo = this.scratch32[0]! | 0;
    const hi = this.scratch32[1]! | 0;
    const replacement = newAddr === 0 ? 0n : this.encode(tag, newAddr);
    let i32 = this.i32;
    let bucket = this.headOf(hash);
    for (;;) {
      const base = bucket * this.bucketSlots;
      for (let s = base; s < base + this.itemsPerBucket; s++) {
        // Cheap 32-bit prefilter; the CAS below compares the whole item.
        if (Atomics.load(i32, L.slotLoWord(s)) !== lo || Atomics.load(i32, L.slotHiWord(s)) !== hi) continue;
        // Publishes the removal/move iff the slot still holds exactly the expected item; an address
        // appears in one slot at most, so a failed CAS means it is gone from the table.
        if (Atomics.compareExchange(this.i64, s, expected, replacement) !== expected) return false;
        if (newAddr === 0) this.countItem(-1);
        return true;
      }
      bucket = this.linkOf(bucket);
      if (bucket === L.LINK_NONE) return false;
      i32 = this.i32; // linkOf may have remade the views
    }
  }

  private countItem(delta: number): void {
    // Statistics only; readers of ITEMS see some recent count, no ordering with the slots is implied.
    Atomics.add(this.i32, L.H_ITEMS, delta);
    Atomics.add(this.i32, L.H_CHANGES, 1); // after the slot's CAS: see changes()
  }

  /** The item for (tag, addr), built through the scratch halves: one BigInt, no BigInt arithmetic. */
  private encode(tag: number, addr: number): bigint {
    this.scratch32[0] = addr >>> 0;
    this.scratch32[1] = ((tag << L.TAG_SHIFT_IN_HI_WORD) | Math.floor(addr / L.TWO_POW_32)) >>> 0;
    return this.scratch64[0]!;
  }

  /** Whether slot `s` is empty as of this read, from its low word alone: an item's low word is the low
   *  32 bits of its pool offset, never 0 in use (a pool is one 4 GiB view at most, offset 0 its superblock). */
  private emptyNow(s: number): boolean {
    return Atomics.load(this.i32, L.slotLoWord(s)) === 0; // one moment's low word (the item's, or none)
  }

  /** The address slot `s` holds at some moment (0: empty) for a walk, no BigInt made below 4 GiB: the
   *  high word's address bits read 0 before and after the low word, which is then the address. */
  private addrNow(s: number): number {
    const hi = L.slotHiWord(s);
    const lo = (Atomics.load(this.i32, hi) & L.ADDR_HI_MASK) === 0 ? Atomics.load(this.i32, L.slotLoWord(s)) >>> 0 : -1;
    return lo >= 0 && (Atomics.load(this.i32, hi) & L.ADDR_HI_MASK) === 0 ? lo : this.decode(Atomics.load(this.i64, s));
  }

  /** Address of an item (0 = empty); leaves its tag in decodedTag. */
  private decode(item: bigint): number {
    this.scratch64[0] = item;
    const hi = this.scratch32[1]!;
    this.decodedTag = hi >>> L.TAG_SHIFT_IN_HI_WORD;
    return (hi & L.ADDR_HI_MASK) * L.TWO_POW_32 + this.scratch32[0]!;
  }

  private lockWord(head: number): number {
    return L.slotHiWord(head * this.bucketSlots + this.itemsPerBucket);
  }

  private lock(head: number): void {
    const i32 = this.i32;
    const w = this.lockWord(head);
    // Takes a free lock; success orders our chain re-scan after the previous holder's inserts.
    if (Atomics.compareExchange(i32, w, L.LOCK_FREE, L.LOCK_HELD) === L.LOCK_FREE) return;
    for (let i = 0; i < LOCK_SPINS; i++) {
      // Same acquisition, retried while the holder (another thread) finishes its insert.
      if (Atomics.load(i32, w) === L.LOCK_FREE && Atomics.compareExchange(i32, w, L.LOCK_FREE, L.LOCK_HELD) === L.LOCK_FREE) return;
    }
    // Marks the lock contended so the holder's unlock notifies; we own it when the old value was free.
    while (Atomics.exchange(i32, w, L.LOCK_CONTENDED) !== L.LOCK_FREE) {
      // Sleeps while the word is still CONTENDED; wakes on unlock's notify or after the backoff timeout.
      Atomics.wait(i32, w, L.LOCK_CONTENDED, LOCK_WAIT_MS);
    }
  }

  private unlock(head: number): void {
    const w = this.lockWord(head);
    // Releases the lock: the next holder sees every slot/link store we made while holding it.
    if (Atomics.exchange(this.i32, w, L.LOCK_FREE) === L.LOCK_CONTENDED) {
      // Wakes one sleeper in lock(); it retries the exchange.
      Atomics.notify(this.i32, w, 1);
    }
  }
}
