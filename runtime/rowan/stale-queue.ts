// Fencing the shm senders of a receiver's previous incarnation at its restart (issue 24, hazard 4).
//
// A sender lands a write in three steps -- reserve a slot (a hold on its buffer first, srq-layout.ts),
// copy, release the hold -- and may be descheduled for any time between them (a thread or a process,
// not an RNIC's DMA engine). When the receiving node restarts, cold start recycles the b-log segments
// the previous incarnation posted (one nothing landed in is freed at once, actors/node/recovery.ts), so
// the restart must know that no copy reserved in the old queue is still to come before it recycles:
//   1. close the old queue: state Closed and the cursor's Closed bit (every later cursor CAS fails);
//   2. wait until the old queue's holds are all 0. A hold this wait did not see was taken after step 1
//      (holds are taken before the cursor CAS: the Dekker pair of usedBelow, srq-layout.ts), so its
//      CAS failed on the Closed bit and it copies nothing. Or until no sender that may still copy is
//      alive: each named sender counts its holds in its slot of the queue (srq-layout.ts, senders),
//      and one whose process is gone copies nothing (a process that no longer maps the queue is not
//      it, whatever its pid; a sender past the named slots makes every mapper of the queue suspect);
//   3. holds still there after `waitMs` while such a sender is alive -- stopped (SIGSTOP) or starved
//      that long -- refuse to start (ROWAN_ERR_SENDERS_HOLDING): its copy would land in whatever the
//      segment became. A later start finds the copy done or the sender gone; the copy, made before
//      anything was recycled, is then part of the b-log cold start scans.
//   4. otherwise fence every hold word (no release made on the old queue succeeds from now on) and
//      remove the file.
// A queue of another layout version (an older build's: its senders name no slots) is only closed and
// removed, as before.
import { existsSync, readdirSync, readFileSync, realpathSync, statSync, unlinkSync } from 'node:fs';
import { setTimeout as sleepMs } from 'node:timers/promises';
import { mapFile, type FileMapping } from '../../native/mapping.js';
import { monotonicClock, type Clock } from '../../config/base/clock.js';
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import * as L from './srq-layout.js';

/** How long a restart waits for the copies of the previous incarnation's senders (then refuses). */
export const STALE_HOLDS_WAIT_MS = 5000;
/** How often the wait looks at the holds again. */
const STALE_HOLDS_POLL_MS = 10;

export interface StaleQueueOptions {
  waitMs?: number;
  clock?: Clock;
  sleep?: (ms: number) => Promise<void>;
}

export interface StaleQueueReport {
  /** Holds (copies to come) found when the queue was closed. */
  holds: number;
  /** How long the restart waited for them. */
  waitedMs: number;
  /** Holds left by senders that died mid-write: void. */
  voided: number;
}

/**
 * Close the queue file a previous incarnation of this receiver left at `path`, wait for its senders'
 * copies and remove it (see the header); null when there is none. Throws SENDERS_HOLDING when a live
 * sender still holds a reservation after `waitMs`.
 */
export async function closeStaleQueue(path: string, o: StaleQueueOptions = {}): Promise<StaleQueueReport | null> {
  if (!existsSync(path)) return null;
  const report: StaleQueueReport = { holds: 0, waitedMs: 0, voided: 0 };
  const map = mapQueue(path);
  try {
    const i32 = map ? closeMapped(map) : null;
    if (i32) {
      await drainHolds(path, i32, report, o);
      fenceAll(i32);
    }
  } finally {
    map?.close();
  }
  unlinkQuietly(path);
  return report;
}

/**
 * Close and remove the queue file at `path` without waiting for its senders' copies: for
 * SharedReceiveQueue.create, which a node's cold start calls only after closeStaleQueue.
 */
export function closeQueueNow(path: string): void {
  const map = mapQueue(path);
  try {
    if (map) closeMapped(map);
  } finally {
    map?.close();
  }
  unlinkQuietly(path);
}

function mapQueue(path: string): FileMapping | null {
  try {
    return mapFile(path, { mode: 'pagecache', label: path });
  } catch {
    return null; // not a file we can map: no sender can hold anything in it either; replaced all the same
  }
}

/**
 * Mark a queue Closed, whatever its layout version: every version keeps magic and state at the same
 * words and its senders check state (this version's senders check the cursor's Closed bit). Returns
 * its words when it is of this version (it has holds to wait for), else null.
 */
function closeMapped(map: FileMapping): Int32Array | null {
  if (map.size < L.HEADER_BYTES) return null;
  const i32 = new Int32Array(map.bytes.buffer, map.bytes.byteOffset, map.size >> 2);
  if (Atomics.load(i32, L.W_MAGIC) !== L.SRQ_MAGIC) return null;
  Atomics.store(i32, L.W_STATE, L.SrqState.Closed); // older builds' senders stop at this
  if (i32[L.W_VERSION] !== L.SRQ_VERSION) return null;
  // Publishes Closed to every sender: each later reservation CAS fails (the hold it took just before
  // is then released, and nothing is copied).
  Atomics.or(i32, L.W_CURSOR, L.CURSOR_CLOSED);
  return i32;
}

function unlinkQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    /* already gone */
  }
}

/** Step 2/3 of the header: wait for the holds, bounded; throw if a live sender keeps one. */
async function drainHolds(path: string, i32: Int32Array, report: StaleQueueReport, o: StaleQueueOptions): Promise<void> {
  const clock = o.clock ?? monotonicClock;
  const sleep = o.sleep ?? ((ms: number) => sleepMs(ms));
  const waitMs = o.waitMs ?? STALE_HOLDS_WAIT_MS;
  const t0 = clock.now();
  report.holds = heldCopies(i32);
  for (let held = report.holds; ; held = heldCopies(i32)) {
    // Read after the counts (see liveHolders). A named sender holding with every count 0: its hold
    // is in a slot the old receiver refilled after fencing it (its copy may still come), or it is
    // between its hold and the cursor CAS that fails on Closed. Either way it is waited for.
    const live = liveHolders(path, i32, held);
    if (live.length === 0) {
      report.voided = held;
      break;
    }
    if (clock.now() - t0 >= waitMs) {
      throw new RowanError(
        ErrorCodes.SENDERS_HOLDING,
        `the previous receive queue at ${path} still has ${held} reservation(s) whose copy has not finished after ${waitMs} ms, held by live process(es) ${live.join(', ')}: ` +
          'starting now would let a late copy land in a recycled segment; start again once they finish or exit',
        { held, pids: live },
      );
    }
    await sleep(STALE_HOLDS_POLL_MS);
  }
  report.waitedMs = clock.now() - t0;
}

/** Copies still to come in the queue: the hold counts of every posted-ring slot, fenced or not. */
function heldCopies(i32: Int32Array): number {
  const ring = i32[L.W_RING]!;
  let n = 0;
  for (let s = 0; s < ring; s++) n += Atomics.load(i32, L.holdsWord(ring, s)) & L.HOLD_COUNT_MASK; // as the senders last published
  return n;
}

/** Step 4: fence every slot's holds, so that no release of the old incarnation succeeds. */
function fenceAll(i32: Int32Array): void {
  const ring = i32[L.W_RING]!;
  // Publishes the fence: a sender's later hold or release CAS on the word fails.
  for (let s = 0; s < ring; s++) Atomics.or(i32, L.holdsWord(ring, s), L.HOLD_FENCED);
}

/**
 * The live processes whose senders may still copy into the queue: named senders holding a hold
 * (read after the hold counts, so a hold counted there is either in its sender's slot or released),
 * whose process still maps the queue; while `held` counts any, every process mapping it when senders
 * attached unnamed.
 */
function liveHolders(path: string, i32: Int32Array, held: number): number[] {
  const ring = i32[L.W_RING]!;
  const cqCap = i32[L.W_CQ_CAP]!;
  const attached = Atomics.load(i32, L.W_CQ_ATTACHED); // senders that ever attached
  const file = identify(path);
  if (!file) return [];
  if (attached > L.SENDER_SLOTS && held > 0) return mappers(file);
  const pids = new Set<number>();
  for (let n = 0; n < Math.min(attached, L.SENDER_SLOTS); n++) {
    const w = L.senderSlotWord(ring, cqCap, n);
    if (Atomics.load(i32, w + L.SENDER_HOLDING) <= 0) continue; // its holds as it last published them
    const pid = Atomics.load(i32, w + L.SENDER_PID); // published at its attach, before any hold
    if (pid === process.pid || mapsFile(pid, file)) pids.add(pid);
  }
  return [...pids];
}

interface FileId {
  ino: number;
  path: string;
}

function identify(path: string): FileId | null {
  try {
    return { ino: statSync(path).ino, path: realpathSync(path) };
  } catch {
    return null;
  }
}

/** Processes other than this one whose memory maps `file` (from /proc/PID/maps; Linux). */
function mappers(file: FileId): number[] {
  const pids: number[] = [];
  for (const name of readdirSync('/proc')) {
    const pid = Number(name);
    if (Number.isInteger(pid) && pid !== process.pid && mapsFile(pid, file)) pids.push(pid);
  }
  return pids;
}

/** Whether process `pid` is alive and maps `file`. A process we may not look at is counted as one
 *  (it could not have opened our 0600 queue unless it runs as root, but it is not ours to rule out). */
function mapsFile(pid: number, file: FileId): boolean {
  let maps: string;
  try {
    maps = readFileSync(`/proc/${pid}/maps`, 'utf8');
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EACCES';
  }
  // One line per mapping: "address perms offset dev inode path".
  return maps.split('\n').some((line) => Number(line.split(/\s+/, 6)[4]) === file.ino && line.includes(file.path));
}
