// What a worker's RESP ports know about the cluster (DESIGN §7): which Redis "node" (a worker's
// cluster port) serves each slot range, where a key's owner is, and the forwarding links to the other
// nodes. Rowan's Redis topology: every worker of every node is one Redis Cluster master, advertised on
// its cluster port and serving the slot ranges of the shards it serves as primary (shard s on node P
// goes to worker s % workers(P), as for the binary protocol). Backups are not exposed as Redis replicas:
// they serve no reads (their indexes lag by the digest), and every write is already on them when
// acknowledged.
import type { TlsClientMaterial } from '../../../runtime/net/tls.js';
import { createHash } from 'node:crypto';
import { nodeOf, type ClusterConfig, type ClusterNode } from '../../../config/cluster.js';
import { keySlot, shardOfSlot, slotRangeOfShard } from '../../../config/slots.js';
import { RespPeer } from '../../../runtime/resp/client.js';

export interface RedisEndpoint {
  /** 40 hex characters, as Redis node ids are. */
  id: string;
  nodeId: number;
  worker: number;
  host: string;
  port: number;
  /** Inclusive slot ranges, ascending, merged where contiguous. */
  ranges: [number, number][];
}

export interface SlotMap {
  term: number;
  endpoints: RedisEndpoint[];
  /** Per shard: index into endpoints. */
  byShard: number[];
}

export function redisNodeId(nodeId: number, worker: number): string {
  return createHash('sha1').update(`rowan:node:${nodeId}:worker:${worker}`).digest('hex');
}

export function workerOfShard(n: ClusterNode, shard: number): number {
  return shard % n.workerPorts.length;
}

/** The Redis Cluster view of a configuration; nodes without RESP ports, and dead ones (failed over:
 *  they serve no slot), are left out. */
export function buildSlotMap(c: ClusterConfig): SlotMap {
  const endpoints: RedisEndpoint[] = [];
  const at = new Map<string, number>();
  const dead = new Set(c.dead ?? []);
  for (const n of c.nodes) {
    if (!n.resp || dead.has(n.id)) continue;
    for (let w = 0; w < n.workerPorts.length; w++) {
      at.set(`${n.id}/${w}`, endpoints.length);
      endpoints.push({ id: redisNodeId(n.id, w), nodeId: n.id, worker: w, host: n.host, port: n.resp.clusterPorts[w]!, ranges: [] });
    }
  }
  const byShard: number[] = [];
  for (const s of c.shards) {
    const p = nodeOf(c, s.primary);
    const e = at.get(`${p.id}/${workerOfShard(p, s.id)}`) ?? -1;
    byShard.push(e);
    if (e < 0) continue;
    const { first, last } = slotRangeOfShard(s.id, c.shardCount);
    const ranges = endpoints[e]!.ranges;
    const prev = ranges[ranges.length - 1];
    if (prev && prev[1] + 1 === first) prev[1] = last;
    else ranges.push([first, last]);
  }
  return { term: c.term, endpoints, byShard };
}

export type Route = { local: true; shard: number; slot: number } | { local: false; shard: number; slot: number; to: RedisEndpoint | null };

export class NodeView {
  private map: SlotMap | null = null;
  private readonly peers = new Map<string, RespPeer>();

  constructor(
    private readonly cluster: () => ClusterConfig,
    readonly nodeId: number,
    readonly workerId: number,
    private readonly bulkBytesMax: number,
    /** The Redis password forwarding links AUTH with (the client password), or null (--no-auth). */
    private readonly password: string | null = null,
    /** TLS for forwarding links (the cluster CA; this node's certificate), or null. */
    private readonly tls: TlsClientMaterial | null = null,
  ) {}

  config(): ClusterConfig {
    return this.cluster();
  }

  slots(): SlotMap {
    const c = this.cluster();
    if (this.map === null || this.map.term !== c.term) this.map = buildSlotMap(c);
    return this.map;
  }

  /** This worker's own Redis endpoint. */
  me(): RedisEndpoint | undefined {
    return this.slots().endpoints.find((e) => e.nodeId === this.nodeId && e.worker === this.workerId);
  }

  /** Where a key is served: here (this node is the shard's primary) or the owner's endpoint. */
  route(key: Uint8Array): Route {
    const c = this.cluster();
    const slot = keySlot(key);
    const shard = shardOfSlot(slot, c.shardCount);
    if (c.shards[shard]!.primary === this.nodeId) return { local: true, shard, slot };
    const e = this.slots().byShard[shard]!;
    return { local: false, shard, slot, to: e >= 0 ? this.slots().endpoints[e]! : null };
  }

  /** Shards this worker advertises (cluster port) or this node serves (all its workers). */
  ownShards(endpointOnly: boolean): number[] {
    const c = this.cluster();
    const me = nodeOf(c, this.nodeId);
    return c.shards.filter((s) => s.primary === this.nodeId && (!endpointOnly || workerOfShard(me, s.id) === this.workerId)).map((s) => s.id);
  }

  peer(e: { host: string; port: number }): RespPeer {
    const k = `${e.host}:${e.port}`;
    let p = this.peers.get(k);
    if (!p) {
      p = new RespPeer(e.host, e.port, this.bulkBytesMax, 5000, this.password, this.tls);
      this.peers.set(k, p);
    }
    return p;
  }

  close(): void {
    for (const p of this.peers.values()) p.close();
    this.peers.clear();
  }
}
