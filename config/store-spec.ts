// Where a cluster configuration is stored, as the command line and start payloads name it: the
// embedded file store (a JSON file, the default) or a znode in ZooKeeper (--zookeeper).
import { FileConfigStore, type ConfigStore } from './store.js';

export type StoreSpec = { file: string } | { zookeeper: string; path: string };

/** The store's name in messages: the file, or zk://host:port/znode. */
export function describeStore(s: StoreSpec): string {
  return 'file' in s ? s.file : `zk://${s.zookeeper}${s.path}`;
}

export interface OpenStore {
  store: ConfigStore;
  close(): void;
}

/** Open the store (a ZooKeeper one connects, bounded; ROWAN_ERR_ZOOKEEPER if unreachable). */
export async function openStore(s: StoreSpec): Promise<OpenStore> {
  if ('file' in s) return { store: new FileConfigStore(s.file), close: () => {} };
  // Imported here: the ZooKeeper client is loaded only by a process that uses it.
  const { ZooKeeperConfigStore } = await import('./zk-store.js');
  const zk = await ZooKeeperConfigStore.open({ connect: s.zookeeper, path: s.path });
  return { store: zk, close: () => zk.close() };
}

/** Read the configuration once and let go of the store. */
export async function readStoreOnce(s: StoreSpec) {
  const o = await openStore(s);
  try {
    return await o.store.read();
  } finally {
    o.close();
  }
}
