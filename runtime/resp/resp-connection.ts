// One RESP client connection: parse requests (./parser.ts), run them through a RespHandler, answer in
// request order (pipelining). Requests run concurrently when the handler says they may: a request
// naming a key that an earlier, still running request of this connection names waits for it, and a
// "barrier" request (connection state, whole-keyspace reads) waits for everything before it, and an
// "exclusive" one (a transaction's EXEC, WATCH) also holds back everything after it until it is done,
// so a pipeline reads its own writes exactly as it would on Redis. Replies are encoded with the protocol
// version the connection had when the request ran (HELLO is a barrier).
//
// Bounds (./limits.ts): a protocol error is answered `-ERR Protocol error: ...` after the replies before
// it, then the connection closes; a request with a bulk string over bulkBytesMax (dropped unbuffered by
// the parser) gets `-ERR ROWAN_ERR_VALUE_TOO_LARGE ...` and the connection goes on; more than
// pipelineMax unanswered requests or writeBytesMax queued reply bytes pause reading the socket until
// they drain.
import type { Socket } from 'node:net';
import { ErrorCodes } from '../../config/base/errors.js';
import type { RespLimits } from './limits.js';
import { RespProtocolError, RespRequestParser } from './parser.js';
import { RespErr, RespWriter, err, type Reply } from './reply.js';
import { SlotBits } from './slot-bits.js';

/** After the server ends a connection (QUIT, a protocol error), how long the peer has to read the last
 *  replies and close its side before the connection is reset. */
const LINGER_MS = 2000;

/** How a request orders against the running requests of its connection. */
export type RequestOrder = 'free' | 'barrier' | 'exclusive' | Buffer[];

export interface RespHandler {
  order(args: Buffer[]): RequestOrder;
  execute(args: Buffer[], conn: RespConnection): Reply | Promise<Reply>;
  /** The reply for an exception thrown by execute. */
  errorReply(e: unknown): Reply;
}

export interface RespConnStats {
  connected: number;
  accepted: number;
  commands: number;
  protocolErrors: number;
}

interface Pending {
  done: boolean;
  reply: Reply;
  proto: number;
  keys: string[] | null;
  exclusive: boolean;
}

export class RespConnection {
  /** RESP version of replies: 2 until HELLO 3. */
  proto = 2;
  name: string | null = null;
  private _authenticated: boolean;
  /** Closes a connection still unauthenticated at limits.authDeadlineMs (absolute: traffic does not
   *  extend it); null once authenticated or on a port without a password. */
  private authTimer: NodeJS.Timeout | null = null;
  /** Resets a connection whose peer has not closed its side LINGER_MS after ours was ended. */
  private lingerTimer: NodeJS.Timeout | null = null;
  private ending = false;
  /** Close once the reply of the request now running is written (QUIT). */
  closeAfterReply = false;
  readonly createdMs = Date.now();
  /** Hash slots this connection's write commands named (the handler records them; WAIT counts the
   *  replicas of their shards): a bit per slot (./slot-bits.ts). */
  readonly wroteSlots = new SlotBits();
  lastCommand = '';
  private readonly parser: RespRequestParser;
  private readonly writer = new RespWriter();
  private readonly queue: Pending[] = [];
  private qhead = 0;
  private readonly inFlightKeys = new Map<string, number>();
  private running = 0;
  /** Running "exclusive" requests: nothing after them starts before they are done. */
  private exclusive = 0;
  private waiting: Buffer[] | null = null;
  private stopParsing = false;
  private paused = false;
  private flushQueued = false;
  private _closed = false;

