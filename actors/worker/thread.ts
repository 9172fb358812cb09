// Worker actor (§4.1, §5.1). In a node that serves a cluster (start message carries `kv`) it listens on
// its client port and serves PUT/GET/DEL: append to its t-log, replicate every entry to the backups'
// b-logs through Rowan, update the shard index once all backups acknowledged (actors/worker/kv.ts).
// Without `kv` it only starts, pins and answers pings. Every CommitVer period it writes
// <shard, CommitVer> of the shards its node is primary of to their backups (§4.4, actors/shared/commit.ts).
// A period that wrote nothing, with no request running and no new configuration, is idle: the runtime
// then waits longer (up to runtime.idleTickMs), and the next PUT/DEL brings the period back.
import { defineActor, runActor } from '../../runtime/actor.js';
import { I64 } from '../../shm/counters.js';
import type { WorkerInbound } from './protocol.js';
import { kvOf } from '../shared/node-shared.js';
import { startKvServing, type KvServing } from './serve.js';

let serving: KvServing | null = null;
let disseminating = false;
let following = false;
/** CommitVers the last finished dissemination wrote (-1: none finished yet, or it failed). */
let lastSent = -1;
/** The configuration term the previous tick saw. */
let seenTerm = -1;

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
  idleTickMs: (c) => c.runtime.idleTickMs,
  tick: (ctx) => {
    const s = serving;
    if (!s) return 'idle'; // a node without a cluster: no CommitVer, no configuration
    const term = s.worker.term();
    // Following the configuration runs on its own: dropping a failed node's replication links is what
    // ends writes (and a dissemination) hanging on a link to a node cut off rather than dead, whose
    // TCP connection does not close (docs/failover.md "Partitions"); behind a stuck dissemination it never ran.
    if (!following) {
      following = true;
      s.followConfig()
        .catch((err: unknown) => ctx.log.warn({ err: (err as Error).message }, 'following the configuration failed; retried next period'))
        .finally(() => (following = false));
    }
    // Active expiry (resp/expiry-sweep.ts): a bounded step; dormant (no work) while no key has a deadline.
    const expiring = s.resp?.expiry.tick() ?? false;
    if (disseminating) return;
    const idle = lastSent === 0 && s.worker.inFlight === 0 && term === seenTerm && !expiring;
    seenTerm = term;
    disseminating = true;
    s.worker.disseminateCommitVers()
      .then((n) => (lastSent = n), (err: unknown) => {
        lastSent = -1;
        ctx.log.warn({ err: (err as Error).message }, 'CommitVer dissemination failed; retried next period');
      })
      .finally(() => {
        disseminating = false;
        ctx.counters.local[I64.COMMITVERS_SENT] = s.worker.commit?.sentCount ?? 0;
        ctx.counters.local[I64.PM_FULL_REFUSALS] = s.worker.stats.pmFull;
      });
    return idle ? 'idle' : undefined;
  },
  drain: async () => {
    const keep = await serving?.close();
    serving = null;
    return keep;
  },
});

runActor(workerActor);
