// Typed records over SPSC rings (shm/ring.ts), and the doorbell that wakes a sleeping actor.
//
// A record is a header word followed by its payload words, all Int32, no JSON on the hot path:
//
//   +---------------------------------+------------------------------+
//   | HEADER: kind (bits 0-7)          | PAYLOAD: payloadWords x Int32 |
//   |         payloadWords (bits 8-30) |                              |
//   +---------------------------------+------------------------------+
//
//   PING / PONG      payload = [seq]                 (liveness and round-trip through the rings)
//   SEGMENT_BATCH    payload = [segment ids ...]     (control -> digest, digest -> clean; §4.3 batches)
//
// An Outbox is the producer end of one ring plus the receiver's doorbell: records are appended to a
// pending batch and published together (one WRITE_PTR store for the whole batch). An Inbox is the
// consumer end of all rings into one actor; it sleeps on that actor's single doorbell.
import { ErrorCodes, RowanError, invariant } from '../config/base/errors.js';
import { Ring } from './ring.js';

export const RecordKind = {
  PING: 1,
  PONG: 2,
  SEGMENT_BATCH: 3,
} as const;
export type RecordKind = (typeof RecordKind)[keyof typeof RecordKind];

export interface PingRecord {
  kind: typeof RecordKind.PING;
  seq: number;
}
export interface PongRecord {
  kind: typeof RecordKind.PONG;
  seq: number;
}
export interface SegmentBatchRecord {
  kind: typeof RecordKind.SEGMENT_BATCH;
  /** Segment numbers in the PM pool, in the order the sender handed them over. */
  segments: Int32Array;
}
export type RingMessage = PingRecord | PongRecord | SegmentBatchRecord;

const KIND_BITS = 8;
const KIND_MASK = (1 << KIND_BITS) - 1;
/** Payload length is 23 bits so the header stays a positive Int32. */
export const recordPayloadWordsMax = (1 << 23) - 1;

export function recordWords(msg: RingMessage): number {
  return 1 + (msg.kind === RecordKind.SEGMENT_BATCH ? msg.segments.length : 1);
}

/** Encode `msg` at out[at..]; returns the words written. The caller checked there is room. */
export function encodeRecord(msg: RingMessage, out: Int32Array, at: number): number {
  switch (msg.kind) {
    case RecordKind.PING:
    case RecordKind.PONG:
      out[at] = msg.kind | (1 << KIND_BITS);
      out[at + 1] = msg.seq;
      return 2;
    case RecordKind.SEGMENT_BATCH: {
      const n = msg.segments.length;
      if (n > recordPayloadWordsMax)
        throw new RowanError(ErrorCodes.RECORD_TOO_LARGE, `segment batch of ${n} exceeds ${recordPayloadWordsMax}`);
      out[at] = msg.kind | (n << KIND_BITS);
      out.set(msg.segments, at + 1);
      return 1 + n;
    }
  }
}

/** Length in words (header included) of the record at words[at]. */
export function recordLength(words: Int32Array, at: number): number {
  return 1 + (words[at]! >>> KIND_BITS);
}

/** Decode the record at words[at..]; `end` bounds it. Its length is recordLength(words, at). */
export function decodeRecord(words: Int32Array, at: number, end: number): RingMessage {
  const header = words[at]!;
  const kind = header & KIND_MASK;
  const n = header >>> KIND_BITS;
  if (at + 1 + n > end) invariant(false, `record at ${at} (kind ${kind}, ${n} words) runs past the published words`);
  switch (kind) {
    case RecordKind.PING:
    case RecordKind.PONG:
      if (n !== 1) invariant(false, `ping/pong record with ${n} payload words`);
      return { kind, seq: words[at + 1]! };
    case RecordKind.SEGMENT_BATCH:
      return { kind, segments: words.slice(at + 1, at + 1 + n) };
    default:
      invariant(false, `unknown record kind ${kind} at word ${at}`);
  }
}

// ---- doorbell ---------------------------------------------------------------------------------------
//
//   doorbell SAB (Int32 words), one per receiving actor, shared by all its producers:
//   +-----+---------+
//   | SEQ | WAITING |
//   +-----+---------+
//     SEQ:     bumped by a producer (or the supervisor) to wake the actor; only its change matters.
//     WAITING: 1 while the actor is about to sleep or asleep on SEQ; producers skip the wake otherwise.

export const Bell = { SEQ: 0, WAITING: 1, WORDS: 2 } as const;

export class Doorbell {
  private readonly w: Int32Array;
  constructor(readonly sab: SharedArrayBuffer = new SharedArrayBuffer(Bell.WORDS * 4)) {
    this.w = new Int32Array(sab);
  }

