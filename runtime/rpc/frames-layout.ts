// The client protocol's wire layout (DESIGN §7): every offset, size and code of a frame, by name.
// runtime/rpc/frames.ts encodes and decodes with these; nothing else should know a byte position.
// All integers are little-endian (as in the tcp fabric's frames, actors/nic/frames.ts).
//
// Request (client -> worker port):
//
//   0        4    5       6          8            12         16         20
//   +--------+----+-------+----------+------------+----------+----------+-------------------------+
//   | length | op | flags | reserved | request id | term hi  | term lo  | op body                 |
//   | u32    | u8 | u8 =0 | u16 = 0  | u32        | u32      | u32      | (length - 16 bytes)     |
//   +--------+----+-------+----------+------------+----------+----------+-------------------------+
//   length counts the bytes after itself. term = termHi * 2^32 + termLo is the configuration term the
//   client routed with (0 for HELLO and CONFIG); termHi < 2^21 so the term is a safe integer.
//
//   op               body
//   HELLO       1    protocolVersion u32 · client nonce (32 B) ·      (exactly 40 bytes; another
//                    role u32 (1 client, 2 peer)                      version's HELLO is read as far
//                                                                     as its version, to answer
//                                                                     "upgrade the client")
//   PUT         2    keyLen u16 · valueLen u32 · key · value          (exactly 6 + keyLen + valueLen)
//   GET         3    keyLen u16 · key                                 (exactly 2 + keyLen)
//   DEL         4    keyLen u16 · key
//   CONFIG      5    (empty)
//   GET_REPLICA 6    keyLen u16 · key
//   REPLICATE   7    one encoded log block (shm/log.ts), 1..mtu bytes   (RPC-KV replication, ROWAN §6.1:
//                    a primary's worker to a backup's worker; the backup appends, persists, indexes)
//   AUTH        8    proof (32 B) = HMAC(key, CLIENT_LABEL · server nonce · client nonce), or
//                    PEER_LABEL for a peer (see CHALLENGE for the key)
//   COPY_SHARD  9    keyLen u16 · copy request (actors/shared/copy-batch.ts), answered VALUE
//   PEER_LEASE 10    keyLen u16 · lease request (actors/shared/peer-lease.ts), answered OK (granted)
//
// Response (worker port -> client), answered in completion order, matched by request id:
//
//   0        4        5      6          8            12         16         20
//   +--------+--------+------+----------+------------+----------+----------+---------------------+
//   | length | status | 0 u8 | 0 u16    | request id | term hi  | term lo  | status body         |
//   +--------+--------+------+----------+------------+----------+----------+---------------------+
//   term = the server's current configuration term.
//
//   status           body
//   OK          0    (empty)                       HELLO, PUT, DEL, REPLICATE
//   VALUE       1    len u32 · bytes               GET, GET_REPLICA
//   NOT_FOUND   2    (empty)                       GET, GET_REPLICA
//   ERROR       3    codeLen u16 · code (ASCII) · msgLen u32 · message (UTF-8)
//   CONFIG      4    len u32 · JSON of ClusterConfig
//   CHALLENGE   5    server nonce (32 B) · proof (32 B)   HELLO, on a server with credentials: the
//                    proof is HMAC(key, SERVER_LABEL · client nonce · server nonce), where key is the
//                    client password for role client, and the cluster secret (labels PEER_SERVER_LABEL,
//                    PEER_LABEL) for role peer -- another node's worker: REPLICATE, COPY_SHARD and PEER_LEASE
//                    run only for a peer, a client gets ROWAN_ERR_FORBIDDEN. The client checks the proof
//                    and answers AUTH. Until AUTH is OK every other request is answered ERROR
//                    ROWAN_ERR_NOAUTH and nothing runs; a wrong AUTH proof is answered
//                    ROWAN_ERR_AUTH_FAILED and the connection is closed. A server without credentials
//                    (rowan start --no-auth) answers HELLO with OK, whatever the role.
//
// An ERROR with request id 0 concerns the connection, not a request (client ids start at 1): the
// stream could not be framed any more, and the server closes the connection after it.

