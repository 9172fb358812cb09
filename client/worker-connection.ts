// One pipelined client connection to one worker port (host, port). Opening it connects and completes
// HELLO; after that any number of requests may be outstanding, each tagged with a request id the
// server echoes, answered in whatever order the worker completes them.
//
// Failures a caller sees, all RowanErrors:
//   PEER_GONE  the connection could not be opened or died with the request outstanding (the request may
//              or may not have run: the caller decides whether to re-send; PUT and DEL are idempotent);
//   TIMEOUT    no response within timeoutMs (the connection stays usable; a late response is dropped);
//   BAD_FRAME  the server sent bytes that are not a response (the connection is dropped);
//   NOAUTH / AUTH_FAILED  at open: the server wants a credential and none was given, or one of the
//              two sides could not prove it (a server without credentials is refused by a client
//              holding one: it could be anyone's). A client proves the client password; another
//              node's worker (REPLICATE, COPY_SHARD) opens as a peer and proves the cluster secret.
import { CorkedWriter, RequestIds } from '../runtime/net/pipeline.js';
import type { Socket } from 'node:net';
import { connectSocket, type TlsClientMaterial } from '../runtime/net/tls.js';
import { ErrorCodes, RowanError, type ErrorCode } from '../config/base/errors.js';
import { CLIENT_LABEL, HelloRole, PEER_LABEL, PEER_SERVER_LABEL, SERVER_LABEL, responseBytesMax } from '../runtime/rpc/frames-layout.js';
import { newNonce, proof, proofMatches } from '../config/base/secret.js';
import {
  FrameReader,
  Op,
  PROTOCOL_VERSION,
  Status,
  decodeResponse,
  encodeRequest,
  type FrameLimits,
  type Response,
} from '../runtime/rpc/frames.js';

export interface Endpoint {
  host: string;
  port: number;
}

export function endpointKey(e: Endpoint): string {
  return e.host.includes(':') ? `[${e.host}]:${e.port}` : `${e.host}:${e.port}`;
}

/** What a connection proves at open: the client password (a client) or the cluster secret (a peer:
 *  another node's worker). */
export type Credential = { role: 'client'; password: Uint8Array } | { role: 'peer'; secret: Uint8Array };

interface Pending {
  resolve: (r: Response) => void;
  reject: (e: RowanError) => void;
  timer: NodeJS.Timeout;
}


export class RpcConnection {
  private readonly reader: FrameReader;
  private readonly pending = new Map<number, Pending>();
  private readonly ids = new RequestIds();
  private readonly out: CorkedWriter;
  private dead: RowanError | null = null;

  private constructor(
    private readonly socket: Socket,
    readonly endpoint: Endpoint,
    private readonly timeoutMs: number,
    private readonly limits: FrameLimits,
  ) {
    this.out = new CorkedWriter(socket);
    this.reader = new FrameReader(responseBytesMax(limits));
    socket.setNoDelay(true);
    socket.setKeepAlive(true, 10_000);
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('error', (err: NodeJS.ErrnoException) => this.fail(gone(endpoint, err.code ?? err.message)));
    socket.on('close', () => this.fail(gone(endpoint, 'connection closed')));
  }

  /** Connect, say HELLO and authenticate with `cred`; PEER_GONE if unreachable, TIMEOUT if no answer
   *  within timeoutMs, NOAUTH / AUTH_FAILED if the two sides do not share the credential. */
  static open(endpoint: Endpoint, timeoutMs: number, limits: FrameLimits, cred: Credential | null = null, tls: TlsClientMaterial | null = null): Promise<RpcConnection> {
    return new Promise((resolve, reject) => {
      // Over TLS (runtime/net/tls.ts) the server is verified against the CA before HELLO.
      const { socket, ready } = connectSocket(endpoint, tls);
      const timer = setTimeout(() => {
        socket.destroy();
        reject(new RowanError(ErrorCodes.TIMEOUT, `connecting to ${endpointKey(endpoint)} took over ${timeoutMs} ms`));
      }, timeoutMs);
      const onError = (err: NodeJS.ErrnoException) => {
        clearTimeout(timer);
        reject(gone(endpoint, err.code ?? err.message));
      };
      socket.once('error', onError);
      socket.once(ready, () => {
        socket.off('error', onError);
        clearTimeout(timer);
        const c = new RpcConnection(socket, endpoint, timeoutMs, limits);
        c.handshake(cred).then(() => resolve(c), (err: unknown) => {
          c.close();
          // A TLS port drops a plaintext HELLO without a word: say what the likely cause is.
          if (tls === null && err instanceof RowanError && err.code === ErrorCodes.PEER_GONE)
            return reject(new RowanError(ErrorCodes.PEER_GONE, `${err.message} during HELLO (if the cluster serves TLS, give its CA: --tls-ca / tlsCaFile)`));
          reject(err);
        });
      });
    });
  }

