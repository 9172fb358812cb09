// What the configuration manager actor takes and sends. Its ring traffic is only the runtime's
// PING/PONG: the actor's thread serves the manager's TCP port itself, whose messages (one JSON object
// per line, shared with every node's lease client) are in actors/shared/manager-protocol.ts.
import type { PingRecord, PongRecord } from '../../shm/mailbox.js';
import type { ReshardingOptions } from './reshard.js';
import { ErrorCodes, RowanError } from '../../config/base/errors.js';

export type ManagerInbound = PingRecord;
export type ManagerOutbound = PongRecord;

export { LineReader, encodeLine, LINE_BYTES_MAX, type ManagerToNode, type NodeToManager } from '../shared/manager-protocol.js';

/** Steps after which `--debug-pause STEP:MS` holds the manager: a failover's configuration stored but
 *  not yet pushed; a move's term stored but not prepared; a move committed but its targets not yet
 *  promoted. Fault tests kill the manager or the cluster there (docs/testing.md). */
export const DEBUG_PAUSE_STEPS = ['failover-stored', 'move-stored', 'move-prepared', 'move-committed'] as const;
export type DebugPauseStep = (typeof DEBUG_PAUSE_STEPS)[number];
export interface DebugPause {
  step: DebugPauseStep;
  ms: number;
}

/** `STEP:MS` (the flag's value) -> DebugPause; BAD_ARGUMENT naming the steps otherwise. */
export function parseDebugPause(v: string): DebugPause {
  const m = /^([a-z-]+):(\d{1,9})$/.exec(v);
  const step = m?.[1] as DebugPauseStep | undefined;
  if (!m || !step || !DEBUG_PAUSE_STEPS.includes(step) || Number(m[2]) < 1) {
    throw new RowanError(ErrorCodes.BAD_ARGUMENT, `--debug-pause: '${v}' is not STEP:MS with STEP one of ${DEBUG_PAUSE_STEPS.join(', ')} and MS a positive integer`);
  }
  return { step, ms: Number(m[2]) };
}

/** The manager actor's start payload (`rowan manager` builds it). */
export interface ManagerStart {
  /** The embedded configuration store: the cluster JSON file (unused when `zookeeper` is given). */
  clusterFile: string;
  /** The configuration in ZooKeeper instead: connect string and znode (config/zk-store.ts). */
  zookeeper?: { connect: string; path: string };
  /** With zookeeper: the session timeout asked for (ms). It bounds a standby's takeover after the active
   *  manager dies, and how long a ZooKeeper outage the active one rides out (./election.ts). */
  zkSessionMs?: number;
  host: string;
  port: number;
  leaseMs: number;
  renewMs?: number;
  driftMs?: number;
  /** Resharding (§4.6); absent: moves only when asked. */
  resharding?: ReshardingOptions;
  /** `--debug-pause`: hold after a step of a round (fault tests). */
  debugPause?: DebugPause;
}
