// The ZooKeeper configuration store (DESIGN §6): the cluster configuration's JSON in one znode
// (default /rowan/<cluster-name>/config). The compare-and-set on the term is a versioned setData: read
// the znode's data and stat version, check the term, setData(path, data, version); BADVERSION (someone
// wrote in between) is ROWAN_ERR_STALE_TERM, as is a stored term other than the expected one. A new
// configuration (expectedTerm null) is created, and one that exists already is an error.
//
// Session: the client connects within a bounded time or fails with ROWAN_ERR_ZOOKEEPER naming the
// connect string. While the session is down (the server restarting, the network gone) every operation
// waits a bounded time for it to come back and otherwise fails with ROWAN_ERR_ZOOKEEPER; an expired
// session is replaced by a new one. onSession() reports each change. A setData whose answer was lost
// with the connection is settled after reconnecting by reading the znode back: ours if it holds exactly
// what we wrote.
//
// Reconnect stall (why a ZooKeeper restart used to hang us for good): node-zookeeper-client bounds a
// connection attempt only until TCP connects (it clears its connect timer there) and has no read
// timeout while it waits for the server's answer to its ConnectRequest. A client that reconnects while
// the restarting server has its port open but does not serve yet can wait for that answer forever: its
// state stays CONNECTING, no 'connected' and no 'expired' ever comes, and every operation fails with
// "no ZooKeeper session" from then on. A watchdog here destroys a socket that has been connecting for
// longer than zkStallMsMax (or a third of the session timeout, if shorter; at least zkStallMsMin), so
// the library tries again -- with the same session, which the server restores if the client is back
// within the session timeout. (Waiting as long as the library's own connect timeout, the session
// timeout / servers, let a restored session expire before the client was back.)
import zookeeper from 'node-zookeeper-client';
import type { Client, Stat } from 'node-zookeeper-client';
import { ErrorCodes, RowanError } from './base/errors.js';
import { validateCluster, type ClusterConfig } from './cluster.js';
import type { ConfigStore } from './store.js';
import { defaultTimings } from './timings.js';
import { DEFAULT_ZK_CLUSTER_NAME, zkConfigPath } from './zk-path.js';

/** 'stalled': a reconnect handshake got no answer and was restarted (see the header). */
export type ZkSessionState = 'connected' | 'disconnected' | 'expired' | 'closed' | 'stalled';

export interface ZooKeeperStoreOptions {
  /** host:port[,host:port...] */
  connect: string;
  /** The znode (default zkConfigPath(DEFAULT_ZK_CLUSTER_NAME)). */
  path?: string;
  /** Bound on connecting, and on waiting for a lost session to come back during an operation. */
  connectTimeoutMs?: number;
  sessionTimeoutMs?: number;
}

const { Exception, State } = zookeeper;

export class ZooKeeperConfigStore implements ConfigStore {
  readonly connect: string;
  readonly path: string;
  private readonly connectTimeoutMs: number;
  private readonly sessionTimeoutMs: number;
  private client: Client | null = null;
  /** A znode that must still exist for write() to store (the active manager's election znode): the
   *  versioned setData runs in one transaction with a check on it, so a manager whose session ended
   *  (its ephemeral znode gone) can store nothing more, even from a new session. */
  private fencePath: string | null = null;
  private connected = false;
  private closed = false;
  private readonly waiters = new Set<() => void>();
  private readonly listeners = new Set<(s: ZkSessionState) => void>();
  private stallTimer: NodeJS.Timeout | undefined;

  private constructor(o: ZooKeeperStoreOptions) {
    if (!/^[^,\s]+:\d+(,[^,\s]+:\d+)*$/.test(o.connect))
      throw new RowanError(ErrorCodes.BAD_ARGUMENT, `--zookeeper: '${o.connect}' is not host:port[,host:port...]`);
    this.connect = o.connect;
    this.path = o.path ?? zkConfigPath(DEFAULT_ZK_CLUSTER_NAME);
    this.connectTimeoutMs = o.connectTimeoutMs ?? defaultTimings.zkConnectTimeoutMs;
    this.sessionTimeoutMs = o.sessionTimeoutMs ?? defaultTimings.zkSessionTimeoutMs;
  }

  /** Connect (bounded by connectTimeoutMs); fails with ROWAN_ERR_ZOOKEEPER when unreachable. */
  static async open(o: ZooKeeperStoreOptions): Promise<ZooKeeperConfigStore> {
    const s = new ZooKeeperConfigStore(o);
    s.newClient();
    try {
      await s.session();
    } catch (err) {
      s.close();
      throw new RowanError(ErrorCodes.ZOOKEEPER, `cannot reach ZooKeeper at ${s.connect} within ${s.connectTimeoutMs} ms`);
    }
    return s;
  }