  constructor(
    readonly socket: Socket,
    readonly id: number,
    private readonly handler: RespHandler,
    private readonly limits: RespLimits,
    private readonly stats: RespConnStats,
    private readonly onClose: (c: RespConnection) => void,
    /** The port has a password: the connection starts unauthenticated, under the pre-auth bounds. */
    private readonly authRequired = false,
  ) {
    this.parser = new RespRequestParser(limits);
    this._authenticated = true;
    this.authenticated = !authRequired;
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('drain', () => this.maybeResume());
    socket.on('error', () => socket.destroy());
    socket.on('close', () => {
      this._closed = true;
      if (this.authTimer) clearTimeout(this.authTimer);
      if (this.lingerTimer) clearTimeout(this.lingerTimer);
      this.stats.connected--;
      this.onClose(this);
    });
  }

  /** AUTH succeeded, or the port asks none (the handler decides what needs it: docs/security.md).
   *  Until then the parser applies the pre-auth bounds and the deadline runs; RESET starts it again. */
  get authenticated(): boolean {
    return this._authenticated;
  }

  set authenticated(yes: boolean) {
    yes ||= !this.authRequired;
    if (yes === this._authenticated) return;
    this._authenticated = yes;
    this.parser.preAuth = !yes;
    if (this.authTimer) clearTimeout(this.authTimer);
    this.authTimer = null;
    if (!yes) {
      this.authTimer = setTimeout(() => this.socket.destroy(), this.limits.authDeadlineMs);
      this.authTimer.unref();
    }
  }

  /** The socket closed (a blocked command may stop waiting). */
  get closed(): boolean {
    return this._closed;
  }

  get bufferedBytes(): number {
    return this.parser.bufferedBytes;
  }

  get pendingReplies(): number {
    return this.queue.length - this.qhead;
  }

  destroy(): void {
    this.socket.destroy();
  }

  private onData(chunk: Buffer): void {
    if (this.stopParsing) return;
    try {
      this.parser.push(chunk);
    } catch (e) {
      this.protocolError(e as RespProtocolError);
      return;
    }
    this.pump();
  }

  /** Parse and start requests while the bounds allow. */
  private pump(): void {
    while (!this.stopParsing && !this._closed && this.waiting === null) {
      if (this.pendingReplies >= this.limits.pipelineMax || this.socket.writableLength > this.writeBytesMax()) {
        this.pause();
        break;
      }
      let args: Buffer[] | null;
      try {
        args = this.parser.next();
      } catch (e) {
        this.protocolError(e as RespProtocolError);
        break;
      }
      if (args === null) break;
      if (this.parser.oversizedBytes > 0) this.refuseOversized(this.parser.oversizedBytes);
      else this.dispatch(args);
    }
    this.flush();
  }

  private writeBytesMax(): number {
    return this._authenticated ? this.limits.writeBytesMax : this.limits.preAuthWriteBytesMax;
  }

  private pause(): void {
    if (this.paused) return;
    this.paused = true;
    this.socket.pause();
  }

  private maybeResume(): void {
    if (this._closed) return;
    if (this.paused && !this.ending && this.pendingReplies < this.limits.pipelineMax && this.socket.writableLength <= this.writeBytesMax()) {
      this.paused = false;
      this.socket.resume();
    }
    if (this.waiting === null || this.canRun(this.waiting)) this.pumpWaiting();
  }

  private pumpWaiting(): void {
    const w = this.waiting;
    if (w !== null) {
      this.waiting = null;
      this.dispatch(w);
    }
    this.pump();
  }

  private canRun(args: Buffer[]): boolean {
    if (this.exclusive > 0) return false;
    if (this.running === 0) return true; // nothing in flight, no key held: any order allows it (the common case)
    const o = this.handler.order(args);
    if (o === 'free') return true;
    if (o === 'barrier' || o === 'exclusive') return this.running === 0;
    for (const k of o) if (this.inFlightKeys.has(k.toString('latin1'))) return false;
    return true;
  }

