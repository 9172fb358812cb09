// A worker actor serving ROWAN-KV: its t-log, the node's shared indexes and shard versions, one
// replication channel per backup node (§5.2: a worker holds a Rowan connection to every remote
// receiver; the cluster's replication mode picks the channel kind, ./replicas.ts), and its client port
// (DESIGN §7: clients talk to worker threads directly). In rpc mode the port also takes REPLICATE
// requests from other nodes' workers, appended to this worker's backup log.
import { RequestHistograms } from '../../shm/histogram.js';
import { REQUEST_OPS } from '../shared/node-metrics.js';
import { nodeOf } from '../../config/cluster.js';
import { defaultLimits } from '../../config/limits.js';
import type { ActorContext } from '../../runtime/actor.js';
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import { attachKvShared, kvOf } from '../shared/node-shared.js';
import { FileMarkStore } from '../shared/version-marks.js';
import { FailedWriteFile } from '../shared/failed-writes.js';
import { dataDirFiles } from '../../config/base/files.js';
import { serveClients, type RpcServer } from '../../runtime/rpc/rpc-server.js';
import { loadTls } from '../../runtime/net/tls.js';
import { OwnerRole } from '../../shm/pool.js';
import { TLog } from '../../shm/tlog.js';
import { ACTORS_PER_ROLE_MAX, backupLogOwner, tlogOwner } from '../../config/base/ids.js';
import { ConfigCell } from '../shared/config-cell.js';
import { KvWorker } from './kv.js';
import { lockingWrites } from './binary-writes.js';
import { SharedKeyLocks } from '../shared/key-locks.js';
import { openReplicas } from './replicas.js';
import { rowanInfo } from './resp/rowan-info.js';
import { startRespServing, type RespServing } from './resp/serve-resp.js';

export interface KvServing {
  worker: KvWorker;
  server: RpcServer;
  endpoint: { host: string; port: number };
  /** Every tick: close replication links to nodes a new configuration removed. */
  followConfig(): Promise<void>;
  /** The RESP ports (Redis protocol), when the node entry lists them. */
  resp: RespServing | null;
  /** Resolves 'keep-pool-mapped' when requests were still running (the pool must stay mapped). */
  close(): Promise<void | 'keep-pool-mapped'>;
}

export async function startKvServing(ctx: ActorContext): Promise<KvServing> {
  const kv = kvOf(ctx)!;
  const me = nodeOf(kv.cluster, kv.nodeId);
  const port = me.workerPorts[ctx.id];
  if (port === undefined) {
    throw new RowanError(ErrorCodes.BAD_CONFIG, `node ${kv.nodeId} lists ${me.workerPorts.length} worker ports; worker ${ctx.id} has none`);
  }
  const pool = ctx.pool;
  const cell = ConfigCell.attach(kv.cell);
  const replicas = openReplicas(kv.cluster, kv.nodeId, ctx, kv.shareLogs, () => cell.term(), () => cell.config());
  const worker = new KvWorker({
    nodeId: kv.nodeId,
    config: () => cell.config(),
    cell,
    clock: ctx.clock,
    region: pool.region,
    tlog: TLog.recover(pool, tlogOwner(ctx.id), defaultLimits),
    shared: attachKvShared(kv.shared, pool.region, new FileMarkStore(dataDirFiles(ctx.config.dataDir).marks, pool.poolId)),
    workerId: ctx.id,
    failed: new FailedWriteFile(dataDirFiles(ctx.config.dataDir).failedWrites, pool.poolId),
    ...(kv.metrics ? { metrics: { histograms: new RequestHistograms(kv.metrics, ACTORS_PER_ROLE_MAX, REQUEST_OPS.length), clock: ctx.clock } } : {}),
    workers: ctx.config.roles.find((r) => r.role === 'worker')?.count ?? ctx.id + 1,
    replica: async (id, shard) => replicas.channel(id, shard),
    limits: defaultLimits,
    onWrite: () => ctx.wakeTick(),
    ...(kv.cluster.replication === 'rpc' ? { backupLog: TLog.recover(pool, backupLogOwner(ctx.id), defaultLimits, OwnerRole.Worker) } : {}),
  });
  const handler = kv.shared.keyLocks ? lockingWrites(worker, new SharedKeyLocks(kv.shared.keyLocks)) : worker;
  const server = await serveClients({ host: me.host, port, handler, limits: defaultLimits, log: ctx.log, secret: ctx.secret, password: ctx.clientPassword, tls: loadTls(ctx.config.tls), ...ctx.config.clients, handshakeMs: ctx.config.authDeadlineMs });
  let seenTerm = cell.term();
  const dropped = new Set<number>();
  const resp = me.resp
    ? await startRespServing({
        host: me.host, ports: { single: me.resp.ports[ctx.id]!, cluster: me.resp.clusterPorts[ctx.id]! }, worker, cluster: () => cell.config(),
        nodeId: kv.nodeId, workerId: ctx.id, workers: ctx.config.roles.find((r) => r.role === 'worker')?.count ?? ctx.id + 1, shared: attachKvShared(kv.shared, pool.region), region: pool.region, limits: defaultLimits,
        info: { dataDir: ctx.config.dataDir, persistence: ctx.config.persistence, rowan: () => rowanInfo(pool, kv.shared.gc, worker, ctx.counters.local) }, log: ctx.log, password: ctx.clientPassword, tls: loadTls(ctx.config.tls),
        authDeadlineMs: ctx.config.authDeadlineMs, segmentBytes: pool.segmentBytes,
      })
    : null;
  return {
    worker,
    server,
    endpoint: { host: me.host, port: server.port },
    followConfig: async () => {
      if (cell.term() === seenTerm) return;
      const c = cell.config();
      seenTerm = c.term;
      // A node that rejoined (§4.5 phase 3) is reconnected on first use; if it dies again, drop again.
      for (const id of dropped) if (!(c.dead ?? []).includes(id)) dropped.delete(id);
      for (const id of c.dead ?? []) {
        if (dropped.has(id)) continue;
        dropped.add(id);
        ctx.log.info({ node: id, term: c.term }, `node ${id} left the configuration: closing replication links to it`);
        await replicas.drop(id);
      }
    },
    resp,
    close: async () => {
      await resp?.close();
      // Stop taking requests, let those in flight finish (their t-log appends and index updates go
      // through the pool mapping), and unmap only then: unmapping under a running request would fault.
      await server.close();
      let quiet = await worker.quiesce(2000);
      await replicas.close(); // fails replication still waiting on a backup, which ends its request
      if (!quiet) quiet = await worker.quiesce(1000);
      return quiet ? undefined : 'keep-pool-mapped';
    },
  };
}
