// One peer connection at the soft RNIC: one sending actor's RC QP. Frames are executed strictly in
// arrival order, each to completion (for SEND: reserve, copy, persist, complete) before its reply is
// written, so an ACK always means persistent.
//
// A SEND that finds no posted buffer parks the connection -- its later frames wait behind it, as an RC
// QP stalls on receiver-not-ready -- and is retried on a timer (1-2 ms) while every other connection
// keeps running. After nicParkMs (config/timings.ts) it is answered NO_BUFFER (or RECEIVER_NOT_READY), retryable: the
// sender retries up to its own bound. The write is never dropped silently.
//
// Flow control: while the frames not yet executed, or the replies the peer has not read, exceed the
// queue bound, the socket is not read (TCP pushes back on the peer).
//
// A stream that cannot be framed any more (garbage, an oversized length) gets an ERROR reply after the
// frames before it have run, and is closed. A peer that dies mid-frame leaves a partial frame that is
// never executed: nothing partial reaches the pool.
//
// Authentication (runtime/fabric/nic-frames.ts): a nic with a secret executes nothing for a peer until
// it has proven the secret (HELLO, then AUTH). Any other frame first, a wrong proof, or a malformed
// frame before that is answered with one ERROR (ROWAN_ERR_NOAUTH or ROWAN_ERR_AUTH_FAILED) and the
// connection is closed; frames queued behind it are dropped unexecuted. Until then frames above
// FRAME_BYTES_MAX_UNAUTHENTICATED poison the stream, so a stranger cannot make the nic buffer megabytes,
// and a peer that has not authenticated within authDeadlineMs is closed, so it cannot hold a connection.
import type { Socket } from 'node:net';
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import type { Logger } from '../../config/base/log.js';
import {
  FRAME_BYTES_MAX_UNAUTHENTICATED,
  FRAME_VERSION,
  FrameDecoder,
  NIC_LABEL,
  Op,
  SENDER_LABEL,
  encodeReply,
  errorReply,
  parseRequest,
  type RawFrame,
  type Reply,
} from '../../runtime/fabric/nic-frames.js';
import { NONCE_BYTES, PROOF_BYTES, newNonce, proof, proofMatches } from '../../config/base/secret.js';
import { newNicPeer, peerNodeId, type NicMemory, type WaitCode } from './nic-verbs.js';

export interface NicStats {
  connections: number;
  frames: number;
  sends: number;
  bytesLanded: number;
  /** SENDs re-landed because their buffer went Used while they landed (runtime/rowan/land.ts). */
  reissues: number;
  /** Times a SEND found no buffer (or no queue) and its connection parked. */
  parks: number;
  errorReplies: number;
  /** Connections closed because their stream could not be framed. */
  badStreams: number;
  /** Connections that ended inside a frame (the partial frame was dropped). */
  truncated: number;
  /** Connections refused because the peer did not prove the cluster secret. */
  refused: number;
}

export function newNicStats(): NicStats {
  return { connections: 0, frames: 0, sends: 0, bytesLanded: 0, reissues: 0, parks: 0, errorReplies: 0, badStreams: 0, truncated: 0, refused: 0 };
}

export interface ConnectionOptions {
  parkMs: number;
  queueBytesMax: number;
  frameBytesMax: number;
  now: () => number;
  /** The cluster secret peers must prove; null = every peer is trusted (rowan start --no-auth). */
  secret: Uint8Array | null;
  /** A peer that has not proven the secret this long after it connected is closed (config authDeadlineMs). */
  authDeadlineMs: number;
}

interface Waiting {
  since: number;
  retries: number;
  timer: NodeJS.Timeout | null;
}

export class NicConnection {
  private readonly decoder: FrameDecoder;
  private queue: RawFrame[] = [];
  private head = 0;
  private queuedBytes = 0;
  private senderId = 0;
  /** Who the peer is to the NIC's access rules (./nic-verbs.ts): the node it named in HELLO, its last landing. */
  private readonly peer = newNicPeer();
  private waiting: Waiting | null = null;
  private fatal: RowanError | null = null;
  private paused = false;
  private dead = false;
  /** The peer proved the secret (always true without one). */
  private authed: boolean;
  /** Nonces of the handshake: this nic's and the peer's, from its HELLO. */
  private nonce: Uint8Array | null = null;
  private peerNonce: Uint8Array | null = null;
  /** Set when the peer is refused: the reply just written is the last, the connection closes. */
  private refusal: RowanError | null = null;
  /** Closes the connection if the peer has not authenticated by authDeadlineMs (absolute). */
  private authTimer: NodeJS.Timeout | null = null;

