// The shared receive queue of a Rowan receiver (layout and semantics: srq-layout.ts). The receiver side
// posts buffers; the sender side reserves a stride-aligned slot in the current buffer with one CAS, the
// way an MP-SRQ RNIC lands a SEND (ROWAN §3.2.2). Both sides map the same file, so senders may be
// threads of the receiver's process or other processes; Atomics on the mapping are real hardware
// atomics on shared pages (checked across processes in test/integration/rowan-shm.test.ts).
import { existsSync, renameSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { mapFile } from '../../native/mapping.js';
import { ErrorCodes, RowanError, invariant } from '../../config/base/errors.js';
import * as L from './srq-layout.js';
import { closeQueueNow } from './stale-queue.js';
import { checkGeometry, format, type SrqCreateOptions } from './srq-format.js';
import type { PostedBuffer, ReceiveQueue } from './receive-queue.js';

export type { SrqCreateOptions };

export type { PostedBuffer, ReceiveQueue };

/** reserve() results that are not pool offsets. */
export const NO_BUFFER = -1;
export const SRQ_CLOSED = -2;
/** The slot reserve() took is in a buffer the receiver already declared Used: write nothing, reserve again. */
export const STALE_RESERVATION = -3;


const TWO32 = 2 ** 32;

/** The memory a queue lives in: a mapped file (native/mapping.ts) or a SharedArrayBuffer. */
interface QueueMemory {
  readonly bytes: Uint8Array;
  readonly size: number;
  close(): void;
}

export class SharedReceiveQueue implements ReceiveQueue {
  readonly path: string;
  readonly postCap: number;
  readonly cqCap: number;
  readonly strideBytes: number;
  readonly incarnation: string;
  /** Posted-ring slots: a power of two >= postCap. */
  readonly ring: number;
  /** Buffer seq of this object's last successful reserve() (sender-local). */
  lastSeq = -1;
  private unmapped = false;
  private readonly map: QueueMemory;
  private readonly i32: Int32Array;
  private readonly u32: Uint32Array;
  private readonly strideBits: number;
  private readonly strideMask: number;
  private readonly seqMask: number;
  private readonly cqShards: number;
  /** This sender's CQ shard (taken at attach): its tail word, its ring's first word, the ring's index mask. */
  private cqTail = 0;
  private cqRing = 0;
  private readonly cqSlotMask: number;
  // Sender-local: the posted buffer this sender last found the cursor in (see reserve). curLow is its
  // seq mod 2^seqBits as the cursor holds it, -1 when nothing is cached.
  private curLow = -1;
  private curSeq = -1;
  private curOffset = 0;
  private curStrides = 0;
  /** Sender-local: the cursor word as this sender last saw or left it (reserve's first CAS guess). */
  private cursorSeen = 0;
  /** Sender-local: the word counting this sender's holds in its sender slot, or -1 (not named). */
  private holding = -1;
  /** Sender-local, keepHolds(): whether holds are kept across writes, and the buffer whose hold is kept (-1: none). */
  private keeping = false;
  private keptSeq = -1;
  private dropQueued = false;
  private readonly dropKeptAtTurnEnd = (): void => {
    this.dropQueued = false;
    this.dropKept();
  };

  private constructor(path: string, map: QueueMemory) {
    this.path = path;
    this.map = map;
    const buf = map.bytes.buffer;
    const base = map.bytes.byteOffset;
    const words = map.size >> 2;
    this.i32 = new Int32Array(buf, base, words);
    this.u32 = new Uint32Array(buf, base, words);
    this.postCap = this.u32[L.W_POST_CAP]!;
    this.cqCap = this.u32[L.W_CQ_CAP]!;
    this.strideBytes = this.u32[L.W_STRIDE]!;
    this.ring = this.u32[L.W_RING]!;
    this.strideBits = this.u32[L.W_STRIDE_BITS]!;
    this.strideMask = 2 ** this.strideBits - 1;
    this.seqMask = 2 ** (31 - this.strideBits) - 1;
    this.cqShards = this.u32[L.W_CQ_SHARDS]!;
    this.cqSlotMask = this.cqCap / this.cqShards - 1;
    this.useCqShard(0);
    this.incarnation =
      this.u32[L.W_INCARNATION_HI]!.toString(16).padStart(8, '0') +
      this.u32[L.W_INCARNATION_LO]!.toString(16).padStart(8, '0');
  }

  /**
   * Receiver side: build a fresh queue at `path`. An older queue file there (a previous incarnation of
   * this receiver, of any layout version) is first marked Closed, so senders still attached to it stop
   * reserving in it. That does not wait for their copies: a node's cold start has already fenced them
   * (./stale-queue.ts closeStaleQueue) before it recycled anything.
   */
  static create(path: string, o: SrqCreateOptions): SharedReceiveQueue {
    const g = checkGeometry(o);
    if (existsSync(path)) closeQueueNow(path);
    const tmp = `${path}.${process.pid}.tmp`;
    writeFileSync(tmp, Buffer.alloc(L.srqBytes(g.ring, o.cqCap)), { mode: 0o600 });
    const map = mapFile(tmp, { mode: 'pagecache', label: path });
    format(map.bytes, o, g, randomBytes(8));
    renameSync(tmp, path);
    return new SharedReceiveQueue(path, map);
  }

  /**
   * A queue in DRAM (a SharedArrayBuffer) rather than a file: for senders that are threads of the
   * receiver's process, and for the single-threaded simulator (test/sim/), which passes its own
   * `incarnation` (8 bytes) so a run does not depend on randomness it does not own.
   */
  static inMemory(o: SrqCreateOptions, incarnation: Uint8Array = randomBytes(8)): SharedReceiveQueue {
    const g = checkGeometry(o);
    const bytes = new Uint8Array(new SharedArrayBuffer(L.srqBytes(g.ring, o.cqCap)));
    format(bytes, o, g, incarnation);
    return new SharedReceiveQueue('(memory)', { bytes, size: bytes.length, close: () => {} });
  }

  /** Sender side: map an existing queue. ROWAN_ERR_RECEIVER_NOT_READY if there is none (yet). */
  static attach(path: string): SharedReceiveQueue {
    if (!existsSync(path)) notReady(`no receive queue at ${path}: the receiver has not started`);
    const map = mapFile(path, { mode: 'pagecache', label: path });
    const i32 = map.size >= L.HEADER_BYTES ? new Int32Array(map.bytes.buffer, map.bytes.byteOffset, L.HEADER_BYTES >> 2) : null;
    if (!i32 || Atomics.load(i32, L.W_MAGIC) !== L.SRQ_MAGIC) {
      map.close();
      notReady(`${path} is not a receive queue`);
    }
    const version = i32[L.W_VERSION]!;
    if (version !== L.SRQ_VERSION) {
      map.close();
      notReady(`${path} is a version ${version} receive queue; this build reads version ${L.SRQ_VERSION} (restart the receiver with this build)`);
    }
    const q = new SharedReceiveQueue(path, map);
    // Counts this sender in: the n-th takes CQ shard n round-robin (senders attached one after another
    // complete into different shards) and, while there is one, sender slot n.
    const n = Atomics.add(q.i32, L.W_CQ_ATTACHED, 1);
    q.useCqShard(n % q.cqShards);
    if (n < L.SENDER_SLOTS) q.nameSender(n);
    return q;
  }

  /** Take sender slot `n`: a restart of the receiver can then tell whether this sender's holds can
   *  still copy (its process is alive) or not. */
  private nameSender(n: number): void {
    const w = L.senderSlotWord(this.ring, this.cqCap, n);
    Atomics.store(this.i32, w + L.SENDER_PID, process.pid); // publishes who slot n is, before any hold it takes
    this.holding = w + L.SENDER_HOLDING;
  }

  /** Count a hold this sender is about to take (+1) or has let go of (-1) in its slot. */
  private holdingBy(delta: number): void {
    // Publishes, before the hold CAS (+1) and after the release CAS (-1), that this sender may copy.
    if (this.holding >= 0) Atomics.add(this.i32, this.holding, delta);
  }

  private useCqShard(shard: number): void {
    this.cqTail = L.cqTailWord(this.ring, shard);
    this.cqRing = L.cqRingWord(this.ring, this.cqCap, shard);
  }

  // ---- receiver side ------------------------------------------------------------------------------

  /** Buffers posted so far (ever). */
  posted(): number {
    this.mapped();
    return Atomics.load(this.i32, L.W_POSTED); // the count the last post published
  }

  /** Sequence number of the buffer writes currently land in (= buffers fully consumed before it). */
  currentSeq(): number {
    this.mapped();
    // The cursor holds the seq mod 2^seqBits. While posted stays put around the cursor load, the
    // cursor's buffer is one of posted - postCap .. posted (post() and reserve() keep it there), and
    // postCap < 2^seqBits, so the low bits pick it. On the receiver's own thread posted never moves.
    for (;;) {
      const posted = Atomics.load(this.i32, L.W_POSTED); // the count the last post published
      const c = Atomics.load(this.i32, L.W_CURSOR); // latest reservation state
      if (Atomics.load(this.i32, L.W_POSTED) === posted) {
        return posted - ((posted - ((c >>> this.strideBits) & this.seqMask)) & this.seqMask);
      }
    }
  }

  /** Posted buffers no write has reached yet, counting the current one. */
  outstanding(): number {
    return this.posted() - this.currentSeq();
  }

  /** The posted buffer with sequence number `seq` (it must still be in the ring). */
  buffer(seq: number): PostedBuffer {
    this.mapped();
    invariant(seq < this.posted() && seq > this.posted() - this.postCap - 1, `buffer ${seq} is not in the ring`);
    const w = L.postedSlotWord(this.ring, seq);
    return { offset: this.u32[w + L.SLOT_OFFSET_LO]! + this.u32[w + L.SLOT_OFFSET_HI]! * TWO32, length: this.u32[w + L.SLOT_LENGTH]! };
  }

  /**
   * Post buffers in one call, in increasing address order (§3.2.2: the RNIC consumes them in posting
   * order, which lands concurrent writes as one sequential stream).
   */
  post(buffers: readonly PostedBuffer[]): void {
    this.mapped();
    const n0 = this.posted();
    const n1 = n0 + buffers.length;
    invariant(n1 - this.currentSeq() <= this.postCap, 'post would overrun buffers not yet consumed');
    invariant(n1 - this.usedBelow() <= this.seqMask, `post would leave more than ${this.seqMask} buffers between usedBelow and posted`);
    for (let i = 0; i < buffers.length; i++) {
      const b = buffers[i]!;
      invariant(
        b.length > 0 && b.length % this.strideBytes === 0 && b.length / this.strideBytes <= this.strideMask,
        `buffer length ${b.length} is not a stride multiple of at most ${this.strideMask} strides`,
      );
      if (i > 0) invariant(b.offset >= buffers[i - 1]!.offset + buffers[i - 1]!.length, 'buffers not in increasing address order');
      const w = L.postedSlotWord(this.ring, n0 + i);
      const lo = b.offset >>> 0;
      this.u32[w + L.SLOT_OFFSET_LO] = lo;
      this.u32[w + L.SLOT_OFFSET_HI] = (b.offset - lo) / TWO32;
      this.u32[w + L.SLOT_LENGTH] = b.length;
      // The slot's previous buffer was handed off (the receiver posts no further ahead), so no live
      // hold is lost here; published to senders by the seq store below.
      Atomics.store(this.i32, L.holdsWord(this.ring, n0 + i), L.holdWord(n0 + i, 0));
      // Publishes the slot as buffer n0 + i: a sender that loads this seq sees its offset and length.
      Atomics.store(this.i32, w + L.SLOT_SEQ, n0 + i);
    }
    // Publishes the count: a sender that reads posted > n finds buffer n in its slot.
    Atomics.store(this.i32, L.W_POSTED, n1);
    if (Atomics.load(this.i32, L.W_STATE) === L.SrqState.Init) {
      // Publishes readiness for status readers; senders only look at posted and Closed.
      Atomics.store(this.i32, L.W_STATE, L.SrqState.Ready);
    }
  }

  /** Publish that every buffer with seq below `seq` is Used (before handing them to digest). */
  markUsedBelow(seq: number): void {
    this.mapped();
    Atomics.store(this.i32, L.W_USED_BELOW, seq); // senders holding a reservation below seq re-issue
  }

  /** Buffers below this seq are Used. */
  usedBelow(): number {
    this.mapped();
    return Atomics.load(this.i32, L.W_USED_BELOW); // latest value the receiver published
  }

  /** Publish whether the receiver is short of free segments to post (see the layout). */
  markStarved(starved: boolean): void {
    this.mapped();
    Atomics.store(this.i32, L.W_STARVED, starved ? 1 : 0); // read by senders that found no buffer
  }

  starved(): boolean {
    this.mapped();
    return Atomics.load(this.i32, L.W_STARVED) === 1; // the receiver's latest report
  }

  /** Stop the queue: attached senders get SRQ_CLOSED from then on. */
  shutdown(): void {
    this.mapped();
    Atomics.store(this.i32, L.W_STATE, L.SrqState.Closed); // for status readers (and senders of older builds)
    Atomics.or(this.i32, L.W_CURSOR, L.CURSOR_CLOSED); // every later CAS on the cursor fails; senders see Closed
  }

  // ---- sender side (the RNIC's job) -----------------------------------------------------------------

  /**
   * Reserve `len` bytes (a stride multiple, at most one buffer) for one write. Returns the pool offset
   * where the write lands (lastSeq is its buffer), NO_BUFFER when no posted buffer has room,
   * SRQ_CLOSED, or STALE_RESERVATION when the slot is in a buffer the receiver has already declared
   * Used (nothing may be written there; the strides stay a hole, which the b-log scan steps over).
   *
   * The cursor word holds the buffer seq only mod 2^seqBits; the full seq comes from the posted ring,
   * whose slots carry the seq of the buffer they hold. A sender caches the slot of the buffer it last
   * found the cursor in and the cursor word it last saw, so the common case is one CAS (two when
   * another sender moved the cursor since) and one load of usedBelow. Why a seq that wraps cannot put
   * a write in the wrong place:
   *   - The queue keeps: the cursor never moves back and never passes posted; posted - cursor seq <=
   *     postCap <= ring < 2^seqBits; posted - usedBelow < 2^seqBits at every post (asserted there),
   *     and usedBelow only grows. A slot is refilled (with seq + ring) only once the cursor is past
   *     the buffer it held.
   *   - Let the CAS succeed at time t with the cursor in buffer s, and let q be the seq this sender
   *     read from the slot (now, or when it cached it). q ≡ s mod 2^seqBits, and q <= s: when q was
   *     read the cursor was already at q + 1 - postCap or beyond. So either q = s -- and then the slot
   *     had not been refilled when it was read, so its offset and length are buffer s's -- or
   *     s >= q + 2^seqBits. In the second case usedBelow >= posted - 2^seqBits + 1 >= s - 2^seqBits + 1
   *     > q at t, and the load of usedBelow after the CAS returns STALE_RESERVATION and drops the cache.
   *   That covers both ways to hold an old seq: a sender that idled while the cursor went round 2^seqBits
   *   buffers (fresh cursor word, old cache), and one descheduled between reading the cursor and its
   *   CAS while the cursor went round and came back to the same word (ABA).
   *   - Moving on to the next buffer first re-reads the slot's seq (a cache 2^seqBits buffers old is
   *     caught there, not acted on) and checks posted > q + 1. Only an ABA on this move CAS can skip
   *     the rest of buffer s for s + 1 unchecked; s + 1 <= posted still holds (a cursor on an unposted
   *     buffer finds no matching slot and gets NO_BUFFER until it is posted). A second such ABA while
   *     the cursor waits on that unposted buffer would move it past posted; the receiver's next post()
   *     then fails its overrun assertion, loudly. Each needs a sender stalled between two adjacent
   *     operations while 2^seqBits buffers (with 4 MiB buffers, 64 GiB) are consumed.
   */
  reserve(len: number): number {
    this.mapped();
    const need = len / this.strideBytes;
    if ((need | 0) !== need) throw new RowanError(ErrorCodes.BAD_ARGUMENT, `a ${len} B write is not whole ${this.strideBytes} B strides`);
    // Start from the word this sender last saw, not a fresh read: a read would fetch the cursor's cache
    // line shared and the CAS then fetch it again exclusive. A stale guess only fails the CAS, which
    // takes the line exclusive once and returns the current word to retry with.
    let c = this.cursorSeen;
    for (;;) {
      if (c < 0) return SRQ_CLOSED; // bit 31: the receiver shut the queue
      const low = c >>> this.strideBits;
      if (low !== this.curLow && !this.lookUp(low)) {
        const now = Atomics.load(this.i32, L.W_CURSOR); // latest reservation state
        this.cursorSeen = now;
        if (now === c) return this.noBuffer(); // the cursor's buffer is not posted yet
        c = now;
        continue;
      }
      const strides = c & this.strideMask;
      if (strides + need <= this.curStrides) {
        const seq = this.curSeq;
        // A hold on the buffer before the reservation exists (srq-layout.ts, holds): the receiver does
        // not hand the buffer on while it sees it. No hold: the slot holds a later buffer or was fenced.
        // A hold this sender keeps (keepHolds) was taken before an earlier reservation, so before this one.
        if (seq !== this.keptSeq && !this.holdFor(seq)) {
          this.curLow = -1;
          c = this.cursorSeen = Atomics.load(this.i32, L.W_CURSOR); // latest reservation state
          continue;
        }
        // Publishes the reservation: [strides, strides+need) of the cursor's buffer is ours alone.
        // strides + need fits the stride field (post() bounds buffer lengths), so nothing carries.
        const seen = Atomics.compareExchange(this.i32, L.W_CURSOR, c, c + need);
        if (seen !== c) {
          if (seq !== this.keptSeq) this.release(seq);
          c = seen;
          continue;
        }
        this.cursorSeen = c + need;
        // Reads the receiver's latest Used mark after our hold was published: a buffer below it may be
        // handed on (if the receiver read its holds before ours), or our seq is 2^seqBits stale (see
        // above). Either way, write nothing.
        if (Atomics.load(this.i32, L.W_USED_BELOW) > seq) {
          if (seq === this.keptSeq) this.dropKept();
          else this.release(seq);
          this.curLow = -1;
          return STALE_RESERVATION;
        }
        this.lastSeq = seq;
        return this.curOffset + strides * this.strideBytes;
      }
      // Does not fit what is left of the buffer. Act only on a slot that still holds our cached buffer.
      const w = L.postedSlotWord(this.ring, low);
      if (Atomics.load(this.i32, w + L.SLOT_SEQ) !== this.curSeq) {
        // the slot was refilled since this sender cached it: look it up again (or find c stale)
        this.curLow = -1;
        continue;
      }
      if (need > this.curStrides) {
        const now = Atomics.load(this.i32, L.W_CURSOR); // latest reservation state
        if (now !== c) {
          c = now; // judge the write against the current buffer, not a guess
          continue;
        }
        throw new RowanError(ErrorCodes.ENTRY_TOO_LARGE, `a ${len} B write cannot fit a ${this.curStrides * this.strideBytes} B receive buffer`);
      }
      if (this.curSeq + 1 >= Atomics.load(this.i32, L.W_POSTED)) return this.noBuffer(); // posted count the receiver published
      // Moves every sender on to the next buffer; the rest of this one stays zero (the scan skips it).
      const next = ((low + 1) & this.seqMask) << this.strideBits;
      const seen = Atomics.compareExchange(this.i32, L.W_CURSOR, c, next);
      c = seen === c ? next : seen;
      this.cursorSeen = c;
    }
  }

  /** Cache the posted buffer whose seq is `low` mod 2^seqBits; false if its slot does not hold it yet. */
  private lookUp(low: number): boolean {
    const w = L.postedSlotWord(this.ring, low);
    const seq = Atomics.load(this.i32, w + L.SLOT_SEQ); // the buffer the receiver last published here
    // Empty, or still the buffer `ring` before it (ring < 2^seqBits, so their low bits differ).
    if (seq < 0 || (seq & this.seqMask) !== low) return false;
    this.curLow = low;
    this.curSeq = seq;
    this.curOffset = this.u32[w + L.SLOT_OFFSET_LO]! + this.u32[w + L.SLOT_OFFSET_HI]! * TWO32;
    this.curStrides = this.u32[w + L.SLOT_LENGTH]! / this.strideBytes;
    return true;
  }

  private noBuffer(): number {
    Atomics.add(this.i32, L.W_NO_BUFFER, 1); // statistics only
    return NO_BUFFER;
  }

  /** reserve()'s hold on buffer `seq`: one per reservation, or one kept for the rest of the turn (keepHolds). */
  private holdFor(seq: number): boolean {
    if (!this.keeping) return this.takeHold(seq);
    this.dropKept(); // a hold on an earlier buffer: this sender reserves there no more
    if (!this.takeHold(seq)) return false;
    this.keptSeq = seq;
    if (!this.dropQueued) {
      this.dropQueued = true;
      queueMicrotask(this.dropKeptAtTurnEnd);
    }
    return true;
  }

  /** Add a hold to buffer `seq` if its slot still holds it and it is not fenced (see the layout). */
  private takeHold(seq: number): boolean {
    const w = L.holdsWord(this.ring, seq);
    this.holdingBy(1);
    for (;;) {
      const h = Atomics.load(this.i32, w); // the slot's tag and holds as last published
      if (h >>> L.HOLD_TAG_SHIFT !== (seq & L.HOLD_TAG_MASK)) {
        this.holdingBy(-1);
        return false;
      }
      // Publishes our hold before the cursor CAS that reserves (the receiver reads it after usedBelow).
      if (Atomics.compareExchange(this.i32, w, h, h + 1) === h) return true;
    }
  }

  /**
   * Drop the hold a reservation in buffer `seq` took (reserve() returned it in lastSeq), once its copy
   * is persistent. False if the receiver fenced the buffer meanwhile: the copy may have landed after
   * the buffer was handed on, so the write must be re-issued. A fenced hold is dropped all the same,
   * so that the count keeps saying how many copies may still come (a restart waits for them,
   * ./stale-queue.ts).
   */
  release(seq: number): boolean {
    this.mapped();
    const w = L.holdsWord(this.ring, seq);
    for (;;) {
      const h = Atomics.load(this.i32, w); // the slot's tag and holds as last published
      if (((h >>> L.HOLD_TAG_SHIFT) & L.HOLD_TAG_MASK) !== (seq & L.HOLD_TAG_MASK)) {
        this.holdingBy(-1); // the slot holds a later buffer: our hold is gone with the old one
        return false;
      }
      invariant((h & L.HOLD_COUNT_MASK) > 0, `release of buffer ${seq} without a hold`);
      // Publishes that our copy is done: the receiver may hand the buffer on once the count is 0.
      if (Atomics.compareExchange(this.i32, w, h, h - 1) === h) {
        this.holdingBy(-1);
        return (h & L.HOLD_FENCED) === 0;
      }
    }
  }

  /**
   * Sender side: keep a reservation's hold for this sender's later reservations in the same buffer,
   * until the event loop's turn ends (a microtask drops it) or it reserves in another buffer. Saves
   * per write the hold and release CASes on the holds word all senders share (and two adds on its
   * holding word); completeKept() checks each copy against a fence instead. The receiver then waits
   * for a sender's turn, not its copy, to end; a turn past its hold timeout is fenced and re-issues.
   */
  keepHolds(): void {
    this.keeping = true;
  }

  get keepsHolds(): boolean {
    return this.keeping;
  }

  /**
   * keepHolds(): a reservation in buffer `seq` is copied and persistent. Claims its CQ slot (the locked
   * add orders the copy's stores before the look at the hold word) and fills it if the kept hold is
   * not fenced (true: the receiver's fence, if any, comes later, and what digest gets holds the
   * write), else voids it and drops the hold (false: re-issue).
   */
  completeKept(seq: number, poolOffset: number, len: number, sender: number): boolean {
    this.mapped();
    const cq = this.claimCompletion();
    const h = Atomics.load(this.i32, L.holdsWord(this.ring, seq)); // the hold word after our copy
    if (seq === this.keptSeq && h >>> L.HOLD_TAG_SHIFT === (seq & L.HOLD_TAG_MASK)) {
      this.complete(cq, poolOffset, len, sender);
      return true;
    }
    this.voidCompletion(cq, sender);
    if (seq === this.keptSeq) this.dropKept();
    return false;
  }

  /** Drop the hold kept on a buffer (keepHolds), if any. Its writes were checked one by one (completeKept). */
  private dropKept(): void {
    const seq = this.keptSeq;
    if (seq < 0) return;
    this.keptSeq = -1;
    if (!this.unmapped) this.release(seq);
  }

  /** Holds on buffer `seq` (receiver side; the buffer must not have been handed on). */
  holds(seq: number): number {
    this.mapped();
    const h = Atomics.load(this.i32, L.holdsWord(this.ring, seq)); // the latest holds of the slot
    invariant(h >>> L.HOLD_TAG_SHIFT === (seq & L.HOLD_TAG_MASK), `buffer ${seq} is no longer in its slot`);
    return h & L.HOLD_COUNT_MASK;
  }

  /** Fence buffer `seq`'s holds (receiver side): later releases of them fail. False if they changed. */
  fence(seq: number): boolean {
    this.mapped();
    const w = L.holdsWord(this.ring, seq);
    const h = Atomics.load(this.i32, w); // the holds we decided to give up on
    if (h >>> L.HOLD_TAG_SHIFT !== (seq & L.HOLD_TAG_MASK)) return false;
    // Publishes the fence: a sender's hold CAS or release CAS on this word fails from now on.
    return Atomics.compareExchange(this.i32, w, h, h | L.HOLD_FENCED) === h;
  }

  /**
   * Claim the next slot of this sender's CQ shard for a write about to land; fill it with complete()
   * once the write is persistent, or with voidCompletion() if it is not to count. Claiming before the
   * copy keeps the locked add next to the reservation's CAS: a locked instruction waits for earlier
   * cache-line flushes to finish, so one that followed the persist would stall on it every write.
   */
  claimCompletion(): number {
    this.mapped();
    return Atomics.add(this.i32, this.cqTail, 1); // claims slot n of the shard; readers only sample the ring
  }

  /** Fill claimed CQ slot `n` with the completion of a persistent write (overwriting the oldest entry). */
  complete(n: number, poolOffset: number, len: number, sender: number): void {
    const w = this.cqRing + ((n & this.cqSlotMask) << 2);
    const lo = poolOffset >>> 0;
    this.u32[w] = lo;
    this.u32[w + 1] = (poolOffset - lo) / TWO32;
    this.u32[w + 2] = len;
    this.u32[w + 3] = sender;
  }

  /** Fill claimed CQ slot `n` with a void entry (length 0): the write it was claimed for is re-issued. */
  voidCompletion(n: number, sender: number): void {
    this.complete(n, 0, 0, sender);
    Atomics.add(this.i32, L.W_CQ_VOID, 1); // completions() subtracts void entries
  }

  stats(): { posted: number; currentSeq: number; completions: number; noBuffer: number; state: number } {
    this.mapped();
    return {
      posted: this.posted(),
      currentSeq: this.currentSeq(),
      completions: this.completions(),
      noBuffer: Atomics.load(this.i32, L.W_NO_BUFFER), // reservations that found no buffer
      state: Atomics.load(this.i32, L.W_STATE), // Init / Ready / Closed
    };
  }

  /** Completions ever written, over all CQ shards, not counting void entries (mod 2^32). */
  completions(): number {
    let n = -Atomics.load(this.i32, L.W_CQ_VOID); // void entries written so far
    for (let s = 0; s < this.cqShards; s++) n += Atomics.load(this.i32, L.cqTailWord(this.ring, s)); // shard s's slots claimed
    return n >>> 0;
  }

  isClosed(): boolean {
    this.mapped();
    return Atomics.load(this.i32, L.W_STATE) === L.SrqState.Closed; // set by shutdown or a restart
  }

  /** Unmap. Any later use is an invariant error (not a fault on the guard mapping). */
  close(): void {
    if (this.unmapped) return;
    this.dropKept();
    this.unmapped = true;
    this.map.close();
  }

  private mapped(): void {
    // Hot path: the message is built only when the check fails.
    if (this.unmapped) invariant(false, `receive queue ${this.path} used after close`);
  }
}

function notReady(msg: string): never {
  throw new RowanError(ErrorCodes.RECEIVER_NOT_READY, msg);
}
