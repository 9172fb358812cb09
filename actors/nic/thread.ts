// Nic actor: the soft RNIC of the tcp fabric (DESIGN §4), one per node, on its own worker_thread. It
// listens on `fabric.host:fabric.port` (port 0: any free port; the bound endpoint is reported in READY
// and `rowan status`) and executes peers' SEND/WRITE/READ/ALLOC on this node's pool and receive queue
// in arrival order, so worker and control actors stay off the replication data path.
import { loadTls } from '../../runtime/net/tls.js';
import { defineActor, runActor } from '../../runtime/actor.js';
import type { NicInbound } from './protocol.js';
import { NicServer } from './nic-server.js';
import { configView, type NicConfigView } from './membership.js';
import type { ActorContext } from '../../runtime/actor.js';
import { kvOf } from '../shared/node-shared.js';
import { ConfigCell } from '../shared/config-cell.js';

let server: NicServer | null = null;

/** On a ROWAN-KV node: its configuration cell's membership and named nodes (./membership.ts). */
function membership(ctx: ActorContext): Partial<NicConfigView> {
  const kv = kvOf(ctx);
  if (!kv) return {};
  const cell = ConfigCell.attach(kv.cell);
  return configView(() => cell.config(), kv.nodeId); // config() re-parses only when the term changed
}

export const nicActor = defineActor<NicInbound>({
  role: 'nic',
  accepts: [],
  handlers: {},
  init: async (ctx) => {
    const c = ctx.config;
    server = await NicServer.listen({
      dataDir: c.dataDir,
      pool: () => ctx.pool,
      clock: ctx.clock,
      host: c.fabric.host,
      port: c.fabric.port,
      log: ctx.log,
      secret: ctx.secret,
      tls: loadTls(c.tls),
      reserveSegments: c.gc.reserveSegments,
      remoteSegmentsMax: c.fabric.remoteSegmentsMax,
      authDeadlineMs: c.authDeadlineMs,
      ...membership(ctx),
    });
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
