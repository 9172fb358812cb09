// The cluster configuration (§4.5, DESIGN §6): {term, membership, shard distribution, migration list}.
// Every node and client caches it; requests carry the term they were routed with and a node rejects a
// stale one (ROWAN_ERR_STALE_TERM), after which the client refreshes its copy.
//
// Sharding (§4.1, DESIGN §7): a key's Redis Cluster hash slot (CRC16 mod 16384, hash tags honoured)
// picks the shard owning a contiguous range of the slot space (config/slots.ts), so Redis cluster
// clients route by CLUSTER SLOTS. Format 1 (before slots) routed by the 64-bit key hash; its files and
// pools are refused (ROWAN_ERR_CLUSTER_FORMAT, ROWAN_ERR_POOL_VERSION), never misread.
import { randomBytes } from 'node:crypto';
import { NODE_ID_MAX } from './base/ids.js';
import type { FabricKind } from './base/fabric-kinds.js';
import { FABRIC_KINDS } from './base/fabric-kinds.js';
import { ErrorCodes, RowanError } from './base/errors.js';
import { SLOT_COUNT } from './slots.js';

/** 3: shards may list catching-up backups (`catchingUp`, §4.5 phase 3); 2: keys route by hash slot
 *  (config/slots.ts) -- format 2 files read as format 3 with nobody catching up; 1 routed by the 64-bit
 *  key hash. A format-2 build refuses format 3 (it would take a catching-up backup for a full one). */
export const CLUSTER_FORMAT = 3;
/** Formats this build reads (and upgrades to CLUSTER_FORMAT in memory). */
const CLUSTER_FORMATS_READ: readonly number[] = [2, 3];
/** Every shard owns at least one slot. */
export const SHARD_COUNT_MAX = SLOT_COUNT;

/**
 * How a primary's worker replicates each log entry to a shard's backups (ROWAN §6.1, DESIGN §4):
 *   rowan   one Rowan write per block into the backup node's one b-log (ROWAN-KV);
 *   rpc     RPC-KV: a REPLICATE request to a backup worker, which appends the entry to its own log;
 *   rwrite  RWrite-KV: one-sided writes into a remote log per (sending worker, backup);
 *   batch   Batch-KV: rwrite with sender-side batching (256 B / 5 µs);
 *   share   Share-KV: one remote log per (sending node, backup), addresses from a node-local counter;
 *   tailwind  Tailwind: rwrite's logs as checksum-terminated backup buffers, scanned (Algorithm 1) at
 *           a failover's promotion and at a cold start; backups do nothing until then.
 *   erda    Erda: rwrite's remote log per (sending worker, backup) plus, per key, an 8-byte atomic
 *           index entry (newest/previous offset) at the backup, written one-sidedly before the object;
 *   asymnvm AsymNVM: one one-sided write of one checksummed op-log record per operation (shm/op-log.ts).
 * Cluster-wide: every worker of every node uses the same mode. Files written before the field
 * existed read as rowan.
 */
export const CLUSTER_REPLICATION_MODES = ['rowan', 'rpc', 'rwrite', 'batch', 'share',
  'tailwind', 'erda', 'asymnvm'] as const;
export type ClusterReplicationMode = (typeof CLUSTER_REPLICATION_MODES)[number];

export interface ClusterNode {
  id: number;
  /** Address clients and peers reach the node at (127.0.0.1 for a local cluster). */
  host: string;
  /** The node's data directory (pool.pm, rowan.srq): shm peers on the same host map files from it. */
  dataDir: string;
  /** One client port per worker actor (§5.2: clients talk to worker threads directly). */
  workerPorts: number[];
  /** How Rowan writes reach this node: shm (same host) or tcp (its NIC actor's port). */
  fabric: { kind: FabricKind; host: string; port: number };
  /** RESP (Redis protocol) ports, one each per worker (actors/worker/resp/): `ports` serve
   *  single-endpoint clients and forward what this node does not own; `clusterPorts` behave as Redis
   *  Cluster nodes (-MOVED) and are what CLUSTER SLOTS/NODES advertise. Absent: no RESP. */
  resp?: { ports: number[]; clusterPorts: number[] };
}

export interface ShardPlacement {
  id: number;
  primary: number;
  backups: number[];
}

export interface MigrationTask {
  source: number;
  target: number;
  shard: number;
}

/** A copy move (§4.6): `target`, which held no replica of the shard, is added to its backups as a
 *  catching-up one and copies it from the primary (its migration actor); once caught up, the shard's
 *  role that `source` held (primary or backup) passes to it and `source` leaves the shard
 *  (actors/manager/copy-moves.ts). Until then `target` is one backup more than the factor asks. */
