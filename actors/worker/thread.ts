// Worker actor (§4.1, §5.1): later it serves client PUT/GET/DEL, appends to its t-log and replicates
// each entry to the backups' b-logs through Rowan; every CommitVer period it writes <shard, CommitVer>
// to the backups (§4.4). Today it starts, pins, answers pings and runs the CommitVer tick, which only
// counts (no shards exist yet).
import { defineActor, runActor } from '../../runtime/actor.js';
import type { WorkerInbound } from './protocol.js';

export const workerActor = defineActor<WorkerInbound>({
  role: 'worker',
  accepts: [],
  handlers: {},
  tickMs: (c) => c.replication.commitVerPeriodMs,
  tick: () => {},
});

runActor(workerActor);
