// Share-KV (ROWAN §6.1): the sender threads of one node share one remote log. A write takes its
// address with a local atomic increment of the node's log cursor (share-layout.ts), so addresses are
// contiguous across the node's threads, and lands it with a one-sided writeAt. The receiver sees one
// PM write stream per sending node -- but the writes reach it in whatever order the senders issue
// them, not in address order (the paper's point: the network reorders them; here thread scheduling).
//
// Regions. Region k of the log backs bytes [k*S, (k+1)*S) of the cursor space (S = region length).
// A write that would straddle a region boundary abandons its span (both pieces stay zero, a scan steps
// over them) and takes a new address. Region k is allocated by the first sender that needs it, which
// claims slot k % slotCap with a CAS; others poll the slot until it is published. The write whose
// span holds the boundary j*S prefetches region j+1, so allocation is rarely on a write's path.
// Claiming slot k % slotCap retires the region that held it before (k - slotCap): a write may not stay
// in flight while the log moves slotCap regions on (checked after every write).
import { monotonicClock, type Clock } from '../../config/base/clock.js';
import { ErrorCodes, RowanError, invariant } from '../../config/base/errors.js';
import type { RemoteRegion, RowanConnection } from '../../runtime/fabric/fabric.js';
import { defaultTimings } from '../../config/timings.js';
import * as L from './share-layout.js';
import { emptyStreamStats, type ReplicationStream, type ReplicationStreamStats } from './types.js';

const TWO32 = 2 ** 32;
/**
 * Regions the log keeps before retiring the oldest. A write holding an address in region k must land
 * before the log reaches region k + slotCap: with 1 MiB regions, 64 leaves a descheduled sender thread
 * ~64 MiB of other threads' writes (a fraction of a second here) to wake up in.
 */
export const SLOT_CAP_DEFAULT = 64;
/** A write that straddles this many region boundaries in a row gives up (WRITE_TIMEOUT). */
const MAX_STRADDLES = 64;

/**
 * Allocations in progress in this thread, per shared buffer: a sender waiting for a region its own
 * thread is allocating awaits that allocation instead of polling (a poll is a macrotask, and a thread
 * whose coroutines keep the microtask queue busy would never run it).
 */
const localClaims = new WeakMap<SharedArrayBuffer, Map<number, Promise<RemoteRegion>>>();

/** One sending node's shared log state; create it once per node, attach it in every sender thread. */
export class SharedLog {
  readonly buffer: SharedArrayBuffer;
  readonly slotCap: number;
  readonly nodeId: number;
  /** Bounds the wait for another thread's allocation (sharedLogAllocationWaitMs, config/timings.ts); injectable for tests. */
  clock: Clock = monotonicClock;
  private readonly i32: Int32Array;
  private readonly u32: Uint32Array;

  private constructor(buffer: SharedArrayBuffer) {
    this.buffer = buffer;
    this.i32 = new Int32Array(buffer);
    this.u32 = new Uint32Array(buffer);
    if (Atomics.load(this.i32, L.W_MAGIC) !== L.SHARE_MAGIC || this.i32[L.W_VERSION] !== L.SHARE_VERSION) {
      throw new RowanError(ErrorCodes.BAD_ARGUMENT, 'not a shared-log buffer of this version');
    }
    this.slotCap = this.i32[L.W_SLOT_CAP]!;
    this.nodeId = this.i32[L.W_NODE_ID]!;
  }

  static create(o: { nodeId: number; slotCap?: number }): SharedLog {
    const slotCap = o.slotCap ?? SLOT_CAP_DEFAULT;
    if (!Number.isInteger(slotCap) || slotCap < 2) throw new RowanError(ErrorCodes.BAD_ARGUMENT, `slotCap must be an integer >= 2, got ${slotCap}`);
    const buffer = new SharedArrayBuffer(L.shareBytes(slotCap));
    const i32 = new Int32Array(buffer);
    i32[L.W_VERSION] = L.SHARE_VERSION;
    i32[L.W_SLOT_CAP] = slotCap;
    i32[L.W_NODE_ID] = o.nodeId;
    // Publishes the header: an attacher that sees the magic sees the fields above.
    Atomics.store(i32, L.W_MAGIC, L.SHARE_MAGIC);
    return new SharedLog(buffer);
  }

  static attach(buffer: SharedArrayBuffer): SharedLog {
    return new SharedLog(buffer);
  }

