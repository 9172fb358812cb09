// One client connection at a worker's client port. The first frame must be HELLO; after it requests
// are pipelined: each is handed to the KvHandler as soon as it is decoded, many run at once (the
// coroutines of §5.1), and each response is written when its request completes, so responses may
// leave in a different order than their requests came (the request id pairs them up).
//
// What can go wrong and what the peer sees:
//   - a frame that is whole but wrong (reserved bits, unknown op, lengths that disagree, key or value
//     over its limit): an ERROR response for its request id; the connection goes on;
//   - a stream that cannot be framed (length prefix below the header or above the limit), a first
//     frame that is not HELLO, a HELLO of another protocol version: an ERROR (request id 0 when none
//     was readable), then the connection is ended once the requests already running have answered;
//   - a peer that ends or dies mid-frame: the partial frame is dropped, never executed.
// The handler only ever sees fully checked requests, so nothing partial is ever written.
//
// Authentication (./frames-layout.ts): on a port with credentials, HELLO is answered CHALLENGE and the
// connection is not authenticated until its AUTH proof checks out -- of the client password for a
// HELLO of role client, of the cluster secret for role peer (another node: only a peer may REPLICATE,
// COPY_SHARD or PEER_LEASE, a client gets ROWAN_ERR_FORBIDDEN for them); before that every other request is
// answered ROWAN_ERR_NOAUTH without reaching the handler, a wrong proof is answered
// ROWAN_ERR_AUTH_FAILED and ends the connection, and the handshake deadline (handshakeMs) runs until
// AUTH (config authDeadlineMs), so an unauthenticated connection cannot be held open either; until AUTH
// frames are at most FRAME_BYTES_MAX_UNAUTHENTICATED (1 KiB), so it cannot make the port buffer a value.
//
// Flow control: while inFlightMax requests (or readsInFlightMax GETs) run, or more than writeBytesMax
// of responses wait for the peer to read them, no further frame is decoded and the socket is paused
// (TCP pushes back on the client). A connection that does not complete HELLO within handshakeMs, or stays idle with nothing
// running for idleMs, is closed, and TCP keepalive finds peers that vanished: no connection leaks.
import type { Socket } from 'node:net';
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import type { Logger } from '../../config/base/log.js';
import {
  FrameReader,
  Op,
  PROTOCOL_VERSION,
  Status,
  decodeRequest,
  encodeResponse,
  errorResponse,
  requestIdOf,
  type FrameLimits,
  type Request,
} from './frames.js';
import { CLIENT_LABEL, CONFIG_JSON_BYTES_MAX, FRAME_BYTES_MAX_UNAUTHENTICATED, HelloRole, OP_NAMES, PEER_LABEL, PEER_SERVER_LABEL, SERVER_LABEL, requestBytesMax, type HelloRoleCode } from './frames-layout.js';
import { newNonce, proof, proofMatches } from '../../config/base/secret.js';
import { peerCertified } from '../net/tls.js';
import type { KvHandler } from './handler.js';
import { forClients } from '../../config/cluster.js';

export interface ConnectionOptions {
  handler: KvHandler;
  limits: FrameLimits;
  log: Logger | undefined;
  /** Requests running at once on one connection before its socket is paused. */
  inFlightMax: number;
  /** GETs running at once: each may answer up to valueBytesMax, so this and writeBytesMax bound the
   *  memory a connection whose peer reads nothing can hold (writeBytesMax + readsInFlightMax values). */
  readsInFlightMax: number;
  /** Response bytes waiting for the peer before decoding stops and the socket is paused. */
  writeBytesMax: number;
  /** A connection that has not completed HELLO within this is closed. */
  handshakeMs: number;
  /** A connection with nothing running and no traffic for this long is closed. */
  idleMs: number;
  /** After the server ends a connection, how long the peer has to close its side before a reset. */
  lingerMs: number;
  /** The cluster secret peers (HELLO role peer) must prove; null together with `password` = none
   *  asked (--no-auth). */
  secret: Uint8Array | null;
  /** The client password clients (HELLO role client) must prove. */
  password: Uint8Array | null;
  /** The port runs TLS: a HELLO of role peer must come with a certificate the cluster CA signed. */
  tls: boolean;
}

