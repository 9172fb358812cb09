// Fencing the shm senders of a receiver's previous incarnation at its restart (issue 24, hazard 4).
//
// A sender lands a write in three steps -- reserve a slot (a hold on its buffer first, srq-layout.ts),
// copy, release the hold -- and may be descheduled for any time between them (a thread or a process,
// not an RNIC's DMA engine). When the receiving node restarts, cold start recycles the b-log segments
// the previous incarnation posted (one nothing landed in is freed at once, actors/kv/recovery.ts), so
// the restart must know that no copy reserved in the old queue is still to come before it recycles:
//   1. close the old queue: state Closed and the cursor's Closed bit (every later cursor CAS fails);
//   2. wait until the old queue's holds are all 0. A hold this wait did not see was taken after step 1
//      (holds are taken before the cursor CAS: the Dekker pair of usedBelow, srq-layout.ts), so its
//      CAS failed on the Closed bit and it copies nothing. Or until no other process maps the old
//      queue: a sender copies within one synchronous landOnce, its queue mapped throughout, so a
//      sender that no longer maps it is dead and copies nothing either;
//   3. holds still there after `waitMs` while a live process maps the queue -- a sender stopped
//      (SIGSTOP) or starved that long -- refuse to start (ROWAN_ERR_SENDERS_HOLDING): its copy would
//      land in whatever the segment became. A later start finds the copy done or the sender gone;
//      the copy, made before anything was recycled, is then part of the b-log cold start scans.
//   4. otherwise fence every hold word (no release made on the old queue succeeds from now on) and
//      remove the file.
// An older queue version has no holds: it is closed and removed as before.
import { existsSync, readdirSync, readFileSync, realpathSync, statSync, unlinkSync } from 'node:fs';
import { setTimeout as sleepMs } from 'node:timers/promises';
import { PmemMapping } from '../../native/pmem2.js';
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
  /** Processes other than this one that map the file `path` (default: read from /proc). */
  mappers?: (path: string) => number[];
}

export interface StaleQueueReport {
  /** Holds (copies to come) found when the queue was closed. */
  holds: number;
  /** How long the restart waited for them. */
  waitedMs: number;
  /** Holds left by senders that no longer map the queue (they died mid-write): void. */
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
  let map: PmemMapping | null = null;
  try {
    map = PmemMapping.map(path, { mode: 'pagecache', label: path });
  } catch {
    // Not a file we can map: no sender can hold anything in it either.
  }
  try {
    const i32 = map && map.size >= L.HEADER_BYTES ? new Int32Array(map.bytes.buffer, map.bytes.byteOffset, map.size >> 2) : null;
    if (i32 && Atomics.load(i32, L.W_MAGIC) === L.SRQ_MAGIC) {
      Atomics.store(i32, L.W_STATE, L.SrqState.Closed); // older builds' senders stop at this
      if (i32[L.W_VERSION] === L.SRQ_VERSION) {
        // Publishes Closed to every sender: each later reservation CAS fails (the hold it took just
        // before is then released, and nothing is copied).
        Atomics.or(i32, L.W_CURSOR, L.CURSOR_CLOSED);
        await drainHolds(path, i32, report, o);
        fenceAll(i32);
      }
    }
  } finally {
    map?.close();
  }
  try {
    unlinkSync(path);
  } catch {
    /* already gone */
  }
  return report;
}

/** Step 2/3 of the header: wait for the holds, bounded; throw if a live sender keeps one. */
async function drainHolds(path: string, i32: Int32Array, report: StaleQueueReport, o: StaleQueueOptions): Promise<void> {
  const clock = o.clock ?? monotonicClock;
  const sleep = o.sleep ?? ((ms: number) => sleepMs(ms));
  const mappers = o.mappers ?? otherMappers;
  const waitMs = o.waitMs ?? STALE_HOLDS_WAIT_MS;
  const t0 = clock.now();
  report.holds = heldCopies(i32);
  for (let held = report.holds; held > 0; held = heldCopies(i32)) {
    const live = mappers(path);
    if (live.length === 0) {
      report.voided = held;
      break;
    }
    if (clock.now() - t0 >= waitMs) {
      throw new RowanError(
        ErrorCodes.SENDERS_HOLDING,
        `the previous receive queue at ${path} still has ${held} reservation(s) whose copy has not finished after ${waitMs} ms, and process(es) ${live.join(', ')} still map it: ` +
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

/** Processes other than this one whose memory maps `path` (from /proc/PID/maps; Linux). */
export function otherMappers(path: string): number[] {
  let ino: number;
  let real: string;
  try {
    ino = statSync(path).ino;
    real = realpathSync(path);
  } catch {
    return [];
  }
  const pids: number[] = [];
  for (const name of readdirSync('/proc')) {
    const pid = Number(name);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    let maps: string;
    try {
      maps = readFileSync(`/proc/${pid}/maps`, 'utf8');
    } catch {
      continue; // gone meanwhile, or not ours to read (then it cannot open our 0600 queue either)
    }
    if (maps.split('\n').some((line) => mapsLine(line, ino, real))) pids.push(pid);
  }
  return pids;
}

/** Whether one /proc/PID/maps line ("addr perms offset dev inode path") maps inode `ino` at `path`. */
function mapsLine(line: string, ino: number, path: string): boolean {
  const f = line.split(/\s+/, 6);
  return f.length >= 6 && Number(f[4]) === ino && line.includes(path);
}
