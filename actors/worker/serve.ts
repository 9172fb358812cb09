// A worker actor serving ROWAN-KV: its t-log, the node's shared indexes and shard versions, one
// replication channel per backup node (§5.2: a worker holds a Rowan connection to every remote
// receiver), and its client port (DESIGN §7: clients talk to worker threads directly).
import { nodeOf, type ClusterConfig } from '../../config/cluster.js';
import { defaultLimits } from '../../config/limits.js';
import type { ActorContext } from '../../runtime/actor.js';
import { ErrorCodes, RowanError } from '../../runtime/errors.js';
import type { RowanConnection } from '../../runtime/fabric/fabric.js';
import { ShmConnection, shmPaths } from '../../runtime/fabric/shm.js';
import { TcpConnection } from '../../runtime/fabric/tcp.js';
import { attachKvShared } from '../../runtime/kv/shared.js';
import { serveClients, type RpcServer } from '../../runtime/rpc/server.js';
import { Pool } from '../../shm/pool.js';
import { TLog } from '../../shm/tlog.js';
import { KvWorker, type ReplicaChannel } from './kv.js';

export interface KvServing {
  worker: KvWorker;
  server: RpcServer;
  endpoint: { host: string; port: number };
  close(): Promise<void>;
}

async function connectTo(cluster: ClusterConfig, id: number, ctx: ActorContext): Promise<RowanConnection> {
  const n = nodeOf(cluster, id);
  switch (n.fabric.kind) {
    case 'shm':
      return ShmConnection.connect(n.dataDir, { mode: ctx.config.persistence, retryMs: ctx.config.replication.retryMs });
    case 'tcp':
      return TcpConnection.connect({ host: n.fabric.host, port: n.fabric.port, retryMs: ctx.config.replication.retryMs });
    default:
      throw new RowanError(ErrorCodes.FABRIC_UNAVAILABLE, `node ${id} asks for the ${n.fabric.kind} fabric, which a worker cannot open here`);
  }
}

/** Replication channels, opened on first use; a backup that restarted is reconnected once per write. */
class Replicas {
  private readonly open = new Map<number, Promise<RowanConnection>>();
  constructor(private readonly cluster: ClusterConfig, private readonly ctx: ActorContext) {}

  channel(id: number): ReplicaChannel {
    return { write: (bytes) => this.write(id, bytes) };
  }

  private conn(id: number): Promise<RowanConnection> {
    let p = this.open.get(id);
    if (!p) {
      p = connectTo(this.cluster, id, this.ctx);
      p.catch(() => this.open.delete(id)); // a receiver not up yet: try again on the next write
      this.open.set(id, p);
    }
    return p;
  }

  private async write(id: number, bytes: Uint8Array): Promise<number> {
    try {
      return await (await this.conn(id)).write(bytes);
    } catch (err) {
      if (!(err instanceof RowanError) || (err.code !== ErrorCodes.RECEIVER_CLOSED && err.code !== ErrorCodes.PEER_GONE)) throw err;
      const stale = this.open.get(id);
      this.open.delete(id);
      void stale?.then((c) => c.close()).catch(() => {});
      return (await this.conn(id)).write(bytes);
    }
  }

  async close(): Promise<void> {
    for (const p of this.open.values()) await p.then((c) => c.close()).catch(() => {});
    this.open.clear();
  }
}

export async function startKvServing(ctx: ActorContext): Promise<KvServing> {
  const kv = ctx.kv!;
  const me = nodeOf(kv.cluster, kv.nodeId);
  const port = me.workerPorts[ctx.id];
  if (port === undefined) {
    throw new RowanError(ErrorCodes.BAD_CONFIG, `node ${kv.nodeId} lists ${me.workerPorts.length} worker ports; worker ${ctx.id} has none`);
  }
  const pool = Pool.open(shmPaths(ctx.config.dataDir).pool, { mode: ctx.config.persistence });
  const replicas = new Replicas(kv.cluster, ctx);
  const worker = new KvWorker({
    nodeId: kv.nodeId,
    config: () => kv.cluster,
    region: pool.region,
    tlog: TLog.recover(pool, ctx.id, defaultLimits),
    shared: attachKvShared(kv.shared),
    replica: async (id) => replicas.channel(id),
    limits: defaultLimits,
  });
  const server = await serveClients({ host: me.host, port, handler: worker, limits: defaultLimits, log: ctx.log });
  return {
    worker,
    server,
    endpoint: { host: me.host, port: server.port },
    close: async () => {
      await server.close();
      await replicas.close();
      pool.close();
    },
  };
}
