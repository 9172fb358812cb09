// Every error rowan reports has a stable code (CONVENTIONS 6). Codes are part of the interface:
// they cross threads and the wire as {code, message}; never rename one, only add.
//
// Operational errors (a full pool, a corrupt file, a bad frame, a dead peer) are RowanErrors and are
// handled and reported. A broken invariant is an AssertionError from `invariant()` and stops the actor.

export const ErrorCodes = {
  // configuration and command line
  BAD_CONFIG: 'ROWAN_ERR_BAD_CONFIG',
  BAD_ARGUMENT: 'ROWAN_ERR_BAD_ARGUMENT',
  /** A cluster configuration of another format version (e.g. 1: keys routed by hash, not slot). */
  CLUSTER_FORMAT: 'ROWAN_ERR_CLUSTER_FORMAT',
  // native seam
  NATIVE_LIBRARY: 'ROWAN_ERR_NATIVE_LIBRARY',
  PMEM2: 'ROWAN_ERR_PMEM2',
  PMEM2_MODE_UNAVAILABLE: 'ROWAN_ERR_PMEM2_MODE_UNAVAILABLE',
  AFFINITY: 'ROWAN_ERR_AFFINITY',
  VERBS_NO_DEVICE: 'ROWAN_ERR_VERBS_NO_DEVICE',
  VERBS: 'ROWAN_ERR_VERBS',
  // PM pool
  POOL_EMPTY_FILE: 'ROWAN_ERR_POOL_EMPTY_FILE',
  POOL_NOT_A_POOL: 'ROWAN_ERR_POOL_NOT_A_POOL',
  POOL_VERSION: 'ROWAN_ERR_POOL_VERSION',
  POOL_TRUNCATED: 'ROWAN_ERR_POOL_TRUNCATED',
  POOL_SUPERBLOCK_CORRUPT: 'ROWAN_ERR_POOL_SUPERBLOCK_CORRUPT',
  POOL_META_CORRUPT: 'ROWAN_ERR_POOL_META_CORRUPT',
  POOL_EXISTS: 'ROWAN_ERR_POOL_EXISTS',
  POOL_NOT_FOUND: 'ROWAN_ERR_POOL_NOT_FOUND',
  PM_FULL: 'ROWAN_ERR_PM_FULL',
  SEGMENT_STATE: 'ROWAN_ERR_SEGMENT_STATE',
  // log entries
  ENTRY_TOO_LARGE: 'ROWAN_ERR_ENTRY_TOO_LARGE',
  KEY_TOO_LARGE: 'ROWAN_ERR_KEY_TOO_LARGE',
  KEY_EMPTY: 'ROWAN_ERR_KEY_EMPTY',
  VALUE_TOO_LARGE: 'ROWAN_ERR_VALUE_TOO_LARGE',
  SEGMENT_FULL: 'ROWAN_ERR_SEGMENT_FULL',
  // index
  INDEX_FULL: 'ROWAN_ERR_INDEX_FULL',
  // Rowan abstraction and fabrics
  RECEIVER_NOT_READY: 'ROWAN_ERR_RECEIVER_NOT_READY',
  RECEIVER_CLOSED: 'ROWAN_ERR_RECEIVER_CLOSED',
  /** A restarting receiver's previous queue still has a live sender's copy to come (runtime/rowan/stale-queue.ts). */
  SENDERS_HOLDING: 'ROWAN_ERR_SENDERS_HOLDING',
  WRITE_TIMEOUT: 'ROWAN_ERR_WRITE_TIMEOUT',
  PEER_GONE: 'ROWAN_ERR_PEER_GONE',
  /** Another node could not be connected to, so the request was never sent to it: not applied (a RESP
   *  port forwarding to a dead owner before its failover; runtime/resp/client.ts). */
  PEER_UNREACHABLE: 'ROWAN_ERR_PEER_UNREACHABLE',
  BAD_FRAME: 'ROWAN_ERR_BAD_FRAME',
  FABRIC_UNAVAILABLE: 'ROWAN_ERR_FABRIC_UNAVAILABLE',
  NO_BUFFER: 'ROWAN_ERR_NO_BUFFER',
  FRAME_TOO_LARGE: 'ROWAN_ERR_FRAME_TOO_LARGE',
  UNKNOWN_OP: 'ROWAN_ERR_UNKNOWN_OP',
  // ROWAN-KV
  STALE_TERM: 'ROWAN_ERR_STALE_TERM',
  WRONG_SHARD: 'ROWAN_ERR_WRONG_SHARD',
  NOT_FOUND: 'ROWAN_ERR_NOT_FOUND',
  TIMEOUT: 'ROWAN_ERR_TIMEOUT',
  NO_HANDSHAKE: 'ROWAN_ERR_NO_HANDSHAKE',
  /** A request on a connection that has not proven its credential (the cluster secret for peers, the
   *  client password for clients): refused, nothing ran. */
  NOAUTH: 'ROWAN_ERR_NOAUTH',
  /** A handshake proof did not match (wrong secret or password), or the peer could not prove one. */
  AUTH_FAILED: 'ROWAN_ERR_AUTH_FAILED',
  /** A peer-only request (REPLICATE, COPY_SHARD) on a connection authenticated as a client: refused,
   *  nothing ran. */
  FORBIDDEN: 'ROWAN_ERR_FORBIDDEN',
  /** A client port already holds clients.connectionsMax connections: this one is refused (not applied). */
  TOO_MANY_CONNECTIONS: 'ROWAN_ERR_TOO_MANY_CONNECTIONS',
  REPLICATION_FAILED: 'ROWAN_ERR_REPLICATION_FAILED',
  /** A one-sided verb (WRITE, READ, ALLOC) outside what the soft NIC granted this peer (README
   *  "Security model"): nothing was read or written. */
  NOT_GRANTED: 'ROWAN_ERR_NOT_GRANTED',
  /** An ALLOC from a peer node whose regions in this pool (not Free) already number
   *  fabric.remoteSegmentsMax: nothing was allocated. Retryable once garbage collection frees one. */
  QUOTA: 'ROWAN_ERR_QUOTA',
  /** The node's lease with the configuration manager has expired: it serves nothing (not applied). */
  LEASE_EXPIRED: 'ROWAN_ERR_LEASE_EXPIRED',
  /** A PUT/DEL was sent but no answer came back (connection lost, timeout): it may or may not have
   *  been applied. The client does not re-send it (a re-send could apply it twice). */
  OUTCOME_UNKNOWN: 'ROWAN_ERR_OUTCOME_UNKNOWN',
  /** A failure that was not a RowanError (a bug), as reported across the wire. */
  INTERNAL: 'ROWAN_ERR_INTERNAL',
  // actor runtime
  ACTOR_FAILED: 'ROWAN_ERR_ACTOR_FAILED',
  ACTOR_START_TIMEOUT: 'ROWAN_ERR_ACTOR_START_TIMEOUT',
  RING_FULL: 'ROWAN_ERR_RING_FULL',
  RECORD_TOO_LARGE: 'ROWAN_ERR_RECORD_TOO_LARGE',
  UNKNOWN_ROLE: 'ROWAN_ERR_UNKNOWN_ROLE',
  NODE_NOT_RUNNING: 'ROWAN_ERR_NODE_NOT_RUNNING',
  DATA_DIR: 'ROWAN_ERR_DATA_DIR',
  /** A resharding move (§4.6) that cannot be made now (no such shard or node, the target holds no
   *  full replica, a participant unreachable) or was rolled back: the distribution is as it was. */
  MOVE_REFUSED: 'ROWAN_ERR_MOVE_REFUSED',
  /** A decommission that would leave fewer live members than the replication factor asks. */
  TOO_FEW_NODES: 'ROWAN_ERR_TOO_FEW_NODES',
  /** A membership change that cannot be made (no such node, the node is leaving already, a node id
   *  or address taken). */
  MEMBERSHIP_REFUSED: 'ROWAN_ERR_MEMBERSHIP_REFUSED',
  /** The ZooKeeper configuration store cannot be reached, or its session is lost (config/zk-store.ts). */
  ZOOKEEPER: 'ROWAN_ERR_ZOOKEEPER',
  /** A configuration manager that is not (or no longer) the elected active one refused to act
   *  (actors/manager/election.ts): its election znode is gone or its session may have expired. */
  NOT_ACTIVE_MANAGER: 'ROWAN_ERR_NOT_ACTIVE_MANAGER',
} as const;

