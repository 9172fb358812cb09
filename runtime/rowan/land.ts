// Landing one Rowan write: the whole data path an MP-SRQ RNIC runs for a SEND (ROWAN §3.2.2) --
// reserve the next stride-aligned slot of the current posted buffer, copy, persist, write the
// completion. Shared by the two software RNICs: the shm sender's thread (runtime/fabric/shm.ts) and
// the tcp fabric's nic actor (actors/nic/nic-verbs.ts), so both follow exactly the same rules.
//
// The paper's sender re-issues any write slower than 1 ms, because a real sender cannot see when the
// receiver declares a buffer Used (§4.3). Whoever lands the write here can: the queue's `usedBelow`
// word says which buffers the receiver has declared Used, and a hold per reservation (srq-layout.ts)
// keeps the receiver from handing a buffer to digest -- which may free and reuse it -- while a copy
// into it is still to come. A lander can be descheduled for any time between reserve and copy (it is
// a thread or a process, not an RNIC's DMA engine), so a timer could not make this safe.
import type { PersistentRegion } from '../../config/base/region.js';
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import { STALE_RESERVATION, type SharedReceiveQueue } from './srq.js';

/** landOnce result: the reservation was in a buffer already declared Used; nothing was written. */
export const ABANDONED = STALE_RESERVATION;
/** landOnce result: written and persisted, but the receiver fenced its hold meanwhile (it stalled past
 *  the receiver's holdTimeoutMs, and the buffer went on to digest without it); re-issue it. */
export const LATE = -4;

/** A write re-issued this many times fails instead (its lander is starved of CPU). */
export const MAX_REISSUES = 16;

/**
 * One attempt, synchronously: reserve, copy, persist, complete (its CQ slot is claimed before the
 * copy, see SharedReceiveQueue.claimCompletion). Returns the pool offset, or
 * NO_BUFFER / SRQ_CLOSED (srq.ts) / ABANDONED / LATE. Throws ENTRY_TOO_LARGE for a write no buffer fits.
 */
export function landOnce(srq: SharedReceiveQueue, region: PersistentRegion, bytes: Uint8Array, senderId: number): number {
  const at = reserveLanding(srq, bytes.length);
  if (at < 0) return at;
  if (srq.keepsHolds) return copyLandingKept(srq, region, bytes, at, srq.lastSeq, senderId);
  return copyLanding(srq, region, bytes, at, srq.lastSeq, srq.claimCompletion(), senderId);
}

/**
 * copyLanding for a queue that keeps its holds for the turn (SharedReceiveQueue.keepHolds): copy,
 * persist, then claim and fill the CQ slot if the kept hold was not fenced meanwhile, else LATE.
 */
export function copyLandingKept(srq: SharedReceiveQueue, region: PersistentRegion, bytes: Uint8Array, at: number, seq: number, senderId: number): number {
  region.bytes.set(bytes, at);
  region.persist(at, bytes.length);
  return srq.completeKept(seq, at, bytes.length, senderId) ? at : LATE;
}

/**
 * landOnce's first step: reserve a slot for `len` bytes. Returns its pool offset (its buffer is
 * srq.lastSeq; claim the CQ slot next and call copyLanding), or NO_BUFFER / SRQ_CLOSED / ABANDONED.
 * Split out so a simulator can run other events between the reservation and the copy.
 */
export function reserveLanding(srq: SharedReceiveQueue, len: number): number {
  // ABANDONED comes from here: reserve() re-reads usedBelow right after its CAS, and a slot in a
  // buffer the receiver has declared Used (digest may have read or even recycled it) stays empty --
  // the b-log scan steps over holes -- and the write is re-issued.
  return srq.reserve(len);
}

/**
 * landOnce's second step: copy into the slot reserved at `at` in buffer `seq`, persist, and fill CQ
 * slot `cq`. Returns `at`, or LATE (re-issue the write).
 */
export function copyLanding(srq: SharedReceiveQueue, region: PersistentRegion, bytes: Uint8Array, at: number, seq: number, cq: number, senderId: number): number {
  const len = bytes.length;
  region.bytes.set(bytes, at);
  region.persist(at, len);
  // Persisted; now drop the hold reserve() took. The receiver hands a buffer to digest only once its
  // holds are 0, so digest scans the buffer after this persist -- even if it went Used meanwhile.
  // Unless the receiver fenced the hold (we stalled past its timeout): then the buffer was handed on
  // as a copy without waiting for us, and the write is re-issued (the duplicate is harmless: digest
  // applies entries version-conditionally; the fenced buffer is never reused, so our bytes harm nothing).
  if (!srq.release(seq)) {
    srq.voidCompletion(cq, senderId);
    return LATE;
  }
  srq.complete(cq, at, len, senderId);
  return at;
}

export interface Landing {
  /** Pool offset the write is persistent at, or NO_BUFFER / SRQ_CLOSED (nothing landed). */
  at: number;
  /** Attempts that came back ABANDONED or LATE and were re-landed at once. */
  reissues: number;
}

/**
 * Land a write, re-issuing it at once (into a later slot) while attempts come back ABANDONED or LATE.
 * `reissued`: attempts of this write that already came back so (the caller made them with landOnce).
 * Throws WRITE_TIMEOUT after MAX_REISSUES such attempts.
 */
export function land(srq: SharedReceiveQueue, region: PersistentRegion, bytes: Uint8Array, senderId: number, reissued = 0): Landing {
  for (let reissues = reissued; reissues <= MAX_REISSUES; reissues++) {
    const at = landOnce(srq, region, bytes, senderId);
    if (at !== ABANDONED && at !== LATE) return { at, reissues };
  }
  throw new RowanError(ErrorCodes.WRITE_TIMEOUT, `write re-issued ${MAX_REISSUES} times: the lander is starved of CPU`);
}
