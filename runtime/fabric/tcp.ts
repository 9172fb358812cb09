// The `tcp` transport, sender side: one TCP connection to a remote node's nic actor (the soft RNIC,
// actors/nic/) plays one RC QP -- reliable, in order -- and carries the verbs of actors/nic/frames.ts.
// Requests are pipelined: many writes in flight on one socket, replies matched by request id, frames
// issued in the same tick leaving in one write. An ACK means the bytes are persistent at the receiver.
//
// Why this sender has no 1 ms retry timer (paper §4.3): a real sender cannot see when the receiver's
// control thread declares a buffer Used, so it re-issues any write slower than 1 ms, which is safe
// because the control thread waits a 2 ms grace before digesting. Here the nic performs reserve, copy
// and persist as one synchronous step on the receiver's host and reads the queue's `usedBelow` word
// around it (runtime/rowan/land.ts): a write whose buffer went Used while it landed is re-landed by the
// nic before it is acknowledged. The exact rule replaces the timer, and a timer here would be wrong
// anyway: a TCP round trip on a loaded host easily exceeds 1 ms, and a re-send would only duplicate a
// write the nic is about to acknowledge. `retryMs` is accepted for interface parity and unused;
// re-landings the nic did are counted in stats().retries.
//
// Failures: a retryable reply (NO_BUFFER after the nic parked the write, RECEIVER_NOT_READY before the
// receiver created its queue, PM_FULL and QUOTA until GC frees a segment) is re-sent with backoff
// until `noBufferTimeoutMs` (then WRITE_TIMEOUT, or PM_FULL / QUOTA);
// a request unanswered for `requestTimeoutMs` fails with WRITE_TIMEOUT; a dead peer fails every
// pending request with PEER_GONE (such a write may or may not have landed). Writes in flight together
// land in the order they were issued unless one of them had to be re-sent after a retryable reply.
//
// Authentication (nic-frames.ts): connect() checks the nic's proof of the cluster secret in its HELLO
// reply before proving its own with AUTH, so a sender never writes replication data to an impostor;
// a nic without a secret is refused by a sender that has one (AUTH_FAILED), and a nic that wants one
// refuses a sender without (NOAUTH). Nothing else is sent before the AUTH reply.
import { CorkedWriter, RequestIds } from '../net/pipeline.js';
import type { Socket } from 'node:net';
import { connectSocket, type TlsClientMaterial } from '../net/tls.js';
import {
  FRAME_BYTES_MAX_DEFAULT,
  FRAME_VERSION,
  FrameDecoder,
  HEADER_BYTES,
  NIC_LABEL,
  Op,
  OP_ERROR,
  SENDER_LABEL,
  encodeRequest,
  encodeSend,
  parseReply,
  type HelloInfo,
  type Reply,
  type Request,
} from './nic-frames.js';
import { ErrorCodes, RowanError, fromRecord } from '../../config/base/errors.js';
import { newNonce, proof, proofMatches } from '../../config/base/secret.js';
import { monotonicClock, type Clock } from '../../config/base/clock.js';
import { defaultTimings } from '../../config/timings.js';
import { defaultSenderOptions, type RemoteRegion, type RowanConnection, type RowanSenderOptions, type SenderStats } from './fabric.js';

export interface TcpConnectOptions extends Partial<RowanSenderOptions> {
  host: string;
  port: number;
  connectTimeoutMs?: number;
  /** A request not answered within this fails with WRITE_TIMEOUT. */
  requestTimeoutMs?: number;
  /** Requests in flight at most; further calls wait for a slot (backpressure, no unbounded queue). */
  maxInFlight?: number;
  /** Frame bytes in flight at most (one larger frame may go alone). */
  maxInFlightBytes?: number;
  clock?: Clock;
  /** The cluster secret to prove to the nic, and to check the nic's proof against; absent or null
   *  connects only to a nic that runs without authentication. */
  secret?: Uint8Array | null;
  /** Mutual TLS to the nic (runtime/net/tls.ts): this node's certificate and the CA; null: plain TCP. */
  tls?: TlsClientMaterial | null;
}

const DEFAULTS = { connectTimeoutMs: 5000, requestTimeoutMs: 30_000, maxInFlight: 1024, maxInFlightBytes: 16 * 1024 * 1024 };

type Resolved = Exclude<Reply, { op: typeof OP_ERROR }>;