  /** Take `len` bytes (a multiple of 64) of the log; returns their logical byte position. */
  take(len: number): number {
    // Publishes our claim on units [u, u + len/64): every other sender's add returns past them.
    const u = Atomics.add(this.i32, L.W_CURSOR, len / L.SHARE_UNIT_BYTES);
    invariant(u >= 0 && u + len / L.SHARE_UNIT_BYTES < 2 ** 31, 'shared log cursor overflowed its 2^31 units');
    return u * L.SHARE_UNIT_BYTES;
  }

  /** Bytes of the log taken so far. */
  tail(): number {
    return Atomics.load(this.i32, L.W_CURSOR) * L.SHARE_UNIT_BYTES; // latest cursor any sender published
  }

  /** Length of every region of the log; 0 until region 0 is allocated. */
  regionBytes(): number {
    return Atomics.load(this.i32, L.W_REGION_BYTES); // set once by region 0's allocator
  }

  /** Pool offset of region k if it is published, else -1. */
  publishedOffset(k: number): number {
    const w = L.slotWord(this.slotCap, k);
    // Reads region k's tag; if it is published, the offset words written before it are visible.
    if (Atomics.load(this.i32, w + L.S_TAG) !== L.publishedTag(k)) return -1;
    return this.u32[w + L.S_OFF_LO]! + this.u32[w + L.S_OFF_HI]! * TWO32;
  }

  /** Region k, allocating it through `conn` if nobody has yet (then calling onAllocated). */
  async ensure(
    k: number,
    conn: RowanConnection,
    ownerId: number,
    onRetired?: (r: RemoteRegion) => void,
    onAllocated?: () => void,
  ): Promise<RemoteRegion> {
    invariant(Number.isInteger(k) && k >= 0 && k <= L.REGION_INDEX_MAX, `region index ${k} out of range`);
    const w = L.slotWord(this.slotCap, k) + L.S_TAG;
    const waitStart = this.clock.now();
    for (;;) {
      if (this.clock.now() - waitStart > defaultTimings.sharedLogAllocationWaitMs) {
        throw new RowanError(ErrorCodes.WRITE_TIMEOUT, `shared log: region ${k} not allocated within ${defaultTimings.sharedLogAllocationWaitMs} ms`);
      }
      const tag = Atomics.load(this.i32, w); // the slot's latest state
      if (tag === L.publishedTag(k)) return this.readSlot(w - L.S_TAG);
      const holds = L.tagRegion(tag);
      if (holds > k) {
        // This sender sat on an address in region k while the log moved slotCap regions on (it was
        // descheduled): region k is retired and may be reused. Nothing was written; the caller may retry.
        throw new RowanError(ErrorCodes.WRITE_TIMEOUT, `shared log: region ${k}'s slot already holds region ${holds}; this write outlived ${this.slotCap} regions`);
      }
      if (tag === L.claimedTag(k)) {
        const mine = this.claims().get(k);
        if (mine) return mine;
        // Poll: Atomics.waitAsync would fit, but Node 20 does not wake a worker's event loop for it (its
        // promise settles only when something else wakes the loop). An allocation takes ~1 ms.
        await new Promise((r) => setImmediate(r));
        continue;
      }
      invariant(tag === 0 || (tag & 1) === 0, `shared log: slot of region ${k} is still allocating region ${holds}`);
      const old = tag === 0 ? null : this.readSlot(w - L.S_TAG);
      // Publishes our claim on region k's slot: from here on every other sender waits for us.
      if (Atomics.compareExchange(this.i32, w, tag, L.claimedTag(k)) !== tag) continue;
      const claim = this.allocate(k, w, tag, conn, ownerId, onAllocated).finally(() => this.claims().delete(k));
      this.claims().set(k, claim);
      const region = await claim;
      if (old) onRetired?.(old);
      return region;
    }
  }

  private claims(): Map<number, Promise<RemoteRegion>> {
    let m = localClaims.get(this.buffer);
    if (!m) localClaims.set(this.buffer, (m = new Map()));
    return m;
  }