/** 2: HELLO carries a nonce, the CHALLENGE status and the AUTH op exist (authentication).
 *  3: HELLO carries a role; clients prove the client password, peers the cluster secret. */
export const PROTOCOL_VERSION = 3;
/** HMAC labels of the server's and the client's proofs (different: a proof cannot be reflected), and
 *  of a peer's handshake (different again: a client's proof is never a peer's). */
export const SERVER_LABEL = 'rowan-rpc-v3 server';
export const CLIENT_LABEL = 'rowan-rpc-v3 client';
export const PEER_SERVER_LABEL = 'rowan-rpc-v3 peer-server';
export const PEER_LABEL = 'rowan-rpc-v3 peer';
/** Who says HELLO: a client (GET, PUT, DEL, CONFIG, GET_REPLICA) or another node (everything). */
export const HelloRole = { CLIENT: 1, PEER: 2 } as const;
export type HelloRoleCode = (typeof HelloRole)[keyof typeof HelloRole];

// ---- header (both directions) ------------------------------------------------------------------------
export const LENGTH_OFF = 0;
export const LENGTH_BYTES = 4;
/** Request: the op. Response: the status. */
export const OP_OFF = 4;
export const STATUS_OFF = OP_OFF;
/** Request flags; no bit is defined in protocol version 1, so they must be 0. Responses: 0. */
export const FLAGS_OFF = 5;
export const RESERVED_OFF = 6;
export const REQUEST_ID_OFF = 8;
export const TERM_HI_OFF = 12;
export const TERM_LO_OFF = 16;
/** Bytes of the whole header, the length prefix included; the body starts here. */
export const HEADER_BYTES = 20;
/** The smallest legal `length` field: the header after the prefix, empty body. */
export const LENGTH_MIN = HEADER_BYTES - LENGTH_BYTES;
/** termHi at or above this would make the term exceed Number.MAX_SAFE_INTEGER. */
export const TERM_HI_LIMIT = 2 ** 21;

// ---- request ops -------------------------------------------------------------------------------------
export const Op = {
  HELLO: 1,
  PUT: 2,
  GET: 3,
  DEL: 4,
  CONFIG: 5,
  GET_REPLICA: 6,
  REPLICATE: 7,
  AUTH: 8,
  /** Re-replication (§4.5 phase 3): a batch of a shard's indexed entries from its primary. Shaped like
   *  GET (keyLen · key); the "key" is the copy request (actors/shared/copy-batch.ts), answered with VALUE. */
  COPY_SHARD: 9,
  /** A peer lease (docs/failover.md "Partitions", actors/shared/peer-lease.ts): a node asks another to promise not
   *  to take over its shards for a lease. Shaped like GET; the "key" is the request, answered OK. */
  PEER_LEASE: 10,
  /** PUT with an expiry deadline (Redis's SET PX / PXAT): the body of PUT plus the deadline's kind and
   *  milliseconds (PUT_EXPIRES_* below). */
  PUT_EXPIRES: 11,
} as const;
export type OpCode = (typeof Op)[keyof typeof Op];
export const OP_NAMES: Readonly<Record<number, string>> = { 1: 'HELLO', 2: 'PUT', 3: 'GET', 4: 'DEL', 5: 'CONFIG', 6: 'GET_REPLICA', 7: 'REPLICATE', 8: 'AUTH', 9: 'COPY_SHARD', 10: 'PEER_LEASE', 11: 'PUT_EXPIRES' };

// ---- request bodies (offsets relative to HEADER_BYTES) -----------------------------------------------
export const HELLO_VERSION_OFF = 0;
export const HELLO_NONCE_OFF = 4;
/** Nonces and proofs of the handshake (config/base/secret.ts). */
export const NONCE_BYTES = 32;
export const PROOF_BYTES = 32;
export const HELLO_ROLE_OFF = HELLO_NONCE_OFF + NONCE_BYTES;
export const HELLO_BODY_BYTES = HELLO_ROLE_OFF + 4;
/** Older versions' HELLOs: the version alone (1), version and nonce (2). Read as far as the version,
 *  so the server can tell such a client to upgrade. */
