// What a node checks about its fabric before it starts anything. `verbs` needs an RDMA device, and the
// node's control actor does not yet post its b-log through the verbs receive queue (the transport is
// built and tested through fake contexts; the node runs the emulated queue), so a node refuses it
// rather than silently replicating over something else.
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import type { FabricKind } from './fabric.js';
import { openVerbsFabric } from './verbs-connect.js';

export function checkNodeFabric(kind: FabricKind): void {
  if (kind !== 'verbs') return;
  openVerbsFabric().close(); // throws ROWAN_ERR_VERBS_NO_DEVICE where there is no device
  throw new RowanError(
    ErrorCodes.FABRIC_UNAVAILABLE,
    'an RDMA device is present, but a node cannot serve --fabric verbs yet: its control actor posts the b-log through the emulated receive queue only; use --fabric shm or --fabric tcp',
  );
}