export type ErrorCode = (typeof ErrorCodes)[keyof typeof ErrorCodes];

/** The shape in which an error crosses a thread boundary or the wire. */
export interface ErrorRecord {
  code: string;
  message: string;
}

export class RowanError extends Error {
  readonly code: ErrorCode;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: ErrorCode, message: string, details?: Record<string, unknown>) {
    super(message);
    this.name = 'RowanError';
    this.code = code;
    this.details = details;
  }

  toRecord(): ErrorRecord {
    return { code: this.code, message: this.message };
  }
}

/** Rebuild an error that crossed a boundary. Unknown codes keep their code string in the message. */
export function fromRecord(rec: ErrorRecord): RowanError {
  const known = (Object.values(ErrorCodes) as string[]).includes(rec.code);
  return known
    ? new RowanError(rec.code as ErrorCode, rec.message)
    : new RowanError(ErrorCodes.ACTOR_FAILED, `${rec.code}: ${rec.message}`);
}

/** Turn anything thrown into a record that can cross a boundary. */
export function toRecord(err: unknown): ErrorRecord {
  if (err instanceof RowanError) return err.toRecord();
  if (err instanceof Error) {
    const code = (err as { code?: unknown }).code;
    return { code: typeof code === 'string' ? code : 'ROWAN_ERR_INTERNAL', message: err.message };
  }
  return { code: 'ROWAN_ERR_INTERNAL', message: String(err) };
}

export class InvariantError extends Error {
  readonly code = 'ROWAN_ERR_INVARIANT';
  constructor(message: string) {
    super(`invariant broken: ${message}`);
    this.name = 'InvariantError';
  }
}

/** A broken invariant is a bug, not an operational error: stop loudly (CONVENTIONS 7). */
export function invariant(cond: unknown, message: string): asserts cond {
  if (!cond) throw new InvariantError(message);
}
