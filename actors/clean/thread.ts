// Clean actor (§4.4): garbage-collects Committed segments whose live bytes fall under the threshold
// (actors/clean/gc.ts): copy live entries to its clean log, move their index items, and free the
// segment on a later pass once no reader can still hold an address in it. Each clean actor owns the
// segments s with s % cleanCount === its id, looks for work
// every gc.periodMs and whenever a digest actor announces newly committed segments. One pass runs at a
// time; while there is nothing to clean it looks less often (the runtime doubles the wait up to
// runtime.idleTickMs; a digest's batch brings the period back at once). (The actors are
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

/** The last run found nothing to clean and nothing waits for readers: the tick may look less often. */
let lastIdle = false;

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
      // segments waiting for readers keep the period.
      lastIdle = progress === 0 && c.waitingToFree === 0;
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
      kick(ctx);
      ctx.wakeTick();
    },
  },
  tickMs: (c) => c.gc.periodMs,
  idleTickMs: (c) => c.runtime.idleTickMs,
  tick: async (ctx) => {
    if (!cleaner) return 'idle'; // a node without a cluster: nothing to clean, ever
    kick(ctx);
    await running;
    return lastIdle ? 'idle' : undefined;
  },
  drain: async () => {
    const r = running;
    cleaner = null;
    await r?.catch(() => {});
  },
});

runActor(cleanActor);
