// Worker actor (§4.1, §5.1). In a node that serves a cluster (start message carries `kv`) it listens on
// its client port and serves PUT/GET/DEL: append to its t-log, replicate every entry to the backups'
// b-logs through Rowan, update the shard index once all backups acknowledged (actors/worker/kv.ts).
// Without `kv` it only starts, pins and answers pings. Every CommitVer period it writes
// <shard, CommitVer> of the shards its node is primary of to their backups (§4.4, actors/kv/commit.ts).
import { defineActor, runActor } from '../../runtime/actor.js';
import { I64 } from '../../shm/counters.js';
import type { WorkerInbound } from './protocol.js';
import { kvOf } from '../kv/shared.js';
import { startKvServing, type KvServing } from './serve.js';

let serving: KvServing | null = null;
let disseminating = false;

export const workerActor = defineActor<WorkerInbound>({
  role: 'worker',
  accepts: [],
  handlers: {},
  init: async (ctx) => {
    const kv = kvOf(ctx);
    if (!kv) return;
    serving = await startKvServing(ctx);
    ctx.log.info({ endpoint: serving.endpoint, node: kv.nodeId }, `worker ${ctx.name} serving clients`);
    return { endpoint: serving.endpoint };
  },
  tickMs: (c) => c.replication.commitVerPeriodMs,
  tick: (ctx) => {
    const s = serving;
    if (!s || disseminating) return;
    disseminating = true;
    s.followConfig()
      .then(() => s.worker.disseminateCommitVers())
      .catch((err: unknown) => ctx.log.warn({ err: (err as Error).message }, 'CommitVer dissemination failed; retried next period'))
      .finally(() => {
        disseminating = false;
        ctx.counters.local[I64.COMMITVERS_SENT] = s.worker.commit?.sentCount ?? 0;
        ctx.counters.local[I64.PM_FULL_REFUSALS] = s.worker.stats.pmFull;
      });
  },
  drain: async () => {
    const keep = await serving?.close();
    serving = null;
    return keep;
  },
});

runActor(workerActor);