export interface ServerStats {
  connections: number;
  open: number;
  requests: number;
  errorResponses: number;
  /** Connections ended because their stream could not be framed or skipped HELLO. */
  badStreams: number;
  /** Connections whose peer ended inside a frame (the partial frame was dropped). */
  truncated: number;
  /** Handler throws that were not RowanErrors (answered ROWAN_ERR_INTERNAL). */
  internalErrors: number;
  /** Requests answered ROWAN_ERR_NOAUTH, and connections ended for a wrong AUTH proof. */
  noAuth: number;
  authFailures: number;
  /** Connections refused over clients.connectionsMax. */
  refused: number;
  /** TLS handshakes that failed (a plaintext client on a TLS port, a certificate the CA did not sign). */
  tlsRefused: number;
}

export function newServerStats(): ServerStats {
  return { connections: 0, open: 0, requests: 0, errorResponses: 0, badStreams: 0, truncated: 0, internalErrors: 0, refused: 0, noAuth: 0, authFailures: 0, tlsRefused: 0 };
}

type State = 'open' | 'closing' | 'closed';

export class ClientConnection {
  private readonly reader: FrameReader;
  private state: State = 'open';
  private helloed = false;
  /** The client proved its credential (from the start when the port asks none). */
  private authed: boolean;
  /** The connection may run peer-only requests: it proved the cluster secret, or nothing is asked. */
  private peer: boolean;
  /** The role its HELLO named: which credential its AUTH proves. */
  private role: HelloRoleCode = HelloRole.CLIENT;
  /** This connection's CHALLENGE nonce and the client's HELLO nonce. */
  private nonce: Uint8Array | null = null;
  private peerNonce: Uint8Array | null = null;
  private peerEnded = false;
  private inFlight = 0;
  private readsInFlight = 0;
  private paused = false;
  private corked = false;
  private lingerTimer: NodeJS.Timeout | null = null;
  /** An absolute deadline for HELLO: trickling bytes does not extend it. */
  private handshakeTimer: NodeJS.Timeout | null;

  constructor(
    private readonly socket: Socket,
    private readonly o: ConnectionOptions,
    private readonly stats: ServerStats,
    private readonly onGone: (c: ClientConnection) => void,
  ) {
    this.authed = o.secret === null && o.password === null;
    this.reader = new FrameReader(this.authed ? requestBytesMax(o.limits) : FRAME_BYTES_MAX_UNAUTHENTICATED);
    this.peer = this.authed;
    stats.connections++;
    stats.open++;
    socket.setNoDelay(true);
    socket.setKeepAlive(true, 10_000);
    socket.setTimeout(o.idleMs);
    this.handshakeTimer = setTimeout(() => {
      this.o.log?.debug('rpc: closing a client connection that did not say HELLO in time');
      this.socket.destroy();
    }, o.handshakeMs);
    this.handshakeTimer.unref();
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('end', () => this.onEnd());
    socket.on('drain', () => this.pump());
    socket.on('timeout', () => this.onTimeout());
    socket.on('error', () => {}); // a reset peer is an ordinary end; 'close' follows
    socket.on('close', () => this.onClose());
  }

  destroy(): void {
    this.socket.destroy();
  }

  private onData(chunk: Buffer): void {
    if (this.state !== 'open') return;
    this.reader.push(chunk);
    this.pump();
  }

  private onEnd(): void {
    this.peerEnded = true;
    this.pump();
  }

  private onTimeout(): void {
    // Slow handlers are not the peer's idleness: re-arm (a fired socket timeout stays quiet otherwise).
    if (this.inFlight > 0) {
      this.socket.setTimeout(this.o.idleMs);
      return;
    }
    this.o.log?.debug('rpc: closing an idle client connection');
    this.socket.destroy();
  }

  private onClose(): void {
    if (this.state === 'closed') return;
    this.state = 'closed';
    if (this.lingerTimer) clearTimeout(this.lingerTimer);
    if (this.handshakeTimer) clearTimeout(this.handshakeTimer);
    this.stats.open--;
    this.onGone(this);
  }

