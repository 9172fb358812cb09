// What the configuration manager actor takes and sends. Its ring traffic is only the runtime's
// PING/PONG: the actor's thread serves the manager's TCP port itself, whose messages (one JSON object
// per line, shared with every node's lease client) are in actors/kv/manager-protocol.ts.
import type { PingRecord, PongRecord } from '../../shm/mailbox.js';
import type { ReshardingOptions } from './reshard.js';

export type ManagerInbound = PingRecord;
export type ManagerOutbound = PongRecord;

export { LineReader, encodeLine, LINE_BYTES_MAX, type ManagerToNode, type NodeToManager } from '../kv/manager-protocol.js';

/** Test hook (test/fault/manager-standby.test.ts): a manager pauses this many ms after storing a
 *  failover's configuration, before pushing it, so a test can kill it mid-failover. */
export const PAUSE_AFTER_STORE_ENV = 'ROWAN_TEST_MANAGER_PAUSE_AFTER_STORE_MS';

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
}