interface Pending {
  id: number;
  frame: Buffer;
  firstAt: number;
  sentAt: number;
  backoffMs: number;
  retryTimer: NodeJS.Timeout | null;
  resolve: (r: Resolved) => void;
  reject: (e: RowanError) => void;
}

// PM_FULL from the nic: no buffer because the receiver's pool is full; QUOTA: an ALLOC over this node's
// quota of regions there. GC may free a segment, so retry, and report the code (not a bare timeout)
// when giving up.
const FULL: ReadonlySet<string> = new Set([ErrorCodes.PM_FULL, ErrorCodes.QUOTA]);
const isRetryable = (code: string) => code === ErrorCodes.NO_BUFFER || code === ErrorCodes.RECEIVER_NOT_READY || FULL.has(code);

export class TcpConnection implements RowanConnection {
  readonly kind = 'tcp' as const;
  readonly peer: string;
  private readonly o: RowanSenderOptions & typeof DEFAULTS;
  private readonly clock: Clock;
  private readonly decoder = new FrameDecoder(FRAME_BYTES_MAX_DEFAULT);
  private readonly pending = new Map<number, Pending>();
  private readonly waiters: (() => void)[] = [];
  private readonly s: SenderStats = { writes: 0, bytes: 0, retries: 0, noBufferWaits: 0 };
  private readonly sweep: NodeJS.Timeout;
  private info: HelloInfo = { version: FRAME_VERSION, stride: 64, segmentBytes: 0, frameBytesMax: FRAME_BYTES_MAX_DEFAULT };
  private readonly ids = new RequestIds();
  private readonly out: CorkedWriter;
  private inFlightBytes = 0;
  /** Requests admitted: in flight, or woken from `waiters` and about to be sent. */
  private taken = 0;
  private dead: RowanError | null = null;
  /** An ERROR the nic sent about the stream itself (id 0) just before closing it. */
  private streamError: string | null = null;
  private closing = false;

  private constructor(
    private readonly socket: Socket,
    o: TcpConnectOptions,
  ) {
    this.out = new CorkedWriter(socket);
    this.o = { ...defaultSenderOptions, ...DEFAULTS, ...stripUndefined(o) };
    this.clock = o.clock ?? monotonicClock;
    this.peer = `${o.host}:${o.port}`;
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('error', (err: NodeJS.ErrnoException) => this.fail(this.gone(err.code ?? err.message)));
    socket.on('close', () => this.fail(this.gone('connection closed')));
    this.sweep = setInterval(() => this.expire(), Math.max(10, Math.min(1000, this.o.requestTimeoutMs / 4)));
    this.sweep.unref();
  }

  /** Connect to a nic and say hello (learn its stride and frame limit). */
  static async connect(o: TcpConnectOptions): Promise<TcpConnection> {
    const timeoutMs = o.connectTimeoutMs ?? DEFAULTS.connectTimeoutMs;
    const socket = await new Promise<Socket>((resolve, reject) => {
      const { socket: s, ready } = connectSocket(o, o.tls ?? null);
      const timer = setTimeout(() => {
        s.destroy();
        reject(new RowanError(ErrorCodes.PEER_GONE, `no connection to the nic at ${o.host}:${o.port} within ${timeoutMs} ms`));
      }, timeoutMs);
      s.once(ready, () => {
        clearTimeout(timer);
        s.removeAllListeners('error');
        resolve(s);
      });
      s.once('error', (err: NodeJS.ErrnoException) => {
        clearTimeout(timer);
        reject(new RowanError(ErrorCodes.PEER_GONE, `cannot connect to the nic at ${o.host}:${o.port}: ${err.code ?? err.message}`));
      });
    });
    const c = new TcpConnection(socket, o);
    try {
      const nonce = newNonce();
      const r = await c.request({ op: Op.HELLO, id: 0, version: FRAME_VERSION, senderId: c.o.senderId, nonce });
      if (r.op !== Op.HELLO) throw new RowanError(ErrorCodes.BAD_FRAME, `nic answered HELLO with op ${r.op}`);
      await c.authenticate(r, nonce, o.secret ?? null);
      c.info = { version: r.version, stride: r.stride, segmentBytes: r.segmentBytes, frameBytesMax: r.frameBytesMax };
      c.decoder.frameBytesMax = Math.max(FRAME_BYTES_MAX_DEFAULT, r.frameBytesMax);
    } catch (err) {
      await c.close();
      throw err;
    }
    return c;
  }