  /** Decode and dispatch frames while the flow-control bounds allow, then settle pause/end. */
  private pump(): void {
    while (this.state === 'open' && !this.overLimit()) {
      let f: Uint8Array | null;
      try {
        f = this.reader.next();
      } catch (err) {
        this.badStream(err);
        break;
      }
      if (f === null) {
        if (this.peerEnded) this.atPeerEnd();
        break;
      }
      this.frame(f);
    }
    this.flowControl();
    this.finishIfDone();
  }

  private overLimit(): boolean {
    return this.inFlight >= this.o.inFlightMax || this.readsInFlight >= this.o.readsInFlightMax || this.socket.writableLength > this.o.writeBytesMax;
  }

  private frame(f: Uint8Array): void {
    let req: Request;
    try {
      req = decodeRequest(f, this.o.limits);
    } catch (err) {
      const e = asRowan(err);
      this.respond(errorResponse(requestIdOf(e) ?? 0, this.term(), e), true);
      if (!this.helloed) this.badStream(null);
      return;
    }
    if (!this.helloed) {
      if (req.op === Op.HELLO) return this.hello(req.id, req.version, req.nonce, req.role);
      const e = new RowanError(ErrorCodes.NO_HANDSHAKE, 'the first frame on a connection must be HELLO');
      this.respond(errorResponse(req.id, this.term(), e), true);
      return this.badStream(null);
    }
    if (req.op === Op.AUTH) return this.auth(req.id, req.proof);
    if (!this.authed && req.op !== Op.HELLO) {
      this.stats.noAuth++;
      const e = new RowanError(ErrorCodes.NOAUTH, 'authentication required: answer the HELLO challenge with AUTH (the client password)');
      return this.respond(errorResponse(req.id, this.term(), e), true);
    }
    if (!this.peer && (req.op === Op.REPLICATE || req.op === Op.COPY_SHARD || req.op === Op.PEER_LEASE)) {
      const e = new RowanError(ErrorCodes.FORBIDDEN, `${OP_NAMES[req.op]} is for the cluster's nodes (HELLO role peer, the cluster secret), not for clients`);
      return this.respond(errorResponse(req.id, this.term(), e), true);
    }
    switch (req.op) {
      case Op.HELLO:
        return this.hello(req.id, req.version, req.nonce, req.role);
      case Op.CONFIG:
        return this.configResponse(req.id);
      default:
        this.run(req);
    }
  }

  private hello(id: number, version: number, peerNonce: Uint8Array | undefined, role: HelloRoleCode | undefined): void {
    if (version !== PROTOCOL_VERSION || !peerNonce) {
      const why = version === 1 ? ' (version 1 has no authentication: upgrade the client)' : version === 2 ? ' (version 2 clients prove the cluster secret, which clients no longer hold: upgrade the client and give it the client password)' : '';
      const e = new RowanError(ErrorCodes.BAD_FRAME, `client speaks protocol version ${version}, this server ${PROTOCOL_VERSION}${why}`);
      this.respond(errorResponse(id, this.term(), e), true);
      return this.badStream(null);
    }
    this.helloed = true;
    if (this.authed) {
      this.handshakeDone();
      return this.respond(encodeResponse({ status: Status.OK, id, term: this.term() }), false);
    }
    this.role = role ?? HelloRole.CLIENT;
    if (this.role === HelloRole.PEER && this.o.tls && !peerCertified(this.socket)) {
      // Mutual TLS for peers: the secret alone is not enough on a TLS port.
      this.stats.authFailures++;
      const e = new RowanError(ErrorCodes.AUTH_FAILED, 'a peer (HELLO role peer) must present a TLS certificate signed by the cluster CA');
      this.respond(errorResponse(id, this.term(), e), true);
      return this.badStream(null);
    }
    const key = this.key();
    this.nonce = newNonce();
    this.peerNonce = new Uint8Array(peerNonce); // a copy: the request is a view into a received chunk
    // A port missing the role's credential still challenges (with a random key): AUTH then fails.
    const p = proof(key ?? newNonce(), this.role === HelloRole.PEER ? PEER_SERVER_LABEL : SERVER_LABEL, this.peerNonce, this.nonce);
    this.respond(encodeResponse({ status: Status.CHALLENGE, id, term: this.term(), nonce: this.nonce, proof: p }), false);
  }

