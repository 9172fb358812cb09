// A pipelined RESP2 client for node-to-node forwarding (a node's single-endpoint port passes what it
// does not own to the owner's cluster port, actors/worker/resp/). Replies are matched to requests in
// FIFO order, as RESP defines. Replies are decoded into ./reply.ts values so they can be re-encoded for
// the client's own protocol version. Bounded: a reply header larger than the limits closes the link.
import type { Socket } from 'node:net';
import { connectSocket, type TlsClientMaterial } from '../net/tls.js';
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import { NullArray, RespErr, Simple, type Reply } from './reply.js';

const CR = 13;

export class RespReplyParser {
  private buf: Buffer = Buffer.alloc(0);
  private pos = 0;

  constructor(private readonly bulkBytesMax: number) {}

  push(chunk: Buffer): void {
    this.buf = this.pos >= this.buf.length ? chunk : Buffer.concat([this.buf.subarray(this.pos), chunk]);
    this.pos = 0;
  }

  /** The next complete reply, or undefined until more bytes arrive. */
  next(): Reply | undefined {
    const r = this.parse(this.pos);
    if (r === undefined) return undefined;
    this.pos = r.end;
    return r.v;
  }

  private line(at: number): { s: string; end: number } | undefined {
    const i = this.buf.indexOf(CR, at);
    if (i < 0 || i + 1 >= this.buf.length) {
      if (this.buf.length - at > 64 * 1024) throw new RowanError(ErrorCodes.BAD_FRAME, 'RESP reply line over 64 KiB');
      return undefined;
    }
    return { s: this.buf.toString('utf8', at + 1, i), end: i + 2 };
  }

  private parse(at: number): { v: Reply; end: number } | undefined {
    if (at >= this.buf.length) return undefined;
    const t = this.buf[at]!;
    const l = this.line(at);
    if (l === undefined) return undefined;
    switch (t) {
      case 0x2b: // +
        return { v: new Simple(l.s), end: l.end };
      case 0x2d: // -
        return { v: new RespErr(l.s), end: l.end };
      case 0x3a: { // : (a 64-bit integer beyond 2^53, INCR's, stays exact as a bigint)
        const n = Number(l.s);
        return { v: Number.isSafeInteger(n) ? n : BigInt(l.s), end: l.end };
      }
      case 0x24: { // $
        const n = Number(l.s);
        if (n === -1) return { v: null, end: l.end };
        if (!Number.isInteger(n) || n < 0 || n > this.bulkBytesMax) throw new RowanError(ErrorCodes.BAD_FRAME, `RESP reply bulk length ${l.s}`);
        if (l.end + n + 2 > this.buf.length) return undefined;
        return { v: Buffer.from(this.buf.subarray(l.end, l.end + n)), end: l.end + n + 2 };
      }
      case 0x2a: { // *
        const n = Number(l.s);
        if (n === -1) return { v: new NullArray(), end: l.end };
        if (!Number.isInteger(n) || n < 0 || n > 1 << 20) throw new RowanError(ErrorCodes.BAD_FRAME, `RESP reply array length ${l.s}`);
        const out: Reply[] = [];
        let end = l.end;
        for (let i = 0; i < n; i++) {
          const r = this.parse(end);
          if (r === undefined) return undefined;
          out.push(r.v);
          end = r.end;
        }
        return { v: out, end };
      }
      default:
        throw new RowanError(ErrorCodes.BAD_FRAME, `RESP reply type byte 0x${t.toString(16)}`);
    }
  }
}

function encodeCommand(args: (Uint8Array | string)[]): Buffer {
  const parts: Buffer[] = [Buffer.from(`*${args.length}\r\n`)];
  for (const a of args) {
    const b = typeof a === 'string' ? Buffer.from(a) : a;
    parts.push(Buffer.from(`$${b.length}\r\n`), Buffer.from(b.buffer, b.byteOffset, b.length), Buffer.from('\r\n'));
  }
  return Buffer.concat(parts);
}

