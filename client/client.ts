// RowanClient: the TypeScript client of ROWAN-KV (DESIGN §7). A request goes straight to the worker
// serving its key's shard on the shard's primary (§4.1), over one pipelined connection per worker port
// (opened lazily), and carries the configuration term the client routed with.
//
//   const c = await RowanClient.connect({ cluster: 'cluster.json' });   // or { endpoints: ['127.0.0.1:7500'] }
//
// Authentication (docs/security.md): every connection proves the client password (HELLO of
// role client, CHALLENGE, AUTH; runtime/rpc/frames-layout.ts) -- never the cluster secret, which only
// nodes hold. The password is `password` (its text, as in the file), else `passwordFile`, else -- for
// a cluster given as a file -- the file `client-password` next to it (rowan cluster writes
// DIR/client-password beside DIR/cluster.json) when there is one; without any, only servers started
// with --no-auth answer.
//   await c.put('k', 'v'); const v = await c.get('k'); await c.del('k'); await c.close();
//
// Failure handling (all RowanErrors). What an error means for a PUT/DEL (§4.5; DESIGN §6):
//   NOT APPLIED -- refused before anything was persisted; safe to retry, and the client does:
//     STALE_TERM / WRONG_SHARD / LEASE_EXPIRED from a server: the configuration moved on, or the node
//       fenced itself (lease expired). Refresh (re-read the cluster file, or CONFIG from any reachable
//       node), re-route, retry;
//     PEER_GONE before the request was sent (the connection could not be opened: a dead primary);
//     these are retried until the configuration moves on: at most `retries` re-routes, and while no
//     newer configuration exists the client backs off and asks again for up to timeoutMs.
//     KEY_TOO_LARGE / VALUE_TOO_LARGE (refused locally), BAD_ARGUMENT, PM_FULL refused up front by
//     the primary's t-log: not applied, not retried.
//   OUTCOME UNKNOWN -- the request may or may not have been applied (and may still be, later):
//     OUTCOME_UNKNOWN: the connection died or timed out with the PUT/DEL outstanding (the cause is in
//       the message), or the primary's lease expired while it replicated;
//     REPLICATION_FAILED, PEER_GONE, RECEIVER_CLOSED, WRITE_TIMEOUT, PM_FULL or QUOTA from a server: the
//       primary persisted the entry in its t-log and replication to a backup failed part-way.
//     The client never re-sends these: a re-send could apply the write twice and, with another
//     client's write in between, let a reader see 1, 2, 1.
//   GETs are re-sent on any of the above (a read applies nothing); TIMEOUT / PEER_GONE once out of
//   tries.
import { setTimeout as sleep } from 'node:timers/promises';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { CLIENT_PASSWORD_FILE, parsePassword, readPasswordFile } from '../config/base/secret.js';
import { loadTlsCa, type TlsClientMaterial } from '../runtime/net/tls.js';
import type { ClusterConfig } from '../config/cluster.js';
import { defaultLimits } from '../config/limits.js';
import { defaultTimings } from '../config/timings.js';
import { ErrorCodes, RowanError } from '../config/base/errors.js';
import { EXPIRY_MS_MAX, ExpiryKind, Op, Status, encodeRequest, type ExpiryKindCode, type FrameLimits, type Response } from '../runtime/rpc/frames.js';
import { DEFAULT_ZK_CLUSTER_NAME, zkConfigPath } from '../config/zk-path.js';
import { initialConfig, parseClusterJson, refreshConfig, type ClusterSource } from './config-source.js';
import { RpcConnection, endpointKey, remoteError, type Endpoint } from './worker-connection.js';
import { checkSizes, parseEndpoint, primaryEndpoint, shardOfKey, toBytes, workerEndpoint } from './routing.js';
import { Slots } from './slots.js';

export interface ClientOptions {
  /** The cluster configuration, or the path of its JSON file (the embedded config store). */
  cluster?: ClusterConfig | string;
  /** Instead of `cluster`: the configuration is in ZooKeeper at these servers ("host:port,..."), in
   *  the znode of `clusterName` (/rowan/<clusterName>/config; default "default"). The client keeps a
   *  session, reads the znode at connect and first on every refresh; close() ends the session. */
  zookeeper?: string;
  clusterName?: string;
  /** Worker ports ("host:port") to fetch the configuration from (at connect if no cluster is given, and on refresh). */
  endpoints?: string[];
  /** Per attempt: connect + HELLO, or one request's response. Default 5000. */
  timeoutMs?: number;
  /** Requests outstanding at once over all connections; more wait their turn. Default 1024. */
  maxInFlight?: number;
  /** Re-routes per request to a newer configuration (STALE_TERM / WRONG_SHARD / LEASE_EXPIRED, or a
   *  primary that cannot be reached); while none is published yet the client waits up to timeoutMs.
   *  0 = never retry. Default 5. */
  retries?: number;
  /** Key and value limits checked before sending (default: config/limits.ts). */
  limits?: FrameLimits;
  /** The client password (docs/security.md): its text (the content of DIR/client-password). */
  password?: string;
  /** A file holding the client password (mode 0600). Default: `client-password` beside a cluster
   *  file, if it exists. */
  passwordFile?: string;
  /** The cluster's CA certificate (PEM file) when its nodes serve TLS (rowan start --tls-*): the client
   *  connects over TLS and verifies each node against it. Absent: plain TCP. */
  tlsCaFile?: string;
}

