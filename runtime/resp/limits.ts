// Bounds of a RESP connection (DESIGN §7: memory per connection and connections per node are
// bounded). Exceeding a protocol bound gets `-ERR Protocol error: ...` and a closed connection, as in
// Redis; the pipeline and output bounds apply back-pressure (the socket stops being read) instead.

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
}

/** Defaults for a listener whose values are at most `valueBytesMax` (config/limits.ts). */
export function respLimits(valueBytesMax: number): RespLimits {
  return {
    bulkBytesMax: valueBytesMax + 64 * 1024,
    bulkDiscardBytesMax: 512 * 1024 * 1024,
    argsMax: 1024 * 1024,
    inlineBytesMax: 64 * 1024,
    requestBytesMax: 64 * 1024 * 1024,
    pipelineMax: 1024,
    writeBytesMax: 4 * 1024 * 1024,
    connectionsMax: 10_000,
  };
}