  private dispatch(args: Buffer[]): void {
    if (!this.canRun(args)) {
      this.waiting = args;
      return;
    }
    this.stats.commands++;
    const p: Pending = { done: false, reply: null, proto: this.proto, keys: null, exclusive: false };
    this.queue.push(p);
    let r: Reply | Promise<Reply>;
    try {
      r = this.handler.execute(args, this);
    } catch (e) {
      r = this.handler.errorReply(e);
    }
    if (this.closeAfterReply) this.stopParsing = true; // QUIT: nothing after it runs
    if (!(r instanceof Promise)) {
      p.reply = r;
      p.done = true;
      p.proto = this.proto; // HELLO/RESET answer in the version they switch to, as Redis does
      return;
    }
    const o = this.handler.order(args);
    if (o === 'exclusive') {
      p.exclusive = true;
      this.exclusive++;
    }
    if (Array.isArray(o)) {
      p.keys = o.map((k) => k.toString('latin1'));
      for (const k of p.keys) this.inFlightKeys.set(k, (this.inFlightKeys.get(k) ?? 0) + 1);
    }
    this.running++;
    r.then(
      (v) => this.settle(p, v),
      (e: unknown) => this.settle(p, this.handler.errorReply(e)),
    );
  }

  private settle(p: Pending, reply: Reply): void {
    p.reply = reply;
    p.done = true;
    this.running--;
    if (p.exclusive) this.exclusive--;
    if (p.keys) {
      for (const k of p.keys) {
        const n = this.inFlightKeys.get(k)! - 1;
        if (n === 0) this.inFlightKeys.delete(k);
        else this.inFlightKeys.set(k, n);
      }
    }
    if (!this.flushQueued) {
      // One write for every reply that completes in this tick.
      this.flushQueued = true;
      process.nextTick(() => {
        this.flushQueued = false;
        this.flush();
        this.maybeResume();
      });
    }
  }

  /** Write the finished replies at the head of the queue, in order. */
  private flush(): void {
    if (this._closed) return;
    let end = false;
    while (this.qhead < this.queue.length && this.queue[this.qhead]!.done) {
      const p = this.queue[this.qhead++]!;
      this.writer.write(p.reply, p.proto);
      if (p.reply instanceof RespErr && p.reply.s.startsWith('ERR Protocol error')) end = true;
    }
    if (this.qhead === this.queue.length) {
      this.queue.length = 0;
      this.qhead = 0;
    } else if (this.qhead > 1024) {
      this.queue.splice(0, this.qhead);
      this.qhead = 0;
    }
    if (this.writer.length > 0) this.socket.write(this.writer.take());
    if ((end || (this.closeAfterReply && this.pendingReplies === 0 && this.waiting === null))) this.endAfterReplies();
  }

  /** Half-close after the last reply. Nothing more is read (a refused flood stays in the kernel's
   *  buffers, not in this process), and a peer that has not closed its side LINGER_MS after the last
   *  reply left this process (a slow reader still gets every reply) is reset. */
  private endAfterReplies(): void {
    if (this.ending) return;
    this.ending = true;
    this.stopParsing = true;
    this.socket.pause();
    this.socket.end(() => {
      if (this._closed) return;
      this.lingerTimer = setTimeout(() => this.socket.destroy(), LINGER_MS);
      this.lingerTimer.unref();
    });
  }

  /** A request with a bulk string over bulkBytesMax (read and dropped by the parser): answered in its
   *  turn, not run. */
  private refuseOversized(n: number): void {
    this.queue.push({
      done: true,
      reply: err(`ERR ${ErrorCodes.VALUE_TOO_LARGE} an argument of ${n} bytes is over the ${this.limits.bulkBytesMax}-byte bulk limit; the request was read, discarded and not applied`),
      proto: this.proto,
      keys: null,
      exclusive: false,
    });
  }

  private protocolError(e: RespProtocolError): void {
    if (!(e instanceof RespProtocolError)) throw e;
    this.stats.protocolErrors++;
    this.stopParsing = true;
    this.waiting = null;
    this.queue.push({ done: true, reply: err(`ERR ${e.message}`), proto: this.proto, keys: null, exclusive: false });
    this.flush();
  }
}
