// A worker's replication channels, one kind per cluster replication mode (ClusterConfig.replication,
// ROWAN §6.1, DESIGN §4 "Baseline replication modes"). All of them are opened on first use and a
// backup that restarted is reconnected once per write.
//
//   rowan   RowanConnection.write: the backup's MP-SRQ places the block in its one b-log; the backup's
//           digest indexes it online once the segment is Used (ROWAN-KV).
//   rwrite  the baseline ReplicationStream (actors/baselines/replication-writers.ts) over the Rowan connection: a
//   batch   remote log per (this worker, backup) made of regions from allocateRegion, written with
//   share   one-sided writeAt; batch adds 256 B / 5 µs batching; share uses one remote log per
//           (this node, backup) shared by the node's workers through a SharedArrayBuffer counter made
//           by the node (KvStart.shareLogs).
//   erda    the same with Erda's stream: rwrite's log plus an 8-byte index entry per key, written
//           before the object (actors/baselines/erda.ts); the backup is not indexed online either.
//           The backup does NOT index these writes online: its digest reads only the Rowan b-log. They
//           are durable in the backup's pool (the ack means persistent there), in segments of role
//           Remote, and a cold start indexes them (recovery scans every Control- and Remote-owned
//           segment with the hole-skipping b-log scan), so a backup learns them on restart (or a promotion would
//           have to scan them first -- not implemented for these baselines).
//   asymnvm AsymNVM (../baselines/asymnvm.ts): rwrite's remote log per (worker, backup), one checksummed
//           op-log record per operation -- a transaction's or a multi-block entry's blocks in one record,
//           one write (ReplicaChannel.writeMany). The backup applies the op log at its cold start
//           (../node/recovery.ts), record by record up to the first torn one.
//   rpc     RPC-KV: a REPLICATE request on a pipelined client connection to the backup node's worker
//           port shard % workerPorts.length; that worker appends, persists and indexes the entry
//           before it replies (KvWorker.replicate), so backups are indexed online.
import { loadTls, type TlsMaterial } from '../../runtime/net/tls.js';
import { nodeOf, type ClusterConfig } from '../../config/cluster.js';
import { defaultLimits } from '../../config/limits.js';
import type { ActorContext } from '../../runtime/actor.js';
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import { remoteRegionOwner } from '../../config/base/ids.js';
import type { ReplicationStream } from '../baselines/replication-writers.js';
import type { RowanConnection } from '../../runtime/fabric/fabric.js';
import type { AsymNvmStream } from '../baselines/asymnvm.js';
import { encodeRequest, Op, Status } from '../../runtime/rpc/frames.js';
import { remoteError, RpcConnection } from '../../client/worker-connection.js';
import type { ReplicaChannel } from '../shared/node-shared.js';

export interface ReplicaSet {
  channel(nodeId: number, shard: number): ReplicaChannel;
  /** Close the links to a node the configuration removed (§4.5 phase 1: "destroy QPs used for
   *  communicating with the failed server"): writes still waiting on it fail, which ends their requests. */
  drop(nodeId: number): Promise<void>;
  close(): Promise<void>;
}


/** The Rowan connection to node `id`'s receiver, through the actor's injected transport. The sender
 *  id is this node's id: the tcp NIC grants one-sided regions per sending node (actors/nic/nic-verbs.ts). */
function connectTo(current: () => ClusterConfig, id: number, ctx: ActorContext, self: number): Promise<RowanConnection> {
  return ctx.transport.connect(nodeOf(current(), id), { senderId: self });
}

function reconnectable(err: unknown): boolean {
  return err instanceof RowanError && (err.code === ErrorCodes.RECEIVER_CLOSED || err.code === ErrorCodes.PEER_GONE);
}

/** A lazily opened, cached link per key; one reconnect on RECEIVER_CLOSED / PEER_GONE. */
class Links<K, L> {
  private readonly open = new Map<K, Promise<L>>();
  constructor(
    private readonly make: (k: K) => Promise<L>,
    private readonly dispose: (l: L) => Promise<void> | void,
  ) {}

  private get(k: K): Promise<L> {
    let p = this.open.get(k);
    if (!p) {
      p = this.make(k);
      p.catch(() => this.open.delete(k)); // not up yet: try again on the next write
      this.open.set(k, p);
    }
    return p;
  }

  async use<T>(k: K, f: (l: L) => Promise<T>): Promise<T> {
    const p = this.get(k);
    try {
      return await f(await p);
    } catch (err) {
      if (!reconnectable(err)) throw err;
      if (this.open.get(k) === p) this.open.delete(k);
      void p.then((l) => this.dispose(l)).catch(() => {});
      return f(await this.get(k));
    }
  }

  async close(): Promise<void> {
    for (const p of this.open.values()) await p.then((l) => this.dispose(l)).catch(() => {});
    this.open.clear();
  }

  /** Close and forget the links whose key matches. */
  async drop(match: (k: K) => boolean): Promise<void> {
    for (const [k, p] of [...this.open]) {
      if (!match(k)) continue;
      this.open.delete(k);
      await p.then((l) => this.dispose(l)).catch(() => {});
    }
  }
}