  /** HELLO, and when the server challenges: check its proof, then AUTH with ours. */
  private async handshake(cred: Credential | null): Promise<void> {
    const where = endpointKey(this.endpoint);
    const nonce = newNonce();
    const peer = cred?.role === 'peer';
    const role = peer ? HelloRole.PEER : HelloRole.CLIENT;
    const r = await this.request((id) => encodeRequest({ op: Op.HELLO, id, term: 0, version: PROTOCOL_VERSION, nonce, role }));
    if (r.status === Status.ERROR) throw remoteError(r);
    const what = peer ? 'the cluster secret' : 'the client password';
    if (r.status === Status.OK) {
      if (cred === null) return;
      throw new RowanError(ErrorCodes.AUTH_FAILED, `worker ${where} does not authenticate (started with --no-auth?), and this ${peer ? 'node holds' : 'client holds'} ${what}: refusing it`);
    }
    if (r.status !== Status.CHALLENGE) throw new RowanError(ErrorCodes.BAD_FRAME, `HELLO answered with status ${r.status}`);
    if (cred === null)
      throw new RowanError(ErrorCodes.NOAUTH, `worker ${where} requires the client password: give it (RowanClient password, or --password-file; rowan cluster writes DIR/client-password)`);
    const key = cred.role === 'peer' ? cred.secret : cred.password;
    if (!proofMatches(proof(key, peer ? PEER_SERVER_LABEL : SERVER_LABEL, nonce, r.nonce), r.proof))
      throw new RowanError(ErrorCodes.AUTH_FAILED, `worker ${where} did not prove ${what} (another cluster, or a wrong ${peer ? 'secret' : 'password'} here)`);
    const a = await this.request((id) => encodeRequest({ op: Op.AUTH, id, term: 0, proof: proof(key, peer ? PEER_LABEL : CLIENT_LABEL, r.nonce, nonce) }));
    if (a.status === Status.ERROR) throw remoteError(a);
    if (a.status !== Status.OK) throw new RowanError(ErrorCodes.BAD_FRAME, `AUTH answered with status ${a.status}`);
  }

  get alive(): boolean {
    return this.dead === null;
  }

  /** Requests waiting for their response. */
  get outstanding(): number {
    return this.pending.size;
  }

  /** Send the frame `build(id)` and wait for its response (an ERROR response resolves, not rejects). */
  request(build: (id: number) => Uint8Array): Promise<Response> {
    if (this.dead) return Promise.reject(this.dead);
    const id = this.ids.take(this.pending);
    const frame = build(id);
    return new Promise<Response>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new RowanError(ErrorCodes.TIMEOUT, `no response from ${endpointKey(this.endpoint)} within ${this.timeoutMs} ms`));
      }, this.timeoutMs);
      this.pending.set(id, { resolve, reject, timer });
      this.out.write(frame);
    });
  }

  close(): void {
    this.fail(gone(this.endpoint, 'connection closed by the client'));
  }

  /** A free request id: 1..2^32-1, wrapping, skipping ids still outstanding (0 means "the connection"). */
  private onData(chunk: Buffer): void {
    if (this.dead) return;
    this.reader.push(chunk);
    try {
      for (let f = this.reader.next(); f; f = this.reader.next()) this.onResponse(decodeResponse(f, this.limits));
    } catch (err) {
      const e = err instanceof RowanError ? err : new RowanError(ErrorCodes.BAD_FRAME, String(err));
      this.fail(new RowanError(e.code, `bad response from ${endpointKey(this.endpoint)}: ${e.message}`));
    }
  }

  private onResponse(r: Response): void {
    if (r.id === 0 && r.status === Status.ERROR) {
      // About the connection, not one request: the server ends it after this.
      return this.fail(remoteError(r));
    }
    const p = this.pending.get(r.id);
    if (!p) return; // timed out earlier; its late answer has no one waiting
    this.pending.delete(r.id);
    clearTimeout(p.timer);
    p.resolve(r);
  }

  /** The connection is over: every outstanding request fails with `err`. */
  private fail(err: RowanError): void {
    if (this.dead) return;
    this.dead = err;
    this.socket.destroy();
    for (const p of this.pending.values()) {
      clearTimeout(p.timer);
      p.reject(err);
    }
    this.pending.clear();
  }
}

function gone(e: Endpoint, why: string): RowanError {
  return new RowanError(ErrorCodes.PEER_GONE, `worker ${endpointKey(e)}: ${why}`);
}

/** The RowanError a server's ERROR response stands for (unknown codes are kept in the message). */
export function remoteError(r: Extract<Response, { status: typeof Status.ERROR }>): RowanError {
  const known = (Object.values(ErrorCodes) as string[]).includes(r.code);
  const code = (known ? r.code : ErrorCodes.INTERNAL) as ErrorCode;
  const message = known ? r.message : `${r.code}: ${r.message}`;
  return new RowanError(code, message, { remote: true, serverTerm: r.term });
}
