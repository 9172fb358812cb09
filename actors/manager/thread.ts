// Configuration manager actor (§4.5): grants leases to the cluster's nodes, detects a failed node and
// runs phase 1 of the failover (./manager.ts). `rowan manager` runs it alone in a process of its own,
// and `rowan cluster` starts that process before the nodes. Its start payload (ManagerStart) names the
// cluster file (the embedded configuration store), the port and the lease timing.
import { setTimeout as sleep } from 'node:timers/promises';
import { defineActor, runActor } from '../../runtime/actor.js';
import { FileConfigStore } from '../../config/store.js';
import { ConfigManager } from './manager.js';
import { leaseTiming } from './leases.js';
import type { ManagerInbound, ManagerStart } from './protocol.js';
import { serveManager, type ManagerServer } from './server.js';

let cm: ConfigManager | null = null;
let server: ManagerServer | null = null;

export const managerActor = defineActor<ManagerInbound>({
  role: 'manager',
  accepts: [],
  handlers: {},
  init: async (ctx) => {
    const s = ctx.app as ManagerStart;
    const store = new FileConfigStore(s.clusterFile);
    const timing = leaseTiming(s.leaseMs, s.renewMs, s.driftMs);
    cm = new ConfigManager(store, store.readSync(), timing, ctx.clock, ctx.log, (ms) => sleep(ms));
    server = await serveManager(cm, s.host, s.port, ctx.log);
    ctx.log.info({ port: server.port, ...timing, term: cm.config().term, members: cm.members() }, `configuration manager listening on ${s.host}:${server.port}`);
    return { endpoint: { host: s.host, port: server.port } };
  },
  // Lease expiry is checked a few times per renewal period.
  tickMs: () => 5,
  tick: () => cm?.tick(),
  drain: async () => {
    cm?.close();
    await server?.close();
    server = null;
    cm = null;
  },
});

runActor(managerActor);