  /** Allocate region k into slot tag word `w`, which this thread has claimed (it held `prevTag`). */
  private async allocate(
    k: number,
    w: number,
    prevTag: number,
    conn: RowanConnection,
    ownerId: number,
    onAllocated?: () => void,
  ): Promise<RemoteRegion> {
    let region: RemoteRegion;
    try {
      region = await conn.allocateRegion(ownerId);
      onAllocated?.();
      this.setRegionBytes(region.length);
    } catch (err) {
      // Publishes the slot's previous state again so pollers retry (and meet the error themselves).
      Atomics.store(this.i32, w, prevTag);
      throw err;
    }
    const s = w - L.S_TAG;
    this.u32[s + L.S_OFF_LO] = region.offset % TWO32;
    this.u32[s + L.S_OFF_HI] = Math.floor(region.offset / TWO32);
    this.u32[s + L.S_LEN] = region.length;
    this.i32[s + L.S_SEGMENT] = region.segment;
    // Publishes region k: a sender that reads this tag sees the words above.
    Atomics.store(this.i32, w, L.publishedTag(k));
    return region;
  }

  private readSlot(s: number): RemoteRegion {
    const offset = this.u32[s + L.S_OFF_LO]! + this.u32[s + L.S_OFF_HI]! * TWO32;
    return { segment: this.i32[s + L.S_SEGMENT]!, offset, length: this.u32[s + L.S_LEN]! };
  }

  private setRegionBytes(len: number): void {
    // Publishes the region length once (region 0's allocator); every later region must match it.
    const prev = Atomics.compareExchange(this.i32, L.W_REGION_BYTES, 0, len);
    invariant(prev === 0 || prev === len, `shared log: regions of ${prev} B and ${len} B in one log`);
  }
}

export class ShareStream implements ReplicationStream {
  readonly mode = 'share' as const;
  readonly logId: string;
  private readonly ownerId: number;
  private readonly onRetired: ((r: RemoteRegion) => void) | undefined;
  private readonly s: ReplicationStreamStats = emptyStreamStats();
  private closed = false;

  constructor(
    private readonly conn: RowanConnection,
    private readonly log: SharedLog,
    o: { ownerId: number; onRegionRetired?: (r: RemoteRegion) => void },
  ) {
    this.logId = `node:${log.nodeId}`;
    this.ownerId = o.ownerId;
    this.onRetired = o.onRegionRetired;
  }

  async prepare(): Promise<void> {
    if (this.log.regionBytes() === 0) await this.region(0);
  }

  async write(bytes: Uint8Array): Promise<number> {
    const len = bytes.length;
    if (this.closed) throw new RowanError(ErrorCodes.RECEIVER_CLOSED, `share stream of ${this.logId} is closed`);
    if (len === 0 || len % L.SHARE_UNIT_BYTES !== 0) {
      throw new RowanError(ErrorCodes.BAD_ARGUMENT, `a shared-log write is whole ${L.SHARE_UNIT_BYTES} B strides, got ${len} B`);
    }
    const log = this.log;
    let S = log.regionBytes();
    if (S === 0) {
      await this.region(0);
      S = log.regionBytes();
    }
    if (len > S) throw new RowanError(ErrorCodes.ENTRY_TOO_LARGE, `a ${len} B write cannot fit a ${S} B remote region`);
    for (let straddles = 0; ; straddles++) {
      const pos = log.take(len);
      const k = Math.floor(pos / S);
      const off = pos - k * S;
      if (off === 0) this.prefetch(k + 1);
      if (off + len > S) {
        // The span holds boundary (k+1)*S: abandon it; the next take starts past that boundary. Only a
        // sender that keeps losing the rest of every region to others can come round here again.
        if (straddles >= MAX_STRADDLES) {
          throw new RowanError(ErrorCodes.WRITE_TIMEOUT, `shared log: a ${len} B write straddled ${MAX_STRADDLES} region boundaries in a row`);
        }
        this.prefetch(k + 2);
        continue;
      }
      let base = log.publishedOffset(k);
      if (base < 0) base = (await this.region(k)).offset;
      await this.conn.writeAt(base + off, bytes);
      invariant(log.publishedOffset(k) === base, `shared log: region ${k} was retired while a write into it was in flight`);
      this.s.writes++;
      this.s.bytes += len;
      return base + off;
    }
  }

  stats(): ReplicationStreamStats {
    return { ...this.s };
  }

  /** The node's log outlives any one stream: closing a stream retires nothing. */
  async close(): Promise<void> {
    this.closed = true;
  }

  private region(k: number): Promise<RemoteRegion> {
    return this.log.ensure(k, this.conn, this.ownerId, this.onRetired, () => this.s.regions++);
  }

  private prefetch(k: number): void {
    if (k > L.REGION_INDEX_MAX || this.log.publishedOffset(k) >= 0) return;
    // A failed prefetch is retried by the write that needs the region, which then reports the error.
    this.region(k).catch(() => undefined);
  }
}