  /** The credential the HELLO's role proves: the cluster secret for a peer, else the client password. */
  private key(): Uint8Array | null {
    return this.role === HelloRole.PEER ? this.o.secret : this.o.password;
  }

  /** AUTH: the client's proof of its credential. Wrong: AUTH_FAILED, and the connection ends. */
  private auth(id: number, got: Uint8Array): void {
    if (!this.authed) {
      const key = this.key();
      const label = this.role === HelloRole.PEER ? PEER_LABEL : CLIENT_LABEL;
      if (key === null || !this.nonce || !this.peerNonce || !proofMatches(proof(key, label, this.nonce, this.peerNonce), got)) {
        this.stats.authFailures++;
        const who = this.role === HelloRole.PEER ? 'peer (cluster secret)' : 'client (client password)';
        this.o.log?.warn({ peer: this.socket.remoteAddress, role: this.role }, `rpc: a ${who} failed authentication; closing its connection`);
        const e = new RowanError(ErrorCodes.AUTH_FAILED, `authentication failed: the AUTH proof does not match this cluster's ${this.role === HelloRole.PEER ? 'secret' : 'client password'}`);
        this.respond(errorResponse(id, this.term(), e), true);
        return this.badStream(null);
      }
      this.authed = true;
      this.peer = this.role === HelloRole.PEER;
      this.reader.frameBytesMax = requestBytesMax(this.o.limits); // next() checks it for the next frame
    }
    this.handshakeDone();
    this.respond(encodeResponse({ status: Status.OK, id, term: this.term() }), false);
  }

  private handshakeDone(): void {
    if (this.handshakeTimer) clearTimeout(this.handshakeTimer);
    this.handshakeTimer = null;
  }

  private configResponse(id: number): void {
    try {
      const json = JSON.stringify(forClients(this.o.handler.config())); // never the checksum seed
      if (Buffer.byteLength(json) > CONFIG_JSON_BYTES_MAX)
        throw new RowanError(ErrorCodes.BAD_CONFIG, `the configuration's JSON exceeds the ${CONFIG_JSON_BYTES_MAX} B a CONFIG response may carry`);
      this.respond(encodeResponse({ status: Status.CONFIG, id, term: this.term(), json }), false);
    } catch (err) {
      this.respond(this.failure(id, err), true);
    }
  }

  /** Hand one checked request to the handler; its response is written whenever it completes. */
  private run(req: Exclude<Request, { op: typeof Op.HELLO | typeof Op.CONFIG | typeof Op.AUTH }>): void {
    this.inFlight++;
    const read = req.op === Op.GET || req.op === Op.GET_REPLICA || req.op === Op.COPY_SHARD;
    if (read) this.readsInFlight++;
    this.stats.requests++;
    this.invoke(req).then(
      (res) => this.done(res, false, read),
      (err: unknown) => this.done(this.failure(req.id, err), true, read),
    );
  }

  private done(res: Buffer, isError: boolean, read: boolean): void {
    this.inFlight--;
    if (read) this.readsInFlight--;
    this.respond(res, isError);
    this.pump();
  }

