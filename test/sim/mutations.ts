// Deliberately broken components for the mutation test: each one is injected through the simulated
// node's options (never by editing the store's code), and the simulator must catch it on some seed.
//   index-ignores-versions  every index update wins, whatever the version it carries (a reordered or
//                           re-issued older write replaces a newer one);
//   gc-frees-live           the cleaner frees Committed segments without moving their live entries out
//                           (it believes every segment holds nothing live);
//   tombstone-drops-early   the tombstone sweep drops every committed tombstone of a primary shard,
//                           without looking for older entries of its key elsewhere on PM (rule 4 of
//                           actors/clean/tombstones.ts): a cold start brings an older PUT back.
//   backup-drops-without-floor  a backup's sweep drops any tombstone rule 4 allows, under no floor (as
//                           the primary's rule would with the backup's own shard version), and the
//                           node persists no floors (a cold start refuses no late b-log block).
//   counter-not-raised-at-cold-start  the node's persisted version marks read back as none: a cold
//                           start rebuilds each counter from the versions on its PM alone, below what
//                           it told its backups (CommitVer, promotion gaps: issue 24, hazard 1);
//   counter-not-raised-unconfirmed  the same, and restarted primaries serve unconfirmed: the round that
//                           confirms a restarted primary raises its counters above what its backups
//                           report (actors/manager/reconfirm.ts), which hides the first mutation; this
//                           one shows the marks are what holds when no round runs;
//   receiver-ignores-holds  the receiver hands Used buffers on without waiting for the queue's holds
//                           (a stalled sender copies into a segment digest and clean may have reused);
//   bare-commit-of-move     the manager commits a move's stored term to every member without a prepare
//                           (the source never drains), and sends members behind the stored term the
//                           bare commit on hello/renew (issue 24, hazard 2).
//   forgets-failed-writes   the writes that failed after their t-log append are not recorded: a cold
//                           start indexes them and serves them, though CommitVer passed them and a
//                           backup that missed them refuses them as late (actors/shared/failed-writes.ts);
//   serves-unconfirmed      a restarted primary serves its shards at once, its own t-log tail included,
//                           without the round that spreads that tail to its backups
//                           (actors/node/restart-hold.ts): a failover later takes back what it served.
import { Cleaner, type CleanerOptions } from '../../actors/clean/gc.js';
import type { KvShared } from '../../actors/shared/node-shared.js';
import { TombstoneSweep } from '../../actors/clean/tombstones.js';
import type { ShardIndex } from '../../shm/index.js';
import type { SimNodeOptions } from './node.js';
import type { SimManagerOptions } from './manager.js';
import type { FloorStore } from '../../actors/shared/floors.js';
import type { ShardVersionStore } from '../../actors/shared/shard-versions-file.js';

export type MutationName =
  | 'index-ignores-versions'
  | 'gc-frees-live'
  | 'tombstone-drops-early'
  | 'backup-drops-without-floor'
  | 'counter-not-raised-at-cold-start'
  | 'counter-not-raised-unconfirmed'
  | 'receiver-ignores-holds'
  | 'bare-commit-of-move'
  | 'serves-unconfirmed'
  | 'forgets-failed-writes';

export interface Mutation {
  node?: Partial<SimNodeOptions>;
  manager?: Partial<SimManagerOptions>;
}

/** The highest version an index item can carry: an upsert with it is never stale. */
const VERSION_ALWAYS_NEWER = 2 ** 48 - 1;

function ignoreVersions(index: ShardIndex): ShardIndex {
  const m = Object.create(index) as ShardIndex;
  m.upsert = (key, hash, addr, _version, reader) => index.upsert(key, hash, addr, VERSION_ALWAYS_NEWER, reader);
  return m;
}

class FreesLiveCleaner extends Cleaner {
  constructor(o: CleanerOptions) {
    const gc = o.shared.gc!;
    const live = Object.create(gc.live) as typeof gc.live;
    live.get = () => 0;
    super({ ...o, shared: { ...o.shared, gc: { ...gc, live } } });
  }

  override relocateLive(): boolean {
    return true;
  }
}

class EarlyTombstoneSweep extends TombstoneSweep {
  protected override occursElsewhere(): boolean {
    return false;
  }
}

class NoFloorSweep extends TombstoneSweep {
  protected override backupBound(): number {
    return Number.MAX_SAFE_INTEGER;
  }
}

/** A floor store that keeps nothing. */
const forgetfulStore = (): FloorStore => ({ load: () => new Map(), save: () => {} });

/** A version-mark store whose marks a cold start never sees. */
const unreadMarks = (): ShardVersionStore => ({ load: () => new Map(), save: () => {} });

export const mutations: Record<MutationName, Mutation> = {
  'index-ignores-versions': {
    node: {
      mutateShared: (s: KvShared) => {
        s.indexes = s.indexes.map((ix) => (ix ? ignoreVersions(ix) : null));
      },
    },
  },
  'gc-frees-live': { node: { makeCleaner: (o) => new FreesLiveCleaner(o) } },
  'tombstone-drops-early': { node: { makeSweep: (o) => new EarlyTombstoneSweep(o) } },
  'backup-drops-without-floor': { node: { makeSweep: (o) => new NoFloorSweep(o), makeFloorStore: forgetfulStore } },
  'counter-not-raised-at-cold-start': { node: { makeMarkStore: unreadMarks } },
  'counter-not-raised-unconfirmed': { node: { makeMarkStore: unreadMarks, servesUnconfirmed: true } },
  'receiver-ignores-holds': { node: { receiverIgnoresHolds: true } },
  'bare-commit-of-move': { manager: { bareCommitMoves: true } },
  'serves-unconfirmed': { node: { servesUnconfirmed: true } },
  'forgets-failed-writes': { node: { forgetsFailedWrites: true } },
};

export const MUTATIONS = Object.keys(mutations) as MutationName[];
