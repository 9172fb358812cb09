// The shared receive queue of a Rowan receiver (layout and semantics: srq-layout.ts). The receiver side
// posts buffers; the sender side reserves a stride-aligned slot in the current buffer with one CAS, the
// way an MP-SRQ RNIC lands a SEND (ROWAN §3.2.2). Both sides map the same file, so senders may be
// threads of the receiver's process or other processes; Atomics on the mapping are real hardware
// atomics on shared pages (checked across processes in test/integration/rowan-shm.test.ts).
import { existsSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { PmemMapping } from '../../native/pmem2.js';
import { ErrorCodes, RowanError, invariant } from '../errors.js';
import * as L from './srq-layout.js';

export interface PostedBuffer {
  /** Pool offset of the buffer (a segment). */
  offset: number;
  /** Bytes; a multiple of the stride. */
  length: number;
}

/**
 * What the control-side RowanReceiver needs of a receive queue: the emulated queue below (shm, tcp) and
 * the RNIC's SRQ of the verbs transport (runtime/fabric/verbs-receiver.ts) both provide it.
 */
export interface ReceiveQueue {
  /** The most buffers that may be posted and not yet consumed (posting more is a broken invariant). */
  readonly postCap: number;
  /** Post buffers (pool offset, length) in one call, in increasing address order. */
  post(buffers: readonly PostedBuffer[]): void;
  /** Buffers posted so far (ever). */
  posted(): number;
  /** Posted buffers no write has reached yet, counting the one writes currently land in. */
  outstanding(): number;
  /** The receiver declared every buffer below `seq` Used (before handing them to digest). */
  markUsedBelow(seq: number): void;
  /** The receiver could (false) or could not (true) allocate the segments it wanted to post. */
  markStarved?(starved: boolean): void;
}

/** reserve() results that are not pool offsets. */
export const NO_BUFFER = -1;
export const SRQ_CLOSED = -2;

export interface SrqCreateOptions {
  /** Posted-ring slots: the most buffers that can be posted and not yet consumed. */
  postCap: number;
  /** Ring CQ slots (a power of two). */
  cqCap: number;
  strideBytes?: number;
}

const TWO32 = 2 ** 32;

export class SharedReceiveQueue implements ReceiveQueue {
  readonly path: string;
  readonly postCap: number;
  readonly cqCap: number;
  readonly strideBytes: number;
  readonly incarnation: string;
  /** Buffer seq of this object's last successful reserve() (sender-local). */
  lastSeq = -1;
  private unmapped = false;
  private readonly map: PmemMapping;
  private readonly i32: Int32Array;
  private readonly u32: Uint32Array;
  private readonly b64: BigInt64Array;

  private constructor(path: string, map: PmemMapping) {
    this.path = path;
    this.map = map;
    const buf = map.bytes.buffer;
    const base = map.bytes.byteOffset;
    const words = map.size >> 2;
    this.i32 = new Int32Array(buf, base, words);
    this.u32 = new Uint32Array(buf, base, words);
    this.b64 = new BigInt64Array(buf, base, map.size >> 3);
    this.postCap = this.u32[L.W_POST_CAP]!;
    this.cqCap = this.u32[L.W_CQ_CAP]!;
    this.strideBytes = this.u32[L.W_STRIDE]!;
    this.incarnation =
      this.u32[L.W_INCARNATION_HI]!.toString(16).padStart(8, '0') +
      this.u32[L.W_INCARNATION_LO]!.toString(16).padStart(8, '0');
  }

  /**
   * Receiver side: build a fresh queue at `path`. An older queue file there (a previous incarnation of
   * this receiver) is first marked Closed, so senders still attached to it stop reserving in it.
   */
  static create(path: string, o: SrqCreateOptions): SharedReceiveQueue {
    const stride = o.strideBytes ?? 64;
    if (!Number.isInteger(o.postCap) || o.postCap < 2) bad(`postCap must be an integer >= 2, got ${o.postCap}`);
    if (!Number.isInteger(o.cqCap) || o.cqCap < 2 || (o.cqCap & (o.cqCap - 1)) !== 0)
      bad(`cqCap must be a power of two >= 2, got ${o.cqCap}`);
    if (existsSync(path)) closeStale(path);
    const tmp = `${path}.${process.pid}.tmp`;
    writeFileSync(tmp, Buffer.alloc(L.srqBytes(o.postCap, o.cqCap)));
    const map = PmemMapping.map(tmp, { mode: 'pagecache', label: path });
    const u32 = new Uint32Array(map.bytes.buffer, map.bytes.byteOffset, L.HEADER_BYTES >> 2);
    const inc = randomBytes(8);
    u32[L.W_VERSION] = L.SRQ_VERSION;
    u32[L.W_POST_CAP] = o.postCap;
    u32[L.W_CQ_CAP] = o.cqCap;
    u32[L.W_STRIDE] = stride;
    u32[L.W_INCARNATION_LO] = inc.readUInt32LE(0);
    u32[L.W_INCARNATION_HI] = inc.readUInt32LE(4);
    // Publishes the header: an attacher that sees the magic sees every field above.
    Atomics.store(new Int32Array(u32.buffer, u32.byteOffset, 4), L.W_MAGIC, L.SRQ_MAGIC);
    renameSync(tmp, path);
    return new SharedReceiveQueue(path, map);
  }

  /** Sender side: map an existing queue. ROWAN_ERR_RECEIVER_NOT_READY if there is none (yet). */
  static attach(path: string): SharedReceiveQueue {
    if (!existsSync(path)) notReady(`no receive queue at ${path}: the receiver has not started`);
    const map = PmemMapping.map(path, { mode: 'pagecache', label: path });
    const i32 = new Int32Array(map.bytes.buffer, map.bytes.byteOffset, 4);
    if (map.size < L.HEADER_BYTES || Atomics.load(i32, L.W_MAGIC) !== L.SRQ_MAGIC || i32[L.W_VERSION] !== L.SRQ_VERSION) {
      map.close();
      notReady(`${path} is not a receive queue of this version`);
    }
    return new SharedReceiveQueue(path, map);
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
    return Number(Atomics.load(this.b64, L.W64_CURSOR) >> 32n); // latest reservation state
  }

  /** Posted buffers no write has reached yet, counting the current one. */
  outstanding(): number {
    return this.posted() - this.currentSeq();
  }

  /** The posted buffer with sequence number `seq` (it must still be in the ring). */
  buffer(seq: number): PostedBuffer {
    this.mapped();
    invariant(seq < this.posted() && seq > this.posted() - this.postCap - 1, `buffer ${seq} is not in the ring`);
    const w = L.postedSlotWord(this.postCap, seq);
    return { offset: this.u32[w]! + this.u32[w + 1]! * TWO32, length: this.u32[w + 2]! };
  }

  /**
   * Post buffers in one call, in increasing address order (§3.2.2: the RNIC consumes them in posting
   * order, which lands concurrent writes as one sequential stream).
   */
  post(buffers: readonly PostedBuffer[]): void {
    this.mapped();
    const n0 = this.posted();
    invariant(n0 + buffers.length - this.currentSeq() <= this.postCap, 'post would overrun buffers not yet consumed');
    for (let i = 0; i < buffers.length; i++) {
      const b = buffers[i]!;
      invariant(b.length > 0 && b.length % this.strideBytes === 0, `buffer length ${b.length} is not a stride multiple`);
      if (i > 0) invariant(b.offset >= buffers[i - 1]!.offset + buffers[i - 1]!.length, 'buffers not in increasing address order');
      const w = L.postedSlotWord(this.postCap, n0 + i);
      this.u32[w] = b.offset % TWO32;
      this.u32[w + 1] = Math.floor(b.offset / TWO32);
      this.u32[w + 2] = b.length;
    }
    // Publishes the filled slots: a sender that reads posted >= n sees buffer n's slot.
    Atomics.store(this.i32, L.W_POSTED, n0 + buffers.length);
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
    Atomics.store(this.i32, L.W_STATE, L.SrqState.Closed); // senders check this before each reservation
  }

  // ---- sender side (the RNIC's job) -----------------------------------------------------------------

  /**
   * Reserve `len` bytes (a stride multiple, at most one buffer) for one write. Returns the pool offset
   * where the write lands, NO_BUFFER when no posted buffer has room, or SRQ_CLOSED.
   */
  reserve(len: number): number {
    this.mapped();
    const stride = this.strideBytes;
    const need = len / stride;
    for (;;) {
      if (Atomics.load(this.i32, L.W_STATE) === L.SrqState.Closed) return SRQ_CLOSED; // receiver gone
      // A torn read of the two halves only makes the CAS below fail and retry.
      const strides = this.u32[L.W_CURSOR_LO]!;
      const seq = this.u32[L.W_CURSOR_HI]!;
      const posted = Atomics.load(this.i32, L.W_POSTED); // slots below `posted` are published
      if (seq >= posted) return this.noBuffer();
      const w = L.postedSlotWord(this.postCap, seq);
      const bufLen = this.u32[w + 2]!;
      const expected = L.packCursor(seq, strides);
      if ((strides + need) * stride <= bufLen) {
        // Publishes the reservation: [strides, strides+need) of buffer seq is ours alone.
        // strides live in the low 32 bits and cannot overflow them (bufLen < 2^32), so adding `need`
        // to the packed value is packCursor(seq, strides + need) with one BigInt op instead of four.
        if (Atomics.compareExchange(this.b64, L.W64_CURSOR, expected, expected + BigInt(need)) === expected) {
          this.lastSeq = seq;
          return this.u32[w]! + this.u32[w + 1]! * TWO32 + strides * stride;
        }
        continue;
      }
      if (len > bufLen) {
        throw new RowanError(ErrorCodes.ENTRY_TOO_LARGE, `a ${len} B write cannot fit a ${bufLen} B receive buffer`);
      }
      if (seq + 1 >= posted) return this.noBuffer();
      // Moves every sender on to the next buffer; the rest of this one stays zero (the scan skips it).
      Atomics.compareExchange(this.b64, L.W64_CURSOR, expected, L.packCursor(seq + 1, 0));
    }
  }

  private noBuffer(): number {
    Atomics.add(this.i32, L.W_NO_BUFFER, 1); // statistics only
    return NO_BUFFER;
  }

  /** Write the completion entry into the ring CQ (overwriting the oldest). */
  complete(poolOffset: number, len: number, sender: number): void {
    this.mapped();
    const n = Atomics.add(this.i32, L.W_CQ_TAIL, 1) >>> 0; // claims CQ slot n; readers only sample the ring
    const w = L.cqSlotWord(this.postCap, this.cqCap, n);
    this.u32[w] = poolOffset % TWO32;
    this.u32[w + 1] = Math.floor(poolOffset / TWO32);
    this.u32[w + 2] = len;
    this.u32[w + 3] = sender;
  }

  stats(): { posted: number; currentSeq: number; completions: number; noBuffer: number; state: number } {
    this.mapped();
    return {
      posted: this.posted(),
      currentSeq: this.currentSeq(),
      completions: Atomics.load(this.i32, L.W_CQ_TAIL) >>> 0, // completion count (mod 2^32)
      noBuffer: Atomics.load(this.i32, L.W_NO_BUFFER), // reservations that found no buffer
      state: Atomics.load(this.i32, L.W_STATE), // Init / Ready / Closed
    };
  }

  isClosed(): boolean {
    this.mapped();
    return Atomics.load(this.i32, L.W_STATE) === L.SrqState.Closed; // set by shutdown or a restart
  }

  /** Unmap. Any later use is an invariant error (not a fault on the guard mapping). */
  close(): void {
    if (this.unmapped) return;
    this.unmapped = true;
    this.map.close();
  }

  private mapped(): void {
    // Hot path: the message is built only when the check fails.
    if (this.unmapped) invariant(false, `receive queue ${this.path} used after close`);
  }
}

function closeStale(path: string): void {
  try {
    const old = SharedReceiveQueue.attach(path);
    old.shutdown();
    old.close();
  } catch {
    // Not a queue we can read: replace it all the same.
  }
  try {
    unlinkSync(path);
  } catch {
    /* already gone */
  }
}

function bad(msg: string): never {
  throw new RowanError(ErrorCodes.BAD_CONFIG, `receive queue: ${msg}`);
}

function notReady(msg: string): never {
  throw new RowanError(ErrorCodes.RECEIVER_NOT_READY, msg);
}
