// Migration actor (§4.6): copies shards to this node. For every shard the committed configuration marks
// this node catching up on -- a new backup (re-replication, §4.5 phase 3) or the target of a copy move
// (actors/manager/copy-moves.ts) -- it streams the shard's entries from the primary in large batches
// (COPY_SHARD, ./copy.ts), persists them in its own log and indexes them, and publishes the finished
// copy (../shared/copy-reports.ts) for the node's main thread to report to the manager. Its tick starts
// the copies a new configuration asks for and publishes its counters (copies running and done,
// entries, bytes, copy time: `rowan status`); a change of the configuration wakes it. A node without a
// configuration manager copies nothing, and the tick then reports idle.
import { defaultLimits } from '../../config/limits.js';
import { MIGRATION_LOG_OWNER } from '../../config/base/ids.js';
import { defineActor, runActor, type ActorContext } from '../../runtime/actor.js';
import { I64 } from '../../shm/counters.js';
import { OwnerRole } from '../../shm/pool.js';
import { TLog } from '../../shm/tlog.js';
import { ConfigCell } from '../shared/config-cell.js';
import { CopyReports } from '../shared/copy-reports.js';
import { attachKvShared, kvOf } from '../shared/node-shared.js';
import { CatchUp } from './copy.js';
import type { MigrationInbound } from './protocol.js';

let copier: CatchUp | null = null;
let cell: ConfigCell | null = null;
let seenTerm = -1;
let watching = true;

function publish(c: CatchUp, ctx: ActorContext): void {
  const l = ctx.counters.local;
  l[I64.MIGRATION_COPIES] = c.copies;
  l[I64.MIGRATION_COPIED] = c.done.length;
  l[I64.MIGRATION_ENTRIES] = c.totals.entries;
  l[I64.MIGRATION_BYTES] = c.totals.bytes;
  l[I64.MIGRATION_COPY_MS] = Math.round(c.done.reduce((a, d) => a + d.ms, 0));
}

/** Wake the tick on every configuration change (a copy to start or to end). */
async function watch(ctx: ActorContext, cl: ConfigCell): Promise<void> {
  while (watching) {
    await cl.changed(1000);
    if (cl.term() !== seenTerm) ctx.wakeTick();
  }
}

export const migrationActor = defineActor<MigrationInbound>({
  role: 'migration',
  accepts: [],
  handlers: {},
  init: (ctx) => {
    const kv = kvOf(ctx);
    if (!kv?.copies) return;
    cell = ConfigCell.attach(kv.cell);
    const shared = attachKvShared(kv.shared, ctx.pool.region);
    let log: TLog | null = null;
    copier = new CatchUp({
      nodeId: kv.nodeId,
      cell,
      pool: ctx.pool,
      shared,
      log: () => (log ??= TLog.recover(ctx.pool, MIGRATION_LOG_OWNER, defaultLimits, OwnerRole.Digest)),
      limits: defaultLimits,
      clock: ctx.clock,
      logger: ctx.log,
      reports: CopyReports.attach(kv.copies.reports, kv.cluster.shardCount),
      secret: ctx.secret,
      tls: kv.copies.tls,
      kept: new Map(kv.copies.kept),
    });
    void watch(ctx, cell);
  },
  tickMs: () => 10,
  idleTickMs: (c) => c.runtime.idleTickMs,
  tick: (ctx) => {
    if (!copier || !cell) return 'idle';
    const term = cell.term();
    if (term !== seenTerm) {
      seenTerm = term;
      copier.onConfig(); // starts a copy for every new catching-up mark of this node
    }
    publish(copier, ctx);
    return copier.copies > 0 ? undefined : 'idle';
  },
  // A copy still writing to the pool keeps it mapped (it ends at its next request).
  drain: async () => {
    watching = false;
    copier?.stop();
    if (copier && !(await copier.ended(1000))) return 'keep-pool-mapped';
  },
});

runActor(migrationActor);
