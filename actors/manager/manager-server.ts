// The configuration manager's TCP port: one connection per node's lease client, JSON lines
// (./protocol.ts) and, for renewals and grants, binary frames (../shared/manager-frames.ts). A connection is bound to the node id of its first hello/renew; its close is the
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
import { encodeLine, type NodeToManager } from './protocol.js';
import { GrantWriter, ManagerStreamReader } from '../shared/manager-frames.js';
import { answerAdmin } from './admin.js';
import { LINE_BYTES_MAX, type AdminRequest } from '../shared/manager-protocol.js';

/** Before the handshake a peer's lines are at most this long (an auth-hello or auth-proof is under 300 B). */
export const PREAUTH_LINE_BYTES_MAX = 4096;
/** Connections that have not authenticated yet, at most; one more is closed at once (nodes and tools
 *  authenticate within a round trip, so only strangers or a flood hold these). */
export const PREAUTH_CONNECTIONS_MAX = 64;

export interface ManagerServer {
  port: number;
  close(): Promise<void>;
}

/** `secret`: the cluster secret every connection must prove first; null = none asked (--no-auth).
 *  `tls`: mutual TLS (runtime/net/tls.ts) -- a node without a certificate the CA signed is refused
 *  before the handshake; null = plain TCP. */
export async function serveManager(cm: ConfigManager, host: string, port: number, log: Logger, secret: Uint8Array | null = null, tls: TlsMaterial | null = null): Promise<ManagerServer> {
  const sockets = new Set<Socket>();
  const unauthenticated = new Set<Socket>();
  const refusedTls = (err: Error) => log.warn({ err: err.message }, 'manager: refused a peer whose TLS handshake failed');
  const server: Server = createServer(tls, 'mutual', { noDelay: true }, (socket) => {
    if (secret !== null && unauthenticated.size >= PREAUTH_CONNECTIONS_MAX) {
      log.warn({ peer: socket.remoteAddress }, `manager: refusing a connection over the ${PREAUTH_CONNECTIONS_MAX} unauthenticated ones it holds`);
      return void socket.destroy();
    }
    sockets.add(socket);
    if (secret !== null) unauthenticated.add(socket);
    const authed = () => unauthenticated.delete(socket);
    serveConnection(socket, cm, log, secret, authed, () => (sockets.delete(socket), authed()));
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

/** The manager's side of one connection: JSON lines (./protocol.ts) until the node asked for frames;
 *  grants then go as frames from one buffer reused while the socket takes each write at once. */
function leaseLink(socket: Socket): Link {
  const grants = new GrantWriter();
  const link: Link = {
    send: (m) => {
      if (!socket.destroyed) socket.write(encodeLine(m));
    },
    grant: (seq, leaseMs, renewMs, driftMs, term) => {
      const b = link.frames ? grants.grant(seq, leaseMs, renewMs, driftMs, term) : null;
      if (b === null) return link.send({ t: 'grant', seq, leaseMs, renewMs, driftMs, term });
      if (socket.destroyed) return;
      socket.write(b);
      grants.sent(socket.writableLength);
    },
    frames: false,
  };
  return link;
}

/** One connection: the authentication handshake first, then a node's lease messages or a tool's admin requests. */
function serveConnection(socket: Socket, cm: ConfigManager, log: Logger, secret: Uint8Array | null, authed: () => void, closed: () => void): void {
  const reader = new ManagerStreamReader<NodeToManager>();
  const gate = new ManagerAuthGate(secret);
  if (!gate.authed) {
    reader.lineBytesMax = PREAUTH_LINE_BYTES_MAX;
    reader.limitNote = ' before the handshake';
  }
  const deadline = gate.authed ? null : setTimeout(() => socket.destroy(), defaultTimings.managerHandshakeMs).unref();
  let node: number | null = null;
  const link = leaseLink(socket);
  let refused = false;
  const onMessage = (m: NodeToManager): void => {
    if (refused) return;
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
      if (gate.authed) {
        if (deadline) clearTimeout(deadline);
        reader.lineBytesMax = LINE_BYTES_MAX;
        reader.limitNote = '';
        authed();
      }
      return;
    }
    // An operator's tool (rowan reshard / status), authenticated like a node, holding no lease.
    if (typeof m === 'object' && m !== null && (m as { t?: unknown }).t === 'admin') {
      if (node === null) answerAdmin(cm, m as unknown as AdminRequest, (r) => !socket.destroyed && socket.write(encodeLine(r)));
      return;
    }
    if (typeof m !== 'object' || m === null || typeof (m as { node?: unknown }).node !== 'number') return;
    node ??= m.node;
    if (m.t === 'hello' && m.frames === 1) link.frames = true;
    cm.onMessage(m, link); // a renew frame is one object the reader reuses: onMessage keeps only its numbers
  };
  socket.on('data', (chunk: Buffer) => {
    if (refused) return;
    try {
      reader.push(chunk, onMessage);
    } catch (err) {
      log.warn({ err: (err as Error).message, node }, `manager: dropping a connection that sent a bad line: ${(err as Error).message}`);
      socket.destroy();
    }
  });
  socket.on('error', () => {});
  socket.on('close', () => {
    if (deadline) clearTimeout(deadline);
    closed();
    if (node !== null) cm.onClose(node, link);
  });
}
