// What a client port serves: the worker actor implements this (actors/worker), tests use a fake. The
// rpc server has checked every field of a request before it calls here; keys and values are views
// into received bytes that stay valid (never reused), so an implementation that keeps one past the
// call may hold the view, though copying it lets the received chunk be freed.
//
// Term rule (§4.5): a request carries the configuration term the client routed with; the handler
// rejects one lower than its own with RowanError(STALE_TERM) (and a key its node no longer serves with
// WRONG_SHARD), after which the client refreshes its configuration and retries. A RowanError thrown
// here reaches the client with its code; anything else is answered ROWAN_ERR_INTERNAL and logged.
import type { ClusterConfig } from '../../config/cluster.js';
import type { ExpiryKindCode } from './frames-layout.js';

export interface KvHandler {
  /** The node's current configuration term. */
  term(): number;
  put(key: Uint8Array, value: Uint8Array, clientTerm: number): Promise<void>;
  /**
   * PUT with an expiry deadline (PUT_EXPIRES): `expiry.kind` TTL_MS is a TTL the primary turns into a
   * deadline with its own clock (as Redis's SET PX), AT_UNIX_MS the deadline itself (SET PXAT); `ms`
   * was checked by the frame decoder (1..EXPIRY_MS_MAX). Handlers without expiry may omit it
   * (ROWAN_ERR_UNKNOWN_OP).
   */
  putExpiring?(key: Uint8Array, value: Uint8Array, clientTerm: number, expiry: { kind: ExpiryKindCode; ms: number }): Promise<void>;
  get(key: Uint8Array, clientTerm: number): Promise<Uint8Array | null>; // null = not found
  del(key: Uint8Array, clientTerm: number): Promise<void>;
  /** Read this node's replica (primary or backup index), for tests/inspection; no term check. */
  getReplica(key: Uint8Array): Promise<Uint8Array | null>;
  /**
   * RPC-KV replication (ROWAN §6.1): one encoded log block a primary's worker sends to this backup's
   * worker; resolves once the entry is persistent in this node's log (and indexed, for a complete entry).
   * `block` is a view into received bytes. Handlers that take no replication writes may omit it (the
   * request is then answered ROWAN_ERR_UNKNOWN_OP).
   */
  replicate?(block: Uint8Array, clientTerm: number): Promise<void>;
  /**
   * Re-replication (§4.5 phase 3): one batch of a shard's entries for a new backup; `request` and the
   * batch are the application's encoding (actors/shared/copy-batch.ts), carried as a key and a VALUE.
   * Handlers that are no primary may omit it (ROWAN_ERR_UNKNOWN_OP).
   */
  copyShard?(request: Uint8Array, clientTerm: number): Promise<Uint8Array>;
  /**
   * A peer lease (docs/failover.md "Partitions"): another node of the cluster asks this one to promise not to
   * take over its shards for a lease; resolves when granted, throws (STALE_TERM ...) when refused.
   * Handlers that hold no configuration may omit it (ROWAN_ERR_UNKNOWN_OP).
   */
  peerLease?(request: Uint8Array, clientTerm: number): Promise<void>;
  config(): ClusterConfig;
}
