// The configuration store on the command line: --cluster FILE (the embedded file store, the default)
// or --zookeeper HOST:PORT[,...] with --cluster-name NAME (the znode /rowan/NAME/config).
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { ErrorCodes, RowanError } from '../config/base/errors.js';
import type { StoreSpec } from '../config/store-spec.js';
import { DEFAULT_ZK_CLUSTER_NAME, zkConfigPath } from '../config/zk-path.js';

export interface StoreFlags {
  cluster?: string;
  zookeeper?: string;
  clusterName?: string;
}

export const ZK_FLAG_HELP = 'the configuration is in ZooKeeper at these servers (znode /rowan/<cluster-name>/config) instead of a file';
export const ZK_NAME_HELP = `with --zookeeper: the cluster's name, its znode /rowan/<name>/config (default: ${DEFAULT_ZK_CLUSTER_NAME})`;

export function addZooKeeperFlags(cmd: Command): Command {
  return cmd.option('--zookeeper <host:port,...>', ZK_FLAG_HELP).option('--cluster-name <name>', ZK_NAME_HELP);
}

/** The store the flags name, or null if neither --cluster nor --zookeeper is given. */
export function storeSpecOf(o: StoreFlags): StoreSpec | null {
  if (o.cluster !== undefined && o.zookeeper !== undefined) throw new RowanError(ErrorCodes.BAD_ARGUMENT, 'give --cluster <file> or --zookeeper <host:port>, not both');
  if (o.clusterName !== undefined && o.zookeeper === undefined) throw new RowanError(ErrorCodes.BAD_ARGUMENT, '--cluster-name goes with --zookeeper');
  if (o.zookeeper !== undefined) return { zookeeper: o.zookeeper, path: zkConfigPath(o.clusterName ?? DEFAULT_ZK_CLUSTER_NAME) };
  if (o.cluster !== undefined) return { file: resolve(o.cluster) };
  return null;
}

/** The flags that name `spec` again, for a child process. */
export function storeArgs(spec: StoreSpec, clusterName: string): string[] {
  return 'file' in spec ? ['--cluster', spec.file] : ['--zookeeper', spec.zookeeper, '--cluster-name', clusterName];
}