/** rowan: the Rowan connection itself. */
function rowanReplicas(current: () => ClusterConfig, nodeId: number, ctx: ActorContext): ReplicaSet {
  const links = new Links<number, RowanConnection>((id) => connectTo(current, id, ctx, nodeId), (c) => c.close());
  return {
    channel: (id) => ({ write: (bytes) => links.use(id, (c) => c.write(bytes)) }),
    drop: (id) => links.drop((k) => k === id),
    close: () => links.close(),
  };
}

/** rwrite / batch / share: a baseline stream over the Rowan connection (see the file comment). */
function streamReplicas(cluster: ClusterConfig, current: () => ClusterConfig, nodeId: number, ctx: ActorContext, shareLogs: Record<number, SharedArrayBuffer> | undefined): ReplicaSet {
  const mode = cluster.replication;
  if (mode !== 'rwrite' && mode !== 'batch' && mode !== 'share' && mode !== 'tailwind' && mode !== 'erda' && mode !== 'asymnvm') throw new RowanError(ErrorCodes.BAD_ARGUMENT, `no stream for mode ${mode}`);
  interface Link {
    conn: RowanConnection;
    stream: ReplicationStream;
  }
  const open = async (id: number): Promise<Link> => {
    // The baselines' writers are imported here, by a worker of a cluster in one of their modes: a
    // worker of a Rowan cluster (most, and every start) does not load their modules.
    const { openReplicationStream, SharedLog } = await import('../baselines/replication-writers.js');
    const conn = await connectTo(current, id, ctx, nodeId);
    try {
      let stream: ReplicationStream;
      if (mode === 'share') {
        const buf = shareLogs?.[id];
        if (!buf) throw new RowanError(ErrorCodes.BAD_CONFIG, `share mode: node ${nodeId} made no shared log for backup ${id}`);
        stream = openReplicationStream('share', conn, { ownerId: remoteRegionOwner(nodeId), sharedLog: SharedLog.attach(buf) });
      } else {
        stream = openReplicationStream(mode, conn, { ownerId: remoteRegionOwner(nodeId), traceId: `stream:${nodeId}.${ctx.id}`, worker: ctx.id });
      }
      await stream.prepare();
      return { conn, stream };
    } catch (err) {
      await conn.close();
      throw err;
    }
  };
  const links = new Links<number, Link>(open, async (l) => {
    await l.stream.close().catch(() => {});
    await l.conn.close();
  });
  const many = (id: number, blocks: readonly Uint8Array[]) => links.use(id, (l) => (l.stream as AsymNvmStream).writeMany(blocks));
  return {
    channel: (id) => ({ write: (bytes) => links.use(id, (l) => l.stream.write(bytes)), ...(mode === 'asymnvm' ? { writeMany: (b: readonly Uint8Array[]) => many(id, b) } : {}) }),
    drop: (id) => links.drop((k) => k === id),
    close: () => links.close(),
  };
}

/** rpc: REPLICATE to the backup worker that serves the shard's port, with the node's current term. */
function rpcReplicas(current: () => ClusterConfig, term: () => number, secret: Uint8Array | null, tls: TlsMaterial | null): ReplicaSet {
  const timeoutMs = 10_000;
  const links = new Links<string, RpcConnection>(
    (k) => {
      const [id, port] = k.split(':').map(Number) as [number, number];
      // A peer: REPLICATE is for nodes only, proven with the cluster secret (never the client password).
      return RpcConnection.open({ host: nodeOf(current(), id).host, port }, timeoutMs, defaultLimits, secret === null ? null : { role: 'peer', secret }, tls); // over TLS it presents this node's certificate
    },
    (c) => c.close(),
  );
  const send = async (c: RpcConnection, block: Uint8Array): Promise<number> => {
    const r = await c.request((rid) => encodeRequest({ op: Op.REPLICATE, id: rid, term: term(), block }));
    if (r.status === Status.ERROR) throw remoteError(r);
    if (r.status !== Status.OK) throw new RowanError(ErrorCodes.BAD_FRAME, `REPLICATE answered with status ${r.status}`);
    return 0; // no pool offset: the backup worker chose where the entry lives
  };
  return {
    channel: (id, shard) => {
      const ports = nodeOf(current(), id).workerPorts;
      const key = `${id}:${ports[shard % ports.length]!}`;
      return { write: (bytes) => links.use(key, (c) => send(c, bytes)) };
    },
    drop: (id) => links.drop((k) => k.startsWith(`${id}:`)),
    close: () => links.close(),
  };
}

export function openReplicas(
  cluster: ClusterConfig,
  nodeId: number,
  ctx: ActorContext,
  shareLogs?: Record<number, SharedArrayBuffer>,
  term: () => number = () => cluster.term,
  /** The configuration in force, where backups' endpoints are looked up (a node added later is in it
   *  only); `cluster` (the one the worker started with) fixes the replication mode. */
  current: () => ClusterConfig = () => cluster,
): ReplicaSet {
  switch (cluster.replication) {
    case 'rowan':
      return rowanReplicas(current, nodeId, ctx);
    case 'rpc':
      return rpcReplicas(current, term, ctx.secret, loadTls(ctx.config.tls));
    default:
      return streamReplicas(cluster, current, nodeId, ctx, shareLogs);
  }
}
