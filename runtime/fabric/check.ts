// What a node checks about its fabric before it starts anything. `verbs` needs an RDMA device: the
// node opens it here once (its port must be active) and closes it again, so that a machine without
// one refuses `--fabric verbs` at once with ROWAN_ERR_VERBS_NO_DEVICE -- before a pool is created or a
// thread started -- instead of every actor failing on its own.
import type { FabricKind } from './fabric.js';
import { openVerbsFabric } from './verbs-connect.js';
import { selectVerbsDevices, type VerbsDevices } from './verbs-devices.js';

export function checkNodeFabric(kind: FabricKind, devices?: VerbsDevices): void {
  if (kind !== 'verbs') return;
  selectVerbsDevices(devices);
  openVerbsFabric().close(); // throws ROWAN_ERR_VERBS_NO_DEVICE where there is no device
}
