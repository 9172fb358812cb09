// Where `rowan cluster` keeps a cluster's configuration: DIR/cluster.json (the embedded file store), or
// a ZooKeeper znode that DIR/cluster-store.json points at (--zookeeper), so running the launcher on DIR
// again -- or `rowan cluster stop` -- finds it without the flags.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ClusterConfig } from '../config/cluster.js';
import { ErrorCodes, RowanError } from '../config/base/errors.js';
import { FileConfigStore } from '../config/store.js';
import type { StoreSpec } from '../config/store-spec.js';
import { DEFAULT_ZK_CLUSTER_NAME, zkConfigPath } from '../config/zk-path.js';

/** DIR/cluster-store.json: where a ZooKeeper-stored cluster's configuration is. */
export const STORE_POINTER = 'cluster-store.json';

interface ZkPointer {
  zookeeper: string;
  clusterName: string;
}

export function readPointer(dir: string): ZkPointer | null {
  const f = join(dir, STORE_POINTER);
  if (!existsSync(f)) return null;
  try {
    const p = JSON.parse(readFileSync(f, 'utf8')) as ZkPointer;
    if (typeof p.zookeeper === 'string' && typeof p.clusterName === 'string') return p;
  } catch {
    // fall through
  }
  throw new RowanError(ErrorCodes.BAD_CONFIG, `${f} is not {"zookeeper", "clusterName"}`);
}

/** The store of the cluster in DIR: the ZooKeeper one named by the flags or DIR's pointer, else DIR/cluster.json. */
export function storeFor(dir: string, o: { zookeeper?: string; clusterName?: string }): { spec: StoreSpec; clusterName: string } {
  const pointer = readPointer(dir);
  const file = join(dir, 'cluster.json');
  if (o.zookeeper !== undefined) {
    if (existsSync(file)) throw new RowanError(ErrorCodes.BAD_ARGUMENT, `${dir} holds a cluster whose configuration is in ${file}; it cannot move to ZooKeeper (use another --dir)`);
    const clusterName = o.clusterName ?? pointer?.clusterName ?? DEFAULT_ZK_CLUSTER_NAME;
    if (pointer && (pointer.zookeeper !== o.zookeeper || pointer.clusterName !== clusterName))
      console.log(`note: ${dir} was run with --zookeeper ${pointer.zookeeper} --cluster-name ${pointer.clusterName}; now ${o.zookeeper} ${clusterName}`);
    return { spec: { zookeeper: o.zookeeper, path: zkConfigPath(clusterName) }, clusterName };
  }
  if (o.clusterName !== undefined && !pointer) throw new RowanError(ErrorCodes.BAD_ARGUMENT, '--cluster-name goes with --zookeeper');
  if (pointer) return { spec: { zookeeper: pointer.zookeeper, path: zkConfigPath(pointer.clusterName) }, clusterName: pointer.clusterName };
  return { spec: { file }, clusterName: DEFAULT_ZK_CLUSTER_NAME };
}

/** The stored configuration of the cluster in DIR (file or znode); BAD_ARGUMENT when DIR holds none. */
export async function readClusterIn(dir: string): Promise<ClusterConfig> {
  const file = join(dir, 'cluster.json');
  const pointer = readPointer(dir);
  if (!existsSync(file) && !pointer) throw new RowanError(ErrorCodes.BAD_ARGUMENT, `no cluster in ${dir} (${file} is missing)`);
  if (!pointer) return new FileConfigStore(file).readSync();
  const { ZooKeeperConfigStore } = await import('../config/zk-store.js'); // only with ZooKeeper
  const zk = await ZooKeeperConfigStore.open({ connect: pointer.zookeeper, path: zkConfigPath(pointer.clusterName) });
  try {
    return await zk.read();
  } finally {
    zk.close();
  }
}