  /** Session changes: 'disconnected' (operations fail until it is back), 'connected', 'expired'. */
  onSession(f: (s: ZkSessionState) => void): () => void {
    this.listeners.add(f);
    return () => this.listeners.delete(f);
  }

  hasSession(): boolean {
    return this.connected;
  }

  /**
   * Close and wait (at most `ms`) until the server has ended the session: its ephemeral znodes (a
   * manager's election znode) are gone at once instead of after the session timeout -- a process
   * that exits right after close() may never send the request.
   */
  closeAndWait(ms = 1000): Promise<void> {
    const c = this.client;
    if (this.closed || !c || !this.connected) {
      this.close();
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => {
      const t = setTimeout(done, ms);
      function done(): void {
        clearTimeout(t);
        c!.removeListener('state', onState);
        resolve();
      }
      const onState = (st: unknown) => {
        if (st === State.DISCONNECTED) done();
      };
      c.on('state', onState);
      this.close();
    });
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    const wasConnected = this.connected;
    this.connected = false;
    clearInterval(this.stallTimer);
    const c = this.client;
    c?.close();
    this.client = null;
    // A client without a session may sit in a handshake the server never answers (see the header): its
    // open socket would keep the process alive for good (a launcher that never exited). Drop it now; a
    // connected one gets zkCloseSessionGraceMs to end its session politely first.
    const drop = () => socketOf(c)?.destroy();
    if (!wasConnected) drop();
    else setTimeout(drop, defaultTimings.zkCloseSessionGraceMs).unref();
    for (const w of this.waiters) w();
    this.emit('closed');
  }

  private emit(s: ZkSessionState): void {
    for (const f of this.listeners) f(s);
  }

  private newClient(): void {
    const c = zookeeper.createClient(this.connect, { sessionTimeout: this.sessionTimeoutMs, spinDelay: 100, retries: 0 });
    this.client = c;
    c.on('state', (st) => {
      if (this.client !== c || this.closed) return;
      if (st === State.SYNC_CONNECTED) {
        this.connected = true;
        for (const w of this.waiters) w();
        this.emit('connected');
      } else if (st === State.DISCONNECTED) {
        this.connected = false;
        this.emit('disconnected');
      } else if (st === State.EXPIRED) {
        // The old session is gone for good: a new client makes a new one.
        this.connected = false;
        this.emit('expired');
        c.close();
        this.newClient();
      }
    });
    c.connect();
    this.watchStall();
  }

  /** See the header: kick a handshake the server never answers. */
  private watchStall(): void {
    clearInterval(this.stallTimer);
    const stallMs = Math.max(defaultTimings.zkStallMsMin, Math.min(defaultTimings.zkStallMsMax, Math.floor(this.sessionTimeoutMs / 3)));
    let socket: unknown = null;
    let since = 0;
    this.stallTimer = setInterval(() => {
      const s = socketOf(this.client);
      if (this.connected || !s || s.destroyed) {
        socket = null;
        return;
      }
      if (s !== socket) {
        socket = s;
        since = performance.now();
        return;
      }
      if (performance.now() - since < stallMs) return;
      socket = null;
      this.emit('stalled');
      s.destroy(); // the library sees the close and connects again
    }, Math.max(100, Math.floor(stallMs / 4)));
    this.stallTimer.unref();
  }

