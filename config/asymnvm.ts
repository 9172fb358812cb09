// What cluster replication mode `asymnvm` (docs/architecture.md "AsymNVM") cannot do, said once for the
// status (bin/cluster-status.ts), the manager's log and the node's cold-start log.
export const ASYMNVM_MODE = 'asymnvm';

/** The mode's limits, one sentence. */
export const ASYMNVM_CANNOT =
  'asymnvm: NO FAILOVER and NO GC of the op log -- the back end applies the op log only at its cold start (no online batched apply, so a promoted back end would lack acknowledged writes), and the front end never hands op-log regions back (a long run fills the back end\'s pool)';