/** The password a client proves: given, from a file, or beside the cluster file; null = none. */
export function clientPassword(o: Pick<ClientOptions, 'password' | 'passwordFile' | 'cluster'>): Uint8Array | null {
  if (o.password !== undefined) return parsePassword(o.password, 'the password given');
  if (o.passwordFile !== undefined) return readPasswordFile(o.passwordFile);
  if (typeof o.cluster === 'string') {
    const beside = join(dirname(o.cluster), CLIENT_PASSWORD_FILE);
    if (existsSync(beside)) return readPasswordFile(beside);
  }
  return null;
}

interface ConnEntry {
  opening: Promise<RpcConnection>;
  conn: RpcConnection | null;
}

type KeyOp = typeof Op.PUT | typeof Op.PUT_EXPIRES | typeof Op.GET | typeof Op.DEL | typeof Op.GET_REPLICA;

/** A PUT's expiry: at most one of the two, each a whole number of ms in 1..2^47. */
export interface PutOptions {
  /** The key expires this many ms after the primary wrote it (Redis's SET PX). */
  ttlMs?: number;
  /** The key expires at this Unix time, ms (Redis's SET PXAT). */
  expiresAtMs?: number;
}

interface Expiry {
  kind: ExpiryKindCode;
  ms: number;
}

/** The wire form of `opts`' expiry (null: none); BAD_ARGUMENT (not applied) for a malformed one. */
function expiryOf(opts: PutOptions): Expiry | null {
  const { ttlMs, expiresAtMs } = opts;
  if (ttlMs !== undefined && expiresAtMs !== undefined) throw new RowanError(ErrorCodes.BAD_ARGUMENT, 'a PUT takes ttlMs or expiresAtMs, not both');
  if (ttlMs === undefined && expiresAtMs === undefined) return null;
  const ms = (ttlMs ?? expiresAtMs)!;
  if (!Number.isSafeInteger(ms) || ms < 1 || ms > EXPIRY_MS_MAX) {
    throw new RowanError(ErrorCodes.BAD_ARGUMENT, `${ttlMs !== undefined ? 'ttlMs' : 'expiresAtMs'} ${ms} is not a whole number of ms in 1..${EXPIRY_MS_MAX}`);
  }
  return { kind: ttlMs !== undefined ? ExpiryKind.TTL_MS : ExpiryKind.AT_UNIX_MS, ms };
}

/** Throw BAD_ARGUMENT (not applied) if `opts` is no valid PUT expiry, before anything is sent. */
export function checkPutOptions(opts: PutOptions): void {
  expiryOf(opts);
}

function encodeKeyOp(op: KeyOp, id: number, term: number, key: Uint8Array, value: Uint8Array | null, expiry: Expiry | null): Buffer {
  if (op === Op.PUT) return encodeRequest({ op, id, term, key, value: value! });
  if (op === Op.PUT_EXPIRES) return encodeRequest({ op, id, term, key, value: value!, ...expiry! });
  return encodeRequest({ op, id, term, key });
}

/** Server answers that mean "not applied, the configuration moved on or is moving": refresh, retry. */
const RETRY_CODES: ReadonlySet<string> = new Set([ErrorCodes.STALE_TERM, ErrorCodes.WRONG_SHARD, ErrorCodes.LEASE_EXPIRED]);

export class RowanClient {
  /** Per "host:port": the connection, opened lazily; an entry whose open failed removes itself. */
  private readonly conns = new Map<string, ConnEntry>();
  private readonly slots: Slots;
  private refreshing: Promise<void> | null = null;
  private closed = false;

  private constructor(
    private cfg: ClusterConfig,
    private source: ClusterSource,
    private readonly timeoutMs: number,
    private readonly retries: number,
    private readonly limits: FrameLimits,
    maxInFlight: number,
    private readonly password: Uint8Array | null,
    private readonly tls: TlsClientMaterial | null,
  ) {
    this.slots = new Slots(maxInFlight);
  }

