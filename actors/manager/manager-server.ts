// The configuration manager's TCP port: one connection per node's lease client, JSON lines
// (./protocol.ts). A connection is bound to the node id of its first hello/renew; its close is the
// manager's fast failure hint (a SIGKILLed process's sockets are closed by its kernel at once).
// Before any of that the peer proves the cluster secret (../shared/manager-auth.ts): until it has, no
// message reaches the manager, and anything but the handshake closes the connection.
import type { Server, Socket } from 'node:net';
import { createServer, type TlsMaterial } from '../../runtime/net/tls.js';
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import { ManagerAuthGate, encodeAuth } from '../shared/manager-auth.js';
import { defaultTimings } from '../../config/timings.js';
import type { Logger } from '../../config/base/log.js';
import type { ConfigManager, Link } from './manager.js';
import { LineReader, encodeLine, type NodeToManager } from './protocol.js';
import { answerAdmin } from './admin.js';
import type { AdminRequest } from '../shared/manager-protocol.js';

export interface ManagerServer {
  port: number;
  close(): Promise<void>;
}

/** `secret`: the cluster secret every connection must prove first; null = none asked (--no-auth).
 *  `tls`: mutual TLS (runtime/net/tls.ts) -- a node without a certificate the CA signed is refused
 *  before the handshake; null = plain TCP. */
export async function serveManager(cm: ConfigManager, host: string, port: number, log: Logger, secret: Uint8Array | null = null, tls: TlsMaterial | null = null): Promise<ManagerServer> {
  const sockets = new Set<Socket>();
  const refusedTls = (err: Error) => log.warn({ err: err.message }, 'manager: refused a peer whose TLS handshake failed');
  const server: Server = createServer(tls, 'mutual', { noDelay: true }, (socket) => {
    sockets.add(socket);
    const reader = new LineReader<NodeToManager>();
    const gate = new ManagerAuthGate(secret);
    const deadline = gate.authed ? null : setTimeout(() => socket.destroy(), defaultTimings.managerHandshakeMs).unref();
    let node: number | null = null;
    const link: Link = {
      send: (m) => {
        if (!socket.destroyed) socket.write(encodeLine(m));
      },
    };
    let refused = false;
    socket.on('data', (chunk: Buffer) => {
      if (refused) return;
      let msgs: NodeToManager[];
      try {
        msgs = reader.push(chunk);
      } catch (err) {
        log.warn({ err: (err as Error).message, node }, 'manager: dropping a connection that sent a bad line');
        socket.destroy();
        return;
      }
      for (const m of msgs) {
        if (!gate.authed || (typeof m === 'object' && m !== null && (m as { t?: unknown }).t === 'auth-hello')) {
          try {
            for (const line of gate.accept(m)) socket.write(line);
          } catch (err) {
            const e = err instanceof RowanError ? err : new RowanError(ErrorCodes.BAD_FRAME, String(err));
            log.warn({ peer: socket.remoteAddress, code: e.code }, `manager: refusing an unauthenticated connection: ${e.message}`);
            socket.end(encodeAuth({ t: 'auth-error', code: e.code, message: e.message }));
            setTimeout(() => socket.destroy(), 1000).unref();
            refused = true; // nothing more from this peer is read
            return;
          }
          if (gate.authed && deadline) clearTimeout(deadline);
          continue;
        }
        // An operator's tool (rowan reshard / status), authenticated like a node, holding no lease.
        if (typeof m === 'object' && m !== null && (m as { t?: unknown }).t === 'admin') {
          if (node === null) answerAdmin(cm, m as unknown as AdminRequest, (r) => !socket.destroyed && socket.write(encodeLine(r)));
          continue;
        }
        if (typeof m !== 'object' || m === null || typeof (m as { node?: unknown }).node !== 'number') continue;
        node ??= m.node;
        cm.onMessage(m, link);
      }
    });
    socket.on('error', () => {});
    socket.on('close', () => {
      if (deadline) clearTimeout(deadline);
      sockets.delete(socket);
      if (node !== null) cm.onClose(node, link);
    });
  }, refusedTls);
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => reject(new RowanError(ErrorCodes.BAD_CONFIG, `manager cannot listen on ${host}:${port}: ${err.code ?? err.message}`)));
    server.listen(port, host, () => resolve());
  });
  const addr = server.address();
  return {
    port: typeof addr === 'object' && addr ? addr.port : port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      }),
  };
}