  /** The connected client, waiting (bounded) for the session to come back. */
  private async session(): Promise<Client> {
    if (this.closed) throw new RowanError(ErrorCodes.ZOOKEEPER, `ZooKeeper store ${this.connect}${this.path} is closed`);
    if (!this.connected) {
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(t);
          this.waiters.delete(done);
          resolve();
        };
        const t = setTimeout(done, this.connectTimeoutMs);
        this.waiters.add(done);
      });
      if (!this.connected || this.closed) throw new RowanError(ErrorCodes.ZOOKEEPER, `no ZooKeeper session with ${this.connect} (waited ${this.connectTimeoutMs} ms)`);
    }
    return this.client!;
  }

  /** One client call, bounded: a call the server never answers fails like a lost connection. */
  private call<T>(what: string, f: (c: Client, cb: (err: unknown, v: T) => void) => void): Promise<T> {
    return this.session().then(
      (c) =>
        new Promise<T>((resolve, reject) => {
          const t = setTimeout(() => reject(zkError(what, this.connect, { code: Exception.CONNECTION_LOSS, name: 'TIMEOUT' })), this.connectTimeoutMs + this.sessionTimeoutMs);
          f(c, (err, v) => {
            clearTimeout(t);
            if (err) reject(err);
            else resolve(v);
          });
        }),
    );
  }

  private async getData(): Promise<{ data: Buffer; stat: Stat } | null> {
    try {
      return await this.call<{ data: Buffer; stat: Stat }>('getData', (c, cb) => c.getData(this.path, (e, data, stat) => cb(e, { data, stat })));
    } catch (err) {
      if (codeOf(err) === Exception.NO_NODE) return null;
      throw zkError(`read ${this.path}`, this.connect, err);
    }
  }

  async read(): Promise<ClusterConfig> {
    const r = await this.getData();
    if (!r) throw new RowanError(ErrorCodes.BAD_CONFIG, `no cluster configuration in ZooKeeper ${this.connect} at ${this.path}`);
    return parse(r.data, `${this.connect}${this.path}`);
  }

  /** The stored configuration, or null when the znode does not exist (a new cluster). */
  async readIfExists(): Promise<ClusterConfig | null> {
    const r = await this.getData();
    return r ? parse(r.data, `${this.connect}${this.path}`) : null;
  }

  async write(next: ClusterConfig, expectedTerm: number | null): Promise<void> {
    validateCluster(next);
    const data = Buffer.from(JSON.stringify(next, null, 2) + '\n');
    if (expectedTerm === null) {
      await this.mkParents();
      try {
        await this.call<string>('create', (c, cb) => c.create(this.path, data, cb));
      } catch (err) {
        if (codeOf(err) === Exception.NODE_EXISTS)
          throw new RowanError(ErrorCodes.BAD_CONFIG, `a cluster configuration exists already in ZooKeeper ${this.connect} at ${this.path}; not overwriting it`);
        if (isConnectionLoss(err) && (await this.holds(data))) return;
        throw zkError(`create ${this.path}`, this.connect, err);
      }
      return;
    }
    const cur = await this.getData();
    if (!cur) throw new RowanError(ErrorCodes.BAD_CONFIG, `no cluster configuration in ZooKeeper ${this.connect} at ${this.path}`);
    const term = parse(cur.data, `${this.connect}${this.path}`).term;
    if (term !== expectedTerm) throw new RowanError(ErrorCodes.STALE_TERM, `cluster config in ZooKeeper is at term ${term}, not ${expectedTerm}`);
    try {
      const fence = this.fencePath;
      if (fence === null) await this.call<Stat>('setData', (c, cb) => c.setData(this.path, data, cur.stat.version, cb));
      else await this.call<unknown>('transaction', (c, cb) => c.transaction().check(fence).setData(this.path, data, cur.stat.version).commit(cb));
    } catch (err) {
      if (this.fencePath !== null && codeOf(err) === Exception.NO_NODE)
        throw new RowanError(ErrorCodes.NOT_ACTIVE_MANAGER, `not stored: ${this.fencePath} is gone (this manager's ZooKeeper session ended; another manager may be active)`);
      if (codeOf(err) === Exception.BAD_VERSION)
        throw new RowanError(ErrorCodes.STALE_TERM, `cluster config in ZooKeeper changed under a write at term ${expectedTerm} (znode version ${cur.stat.version} moved on)`);
      // The answer was lost with the connection: it may have been applied. Ours if the znode holds it.
      if (isConnectionLoss(err) && (await this.holds(data))) return;
      throw zkError(`setData ${this.path}`, this.connect, err);
    }
  }

  /** Make write() conditional on `path` existing (null: unconditional). */
  fenceOn(path: string | null): void {
    this.fencePath = path;
  }

  /** The session timeout the server granted (ms), or the one asked for before the first connect. */
  grantedSessionTimeoutMs(): number {
    const t = this.client?.getSessionTimeout();
    return typeof t === 'number' && t > 0 ? t : this.sessionTimeoutMs;
  }

  /** Create `path`'s missing ancestors and `path` itself (persistent, empty); existing ones are kept. */
  async ensurePath(path: string): Promise<void> {
    try {
      await this.call<string>('mkdirp', (c, cb) => c.mkdirp(path, cb));
    } catch (err) {
      if (codeOf(err) !== Exception.NODE_EXISTS) throw zkError(`mkdirp ${path}`, this.connect, err);
    }
  }

  /** An ephemeral znode (gone with this session); sequential: the server appends a counter. Returns its path. */
  async createEphemeral(path: string, data: Buffer, sequential: boolean): Promise<string> {
    const mode = sequential ? zookeeper.CreateMode.EPHEMERAL_SEQUENTIAL : zookeeper.CreateMode.EPHEMERAL;
    try {
      return await this.call<string>('create', (c, cb) => c.create(path, data, mode, cb));
    } catch (err) {
      throw zkError(`create ${path}`, this.connect, err);
    }
  }

  /** The children's names of `path`; `watch` fires once when they change. */
  async children(path: string, watch?: () => void): Promise<string[]> {
    try {
      return await this.call<string[]>('getChildren', (c, cb) => (watch ? c.getChildren(path, () => watch(), (e, ch) => cb(e, ch)) : c.getChildren(path, (e, ch) => cb(e, ch))));
    } catch (err) {
      throw zkError(`getChildren ${path}`, this.connect, err);
    }
  }

  /** Whether `path` exists (with the owner session of an ephemeral one); `watch` fires once when it is
   *  created, deleted or changed. */
  async exists(path: string, watch?: () => void): Promise<{ ephemeralOwner: string } | null> {
    try {
      const stat = await this.call<Stat | null>('exists', (c, cb) => (watch ? c.exists(path, () => watch(), cb) : c.exists(path, cb)));
      return stat ? { ephemeralOwner: stat.ephemeralOwner.toString('hex') } : null;
    } catch (err) {
      throw zkError(`exists ${path}`, this.connect, err);
    }
  }

  /** The data of `path`, or null if there is no such znode. */
  async dataOf(path: string): Promise<Buffer | null> {
    try {
      return await this.call<Buffer>('getData', (c, cb) => c.getData(path, (e, d) => cb(e, d)));
    } catch (err) {
      if (codeOf(err) === Exception.NO_NODE) return null;
      throw zkError(`getData ${path}`, this.connect, err);
    }
  }

  /** Delete `path` (any version); an absent one is fine. */
  async remove(path: string): Promise<void> {
    try {
      await this.call<void>('remove', (c, cb) => c.remove(path, -1, (e) => cb(e, undefined)));
    } catch (err) {
      if (codeOf(err) !== Exception.NO_NODE) throw zkError(`remove ${path}`, this.connect, err);
    }
  }

  /** This session's id (hex), as an ephemeral znode's owner shows it; null before the first connect. */
  sessionIdHex(): string | null {
    const c = this.client;
    if (!c || !this.connected) return null;
    return c.getSessionId().toString('hex');
  }

  private async holds(data: Buffer): Promise<boolean> {
    try {
      const r = await this.getData();
      return r !== null && r.data.equals(data);
    } catch {
      return false;
    }
  }

  private async mkParents(): Promise<void> {
    const parent = this.path.slice(0, this.path.lastIndexOf('/'));
    if (!parent) return;
    try {
      await this.call<string>('mkdirp', (c, cb) => c.mkdirp(parent, cb));
    } catch (err) {
      if (codeOf(err) !== Exception.NODE_EXISTS) throw zkError(`mkdirp ${parent}`, this.connect, err);
    }
  }
}

