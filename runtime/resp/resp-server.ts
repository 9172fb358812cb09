// A RESP listener (Redis protocol, DESIGN §7): TCP connections speaking RESP2/RESP3 to a RespHandler.
// Generic: no key-value knowledge here (the KV commands are actors/worker/resp/).
import type { Server } from 'node:net';
import { createServer, type TlsMaterial } from '../net/tls.js';
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import type { Logger } from '../../config/base/log.js';
import { RespConnection, type RespConnStats, type RespHandler } from './resp-connection.js';
import type { RespLimits } from './limits.js';

export interface RespServer {
  port: number;
  stats: RespConnStats;
  connections: ReadonlySet<RespConnection>;
  close(): Promise<void>;
}

export interface RespServeOptions {
  host: string;
  port: number;
  handler: RespHandler;
  limits: RespLimits;
  /** Connection ids are idBase + 1, idBase + 2, ... (unique per node when bases differ per worker). */
  idBase?: number;
  log?: Logger;
  /** TLS (server certificate only: Redis clients present none); null or absent: plain TCP. */
  tls?: TlsMaterial | null;
  /** The port has a password: connections start unauthenticated, under the pre-auth bounds and the
   *  deadline of `limits` until the handler marks them authenticated. */
  authRequired?: boolean;
}

export async function serveResp(o: RespServeOptions): Promise<RespServer> {
  const stats: RespConnStats = { connected: 0, accepted: 0, commands: 0, protocolErrors: 0 };
  const conns = new Set<RespConnection>();
  let nextId = o.idBase ?? 0;
  const server = createServer(o.tls ?? null, 'server', { noDelay: true }, (socket) => {
    if (conns.size >= o.limits.connectionsMax) {
      socket.end('-ERR max number of clients reached\r\n');
      return;
    }
    stats.connected++;
    stats.accepted++;
    conns.add(new RespConnection(socket, ++nextId, o.handler, o.limits, stats, (c) => conns.delete(c), o.authRequired ?? false));
  });
  server.on('error', (e) => o.log?.error({ err: e }, 'resp: listener error'));
  await new Promise<void>((resolve, reject) => {
    server.once('error', (e: NodeJS.ErrnoException) => reject(new RowanError(ErrorCodes.BAD_CONFIG, `cannot listen for RESP clients on ${o.host}:${o.port}: ${e.code ?? e.message}`)));
    server.listen(o.port, o.host, () => resolve());
  });
  const addr = server.address();
  const port = typeof addr === 'object' && addr ? addr.port : o.port;
  let closing: Promise<void> | null = null;
  return {
    port,
    stats,
    connections: conns,
    close() {
      closing ??= closeServer(server, conns);
      return closing;
    },
  };
}

function closeServer(server: Server, conns: Set<RespConnection>): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    for (const c of conns) c.destroy();
  });
}