  constructor(
    private readonly socket: Socket,
    private readonly mem: NicMemory,
    private readonly o: ConnectionOptions,
    private readonly stats: NicStats,
    private readonly log: Logger | undefined,
    private readonly onGone: (c: NicConnection) => void,
  ) {
    this.authed = o.secret === null;
    this.decoder = new FrameDecoder(this.authed ? o.frameBytesMax : Math.min(o.frameBytesMax, FRAME_BYTES_MAX_UNAUTHENTICATED));
    if (!this.authed) {
      this.authTimer = setTimeout(() => {
        this.log?.warn({ peer: socket.remoteAddress, port: socket.remotePort }, `closing a fabric peer that did not authenticate within ${o.authDeadlineMs} ms`);
        socket.destroy();
      }, o.authDeadlineMs);
      this.authTimer.unref();
    }
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('drain', () => this.flowControl());
    socket.on('error', () => {}); // 'close' follows; a reset peer is an ordinary end here
    socket.on('close', () => this.onClose());
  }

  destroy(): void {
    this.socket.destroy();
  }

  private onData(chunk: Buffer): void {
    if (this.dead || this.fatal) return;
    this.decoder.push(chunk);
    try {
      for (let f = this.decoder.next(); f; f = this.decoder.next()) {
        this.queue.push(f);
        this.queuedBytes += f.body.length;
      }
    } catch (err) {
      if (!(err instanceof RowanError)) throw err;
      this.fatal = err; // run what came before the bad bytes, then reply and close
    }
    this.run();
  }

  /** Execute queued frames (unless parked), then apply flow control. */
  private run(): void {
    if (!this.dead && !this.waiting?.timer) this.pass();
    this.flowControl();
  }

  /** Execute queued frames in order until one has to wait or none is left. */
  private pass(): void {
    const s = this.socket;
    s.cork(); // replies of one pass leave in one write
    try {
      while (this.head < this.queue.length) {
        const f = this.queue[this.head]!;
        const reply = this.execute(f);
        if (reply === null) break; // parked; a timer runs us again
        this.queue[this.head++] = undefined as unknown as RawFrame;
        this.queuedBytes -= f.body.length;
        this.stats.frames++;
        s.write(reply);
        if (this.refusal) return this.refuse(this.refusal);
      }
      if (this.head === this.queue.length) {
        this.queue = [];
        this.head = 0;
      }
      if (this.fatal && this.queue.length === 0) this.closeBadStream(this.fatal);
    } finally {
      s.uncork();
    }
  }

  /** The reply to `f`, or null when it must wait for a receive buffer. */
  private execute(f: RawFrame): Buffer | null {
    try {
      const req = parseRequest(f);
      if (!this.authed && req.op !== Op.HELLO && req.op !== Op.AUTH)
        throw new RowanError(ErrorCodes.NOAUTH, 'authentication required: HELLO and AUTH with the cluster secret come first');
      switch (req.op) {
        case Op.HELLO:
          if (req.version !== FRAME_VERSION)
            throw new RowanError(ErrorCodes.BAD_FRAME, `peer speaks frame version ${req.version}, this nic ${FRAME_VERSION}`);
          this.senderId = req.senderId;
          // The node this peer writes for: its one-sided regions are those of this node's owner id.
          // With a secret nothing but HELLO/AUTH runs before AUTH, so only a peer that proved it is
          // a cluster member ever uses the id.
          this.peer.nodeId = peerNodeId(req.senderId);
          return encodeReply({ op: Op.HELLO, id: req.id, version: FRAME_VERSION, ...this.mem.hello(), ...this.challenge(req.nonce) });
        case Op.AUTH:
          this.authenticate(req.proof);
          return encodeReply({ op: Op.AUTH, id: req.id });
        case Op.SEND: {
          const r = this.mem.send(req.data, this.senderId, this.peer);
          if ('wait' in r) return this.wait(req.id, r.wait);
          const noBufferRetries = this.waiting ? this.waiting.retries + 1 : 0;
          this.waiting = null;
          this.stats.sends++;
          this.stats.bytesLanded += req.data.length;
          this.stats.reissues += r.reissues;
          return encodeReply({ op: Op.SEND, id: req.id, offset: r.at, reissues: r.reissues, noBufferRetries });
        }
        case Op.WRITE:
          this.mem.write(this.peer, req.offset, req.data);
          return encodeReply({ op: Op.WRITE, id: req.id });
        case Op.READ:
          return encodeReply({ op: Op.READ, id: req.id, data: this.mem.read(this.peer, req.offset, req.length) });
        case Op.ALLOC:
          return encodeReply({ op: Op.ALLOC, id: req.id, ...this.mem.alloc(this.peer, req.ownerId) });
      }
    } catch (err) {
      // Operational failures are answered; anything else is a bug and stops the actor (CONVENTIONS 7).
      if (!(err instanceof RowanError)) throw err;
      this.waiting = null;
      this.stats.errorReplies++;
      if (!this.authed) this.refusal = err; // a stranger gets one answer, then the door
      return errorReply(f.id, err);
    }
  }