/** The client's current socket (node-zookeeper-client internals: see the header for why we need it). */
function socketOf(c: Client | null): { destroy(): void; destroyed?: boolean } | undefined {
  return (c as unknown as { connectionManager?: { socket?: { destroy(): void; destroyed?: boolean } } } | null)?.connectionManager?.socket;
}

function parse(data: Buffer, from: string): ClusterConfig {
  let raw: unknown;
  try {
    raw = JSON.parse(data.toString('utf8'));
  } catch (err) {
    throw new RowanError(ErrorCodes.BAD_CONFIG, `${from} is not JSON: ${(err as Error).message}`);
  }
  return validateCluster(raw);
}

function codeOf(err: unknown): number | undefined {
  const c = (err as { code?: unknown } | null)?.code;
  return typeof c === 'number' ? c : undefined;
}

function isConnectionLoss(err: unknown): boolean {
  const c = codeOf(err);
  return c === Exception.CONNECTION_LOSS || c === Exception.SESSION_EXPIRED || c === Exception.OPERATION_TIMEOUT;
}

function zkError(what: string, connect: string, err: unknown): RowanError {
  if (err instanceof RowanError) return err;
  const name = (err as { name?: string } | null)?.name ?? String(err);
  return new RowanError(ErrorCodes.ZOOKEEPER, `ZooKeeper ${connect}: ${what}: ${name}`);
}
