// Bounds of a RESP connection (DESIGN §7: memory per connection and connections per node are
// bounded). Exceeding a protocol bound gets `-ERR Protocol error: ...` and a closed connection, as in
// Redis; the pipeline and output bounds apply back-pressure (the socket stops being read) instead.
// Before a connection has authenticated (on a port with a password) it gets far less: Redis 6.2's
// bounds on requests, a small output bound, and a deadline.

export interface RespLimits {
  /** Largest bulk string a request may carry. A longer one up to bulkDiscardBytesMax is dropped as it
   *  streams in and its request answered `-ERR ROWAN_ERR_VALUE_TOO_LARGE` (the connection goes on). */
  bulkBytesMax: number;
  /** Longer bulk lengths are a protocol error (Redis: proto-max-bulk-len, 512 MiB by default). */
  bulkDiscardBytesMax: number;
  /** Most arguments in one request (Redis refuses a multibulk length over INT_MAX; we bound it far lower). */
  argsMax: number;
  /** Longest inline command line (Redis: PROTO_INLINE_MAX_SIZE, 64 KiB). */
  inlineBytesMax: number;
  /** Bytes of one request held while it arrives (Redis: client-query-buffer-limit). */
  requestBytesMax: number;
  /** Requests parsed but not yet answered on one connection; beyond it the socket is paused. */
  pipelineMax: number;
  /** Reply bytes queued in the socket; beyond it the socket is paused until it drains. */
  writeBytesMax: number;
  /** Open connections per listener; more are answered `-ERR max number of clients reached` and closed. */
  connectionsMax: number;
  /** Unauthenticated: most arguments of a request, longest bulk string (Redis 6.2+: 10 and 16 KiB);
   *  more is a protocol error ("unauthenticated multibulk/bulk length") and closes the connection. */
  preAuthArgsMax: number;
  preAuthBulkBytesMax: number;
  /** Unauthenticated: reply bytes queued in the socket before it is paused (NOAUTH replies to a peer
   *  that does not read). */
  preAuthWriteBytesMax: number;
  /** A connection not authenticated this long after it was accepted is closed (config authDeadlineMs). */
  authDeadlineMs: number;
}

/** Defaults for a listener whose values are at most `valueBytesMax` (config/limits.ts). */
export function respLimits(valueBytesMax: number, authDeadlineMs = 10_000): RespLimits {
  return {
    bulkBytesMax: valueBytesMax + 64 * 1024,
    bulkDiscardBytesMax: 512 * 1024 * 1024,
    argsMax: 1024 * 1024,
    inlineBytesMax: 64 * 1024,
    requestBytesMax: 64 * 1024 * 1024,
    pipelineMax: 1024,
    writeBytesMax: 4 * 1024 * 1024,
    connectionsMax: 10_000,
    preAuthArgsMax: 10,
    preAuthBulkBytesMax: 16 * 1024,
    preAuthWriteBytesMax: 64 * 1024,
    authDeadlineMs,
  };
}