  /** Producer, after publishing: wake the consumer only if it said it sleeps (one load otherwise). */
  ring(): void {
    // Reads the consumer's announcement; seq-cst orders it after our WRITE_PTR store.
    if (Atomics.load(this.w, Bell.WAITING) === 1) this.wake();
  }

  /** Wake unconditionally (stop requests). */
  wake(): void {
    // Publish "something changed": a sleeper's waitAsync(SEQ, old) no longer matches and returns.
    Atomics.add(this.w, Bell.SEQ, 1);
    // Resolve the (single) pending waitAsync on SEQ, if any.
    Atomics.notify(this.w, Bell.SEQ, 1);
  }

  /** Consumer, step 1 of sleeping: read SEQ, then announce WAITING. Re-check the rings after this. */
  arm(): number {
    // The value to sleep on; a producer bump after this load makes the sleep return at once.
    const seq = Atomics.load(this.w, Bell.SEQ);
    // Announce; any publish ordered after this store sees WAITING=1 and bumps SEQ.
    Atomics.store(this.w, Bell.WAITING, 1);
    return seq;
  }

  /** Consumer: found work after arm(); withdraw the announcement. */
  disarm(): void {
    // Producers stop paying for wakes once they observe 0.
    Atomics.store(this.w, Bell.WAITING, 0);
  }

  /** Consumer, step 2: sleep without blocking the event loop until SEQ moves off `seq`. */
  async sleep(seq: number): Promise<void> {
    // Event-loop wait: resolves on notify, or at once if SEQ already changed ("not-equal").
    const r = Atomics.waitAsync(this.w, Bell.SEQ, seq);
    if (r.async) await r.value;
    this.disarm();
  }
}

// ---- outbox / inbox ---------------------------------------------------------------------------------

export class Outbox {
  private readonly pending: Int32Array;
  private pendingWords = 0;
  private pendingRecords = 0;

  constructor(
    readonly to: string,
    readonly ring: Ring,
    readonly bell: Doorbell,
  ) {
    // A batch can never exceed the ring, so the pending buffer is ring-sized.
    this.pending = new Int32Array(ring.capacityWords);
  }

  /** Records appended and not yet published. */
  get pendingCount(): number {
    return this.pendingRecords;
  }

  /** Add a record to the pending batch; false when the batch buffer is full (flush first). */
  append(msg: RingMessage): boolean {
    const w = recordWords(msg);
    if (w > this.ring.capacityWords)
      throw new RowanError(ErrorCodes.RECORD_TOO_LARGE, `record of ${w} words exceeds ring to ${this.to}`);
    if (this.pendingWords + w > this.pending.length) return false;
    this.pendingWords += encodeRecord(msg, this.pending, this.pendingWords);
    this.pendingRecords++;
    return true;
  }

  /** Publish the pending batch as one unit and ring the doorbell; false (batch kept) if no room. */
  flush(): boolean {
    if (this.pendingWords === 0) return true;
    if (!this.ring.tryPublish(this.pending, this.pendingWords)) return false;
    this.pendingWords = 0;
    this.pendingRecords = 0;
    this.bell.ring();
    return true;
  }

  /** Publish the pending batch, sleeping (not spinning) while the ring is full. */
  async flushWhenRoom(): Promise<void> {
    while (!this.flush()) await this.ring.waitForSpace(this.pendingWords);
  }

  /** One record now: append + flush. False if the ring is full (nothing is left pending). */
  send(msg: RingMessage): boolean {
    invariant(this.pendingWords === 0, 'send() with an unflushed batch pending');
    if (!this.append(msg)) return false;
    if (this.flush()) return true;
    this.pendingWords = 0;
    this.pendingRecords = 0;
    return false;
  }
}

export interface InboundLink {
  from: string;
  ring: Ring;
}

export class Inbox {
  private readonly stage: Int32Array;

  constructor(
    readonly links: InboundLink[],
    readonly bell: Doorbell,
  ) {
    // A pop takes at most what the ring holds, and producers publish whole records, so a ring-sized
    // stage always receives whole records: no record is ever split across two pops.
    const max = Math.max(0, ...links.map((l) => l.ring.capacityWords));
    this.stage = new Int32Array(max);
  }

  /** Take everything published so far on every ring and hand each record over; returns records seen. */
  drain(onMessage: (msg: RingMessage, from: string) => void): number {
    let records = 0;
    for (const link of this.links) {
      const n = link.ring.take(this.stage, 0, link.ring.capacityWords);
      let at = 0;
      while (at < n) {
        const msg = decodeRecord(this.stage, at, n);
        at += recordLength(this.stage, at);
        records++;
        onMessage(msg, link.from);
      }
    }
    return records;
  }

  hasWork(): boolean {
    for (const l of this.links) if (l.ring.depth() > 0) return true;
    return false;
  }
}