export interface CopyTask {
  source: number;
  target: number;
  shard: number;
}

export interface ClusterConfig {
  format: number;
  /** 64-bit in the paper; a JS number holds 2^53, more terms than a cluster will ever see. */
  term: number;
  replicationFactor: number;
  /** How primaries replicate entries to backups (default rowan; see CLUSTER_REPLICATION_MODES). */
  replication: ClusterReplicationMode;
  shardCount: number;
  nodes: ClusterNode[];
  shards: ShardPlacement[];
  migrations: MigrationTask[];
  /** Nodes the configuration manager removed from the membership after their lease expired (§4.5
   *  phase 1); they hold no shard. Absent = none. Their entries stay in `nodes` (addresses, status). */
  dead?: number[];
  /** Re-replication (§4.5 phase 3): backups listed in their shard's `backups` that are still copying
   *  the shard's existing entries from its primary. They receive every new write as any backup does,
   *  but are never promoted and do not count as a replica until the manager removes the mark (the
   *  node reported it caught up). Absent = none. */
  catchingUp?: CatchingUp[];
  /** Copy moves in progress (a target without a replica). Absent = none. */
  copies?: CopyTask[];
  /** Membership changes (actors/manager/membership.ts): true while the manager spreads replicas and
   *  primaries over the members (set when a node is added, cleared once they are fairly spread). */
  balancing?: boolean;
  /** Nodes being decommissioned: the manager moves every replica off them, then removes them. */
  leaving?: number[];
  /** Ids of nodes removed from the membership for good: never given to a new node again. */
  retired?: number[];
  /** The key of every log block checksum of this cluster (shm/log-checksum.ts): a random u32 chosen
   *  when the cluster is made (`rowan cluster`, `rowan config init`), never changed afterwards (pools
   *  written under it verify only under it). Absent or 0: the unkeyed CRC32C of clusters made before
   *  seeds existed. Not served to clients (runtime/rpc CONFIG strips it). */
  checksumSeed?: number;
}

export interface CatchingUp {
  shard: number;
  node: number;
}

/** Whether `node` is a catching-up backup of `shard`. */
export function isCatchingUp(c: ClusterConfig, shard: number, node: number): boolean {
  return (c.catchingUp ?? []).some((x) => x.shard === shard && x.node === node);
}

/** The replicas of a shard that hold all of it: the primary and the backups not catching up. */
export function fullReplicas(c: ClusterConfig, shard: number): number[] {
  const s = c.shards[shard]!;
  return [s.primary, ...s.backups.filter((b) => !isCatchingUp(c, shard, b))];
}

/** Whether `node` holds any replica (primary, backup, catching up or not) of `shard`. */
export function holdsReplica(c: ClusterConfig, shard: number, node: number): boolean {
  const s = c.shards[shard]!;
  return s.primary === node || s.backups.includes(node);
}

/** The live membership: every node not listed dead. */
export function liveNodes(c: ClusterConfig): ClusterNode[] {
  const dead = new Set(c.dead ?? []);
  return c.nodes.filter((n) => !dead.has(n.id));
}

export interface PlanOptions {
  nodes: ClusterNode[];
  shardCount: number;
  replicationFactor: number;
  replication?: ClusterReplicationMode;
  /** ClusterConfig.checksumSeed; absent = 0 (unkeyed; tests and tools). */
  checksumSeed?: number;
}

/**
 * A first shard distribution: primaries round-robin over the nodes, backups on the next
 * replicationFactor - 1 nodes in ring order, so every node is primary for shardCount / n shards and
 * backup for the rest of its share (high fan-in, §2.3).
 */
export function planCluster(o: PlanOptions): ClusterConfig {
  const n = o.nodes.length;
  const shards: ShardPlacement[] = [];
  for (let s = 0; s < o.shardCount; s++) {
    const p = s % n;
    const backups: number[] = [];
    for (let k = 1; k < o.replicationFactor; k++) backups.push(o.nodes[(p + k) % n]!.id);
    shards.push({ id: s, primary: o.nodes[p]!.id, backups });
  }
  return validateCluster({
    format: CLUSTER_FORMAT,
    term: 1,
    replicationFactor: o.replicationFactor,
    replication: o.replication ?? 'rowan',
    shardCount: o.shardCount,
    nodes: o.nodes,
    shards,
    migrations: [],
    ...(o.checksumSeed ? { checksumSeed: o.checksumSeed } : {}),
  });
}