export class RespPeer {
  private socket: Socket | null = null;
  private opening: Promise<Socket> | null = null;
  private readonly waiters: { resolve: (r: Reply) => void; reject: (e: Error) => void }[] = [];
  private parser: RespReplyParser;
  private out: Buffer[] = [];
  private flushQueued = false;

  /** `password`: sent as AUTH first on every link (the peer's requirepass); null = none. */
  constructor(
    readonly host: string,
    readonly port: number,
    private readonly bulkBytesMax: number,
    private readonly timeoutMs = 5000,
    private readonly password: string | null = null,
    /** TLS to the peer (runtime/net/tls.ts): verified against the CA; null = plain TCP. */
    private readonly tls: TlsClientMaterial | null = null,
  ) {
    this.parser = new RespReplyParser(bulkBytesMax);
  }

  private open(): Promise<Socket> {
    this.opening ??= new Promise<Socket>((resolve, reject) => {
      const { socket: s, ready } = connectSocket({ host: this.host, port: this.port, noDelay: true }, this.tls);
      const t = setTimeout(() => s.destroy(new Error(`connect timeout after ${this.timeoutMs} ms`)), this.timeoutMs);
      s.once(ready, () => {
        clearTimeout(t);
        this.socket = s;
        if (this.password !== null) {
          // First on the link, so its reply is the first one: a refusal ends the link (and fails what follows).
          this.waiters.push({
            resolve: (r) => r instanceof RespErr && s.destroy(new Error(`AUTH refused: ${r.s}`)),
            reject: () => {},
          });
          s.write(encodeCommand(['AUTH', this.password]));
        }
        resolve(s);
      });
      s.on('data', (c: Buffer) => this.onData(c));
      s.on('error', (e) => {
        clearTimeout(t);
        // Before the link is up nothing was sent on it: the caller's request is not applied (a link
        // that fails later rejects what it carried as outcome unknown, in fail()).
        reject(new RowanError(ErrorCodes.PEER_UNREACHABLE, `RESP peer ${this.host}:${this.port}: ${e.message}; the request was not sent`));
        this.fail(e);
      });
      s.on('close', () => this.fail(new Error('connection closed')));
    });
    return this.opening;
  }

  private fail(e: Error): void {
    this.socket = null;
    this.opening = null;
    this.parser = new RespReplyParser(this.bulkBytesMax);
    const ws = this.waiters.splice(0);
    for (const w of ws) w.reject(new RowanError(ErrorCodes.PEER_GONE, `RESP peer ${this.host}:${this.port}: ${e.message} (outcome unknown)`));
  }

  private onData(c: Buffer): void {
    try {
      this.parser.push(c);
      for (let r = this.parser.next(); r !== undefined; r = this.parser.next()) this.waiters.shift()?.resolve(r);
    } catch (e) {
      this.socket?.destroy(e as Error);
    }
  }

  /** Send one command; resolves with its reply (an error reply is a value, not a rejection). */
  async call(args: (Uint8Array | string)[]): Promise<Reply> {
    const s = this.socket ?? (await this.open());
    return new Promise<Reply>((resolve, reject) => {
      this.waiters.push({ resolve, reject });
      this.out.push(encodeCommand(args));
      if (!this.flushQueued) {
        // At the end of this loop turn (setImmediate, not nextTick): the commands forwarded from every
        // client connection read in this turn leave in one write, not one per connection (issue 26).
        this.flushQueued = true;
        setImmediate(() => {
          this.flushQueued = false;
          const bufs = this.out.splice(0);
          if (bufs.length > 0 && !s.destroyed) s.write(bufs.length === 1 ? bufs[0]! : Buffer.concat(bufs)); // destroyed: fail() rejected their waiters
        });
      }
    });
  }

  close(): void {
    this.socket?.destroy();
  }
}
