// Worker actor (§4.1, §5.1). In a node that serves a cluster (start message carries `kv`) it listens on
// its client port and serves PUT/GET/DEL: append to its t-log, replicate every entry to the backups'
// b-logs through Rowan, update the shard index once all backups acknowledged (actors/worker/kv.ts).
// Without `kv` it only starts, pins and answers pings. Every CommitVer period it will write
// <shard, CommitVer> to the backups (§4.4, commit tracking); today that tick only counts.
import { defineActor, runActor } from '../../runtime/actor.js';
import type { WorkerInbound } from './protocol.js';
import { startKvServing, type KvServing } from './serve.js';

let serving: KvServing | null = null;

export const workerActor = defineActor<WorkerInbound>({
  role: 'worker',
  accepts: [],
  handlers: {},
  init: async (ctx) => {
    if (!ctx.kv) return;
    serving = await startKvServing(ctx);
    ctx.log.info({ endpoint: serving.endpoint, node: ctx.kv.nodeId }, `worker ${ctx.name} serving clients`);
    return { endpoint: serving.endpoint };
  },
  tickMs: (c) => c.replication.commitVerPeriodMs,
  tick: () => {},
  drain: async () => {
    await serving?.close();
    serving = null;
  },
});

runActor(workerActor);
