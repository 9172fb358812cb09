// Clean actor (§4.4): garbage-collects Committed segments whose live bytes fall under the threshold
// (actors/clean/gc.ts): copy live entries to its clean log, move their index items, and free the
// segment on a later pass once no reader can still hold an address in it. Each clean actor owns the
// segments s with s % cleanCount === its id, looks for work
// every gc.periodMs and whenever a digest actor announces newly committed segments. One pass runs at a
// time; while there is nothing to clean it looks less often, up to every 16 periods. (The actors are
// pinned threads of the runtime rather than a piscina pool: each owns a clean log and a read-epoch
// slot, so they are not interchangeable workers.) Clean actor 0 also runs the node's tombstone sweep
// (./tombstones.ts) for the shards this node has been primary of since it started, and for those it
// backs up under their persisted floors (written to the data dir's floors file).
import { defaultLimits } from '../../config/limits.js';
import { defineActor, runActor, type ActorContext } from '../../runtime/actor.js';
import { attachKvShared, kvOf } from '../shared/node-shared.js';
import { I64 } from '../../shm/counters.js';
import { RecordKind } from '../../shm/mailbox.js';
import { Cleaner } from './gc.js';
import { backupNow, primarySinceStart } from './tombstones.js';
import { FileFloorStore } from '../shared/floors.js';
import { dataDirFiles } from '../../config/base/files.js';
import type { CleanInbound } from './protocol.js';

let cleaner: Cleaner | null = null;
let running: Promise<void> | null = null;

function publish(c: Cleaner, ctx: ActorContext): void {
  const s = c.stats;
  const l = ctx.counters.local;
  l[I64.CLEAN_SEGMENTS] = s.segments;
  l[I64.CLEAN_RECLAIMED_BYTES] = s.reclaimedBytes;
  l[I64.CLEAN_COPIED_BYTES] = s.copiedBytes;
  l[I64.CLEAN_BUSY_US] = s.busyUs;
  l[I64.CLEAN_TOMBSTONES_DROPPED] = c.sweep?.stats.dropped ?? 0;
  l[I64.CLEAN_TOMBSTONES_DROPPED_BACKUP] = c.sweep?.stats.droppedOnBackup ?? 0;
}

/** Ticks to skip before looking for work again; doubles (up to IDLE_SKIP_MAX) while there is none. */
let idleSkip = 0;
let idleBackoff = 0;
const IDLE_SKIP_MAX = 16;

/** Run passes while they make progress, yielding to the actor's loop (pings, stop) between them. */
function kick(ctx: ActorContext): void {
  const c = cleaner;
  if (!c || running) return;
  const run = (async () => {
    let progress = 0;
    try {
      for (let p = c.pass(); cleaner === c && p > 0; p = c.pass()) {
        progress += p;
        publish(c, ctx);
        await new Promise((r) => setImmediate(r));
      }
    } finally {
      publish(c, ctx);
      // Nothing to clean: look less often (a candidate scan reads the whole meta table); emptied
      // segments waiting for readers, or a digest's hint, bring the period back at once.
      idleBackoff = progress > 0 || c.waitingToFree > 0 ? 0 : Math.min(IDLE_SKIP_MAX, Math.max(1, idleBackoff * 2));
      idleSkip = idleBackoff;
    }
  })();
  // Cleared once the run settles (it may settle before this assignment when there is nothing to do).
  running = run;
  void run.finally(() => {
    if (running === run) running = null;
  });
}

export const cleanActor = defineActor<CleanInbound>({
  role: 'clean',
  accepts: [RecordKind.SEGMENT_BATCH],
  init: (ctx) => {
    const kv = kvOf(ctx);
    if (!kv) return;
    const count = ctx.config.roles.find((r) => r.role === 'clean')?.count ?? 1;
    cleaner = new Cleaner({
      pool: ctx.pool,
      shared: attachKvShared(kv.shared, ctx.pool.region),
      limits: defaultLimits,
      id: ctx.id,
      count,
      liveThresholdPercent: ctx.config.gc.liveThresholdPercent,
      ...(ctx.id === 0
        ? {
            tombstones: {
              eligible: primarySinceStart(kv),
              backupEligible: backupNow(kv),
              floorStore: new FileFloorStore(dataDirFiles(ctx.config.dataDir).floors, ctx.pool.poolId),
              savedPoints: true, // the node's main thread saves them (actors/node/node-application.ts)
              now: () => ctx.clock.now(),
            },
          }
        : {}),
    });
  },
  handlers: {
    [RecordKind.SEGMENT_BATCH]: (_msg, _from, ctx) => {
      idleSkip = idleBackoff = 0;
      kick(ctx);
    },
  },
  tickMs: (c) => c.gc.periodMs,
  tick: (ctx) => {
    if (idleSkip > 0) idleSkip--;
    else kick(ctx);
  },
  drain: async () => {
    const r = running;
    cleaner = null;
    await r?.catch(() => {});
  },
});

runActor(cleanActor);
