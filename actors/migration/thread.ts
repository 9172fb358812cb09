// Migration actor (§4.6): later, for each shard moved to this node, it scans the source's segments and
// installs their entries in the shard's new index, and rolls interrupted moves back. Today it starts,
// pins, answers pings and runs a tick at the resharding period, which only counts (no migration list).
import { defineActor, runActor } from '../../runtime/actor.js';
import type { MigrationInbound } from './protocol.js';

export const migrationActor = defineActor<MigrationInbound>({
  role: 'migration',
  accepts: [],
  handlers: {},
  tickMs: (c) => c.resharding.periodMs,
  tick: () => {},
});

runActor(migrationActor);