  /** Check the nic's proof, then prove the secret (one AUTH round trip, once per connection). */
  private async authenticate(r: Extract<Reply, { op: typeof Op.HELLO }>, nonce: Uint8Array, secret: Uint8Array | null): Promise<void> {
    if (!r.auth) {
      if (secret === null) return;
      throw new RowanError(ErrorCodes.AUTH_FAILED, `the nic at ${this.peer} does not authenticate (started with --no-auth?) and this node holds a cluster secret: not sending to it`);
    }
    if (secret === null) throw new RowanError(ErrorCodes.NOAUTH, `the nic at ${this.peer} requires the cluster secret, and this sender has none`);
    if (!proofMatches(proof(secret, NIC_LABEL, nonce, r.nonce), r.proof))
      throw new RowanError(ErrorCodes.AUTH_FAILED, `the nic at ${this.peer} did not prove the cluster secret (another cluster's node, or an impostor)`);
    const a = await this.request({ op: Op.AUTH, id: 0, proof: proof(secret, SENDER_LABEL, r.nonce, nonce) });
    if (a.op !== Op.AUTH) throw new RowanError(ErrorCodes.BAD_FRAME, `nic answered AUTH with op ${a.op}`);
  }

  /** What the nic said at HELLO: stride, segment size (0 = no pool yet), frame limit. */
  get hello(): Readonly<HelloInfo> {
    return this.info;
  }

  async write(bytes: Uint8Array): Promise<number> {
    const stride = this.info.stride;
    if (bytes.length === 0 || bytes.length % stride !== 0)
      throw new RowanError(ErrorCodes.BAD_ARGUMENT, `a Rowan write is whole ${stride} B strides, got ${bytes.length} B`);
    if (bytes.length + HEADER_BYTES > this.info.frameBytesMax)
      throw new RowanError(ErrorCodes.ENTRY_TOO_LARGE, `a ${bytes.length} B write does not fit the nic's ${this.info.frameBytesMax} B frames`);
    const r = await this.request({ op: Op.SEND, id: 0, data: bytes });
    if (r.op !== Op.SEND) throw new RowanError(ErrorCodes.BAD_FRAME, `nic answered SEND with op ${r.op}`);
    this.s.writes++;
    this.s.bytes += bytes.length;
    this.s.retries += r.reissues;
    this.s.noBufferWaits += r.noBufferRetries;
    return r.offset;
  }

  async writeAt(offset: number, bytes: Uint8Array): Promise<void> {
    await this.request({ op: Op.WRITE, id: 0, offset, data: bytes });
  }

  async read(offset: number, length: number): Promise<Uint8Array> {
    const r = await this.request({ op: Op.READ, id: 0, offset, length });
    if (r.op !== Op.READ) throw new RowanError(ErrorCodes.BAD_FRAME, `nic answered READ with op ${r.op}`);
    return new Uint8Array(r.data); // a copy: the reply is a view into a received chunk
  }

  async allocateRegion(ownerId: number): Promise<RemoteRegion> {
    const r = await this.request({ op: Op.ALLOC, id: 0, ownerId });
    if (r.op !== Op.ALLOC) throw new RowanError(ErrorCodes.BAD_FRAME, `nic answered ALLOC with op ${r.op}`);
    return { segment: r.segment, offset: r.offset, length: r.length };
  }

  stats(): SenderStats {
    return { ...this.s };
  }

  /** Requests sent and not yet answered. */
  inFlight(): number {
    return this.pending.size;
  }