  static async connect(o: ClientOptions): Promise<RowanClient> {
    const timeoutMs = positiveInt(o.timeoutMs ?? 5000, 'timeoutMs');
    const maxInFlight = positiveInt(o.maxInFlight ?? 1024, 'maxInFlight');
    const retries = o.retries ?? 5;
    if (!Number.isInteger(retries) || retries < 0) throw new RowanError(ErrorCodes.BAD_ARGUMENT, `retries: ${retries} is not a count`);
    const limits = o.limits ?? { keyBytesMax: defaultLimits.keyBytesMax, valueBytesMax: defaultLimits.valueBytesMax };
    const endpoints = (o.endpoints ?? []).map(parseEndpoint);
    // Bootstrap through a throwaway client whose configuration is not known yet.
    const password = clientPassword(o);
    const tls = o.tlsCaFile === undefined ? null : loadTlsCa(o.tlsCaFile);
    const boot = new RowanClient(null as unknown as ClusterConfig, { store: null, endpoints }, timeoutMs, retries, limits, maxInFlight, password, tls);
    try {
      const { config, source } = await initialConfig(o.cluster, endpoints, (e) => boot.fetchConfig(e), o.zookeeper === undefined ? undefined : { connect: o.zookeeper, path: zkConfigPath(o.clusterName ?? DEFAULT_ZK_CLUSTER_NAME) });
      boot.cfg = config;
      boot.source = source;
      return boot;
    } catch (err) {
      await boot.close();
      throw err;
    }
  }

  /** The configuration requests are routed with now. */
  config(): ClusterConfig {
    return this.cfg;
  }

  /** PUT; with `ttlMs` the key expires that long after the shard's primary wrote it (its clock, as
   *  Redis's SET PX), with `expiresAtMs` at that Unix time in ms (SET PXAT); an expired key reads as
   *  absent everywhere at once and is reclaimed without a client (docs/redis.md "Expiry"). */
  async put(key: Uint8Array | string, value: Uint8Array | string, opts: PutOptions = {}): Promise<void> {
    const k = toBytes(key);
    const v = toBytes(value, 'value');
    checkSizes(k, v, this.limits);
    const expiry = expiryOf(opts);
    await this.keyOp(expiry ? Op.PUT_EXPIRES : Op.PUT, k, v, null, expiry);
  }

  /** The value (a Buffer of its own), or null if the key has none. */
  async get(key: Uint8Array | string): Promise<Uint8Array | null> {
    const k = toBytes(key);
    checkSizes(k, null, this.limits);
    return valueOf(await this.keyOp(Op.GET, k, null, null));
  }

  async del(key: Uint8Array | string): Promise<void> {
    const k = toBytes(key);
    checkSizes(k, null, this.limits);
    await this.keyOp(Op.DEL, k, null, null);
  }

  /** Node `nodeId`'s own copy of `key` (primary or backup index), for tests and inspection. */
  async getReplica(nodeId: number, key: Uint8Array | string): Promise<Uint8Array | null> {
    const k = toBytes(key);
    checkSizes(k, null, this.limits);
    return valueOf(await this.keyOp(Op.GET_REPLICA, k, null, nodeId));
  }

  /** Fetch a newer configuration now (as on STALE_TERM); returns the one in use afterwards. */
  async refreshConfig(): Promise<ClusterConfig> {
    await this.refresh(this.cfg.term);
    return this.cfg;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.source.close?.();
    const all = [...this.conns.values()];
    this.conns.clear();
    await Promise.all(all.map((entry) => entry.opening.then((c) => c.close(), () => {})));
  }

  /** One key request: route, send, and on a stale configuration refresh and re-route (bounded). */
  private async keyOp(op: KeyOp, key: Uint8Array, value: Uint8Array | null, replicaNode: number | null, expiry: Expiry | null = null): Promise<Response> {
    await this.slots.acquire();
    try {
      const t0 = performance.now();
      const write = op === Op.PUT || op === Op.PUT_EXPIRES || op === Op.DEL;
      for (let reroutes = 0, waits = 0; ; ) {
        const cfg = this.cfg;
        const to = replicaNode === null ? primaryEndpoint(cfg, key) : workerEndpoint(cfg, replicaNode, shardOfKey(cfg, key));
        const term = cfg.term;
        let err: RowanError;
        try {
          const r = await this.send(to, (id) => encodeKeyOp(op, id, term, key, value, expiry));
          if (r.status !== Status.ERROR) return r;
          err = remoteError(r);
          if (!RETRY_CODES.has(err.code)) throw err;
        } catch (e) {
          if (!(e instanceof RowanError)) throw e;
          err = e;
          const sent = err.details?.['sent'] !== false;
          if (RETRY_CODES.has(err.code)) {
            // answered above
          } else if ((err.code === ErrorCodes.PEER_GONE || err.code === ErrorCodes.TIMEOUT) && (!sent || !write)) {
            if (this.closed) throw err;
          } else if ((err.code === ErrorCodes.PEER_GONE || err.code === ErrorCodes.TIMEOUT) && write) {
            throw new RowanError(ErrorCodes.OUTCOME_UNKNOWN, `${op === Op.DEL ? 'DEL' : 'PUT'} outcome unknown: ${err.code}: ${err.message}`, { cause: err.code });
          } else {
            throw err;
          }
        }
        if (this.retries === 0) throw err;
        // A node that answered (STALE_TERM ...) costs one of `retries`; an unreachable one does not:
        // its shards move only once the manager has failed it over, which takes about a lease.
        const answered = RETRY_CODES.has(err.code);
        if (answered && reroutes++ >= this.retries) throw err;
        await this.refresh(term).catch(() => {});
        if (this.cfg.term > term) continue;
        // No newer configuration yet (the manager is still failing a node over): back off and ask again.
        if (!answered && performance.now() - t0 > this.timeoutMs) throw err;
        await sleep(Math.min(defaultTimings.clientBackoffMsMax, 2 * 2 ** waits++));
      }
    } finally {
      this.slots.release();
    }
  }

