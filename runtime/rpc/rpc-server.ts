// A worker's client port (DESIGN §7, §4.1 "the client sends an RPC to a worker thread"): one TCP
// listener whose connections speak the frames of ./frames.ts to a KvHandler. The per-connection logic
// (handshake, pipelining, flow control, bad input) lives in ./rpc-connection.ts.
import type { Server } from 'node:net';
import { createServer, type TlsMaterial } from '../net/tls.js';
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import type { Logger } from '../../config/base/log.js';
import { errorResponse } from './frames.js';
import { ClientConnection, newServerStats, type ConnectionOptions, type ServerStats } from './rpc-connection.js';
import type { FrameLimits } from './frames-layout.js';
import type { KvHandler } from './handler.js';

export type { KvHandler } from './handler.js';
export type { ServerStats } from './rpc-connection.js';

export interface ServeOptions {
  /** Address to listen on; 127.0.0.1 for a local cluster. */
  host?: string;
  /** 0 = any free port (the bound one is returned). */
  port: number;
  handler: KvHandler;
  /** The cluster secret other nodes (HELLO role peer: REPLICATE, COPY_SHARD) must prove before any
   *  request runs (docs/security.md); null with `password` null serves anyone (rowan start
   *  --no-auth, and tests of the protocol itself). */
  secret: Uint8Array | null;
  /** The client password clients (HELLO role client) must prove; absent: null. */
  password?: Uint8Array | null;
  /** TLS (runtime/net/tls.ts, mode 'request'): clients verify this node; a peer must also present a
   *  certificate the CA signed before its HELLO of role peer is taken. Absent or null: plain TCP. */
  tls?: TlsMaterial | null;
  /** keyBytesMax and valueBytesMax (config/limits.ts); they also bound the frame size. */
  limits: FrameLimits;
  log?: Logger;
  inFlightMax?: number;
  readsInFlightMax?: number;
  writeBytesMax?: number;
  /** Connections at once; one more is answered TOO_MANY_CONNECTIONS and closed. */
  connectionsMax?: number;
  handshakeMs?: number;
  idleMs?: number;
  lingerMs?: number;
}

export interface RpcServer {
  port: number;
  stats: ServerStats;
  /** Stop listening and drop every connection (requests still running are not answered). */
  close(): Promise<void>;
}

export const RPC_DEFAULTS = Object.freeze({
  host: '127.0.0.1',
  inFlightMax: 1024,
  readsInFlightMax: 16,
  writeBytesMax: 4 * 1024 * 1024,
  connectionsMax: 1024,
  handshakeMs: 10_000,
  idleMs: 5 * 60_000,
  lingerMs: 2_000,
});

export async function serveClients(o: ServeOptions): Promise<RpcServer> {
  const opts: ConnectionOptions = {
    handler: o.handler,
    limits: { keyBytesMax: o.limits.keyBytesMax, valueBytesMax: o.limits.valueBytesMax },
    log: o.log,
    inFlightMax: o.inFlightMax ?? RPC_DEFAULTS.inFlightMax,
    readsInFlightMax: o.readsInFlightMax ?? RPC_DEFAULTS.readsInFlightMax,
    writeBytesMax: o.writeBytesMax ?? RPC_DEFAULTS.writeBytesMax,
    handshakeMs: o.handshakeMs ?? RPC_DEFAULTS.handshakeMs,
    idleMs: o.idleMs ?? RPC_DEFAULTS.idleMs,
    lingerMs: o.lingerMs ?? RPC_DEFAULTS.lingerMs,
    secret: o.secret,
    password: o.password ?? null,
    tls: (o.tls ?? null) !== null,
  };
  // A port with one credential and not the other would serve half its callers unauthenticated.
  if ((opts.secret === null) !== (opts.password === null))
    throw new RowanError(ErrorCodes.BAD_CONFIG, 'a client port needs both the cluster secret and the client password, or neither (--no-auth)');
  const stats = newServerStats();
  const conns = new Set<ClientConnection>();
  // allowHalfOpen: a client may send its requests and shut down its sending side; it still gets answers.
  const connectionsMax = o.connectionsMax ?? RPC_DEFAULTS.connectionsMax;
  const server = createServer(o.tls ?? null, 'request', { allowHalfOpen: true, noDelay: true }, (socket) => {
    if (conns.size >= connectionsMax) {
      // Refused with a reason the client can read (request id 0), not a bare reset.
      stats.refused++;
      const e = new RowanError(ErrorCodes.TOO_MANY_CONNECTIONS, `this port already serves ${connectionsMax} connections (clients.connectionsMax)`);
      socket.on('error', () => {});
      socket.end(errorResponse(0, 0, e));
      setTimeout(() => socket.destroy(), opts.lingerMs).unref();
      return;
    }
    conns.add(new ClientConnection(socket, opts, stats, (c) => conns.delete(c)));
  }, (err) => {
    stats.tlsRefused++;
    o.log?.debug({ err: err.message }, 'rpc: a TLS handshake failed (a plaintext client, or a certificate the CA did not sign)');
  });
  server.on('error', (err) => o.log?.error({ err }, 'rpc: client listener error'));
  const host = o.host ?? RPC_DEFAULTS.host;
  await listen(server, o.port, host);
  const addr = server.address();
  const port = typeof addr === 'object' && addr ? addr.port : o.port;
  o.log?.info({ host, port }, 'rpc: serving clients');
  let closing: Promise<void> | null = null;
  return {
    port,
    stats,
    close() {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const c of conns) c.destroy();
      });
      return closing;
    },
  };
}

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException) => {
      reject(new RowanError(ErrorCodes.BAD_CONFIG, `cannot listen for clients on ${host}:${port}: ${err.code ?? err.message}`));
    };
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve();
    });
  });
}
