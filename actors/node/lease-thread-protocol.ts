// The node's lease thread (./lease-thread.ts) and its main thread (./lease-thread-link.ts): the one
// startup payload and every message between them, over the worker's port. The lease itself never
// crosses it: the lease thread writes it into the configuration cell (../shared/config-cell.ts LEASE),
// where every worker reads it. What crosses is rare: the manager's rounds one way, the node's answers
// and reports (already encoded as lines) the other.
import type { LogLevel } from '../../config/base/log.js';
import type { ThreadPriority } from '../../native/libc.js';
import type { TlsClientMaterial } from '../../runtime/net/tls.js';
import type { RoundMessage } from './lease-client.js';

/** workerData of the lease thread: what is known when it is spawned, early in the node's start (its
 *  modules load while the actors start: a thread's start took 0.8 s on the busy 2-core machine). */
export interface LeaseThreadData {
  nodeId: number;
  logLevel: LogLevel;
  /** Ask for a raised scheduling priority (ROWAN_LEASE_PRIORITY=0 turns it off). */
  raisePriority: boolean;
  /** An eventfd the main thread signals after each message it posts (the thread's poll loop,
   *  ./lease-reactor.ts, wakes on it). */
  wakeFd: number;
  /** The node's main thread (gettid): raised to SCHED_FIFO before a round is posted to it, so that the
   *  round does not wait its turn behind ordinary threads on a busy machine before the main thread
   *  raises itself (./config-follower.ts urgent); 0: not raised from here. */
  mainTid: number;
}

/** The first message to the lease thread, once the node is ready: start holding the lease. */
export interface LeaseThreadStart {
  t: 'start';
  cell: SharedArrayBuffer;
  managers: { host: string; port: number }[];
  rejoin: boolean;
  secret: Uint8Array | null;
  tls: TlsClientMaterial | null;
  /** The shards held since the cold start, for the first hello (./restart-hold.ts). */
  unconfirmed: number[];
}

/** Lease thread -> main thread. */
export type LeaseToMain =
  /** Once at start: the scheduling priority the thread obtained. */
  | { t: 'priority'; priority: ThreadPriority }
  /** A grant brought another lease timing. */
  | { t: 'timing'; leaseMs: number; renewMs: number; driftMs: number }
  /** The manager's prepare or commit, for the follower. */
  | { t: 'round'; m: RoundMessage }
  /** Peer leases should look (the manager's lease runs low, or the term changed). */
  | { t: 'tick' }
  /** The manager removed this node (the cell says so already). */
  | { t: 'evicted'; retired: boolean }
  /** The thread stopped (its connection closed). */
  | { t: 'stopped' };

/** Main thread -> lease thread (after LeaseThreadStart). */
export type MainToLease =
  /** A message for the manager, encoded (manager-protocol encodeLine). */
  | { t: 'send'; line: string }
  /** The shards held since the cold start changed (the next hello lists them). */
  | { t: 'unconfirmed'; shards: number[] }
  | { t: 'stop' };