/** A new cluster's checksum seed: random, never 0 (0 means unkeyed). */
export function newChecksumSeed(): number {
  return (randomBytes(4).readUInt32LE(0) >>> 0) || 1;
}

/** The configuration as clients may see it: without the checksum seed (a client that knew it could
 *  make a value hold a log block that verifies). */
export function forClients(c: ClusterConfig): ClusterConfig {
  if (c.checksumSeed === undefined) return c;
  const { checksumSeed: _hidden, ...rest } = c;
  return rest;
}

function fail(field: string, rule: string, got?: unknown): never {
  const shown = got === undefined ? '' : ` (got ${JSON.stringify(got)})`;
  throw new RowanError(ErrorCodes.BAD_CONFIG, `cluster config: ${field} ${rule}${shown}`);
}

function isInt(v: unknown, lo: number, hi: number): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v >= lo && v <= hi;
}

/** Check a configuration read from a store or built by a plan; returns it typed. */
export function validateCluster(raw: unknown): ClusterConfig {
  const c = raw as ClusterConfig;
  if (typeof c !== 'object' || c === null) fail('', 'must be an object', raw);
  if (!CLUSTER_FORMATS_READ.includes(c.format)) {
    throw new RowanError(ErrorCodes.CLUSTER_FORMAT, `cluster config format ${JSON.stringify(c.format)}, this build reads format ${CLUSTER_FORMAT}` +
      (c.format === 1 ? ' (format 1 routed keys by their 64-bit hash, format 2 by Redis hash slot: its pools cannot be read either; make a new cluster)' : ''));
  }
  c.format = CLUSTER_FORMAT; // format 2 is format 3 with nobody catching up
  if (!isInt(c.term, 1, Number.MAX_SAFE_INTEGER)) fail('term', 'must be a positive integer', c.term);
  // A configuration from before replication modes existed is a ROWAN-KV one.
  if (c.replication === undefined) c.replication = 'rowan';
  if (!(CLUSTER_REPLICATION_MODES as readonly string[]).includes(c.replication))
    fail('replication', `must be one of ${CLUSTER_REPLICATION_MODES.join('|')}`, c.replication);
  if (!Array.isArray(c.nodes) || c.nodes.length === 0) fail('nodes', 'must be a non-empty list');
  const ids = new Set<number>();
  for (const [i, n] of c.nodes.entries()) {
    const f = `nodes[${i}]`;
    if (!isInt(n.id, 0, NODE_ID_MAX) || ids.has(n.id)) fail(`${f}.id`, `must be a unique integer in [0, ${NODE_ID_MAX}]`, n.id);
    ids.add(n.id);
    if (typeof n.host !== 'string' || n.host === '') fail(`${f}.host`, 'must be an address', n.host);
    if (typeof n.dataDir !== 'string' || n.dataDir === '') fail(`${f}.dataDir`, 'must be a path', n.dataDir);
    if (!Array.isArray(n.workerPorts) || n.workerPorts.length === 0 || !n.workerPorts.every((p) => isInt(p, 1, 65535)))
      fail(`${f}.workerPorts`, 'must list one port (1-65535) per worker', n.workerPorts);
    if (!n.fabric || !(FABRIC_KINDS as readonly string[]).includes(n.fabric.kind)) fail(`${f}.fabric.kind`, `must be one of ${FABRIC_KINDS.join('|')}`, n.fabric?.kind);
    if (!isInt(n.fabric.port, 0, 65535)) fail(`${f}.fabric.port`, 'must be a port', n.fabric.port);
    if (n.resp !== undefined) {
      for (const k of ['ports', 'clusterPorts'] as const) {
        const ps = n.resp[k];
        if (!Array.isArray(ps) || ps.length !== n.workerPorts.length || !ps.every((p) => isInt(p, 1, 65535)))
          fail(`${f}.resp.${k}`, 'must list one port (1-65535) per worker', ps);
      }
    }
  }
  if (!isInt(c.replicationFactor, 1, c.nodes.length)) fail('replicationFactor', `must be in [1, ${c.nodes.length}] (the node count)`, c.replicationFactor);
  if (!isInt(c.shardCount, 1, SHARD_COUNT_MAX)) fail('shardCount', `must be in [1, ${SHARD_COUNT_MAX}]`, c.shardCount);
  if (c.dead !== undefined && (!Array.isArray(c.dead) || !c.dead.every((d) => ids.has(d)))) fail('dead', 'must list node ids', c.dead);
  const dead = new Set(c.dead ?? []);
  if (dead.size >= c.nodes.length) fail('dead', 'must leave at least one live node', c.dead);
  // A degraded configuration (a node died or rejoined empty, re-replication not done) has fewer backups
  // than the factor asks; only a first configuration (term 1) must have them all.
  const backupsMin = c.term === 1 && dead.size === 0 ? c.replicationFactor - 1 : 0;
  if (!Array.isArray(c.shards) || c.shards.length !== c.shardCount) fail('shards', `must list all ${c.shardCount} shards`);
  if (c.copies !== undefined && !Array.isArray(c.copies)) fail('copies', 'must be a list');
  for (const [i, s] of c.shards.entries()) {
    const f = `shards[${i}]`;
    if (s.id !== i) fail(`${f}.id`, `must be ${i} (shards are listed in order)`, s.id);
    if (!ids.has(s.primary) || dead.has(s.primary)) fail(`${f}.primary`, 'must be a live node id', s.primary);
    // A copy's target is one backup beyond the factor until the source leaves the shard.
    const copying = (c.copies ?? []).filter((x) => x?.shard === i).length;
    if (!Array.isArray(s.backups) || s.backups.length < backupsMin || s.backups.length > c.replicationFactor - 1 + copying)
      fail(`${f}.backups`, `must list ${c.replicationFactor - 1} nodes`, s.backups);
    const replicas = new Set([s.primary, ...s.backups]);
    if (replicas.size !== s.backups.length + 1 || !s.backups.every((b) => ids.has(b) && !dead.has(b)))
      fail(`${f}.backups`, 'must be distinct live node ids other than the primary', s.backups);
  }
  if (!Array.isArray(c.migrations)) fail('migrations', 'must be a list');
  for (const [i, m] of c.migrations.entries()) {
    // A resharding task (§4.6): the shard's primary role moves from source to target.
    if (typeof m !== 'object' || m === null || !ids.has(m.source) || !ids.has(m.target) || m.source === m.target || !c.shards[m.shard])
      fail(`migrations[${i}]`, 'must be {source, target, shard} with two distinct node ids and a shard id', m);
  }
  if (c.checksumSeed !== undefined && !isInt(c.checksumSeed, 0, 0xffffffff)) fail('checksumSeed', 'must be an integer in [0, 2^32)', c.checksumSeed);
  if (c.catchingUp !== undefined) {
    if (!Array.isArray(c.catchingUp)) fail('catchingUp', 'must be a list');
    const seen = new Set<string>();
    for (const [i, x] of c.catchingUp.entries()) {
      const s = c.shards[x?.shard];
      if (!s || !s.backups.includes(x.node) || seen.has(`${x.shard}:${x.node}`))
        fail(`catchingUp[${i}]`, 'must name a backup of the shard, once', x);
      seen.add(`${x.shard}:${x.node}`);
    }
  }
  validateCopies(c);
  validateMembership(c, ids);
  return c;
}

