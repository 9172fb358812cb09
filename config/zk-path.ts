// Where a cluster's configuration lives in ZooKeeper: its znode. Apart from ./zk-store.ts so that what
// only names the znode (the CLI's flags, the client) does not load the ZooKeeper client.
import { ErrorCodes, RowanError } from './base/errors.js';

export const DEFAULT_ZK_CLUSTER_NAME = 'default';

/** The znode a cluster's configuration lives in. */
export function zkConfigPath(clusterName: string): string {
  if (!/^[A-Za-z0-9._-]+$/.test(clusterName) || clusterName === '.' || clusterName === '..')
    throw new RowanError(ErrorCodes.BAD_ARGUMENT, `cluster name '${clusterName}': letters, digits, '.', '_' and '-' only`);
  return `/rowan/${clusterName}/config`;
}
