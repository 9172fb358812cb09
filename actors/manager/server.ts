// The configuration manager's TCP port: one connection per node's lease client, JSON lines
// (./protocol.ts). A connection is bound to the node id of its first hello/renew; its close is the
// manager's fast failure hint (a SIGKILLed process's sockets are closed by its kernel at once).
import { createServer, type Server, type Socket } from 'node:net';
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import type { Logger } from '../../config/base/log.js';
import type { ConfigManager, Link } from './manager.js';
import { LineReader, encodeLine, type NodeToManager } from './protocol.js';
import { answerAdmin } from './admin.js';
import type { AdminRequest } from '../kv/manager-protocol.js';

export interface ManagerServer {
  port: number;
  close(): Promise<void>;
}

export async function serveManager(cm: ConfigManager, host: string, port: number, log: Logger): Promise<ManagerServer> {
  const sockets = new Set<Socket>();
  const server: Server = createServer({ noDelay: true }, (socket) => {
    sockets.add(socket);
    const reader = new LineReader<NodeToManager>();
    let node: number | null = null;
    const link: Link = {
      send: (m) => {
        if (!socket.destroyed) socket.write(encodeLine(m));
      },
    };
    socket.on('data', (chunk: Buffer) => {
      let msgs: NodeToManager[];
      try {
        msgs = reader.push(chunk);
      } catch (err) {
        log.warn({ err: (err as Error).message, node }, 'manager: dropping a connection that sent a bad line');
        socket.destroy();
        return;
      }
      for (const m of msgs) {
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
      sockets.delete(socket);
      if (node !== null) cm.onClose(node, link);
    });
  });
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
