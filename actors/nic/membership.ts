// What the nic reads of a ROWAN-KV node's configuration (./nic-verbs.ts): the live membership, for ALLOC,
// and the owner ids of the nodes it names (actors/shared/trust.ts remoteOwnersOf, the cold start's rule),
// whose regions are kept. Both are rebuilt only when the configuration's term changes, so the owner
// set is the same object until then (NicMemory releases regions only when it changes).
import { liveNodes, type ClusterConfig } from '../../config/cluster.js';
import { remoteOwnersOf } from '../shared/trust.js';
import type { NicMembership } from './nic-verbs.js';

export interface NicConfigView {
  members: () => NicMembership;
  remoteOwners: () => ReadonlySet<number>;
}

/** The nic's view of `config()` (a configuration cell's current one) on node `self`. */
export function configView(config: () => ClusterConfig, self: number): NicConfigView {
  let term = -1;
  let live: ReadonlySet<number> = new Set();
  let owners: ReadonlySet<number> = new Set();
  const current = () => {
    const cfg = config();
    if (cfg.term === term) return;
    term = cfg.term;
    live = new Set(liveNodes(cfg).map((n) => n.id));
    owners = remoteOwnersOf(cfg, self);
  };
  return {
    members: () => {
      current();
      return { self, live };
    },
    remoteOwners: () => {
      current();
      return owners;
    },
  };
}
