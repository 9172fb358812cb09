// Nic actor: the soft RNIC of the tcp fabric (DESIGN §4), one per node, on its own worker_thread. It
// listens on `fabric.host:fabric.port` (port 0: any free port; the bound endpoint is reported in READY
// and `rowan status`) and executes peers' SEND/WRITE/READ/ALLOC on this node's pool and receive queue
// in arrival order, so worker and control actors stay off the replication data path.
import { loadTls } from '../../runtime/net/tls.js';
import { defineActor, runActor } from '../../runtime/actor.js';
import type { NicInbound } from './protocol.js';
import { NicServer } from './server.js';

let server: NicServer | null = null;

export const nicActor = defineActor<NicInbound>({
  role: 'nic',
  accepts: [],
  handlers: {},
  init: async (ctx) => {
    const c = ctx.config;
    server = await NicServer.listen({ dataDir: c.dataDir, pool: () => ctx.pool, clock: ctx.clock, host: c.fabric.host, port: c.fabric.port, log: ctx.log, secret: ctx.secret, tls: loadTls(c.tls) });
    ctx.log.info({ endpoint: server.endpoint }, `nic listening on ${server.endpoint.host}:${server.endpoint.port}`);
    return { endpoint: server.endpoint };
  },
  drain: async (ctx) => {
    if (!server) return;
    const s = server.stats();
    await server.close();
    ctx.log.info({ stats: s }, 'nic stopped');
  },
});

runActor(nicActor);
