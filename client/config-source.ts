// Where a client's cluster configuration comes from and how it is refreshed (§4.5: a server rejects a
// request whose term is older than its own; the client then fetches the new configuration).
//   an object  given by the caller: refreshed by asking the cluster's nodes (CONFIG);
//   a file     the embedded store's JSON (config/store.ts): re-read first, then the nodes are asked;
//   ZooKeeper  the znode (config/zk-store.ts), over a session the client keeps: read first on refresh
//              (a read that fails -- no session -- falls back to asking the nodes);
//   endpoints  bootstrap addresses: asked for CONFIG at connect (when no cluster is given) and on
//              every refresh, before the nodes of the configuration in use.
import { validateCluster, type ClusterConfig } from '../config/cluster.js';
import { FileConfigStore, type ConfigStore } from '../config/store.js';
import { ErrorCodes, RowanError } from '../config/base/errors.js';
import { endpointKey, type Endpoint } from './worker-connection.js';
import { allEndpoints } from './routing.js';

export interface ClusterSource {
  /** The store (cluster file or ZooKeeper), read first on refresh (when the client was made from one). */
  store: ConfigStore | null;
  /** Lets go of the store (a ZooKeeper session) when the client closes. */
  close?: () => void;
  /** Bootstrap endpoints given by the caller, asked before the configuration's own nodes. */
  endpoints: Endpoint[];
}

/** A CONFIG response's JSON, checked like any stored configuration. */
export function parseClusterJson(json: string, from: string): ClusterConfig {
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch (err) {
    throw new RowanError(ErrorCodes.BAD_CONFIG, `${from} sent a configuration that is not JSON: ${(err as Error).message}`);
  }
  return validateCluster(raw);
}

/** The configuration at connect time. */
export async function initialConfig(
  cluster: ClusterConfig | string | undefined,
  endpoints: Endpoint[],
  ask: (e: Endpoint) => Promise<ClusterConfig>,
  zookeeper?: { connect: string; path: string },
): Promise<{ config: ClusterConfig; source: ClusterSource }> {
  if (zookeeper !== undefined) {
    if (cluster !== undefined) throw new RowanError(ErrorCodes.BAD_ARGUMENT, 'connect takes a cluster or zookeeper, not both');
    const { ZooKeeperConfigStore } = await import('../config/zk-store.js'); // the ZooKeeper client, only when used
    const zk = await ZooKeeperConfigStore.open({ connect: zookeeper.connect, path: zookeeper.path });
    try {
      return { config: await zk.read(), source: { store: zk, endpoints, close: () => zk.close() } };
    } catch (err) {
      zk.close();
      throw err;
    }
  }
  if (typeof cluster === 'string') {
    const file = new FileConfigStore(cluster);
    return { config: file.readSync(), source: { store: file, endpoints } };
  }
  if (cluster !== undefined) return { config: validateCluster(structuredClone(cluster)), source: { store: null, endpoints } };
  if (endpoints.length === 0) throw new RowanError(ErrorCodes.BAD_ARGUMENT, 'connect needs a cluster (object or file), zookeeper, or endpoints');
  const best = await askAll(endpoints, 0, ask);
  if (!best.config) throw best.lastError!;
  return { config: best.config, source: { store: null, endpoints } };
}

/**
 * The newest configuration reachable from `source` and the nodes of `current`: the first one whose term
 * is above current.term, else the newest seen (which may be `current` itself: the cluster has not moved
 * on yet, the caller backs off and retries). Fails only if nothing at all could be asked.
 */
export async function refreshConfig(
  current: ClusterConfig,
  source: ClusterSource,
  ask: (e: Endpoint) => Promise<ClusterConfig>,
): Promise<ClusterConfig> {
  if (source.store instanceof FileConfigStore) {
    const fromFile = await source.store.read();
    if (fromFile.term > current.term) return fromFile;
  } else if (source.store !== null) {
    const stored = await source.store.read().catch(() => null); // no session: ask the nodes
    if (stored && stored.term > current.term) return stored;
  }
  const r = await askAll([...source.endpoints, ...allEndpoints(current)], current.term, ask);
  if (r.config && r.config.term >= current.term) return r.config;
  if (!r.config && source.store === null) throw r.lastError!;
  return current;
}

/** Ask endpoints one at a time (each once) until one has a term above `above`; the newest answer wins. */
async function askAll(
  endpoints: Endpoint[],
  above: number,
  ask: (e: Endpoint) => Promise<ClusterConfig>,
): Promise<{ config: ClusterConfig | null; lastError: RowanError | null }> {
  const seen = new Set<string>();
  let config: ClusterConfig | null = null;
  let lastError: RowanError | null = null;
  for (const e of endpoints) {
    const k = endpointKey(e);
    if (seen.has(k)) continue;
    seen.add(k);
    try {
      const c = await ask(e);
      if (!config || c.term > config.term) config = c;
      if (c.term > above) break;
    } catch (err) {
      lastError = err instanceof RowanError ? err : new RowanError(ErrorCodes.PEER_GONE, `${k}: ${String(err)}`);
    }
  }
  if (!config && !lastError) lastError = new RowanError(ErrorCodes.BAD_ARGUMENT, 'no endpoint to ask for the configuration');
  return { config, lastError };
}