  /** Refresh unless someone already moved past `sentTerm`; concurrent callers share one refresh. */
  private async refresh(sentTerm: number): Promise<void> {
    if (this.cfg.term > sentTerm) return;
    this.refreshing ??= refreshConfig(this.cfg, this.source, (e) => this.fetchConfig(e))
      .then((next) => {
        if (next.term >= this.cfg.term) this.cfg = next;
      })
      .finally(() => (this.refreshing = null));
    await this.refreshing;
  }

  private async fetchConfig(e: Endpoint): Promise<ClusterConfig> {
    const r = await this.send(e, (id) => encodeRequest({ op: Op.CONFIG, id, term: 0 }));
    if (r.status === Status.CONFIG) return parseClusterJson(r.json, endpointKey(e));
    if (r.status === Status.ERROR) throw remoteError(r);
    throw new RowanError(ErrorCodes.BAD_FRAME, `${endpointKey(e)} answered CONFIG with status ${r.status}`);
  }

  /**
   * Send over the connection to `e`. A PEER_GONE from opening the connection carries details.sent =
   * false (nothing was sent: safe to retry); one from a request in flight may have been applied, and
   * is never re-sent here (the caller decides: reads retry, writes report OUTCOME_UNKNOWN).
   */
  private async send(e: Endpoint, build: (id: number) => Uint8Array): Promise<Response> {
    let conn: RpcConnection;
    try {
      conn = await this.connection(e);
    } catch (err) {
      if (err instanceof RowanError && (err.code === ErrorCodes.PEER_GONE || err.code === ErrorCodes.TIMEOUT)) {
        throw new RowanError(err.code, err.message, { ...err.details, sent: false });
      }
      throw err;
    }
    try {
      return await conn.request(build);
    } catch (err) {
      if (err instanceof RowanError && err.code === ErrorCodes.PEER_GONE) this.forget(e, conn);
      throw err;
    }
  }

  /** The open connection to `e`, opening one if there is none (or only a dead one). */
  private async connection(e: Endpoint): Promise<RpcConnection> {
    const k = endpointKey(e);
    for (let i = 0; i < 2; i++) {
      if (this.closed) throw new RowanError(ErrorCodes.PEER_GONE, 'the client is closed');
      let entry = this.conns.get(k);
      if (!entry) {
        const opened: ConnEntry = { opening: RpcConnection.open(e, this.timeoutMs, this.limits, this.password === null ? null : { role: 'client', password: this.password }, this.tls), conn: null };
        opened.opening.then(
          (c) => (opened.conn = c),
          () => this.conns.get(k) === opened && this.conns.delete(k),
        );
        this.conns.set(k, opened);
        entry = opened;
      }
      const c = await entry.opening;
      if (c.alive) return c;
      this.forget(e, c);
    }
    throw new RowanError(ErrorCodes.PEER_GONE, `worker ${k}: connection died as soon as it opened`);
  }

  /** Drop a dead connection so the next request opens a fresh one (failed opens drop themselves). */
  private forget(e: Endpoint, conn: RpcConnection | null): void {
    const k = endpointKey(e);
    const entry = this.conns.get(k);
    if (entry && conn !== null && entry.conn === conn) this.conns.delete(k);
  }
}

/** A read's value as a Buffer of its own: the frame it came in may share a socket chunk with others. */
function valueOf(r: Response): Uint8Array | null {
  if (r.status === Status.VALUE) return Buffer.from(r.value);
  if (r.status === Status.NOT_FOUND) return null;
  throw new RowanError(ErrorCodes.BAD_FRAME, `a read was answered with status ${r.status}`);
}

function positiveInt(v: number, name: string): number {
  if (!Number.isInteger(v) || v < 1) throw new RowanError(ErrorCodes.BAD_ARGUMENT, `${name}: ${v} is not a positive integer`);
  return v;
}