  private async invoke(req: Exclude<Request, { op: typeof Op.HELLO | typeof Op.CONFIG | typeof Op.AUTH }>): Promise<Buffer> {
    const h = this.o.handler;
    switch (req.op) {
      case Op.PUT:
        await h.put(req.key, req.value, req.term);
        return encodeResponse({ status: Status.OK, id: req.id, term: this.term() });
      case Op.PUT_EXPIRES:
        if (!h.putExpiring) throw new RowanError(ErrorCodes.UNKNOWN_OP, 'this server takes no PUT_EXPIRES requests');
        await h.putExpiring(req.key, req.value, req.term, { kind: req.kind, ms: req.ms });
        return encodeResponse({ status: Status.OK, id: req.id, term: this.term() });
      case Op.DEL:
        await h.del(req.key, req.term);
        return encodeResponse({ status: Status.OK, id: req.id, term: this.term() });
      case Op.REPLICATE:
        if (!h.replicate) throw new RowanError(ErrorCodes.UNKNOWN_OP, 'this server takes no REPLICATE requests');
        await h.replicate(req.block, req.term);
        return encodeResponse({ status: Status.OK, id: req.id, term: this.term() });
      case Op.PEER_LEASE:
        if (!h.peerLease) throw new RowanError(ErrorCodes.UNKNOWN_OP, 'this server takes no PEER_LEASE requests');
        await h.peerLease(req.key, req.term);
        return encodeResponse({ status: Status.OK, id: req.id, term: this.term() });
      case Op.COPY_SHARD:
      case Op.GET:
      case Op.GET_REPLICA: {
        if (req.op === Op.COPY_SHARD && !h.copyShard) throw new RowanError(ErrorCodes.UNKNOWN_OP, 'this server takes no COPY_SHARD requests');
        const v = req.op === Op.GET ? await h.get(req.key, req.term) : req.op === Op.COPY_SHARD ? await h.copyShard!(req.key, req.term) : await h.getReplica(req.key);
        // A client would take an oversized VALUE for a broken stream; answer the request instead.
        if (v !== null && v.length > this.o.limits.valueBytesMax)
          throw new RowanError(ErrorCodes.VALUE_TOO_LARGE, `stored value of ${v.length} B exceeds the ${this.o.limits.valueBytesMax} B limit`);
        return v === null
          ? encodeResponse({ status: Status.NOT_FOUND, id: req.id, term: this.term() })
          : encodeResponse({ status: Status.VALUE, id: req.id, term: this.term(), value: v });
      }
    }
  }

  /** The ERROR response for a handler failure; a throw that is not a RowanError is a bug worth a log line. */
  private failure(id: number, err: unknown): Buffer {
    if (!(err instanceof RowanError)) {
      this.stats.internalErrors++;
      this.o.log?.error({ err }, 'rpc: request handler threw a non-RowanError; answered ROWAN_ERR_INTERNAL');
    }
    return errorResponse(id, this.term(), err);
  }

  private term(): number {
    try {
      const t = this.o.handler.term();
      return Number.isSafeInteger(t) && t >= 0 ? t : 0;
    } catch {
      return 0;
    }
  }

  /** Write one response; responses written in one tick leave in one write (cork until next tick). */
  private respond(buf: Buffer, isError: boolean): void {
    if (isError) this.stats.errorResponses++;
    const s = this.socket;
    if (s.destroyed || !s.writable) return; // the peer is gone; the result has nobody to go to
    if (!this.corked) {
      this.corked = true;
      s.cork();
      process.nextTick(() => {
        this.corked = false;
        s.uncork();
      });
    }
    s.write(buf);
  }

  /** The stream cannot go on: answer (if `err`), stop reading, end once running requests answered. */
  private badStream(err: unknown): void {
    if (this.state !== 'open') return;
    if (err !== null) {
      const e = asRowan(err);
      this.respond(errorResponse(requestIdOf(e) ?? 0, this.term(), e), true);
    }
    this.stats.badStreams++;
    this.o.log?.debug({ err }, 'rpc: ending a client connection that cannot be framed or skipped HELLO');
    this.state = 'closing';
  }

  /** The peer ended its side: anything left in the reader is a truncated frame, dropped. */
  private atPeerEnd(): void {
    try {
      this.reader.end();
    } catch (err) {
      this.stats.truncated++;
      const e = asRowan(err);
      this.respond(errorResponse(requestIdOf(e) ?? 0, this.term(), e), true);
    }
    this.state = 'closing';
  }

  private flowControl(): void {
    if (this.state === 'closed') return;
    // While closing, bytes are read and dropped (onData), so the peer's FIN is seen and the socket closes.
    const stop = this.state === 'open' && this.overLimit();
    if (stop && !this.paused) {
      this.paused = true;
      this.socket.pause();
    } else if (!stop && this.paused) {
      this.paused = false;
      this.socket.resume();
    }
  }

  private finishIfDone(): void {
    if (this.state !== 'closing' || this.inFlight > 0 || this.lingerTimer) return;
    this.socket.end();
    // A peer that never closes its side would hold the socket half-open: reset it after a grace.
    this.lingerTimer = setTimeout(() => this.socket.destroy(), this.o.lingerMs);
    this.lingerTimer.unref();
  }
}

function asRowan(err: unknown): RowanError {
  return err instanceof RowanError ? err : new RowanError(ErrorCodes.BAD_FRAME, String(err));
}