/** `leaving` names members, `retired` none of them; `balancing` is a flag. */
function validateMembership(c: ClusterConfig, ids: ReadonlySet<number>): void {
  if (c.balancing !== undefined && typeof c.balancing !== 'boolean') fail('balancing', 'must be true or absent', c.balancing);
  if (c.leaving !== undefined && (!Array.isArray(c.leaving) || !c.leaving.every((n) => ids.has(n)) || new Set(c.leaving).size !== c.leaving.length)) fail('leaving', 'must list node ids, once each', c.leaving);
  if (c.retired !== undefined && (!Array.isArray(c.retired) || !c.retired.every((n) => isInt(n, 0, NODE_ID_MAX) && !ids.has(n)))) fail('retired', 'must list ids of no current node', c.retired);
}

/** Each copy names two distinct replicas of the shard (the target catching up until it reported, the
 *  primary once the source's primary role passed to it), one copy per shard. */
function validateCopies(c: ClusterConfig): void {
  const shards = new Set<number>();
  for (const [i, x] of (c.copies ?? []).entries()) {
    const s = c.shards[x?.shard];
    const replicas = s ? [s.primary, ...s.backups] : [];
    const ok = s && !shards.has(x.shard) && x.source !== x.target && replicas.includes(x.source) && replicas.includes(x.target);
    if (!ok) fail(`copies[${i}]`, 'must be {source, target, shard}: two replicas of the shard, one copy per shard', x);
    shards.add(x.shard);
  }
}

/** The node entry for `id`, or BAD_CONFIG. */
export function nodeOf(c: ClusterConfig, id: number): ClusterNode {
  const n = c.nodes.find((x) => x.id === id);
  if (!n) fail('nodes', `has no node ${id}`);
  return n;
}