  /** The nic's half of the handshake for a HELLO carrying the peer's nonce. */
  private challenge(peerNonce: Uint8Array): Pick<Extract<Reply, { op: typeof Op.HELLO }>, 'auth' | 'nonce' | 'proof'> {
    const secret = this.o.secret;
    if (secret === null) return { auth: false, nonce: new Uint8Array(NONCE_BYTES), proof: new Uint8Array(PROOF_BYTES) };
    this.nonce = newNonce();
    this.peerNonce = new Uint8Array(peerNonce); // a copy: the frame's bytes are a view into a chunk
    return { auth: true, nonce: this.nonce, proof: proof(secret, NIC_LABEL, this.peerNonce, this.nonce) };
  }

  /** Check the peer's AUTH proof; throws AUTH_FAILED (and the connection is refused) when it is wrong. */
  private authenticate(got: Uint8Array): void {
    const secret = this.o.secret;
    if (secret === null || this.authed) return; // nothing to prove here
    if (!this.nonce || !this.peerNonce) throw new RowanError(ErrorCodes.NOAUTH, 'AUTH before HELLO: HELLO carries the nonces AUTH proves');
    if (!proofMatches(proof(secret, SENDER_LABEL, this.nonce, this.peerNonce), got))
      throw new RowanError(ErrorCodes.AUTH_FAILED, 'the peer did not prove the cluster secret');
    this.authed = true;
    this.decoder.frameBytesMax = this.o.frameBytesMax;
    if (this.authTimer) clearTimeout(this.authTimer);
    this.authTimer = null;
  }

  /** Close a connection whose peer did not authenticate: its queued frames are dropped unexecuted. */
  private refuse(err: RowanError): void {
    this.stats.refused++;
    this.log?.warn({ peer: this.socket.remoteAddress, port: this.socket.remotePort, code: err.code }, `refusing a fabric peer: ${err.message}`);
    this.queue = [];
    this.head = 0;
    this.queuedBytes = 0;
    this.dead = true;
    this.socket.end();
    this.socket.destroySoon();
  }

  /** Park on a SEND that found no buffer: retry soon, or answer retryably once parked too long. */
  private wait(id: number, code: WaitCode): Buffer | null {
    const now = this.o.now();
    const w = this.waiting ?? { since: now, retries: 0, timer: null };
    if (!this.waiting) this.stats.parks++;
    else w.retries++;
    this.waiting = w;
    if (now - w.since >= this.o.parkMs) {
      this.waiting = null;
      this.stats.errorReplies++;
      const why = code === ErrorCodes.NO_BUFFER ? 'no receive buffer posted' : code === ErrorCodes.PM_FULL ? 'no receive buffer: the pool has no free segment' : 'no receive queue yet';
      return errorReply(id, new RowanError(code, `${why} for ${Math.round(now - w.since)} ms (retryable)`));
    }
    w.timer = setTimeout(() => {
      w.timer = null;
      this.run();
    }, w.retries < 4 ? 1 : 2);
    return null;
  }

  private flowControl(): void {
    if (this.dead) return;
    const over = this.queuedBytes > this.o.queueBytesMax || this.socket.writableLength > this.o.queueBytesMax;
    if (over && !this.paused) {
      this.paused = true;
      this.socket.pause();
    } else if (!over && this.paused && !this.fatal) {
      this.paused = false;
      this.socket.resume();
    }
  }

  private closeBadStream(err: RowanError): void {
    this.stats.badStreams++;
    this.stats.errorReplies++;
    const id = typeof err.details?.id === 'number' ? err.details.id : 0;
    this.log?.warn({ peer: this.socket.remoteAddress, port: this.socket.remotePort, code: err.code }, `closing a connection: ${err.message}`);
    this.socket.end(errorReply(id, err));
    this.socket.destroySoon();
    this.dead = true;
  }

  private onClose(): void {
    if (this.authTimer) clearTimeout(this.authTimer);
    if (this.waiting?.timer) clearTimeout(this.waiting.timer);
    this.waiting = null;
    if (!this.fatal && this.decoder.buffered() > 0) this.stats.truncated++;
    // Frames not executed yet were never acknowledged: the sender saw PEER_GONE for them.
    this.queue = [];
    this.head = 0;
    this.queuedBytes = 0;
    this.dead = true;
    this.onGone(this);
  }
}
