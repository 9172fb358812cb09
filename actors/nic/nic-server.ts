// The soft RNIC's listener: accepts peers' connections on one TCP port (one connection per sending
// actor, like one RC QP each) and runs every connection's verbs on this node's memory. It is plain
// code of a context (memory, clock, log injected), so a test can run it on any thread; the nic actor
// (thread.ts) runs it on its own worker_thread.
import type { Server, Socket } from 'node:net';
import { createServer, type TlsMaterial } from '../../runtime/net/tls.js';
import type { Clock } from '../../config/base/clock.js';
import type { Pool } from '../../shm/pool.js';
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import type { Logger } from '../../config/base/log.js';
import { NicConnection, newNicStats, type NicStats } from './nic-connection.js';
import { FRAME_BYTES_MAX_DEFAULT } from '../../runtime/fabric/nic-frames.js';
import { NIC_QUEUE_BYTES_MAX, type NicEndpoint } from './protocol.js';
import { defaultTimings } from '../../config/timings.js';
import { NicMemory, type NicMembership } from './nic-verbs.js';

/** How often an idle nic looks for a configuration that no longer names a node with regions here. */
const RELEASE_CHECK_MS = 100;

export interface NicServerOptions {
  /** The node's data dir: rowan.srq is attached from there. */
  dataDir: string;
  /** The node's pool (storage is injected: the nic actor passes its context's; standalone users
   *  open one). Called on first use; throws POOL_NOT_FOUND while the node has none yet. */
  pool: () => Pool;
  host: string;
  /** 0 = any free port (tests); the bound one is in `endpoint`. */
  port: number;
  frameBytesMax?: number;
  parkMs?: number;
  queueBytesMax?: number;
  log?: Logger;
  clock: Clock;
  /** The cluster secret every peer must prove before anything runs (docs/security.md);
   *  null serves every peer (rowan start --no-auth). */
  secret: Uint8Array | null;
  /** Free segments ALLOC leaves for garbage collection (config gc.reserveSegments; default 0 adds
   *  nothing to the reserve the pool was opened with). */
  reserveSegments?: number;
  /** The node's membership (see NicMemoryOptions.members); absent: no membership check. */
  members?: () => NicMembership;
  /** Per-peer-node region quota (NicMemoryOptions.remoteSegmentsMax; absent: a quarter of the pool). */
  remoteSegmentsMax?: number;
  /** Owner ids the configuration names (NicMemoryOptions.remoteOwners): other owners' regions are
   *  released before the next verb, and at most RELEASE_CHECK_MS after a change while no verb comes. */
  remoteOwners?: () => ReadonlySet<number>;
  /** Mutual TLS (runtime/net/tls.ts): every sender presents a certificate the cluster CA signed, or its
   *  handshake fails before a frame is read. Absent or null: plain TCP. */
  tls?: TlsMaterial | null;
  /** A peer that has not proven the secret this long after connecting is closed (default 10 s). */
  authDeadlineMs?: number;
}

/** Connections one NIC holds at once (every sending actor of every other node holds one); one more is
 *  closed at once, so strangers cannot pile up sockets. */
export const NIC_CONNECTIONS_MAX = 1024;

export class NicServer {
  readonly endpoint: NicEndpoint;
  private readonly conns = new Set<NicConnection>();
  private readonly counts: NicStats = newNicStats();
  private closing: Promise<void> | null = null;
  private readonly releaseTimer: NodeJS.Timeout | null;

  private constructor(
    private readonly server: Server,
    private readonly mem: NicMemory,
    host: string,
    port: number,
    watch: boolean,
    private readonly log: Logger | undefined,
  ) {
    this.endpoint = { host, port };
    this.releaseTimer = watch ? setInterval(() => this.releaseRemoved(), RELEASE_CHECK_MS).unref() : null;
  }

  private releaseRemoved(): void {
    try {
      const n = this.mem.releaseRemoved();
      if (n > 0) this.log?.info({ regions: n }, `nic: released ${n} region(s) of nodes the configuration no longer names`);
    } catch (err) {
      // No pool yet (the next verb or tick tries again) or stopping: nothing to release now.
      if (!(err instanceof RowanError)) throw err;
    }
  }

  static async listen(o: NicServerOptions): Promise<NicServer> {
    const now = () => o.clock.now();
    const frameBytesMax = o.frameBytesMax ?? FRAME_BYTES_MAX_DEFAULT;
    const mem = new NicMemory({
      dataDir: o.dataDir, pool: o.pool, frameBytesMax, now, reserveSegments: o.reserveSegments ?? 0,
      ...(o.members ? { members: o.members } : {}),
      ...(o.remoteSegmentsMax !== undefined ? { remoteSegmentsMax: o.remoteSegmentsMax } : {}),
      ...(o.remoteOwners ? { remoteOwners: o.remoteOwners } : {}),
    });
    const connOpts = { parkMs: o.parkMs ?? defaultTimings.nicParkMs, queueBytesMax: o.queueBytesMax ?? NIC_QUEUE_BYTES_MAX, frameBytesMax, now, secret: o.secret, authDeadlineMs: o.authDeadlineMs ?? 10_000 };
    let nic: NicServer | null = null;
    const onSocket = (socket: Socket) => {
      if (!nic || nic.closing) return void socket.destroy();
      if (nic.conns.size >= NIC_CONNECTIONS_MAX) {
        nic.counts.refused++;
        o.log?.warn({ peer: socket.remoteAddress }, `nic: refusing a connection over the ${NIC_CONNECTIONS_MAX} it holds`);
        return void socket.destroy();
      }
      nic.counts.connections++;
      const c = new NicConnection(socket, mem, connOpts, nic.counts, o.log, (gone) => nic!.conns.delete(gone));
      nic.conns.add(c);
    };
    const server = createServer(o.tls ?? null, 'mutual', { noDelay: true }, onSocket, (err) => o.log?.warn({ err: err.message }, 'nic: refused a peer whose TLS handshake failed'));
    await new Promise<void>((resolve, reject) => {
      server.once('error', (err: NodeJS.ErrnoException) => {
        mem.close();
        reject(new RowanError(ErrorCodes.FABRIC_UNAVAILABLE, `nic cannot listen on ${o.host}:${o.port}: ${err.code ?? err.message}`));
      });
      server.listen({ host: o.host, port: o.port }, () => resolve());
    });
    const addr = server.address();
    const port = typeof addr === 'object' && addr ? addr.port : o.port;
    nic = new NicServer(server, mem, o.host, port, o.remoteOwners !== undefined, o.log);
    return nic;
  }

  stats(): NicStats & { open: number } {
    return { ...this.counts, open: this.conns.size };
  }

  /** Stop accepting, drop every connection (their pending requests fail with PEER_GONE), unmap. */
  close(): Promise<void> {
    this.closing ??= new Promise<void>((resolve) => {
      if (this.releaseTimer) clearInterval(this.releaseTimer);
      this.server.close(() => resolve());
      for (const c of this.conns) c.destroy();
    }).then(() => this.mem.close());
    return this.closing;
  }
}
