// Where a key goes (§4.1): its Redis hash slot picks the shard owning that slot range (config/slots.ts), the
// configuration names the shard's primary, and the primary's worker `shard % workerPorts.length`
// serves it -- so one shard's requests always meet the same worker (and its t-log) on a node.
import { nodeOf, type ClusterConfig } from '../config/cluster.js';
import { shardOfKey as shardOfKeyIn } from '../config/slots.js';
import { ErrorCodes, RowanError } from '../config/base/errors.js';
import type { FrameLimits } from '../runtime/rpc/frames.js';
import type { Endpoint } from './worker-connection.js';

/** Keys and values given as strings travel as their UTF-8 bytes. */
export function toBytes(x: Uint8Array | string, what = 'key'): Uint8Array {
  if (typeof x === 'string') return Buffer.from(x, 'utf8');
  if (x instanceof Uint8Array) return x;
  // Callers from JavaScript (or `as any`) get a RowanError, never a TypeError or RangeError from deep inside.
  throw new RowanError(ErrorCodes.BAD_ARGUMENT, `${what} must be a string or a Uint8Array, got ${x === null ? 'null' : typeof x}`);
}

/** Refuse locally what a server would refuse, with the same codes. */
export function checkSizes(key: Uint8Array, value: Uint8Array | null, limits: FrameLimits): void {
  if (key.length === 0) throw new RowanError(ErrorCodes.KEY_EMPTY, 'the key is empty (keys are 1 or more bytes)');
  if (key.length > limits.keyBytesMax)
    throw new RowanError(ErrorCodes.KEY_TOO_LARGE, `key is ${key.length} bytes, limit ${limits.keyBytesMax}`);
  if (value !== null && value.length > limits.valueBytesMax)
    throw new RowanError(ErrorCodes.VALUE_TOO_LARGE, `value is ${value.length} bytes, limit ${limits.valueBytesMax}`);
}

export function shardOfKey(cfg: ClusterConfig, key: Uint8Array): number {
  return shardOfKeyIn(key, cfg.shardCount);
}

/** The worker port of node `nodeId` that serves `shard`. */
export function workerEndpoint(cfg: ClusterConfig, nodeId: number, shard: number): Endpoint {
  const n = nodeOf(cfg, nodeId);
  return { host: n.host, port: n.workerPorts[shard % n.workerPorts.length]! };
}

/** The worker port serving `key` on its shard's primary. */
export function primaryEndpoint(cfg: ClusterConfig, key: Uint8Array): Endpoint {
  const shard = shardOfKey(cfg, key);
  return workerEndpoint(cfg, cfg.shards[shard]!.primary, shard);
}

/** Every worker port of every node (where a configuration can be asked for). */
export function allEndpoints(cfg: ClusterConfig): Endpoint[] {
  return cfg.nodes.flatMap((n) => n.workerPorts.map((port) => ({ host: n.host, port })));
}

/** "host:port" or "[v6]:port" -> Endpoint; BAD_ARGUMENT otherwise. */
export function parseEndpoint(s: string): Endpoint {
  const m = /^(?:\[([^\]]+)\]|([^:\s]+)):(\d{1,5})$/.exec(s.trim());
  const port = m ? Number(m[3]) : NaN;
  if (!m || !(port >= 1 && port <= 65535))
    throw new RowanError(ErrorCodes.BAD_ARGUMENT, `endpoint '${s}' is not host:port (port 1-65535)`);
  return { host: (m[1] ?? m[2])!, port };
}
