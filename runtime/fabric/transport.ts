// How an actor reaches another node's Rowan receiver (CONVENTIONS 9: transport is injected). Roles get
// a Transport in their context and never pick a fabric class themselves; the node gives them the
// real one (shm, tcp or verbs, by the peer's fabric), the simulator (test/sim/) gives them its own.
import { loadTls } from '../net/tls.js';
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import type { FabricKind } from '../../config/base/fabric-kinds.js';
import type { RowanConfig } from '../../config/model.js';
import type { RowanConnection } from './fabric.js';
import { ShmConnection } from './shm.js';

/** Where a peer node's receiver is: its data dir (shm maps files from it) and its fabric endpoint. */
export interface PeerEndpoint {
  id: number;
  dataDir: string;
  fabric: { kind: FabricKind; host: string; port: number };
}

/** Who is sending: the id a tcp NIC grants one-sided regions to (the sending node's id). */
export interface SenderIdentity {
  senderId: number;
}

export interface Transport {
  /** A Rowan connection to `peer`'s receiver (rejects while it is not up; callers retry). */
  connect(peer: PeerEndpoint, self?: SenderIdentity): Promise<RowanConnection>;
}

/** The real fabrics, as the node's configuration sets them up. */
export function fabricTransport(config: RowanConfig, secret: Uint8Array | null): Transport {
  return {
    async connect(peer, self) {
      switch (peer.fabric.kind) {
        case 'shm':
          // (Concurrent mappings by several actors are retried inside native/pmem2.ts.)
          return ShmConnection.connect(peer.dataDir, { mode: config.persistence, retryMs: config.replication.retryMs });
        case 'tcp': {
          const { TcpConnection } = await import('./tcp.js'); // loaded by a thread that sends over tcp, not by every one
          return TcpConnection.connect({ host: peer.fabric.host, port: peer.fabric.port, retryMs: config.replication.retryMs, secret, tls: loadTls(config.tls), ...(self ? { senderId: self.senderId } : {}) });
        }
        case 'verbs': {
          // One RC QP to the peer's control actor, brought up over its side channel at fabric.port
          // (actors/control/verbs-blog-queue.ts); the device is the one this thread selected at start.
          // The side channel proves no secret and has no TLS yet (README status, docs/security.md).
          const { VerbsConnection } = await import('./verbs-sender.js');
          return VerbsConnection.connect({
            host: peer.fabric.host,
            port: peer.fabric.port,
            retryMs: config.replication.retryMs,
            ...(self ? { senderId: self.senderId } : {}),
          });
        }
        default:
          throw new RowanError(ErrorCodes.FABRIC_UNAVAILABLE, `node ${peer.id} asks for the ${peer.fabric.kind} fabric, which an actor cannot open here`);
      }
    },
  };
}
