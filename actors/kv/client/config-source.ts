// Where a client's cluster configuration comes from and how it is refreshed (§4.5: a server rejects a
// request whose term is older than its own; the client then fetches the new configuration).
//   an object  given by the caller: refreshed by asking the cluster's nodes (CONFIG);
//   a file     the embedded store's JSON (config/store.ts): re-read first, then the nodes are asked;
//   endpoints  bootstrap addresses: asked for CONFIG at connect (when no cluster is given) and on
//              every refresh, before the nodes of the configuration in use.
import { validateCluster, type ClusterConfig } from '../../../config/cluster.js';
import { FileConfigStore } from '../../../config/store.js';
import { ErrorCodes, RowanError } from '../../../config/base/errors.js';
import { endpointKey, type Endpoint } from './connection.js';
import { allEndpoints } from './routing.js';

export interface ClusterSource {
  /** The cluster file, re-read first on refresh (when the client was made from one). */
  file: string | null;
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
): Promise<{ config: ClusterConfig; source: ClusterSource }> {
  if (typeof cluster === 'string') return { config: new FileConfigStore(cluster).readSync(), source: { file: cluster, endpoints } };
  if (cluster !== undefined) return { config: validateCluster(structuredClone(cluster)), source: { file: null, endpoints } };
  if (endpoints.length === 0) throw new RowanError(ErrorCodes.BAD_ARGUMENT, 'connect needs a cluster (object or file) or endpoints');
  const best = await askAll(endpoints, 0, ask);
  if (!best.config) throw best.lastError!;
  return { config: best.config, source: { file: null, endpoints } };
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
  if (source.file !== null) {
    const fromFile = await new FileConfigStore(source.file).read();
    if (fromFile.term > current.term) return fromFile;
  }
  const r = await askAll([...source.endpoints, ...allEndpoints(current)], current.term, ask);
  if (r.config && r.config.term >= current.term) return r.config;
  if (!r.config && source.file === null) throw r.lastError!;
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