export const HELLO_V1_BODY_BYTES = 4;
export const HELLO_V2_BODY_BYTES = HELLO_NONCE_OFF + NONCE_BYTES;
/** AUTH: the proof. */
export const AUTH_BODY_BYTES = PROOF_BYTES;
/** CHALLENGE response: server nonce then proof. */
export const CHALLENGE_NONCE_OFF = 0;
export const CHALLENGE_PROOF_OFF = NONCE_BYTES;
export const CHALLENGE_BODY_BYTES = NONCE_BYTES + PROOF_BYTES;
/** GET, DEL, GET_REPLICA: keyLen u16 then the key. */
export const KEY_LEN_OFF = 0;
export const KEY_OFF = 2;
/** PUT: keyLen u16 · valueLen u32 · key · value. */
export const PUT_KEY_LEN_OFF = 0;
export const PUT_VALUE_LEN_OFF = 2;
export const PUT_KEY_OFF = 6;
/** PUT_EXPIRES: keyLen u16 · valueLen u32 · kind u8 · reserved u8 (0) · ms lo u32 · ms hi u32 · key · value. */
export const PUTX_KIND_OFF = 6;
export const PUTX_MS_LO_OFF = 8;
export const PUTX_MS_HI_OFF = 12;
export const PUTX_KEY_OFF = 16;
/** PUT_EXPIRES kinds: a TTL the shard's primary turns into a deadline with its own clock (SET PX), or
 *  the deadline itself, Unix ms (SET PXAT). */
export const ExpiryKind = { TTL_MS: 1, AT_UNIX_MS: 2 } as const;
export type ExpiryKindCode = (typeof ExpiryKind)[keyof typeof ExpiryKind];
/** The largest ms either kind may carry: 2^47 ms is ~4,460 years (deadlines are Unix ms in the entry). */
export const EXPIRY_MS_MAX = 2 ** 47;

// ---- response statuses ------------------------------------------------------------------------------
export const Status = {
  OK: 0,
  VALUE: 1,
  NOT_FOUND: 2,
  ERROR: 3,
  CONFIG: 4,
  CHALLENGE: 5,
} as const;
export type StatusCode = (typeof Status)[keyof typeof Status];

// ---- response bodies (offsets relative to HEADER_BYTES) ----------------------------------------------
/** VALUE and CONFIG: len u32 then the bytes. */
export const BLOB_LEN_OFF = 0;
export const BLOB_OFF = 4;
/** ERROR: codeLen u16 · code · msgLen u32 · message. */
export const ERROR_CODE_LEN_OFF = 0;
export const ERROR_CODE_OFF = 2;
/** An error code is a stable ROWAN_ERR_ name (config/base/errors.ts); longer ones are refused. */
export const ERROR_CODE_BYTES_MAX = 64;
/** Error messages are for people; the encoder cuts them here so an ERROR stays small. */
export const ERROR_MESSAGE_BYTES_MAX = 4096;
/** The JSON of a ClusterConfig (65536 shards fit with room to spare). */
export const CONFIG_JSON_BYTES_MAX = 8 * 1024 * 1024;

/** The key and value limits the codec enforces (config/limits.ts). */
export interface FrameLimits {
  keyBytesMax: number;
  valueBytesMax: number;
}

/** The largest request frame before the connection has authenticated: HELLO and AUTH are under 100 B,
 *  anything else is answered NOAUTH anyway; a longer frame is FRAME_TOO_LARGE and ends the stream, so
 *  a stranger cannot make the port buffer a megabyte value. */
export const FRAME_BYTES_MAX_UNAUTHENTICATED = 1024;

/** The largest request frame (prefix included) under `l`: a PUT of the largest key and value. */
export function requestBytesMax(l: FrameLimits): number {
  return HEADER_BYTES + PUTX_KEY_OFF + l.keyBytesMax + l.valueBytesMax; // PUT_EXPIRES's body is PUT's + 10 bytes
}

/** The largest response frame (prefix included): a VALUE of the largest value, or the largest CONFIG. */
export function responseBytesMax(l: FrameLimits): number {
  return HEADER_BYTES + BLOB_OFF + Math.max(l.valueBytesMax, CONFIG_JSON_BYTES_MAX);
}
