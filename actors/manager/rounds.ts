// The two rounds of a primary change, as the manager offers them to what changes primaries: a node's
// failover (./failover.ts), a stored term completed after a takeover (./takeover.ts) and a resharding
// move (./moves.ts). Each of those hosts extends this.
import type { Clock } from '../../config/base/clock.js';
import type { ClusterConfig } from '../../config/cluster.js';
import type { Logger } from '../../config/base/log.js';
import type { MemberReport } from './gather.js';
import type { ShardMove } from './plan.js';

/** Phase 1's result: the shards' highest versions, each member's gathered entries, who did not answer. */
export interface Prepared {
  versions: Map<number, number>;
  reports: Map<number, MemberReport>;
  missing: number[];
}

export interface RoundsHost {
  config(): ClusterConfig;
  /** Phase 1: every reachable member blocks; `planned`: a move (the source drains its writes first);
   *  `waitFor`: the members waited for (default every reachable one). */
  prepareRound(next: ClusterConfig, shards: number[], planned?: boolean, waitFor?: ReadonlySet<number>): Promise<Prepared>;
  /** Phase 2: commit `next`, with floors and scatter for the shards in `moved`. */
  commitRound(next: ClusterConfig, moved: readonly ShardMove[], prep: Omit<Prepared, 'missing'>, again: number[], planned: number[]): { gathered: number; scattered: number };
  /** Call `done` once the new primaries of `term` reported their promotions. */
  awaitPromoted(term: number, to: readonly number[], done: () => void): void;
  readonly log: Logger;
  readonly clock: Clock;
  sleep(ms: number): Promise<void>;
}
