// A worker's two RESP listeners (DESIGN §7; ClusterNode.resp): the single-endpoint port (forwards what
// this node does not own) and the cluster port (a Redis Cluster node: -MOVED). Both run on the worker
// actor's thread, next to its binary-protocol port, on the same KvWorker.
//
// Why separate ports rather than detecting RESP from a connection's first bytes: the binary protocol
// begins with a little-endian length whose first byte may be '*' or a letter, so detection would need
// a peek, a guess and a second error path in the binary server for every connection; a port says what
// it speaks, and a second port is also how a cluster client (which connects to what CLUSTER SLOTS lists)
// is told apart from a single-endpoint client (which should be forwarded, not redirected).
import { wallClock, type Clock } from '../../../config/base/clock.js';
import type { ClusterConfig } from '../../../config/cluster.js';
import type { Limits } from '../../../config/limits.js';
import type { KvShared } from '../../shared/node-shared.js';
import type { Logger } from '../../../config/base/log.js';
import { respLimits } from '../../../runtime/resp/limits.js';
import { passwordText } from '../../../config/base/secret.js';
import type { TlsMaterial } from '../../../runtime/net/tls.js';
import { serveResp, type RespServer } from '../../../runtime/resp/resp-server.js';
import type { PersistentRegion } from '../../../config/base/region.js';
import type { KvWorker } from '../kv.js';
import { SharedKeyLocks } from '../../shared/key-locks.js';
import { KeyLocks, type InfoSource, type RespContext, type RespKvStats, type RespMode } from './context.js';
import { KvRespHandler } from './handler.js';
import { Keyspace } from './keyspace.js';
import { ExpirySweep } from './expiry-sweep.js';
import { NodeView } from './node-view.js';

export interface RespServing {
  servers: RespServer[];
  ports: { single: number; cluster: number };
  /** Active expiry of this worker's share of the node's primary shards (the worker actor's tick). */
  expiry: ExpirySweep;
  close(): Promise<void>;
}

export interface RespServeDeps {
  host: string;
  ports: { single: number; cluster: number };
  worker: KvWorker;
  cluster: () => ClusterConfig;
  nodeId: number;
  workerId: number;
  /** The node's worker count (the expiry sweeps split the shards among them); 1 unless given. */
  workers?: number;
  shared: KvShared;
  region: PersistentRegion;
  limits: Limits;
  info: InfoSource;
  log?: Logger;
  /** Wall clock for INFO uptime, CLIENT ages, CLUSTER NODES (default wallClock). */
  clock?: Clock;
  /** requirepass: the client password (its text; forwarding links AUTH with it too); null = none
   *  (--no-auth). */
  password: Uint8Array | null;
  /** TLS on both Redis ports (server certificate only, like Redis's tls-auth-clients no); forwarding
   *  links to other nodes verify them against the CA and present this node's certificate. */
  tls?: TlsMaterial | null;
  /** The pool's segment size, when it differs from limits.segmentBytes: an entry must fit one segment,
   *  so multi-key writes check values against it too (the value limit is the smaller of the two). */
  segmentBytes?: number;
  /** A connection not authenticated this long after it was accepted is closed (config authDeadlineMs). */
  authDeadlineMs?: number;
}

export async function startRespServing(d: RespServeDeps): Promise<RespServing> {
  const limits = respLimits(d.limits.valueBytesMax, d.authDeadlineMs);
  const entryLimits: Limits = { ...d.limits, segmentBytes: d.segmentBytes ?? d.limits.segmentBytes };
  const view = new NodeView(d.cluster, d.nodeId, d.workerId, limits.bulkBytesMax, d.password === null ? null : passwordText(d.password), d.tls ?? null);
  const keyspace = new Keyspace(d.shared, d.region, d.limits, d.workerId, () => d.worker.wallNow());
  const locks = new KeyLocks(d.shared.keyLocks ? new SharedKeyLocks(d.shared.keyLocks) : undefined);
  const stats: RespKvStats = { hits: 0, misses: 0, moved: 0, forwarded: 0, crossSlot: 0, rerouted: 0, errors: 0 };
  const servers: RespServer[] = [];
  const expiry = new ExpirySweep({ worker: d.worker, locks, shared: d.shared, region: d.region, limits: d.limits, workerId: d.workerId, workers: d.workers ?? 1, ...(d.log ? { log: d.log } : {}) });
  const clock = d.clock ?? wallClock;
  const startedMs = clock.now();
  const open = async (mode: RespMode, port: number, idBase: number) => {
    const ctx: RespContext = { mode, worker: d.worker, view, keyspace, locks, stats, servers, port, info: d.info, startedMs, clock, password: d.password, limits: entryLimits, expired: () => expiry.expired };
    const s = await serveResp({ host: d.host, port, handler: new KvRespHandler(ctx), limits, idBase, tls: d.tls ?? null, authRequired: d.password !== null, ...(d.log ? { log: d.log } : {}) });
    ctx.port = s.port;
    servers.push(s);
    return s;
  };
  // Connection ids unique on the node: worker w's two ports count from (2w+1) * 2^32 and (2w+2) * 2^32.
  const single = await open('single', d.ports.single, (2 * d.workerId + 1) * 2 ** 32);
  const clusterPort = await open('cluster', d.ports.cluster, (2 * d.workerId + 2) * 2 ** 32);
  return {
    servers,
    ports: { single: single.port, cluster: clusterPort.port },
    expiry,
    close: async () => {
      view.close();
      await Promise.all(servers.map((s) => s.close()));
    },
  };
}