  /** Close the connection now; requests still in flight fail with RECEIVER_CLOSED (await them first). */
  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    clearInterval(this.sweep);
    this.fail(new RowanError(ErrorCodes.RECEIVER_CLOSED, `connection to the nic at ${this.peer} closed by this sender`));
    if (this.socket.destroyed) return;
    await new Promise<void>((resolve) => {
      const t = setTimeout(() => this.socket.destroy(), 1000);
      this.socket.once('close', () => {
        clearTimeout(t);
        resolve();
      });
      this.socket.end();
    });
  }

  // ---- requests ----------------------------------------------------------------------------------------

  private async request(req: Request): Promise<Resolved> {
    if (this.dead) throw this.dead;
    await this.slot();
    if (this.dead) {
      this.taken--;
      throw this.dead;
    }
    const id = this.ids.take(this.pending);
    req.id = id;
    const frame = req.op === Op.SEND ? encodeSend(id, req.data) : encodeRequest(req);
    return new Promise<Resolved>((resolve, reject) => {
      const now = this.clock.now();
      const p: Pending = { id, frame, firstAt: now, sentAt: now, backoffMs: defaultTimings.tcpBackoffFirstMs, retryTimer: null, resolve, reject };
      this.pending.set(id, p);
      this.inFlightBytes += frame.length;
      this.out.write(frame);
    });
  }

  private hasRoom(): boolean {
    return this.taken < this.o.maxInFlight && (this.taken === 0 || this.inFlightBytes < this.o.maxInFlightBytes);
  }

  /** Take a slot for one more request in flight, waiting (FIFO) while there is none. */
  private slot(): Promise<void> | void {
    if (this.waiters.length === 0 && this.hasRoom()) {
      this.taken++;
      return;
    }
    return new Promise<void>((resolve) => this.waiters.push(resolve));
  }

  private release(p: Pending): void {
    this.pending.delete(p.id);
    this.inFlightBytes -= p.frame.length;
    this.taken--;
    if (p.retryTimer) clearTimeout(p.retryTimer);
    // Hand freed slots to waiters in order; a woken waiter owns its slot already.
    while (this.waiters.length > 0 && this.hasRoom()) {
      this.taken++;
      this.waiters.shift()!();
    }
  }

  private onData(chunk: Buffer): void {
    this.decoder.push(chunk);
    try {
      for (let f = this.decoder.next(); f; f = this.decoder.next()) this.settle(parseReply(f));
    } catch (err) {
      if (!(err instanceof RowanError)) throw err;
      this.fail(new RowanError(ErrorCodes.BAD_FRAME, `the nic at ${this.peer} sent a malformed frame (${err.message}); connection dropped`));
      this.socket.destroy();
    }
  }

  private settle(r: Reply): void {
    const p = this.pending.get(r.id);
    if (!p) {
      // Answered after it timed out, or an error about the stream, which the nic closes next.
      if (r.op === OP_ERROR && r.id === 0) this.streamError = `${r.code}: ${r.message}`;
      return;
    }
    if (r.op !== OP_ERROR) {
      this.release(p);
      p.resolve(r);
      return;
    }
    const now = this.clock.now();
    if (isRetryable(r.code) && now - p.firstAt < this.o.noBufferTimeoutMs) {
      this.s.noBufferWaits++;
      p.retryTimer = setTimeout(() => {
        p.retryTimer = null;
        if (this.dead || !this.pending.has(p.id)) return;
        p.sentAt = this.clock.now();
        this.out.write(p.frame);
      }, p.backoffMs);
      p.backoffMs = Math.min(p.backoffMs * 2, defaultTimings.tcpBackoffMsMax);
      return;
    }
    this.release(p);
    if (FULL.has(r.code)) p.reject(new RowanError(r.code === ErrorCodes.QUOTA ? ErrorCodes.QUOTA : ErrorCodes.PM_FULL, `${r.message}; gave up after ${this.o.noBufferTimeoutMs} ms (nic at ${this.peer})`));
    else if (isRetryable(r.code))
      p.reject(new RowanError(ErrorCodes.WRITE_TIMEOUT, `${r.message}; gave up after ${this.o.noBufferTimeoutMs} ms (nic at ${this.peer})`));
    else p.reject(fromRecord({ code: r.code, message: r.message }));
  }

  /** Fail requests that have waited longer than the request timeout for a reply. */
  private expire(): void {
    const now = this.clock.now();
    for (const p of this.pending.values()) {
      if (p.retryTimer || now - p.sentAt < this.o.requestTimeoutMs) continue;
      this.release(p);
      p.reject(new RowanError(ErrorCodes.WRITE_TIMEOUT, `no reply from the nic at ${this.peer} within ${this.o.requestTimeoutMs} ms`));
    }
  }

  private gone(why: string): RowanError {
    const n = this.pending.size;
    return new RowanError(
      ErrorCodes.PEER_GONE,
      `connection to the nic at ${this.peer} lost (${this.streamError ? `the nic closed it after ${this.streamError}` : why}); ${n} request(s) in flight failed, and a write among them may or may not have landed`,
    );
  }

  /** The connection is over: every pending request and waiter fails with `err`, and so does every later call. */
  private fail(err: RowanError): void {
    if (this.dead) return;
    this.dead = err;
    clearInterval(this.sweep);
    for (const p of [...this.pending.values()]) {
      this.release(p);
      p.reject(err);
    }
    for (const w of this.waiters.splice(0)) {
      this.taken++; // given back by request() when it sees the connection dead
      w();
    }
    if (!this.socket.destroyed && !this.closing) this.socket.destroy();
  }
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
