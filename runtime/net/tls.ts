// TLS for every TCP port a node serves and every connection it opens (docs/security.md), with
// node:tls and configured PEM files (config keys tls.cert, tls.key, tls.ca; rowan start --tls-*). Off
// (plain TCP) when none are configured. Three kinds of endpoint:
//
//   'mutual'   node-to-node ports (the tcp fabric's nic, the configuration manager): the peer must
//              present a certificate signed by the CA, or the handshake fails;
//   'request'  the binary client port: asks for a certificate but takes connections without one --
//              clients have none; another node's worker (REPLICATE, COPY_SHARD) presents its own, and
//              the connection checks `authorized` before it lets the peer role in (runtime/rpc/);
//   'server'   the Redis ports: the server's certificate only, as Redis does with tls-auth-clients no.
//
// Clients verify the server against the CA (and its address against the certificate's names);
// nodes connecting to nodes also present their own certificate. The cluster secret and client
// password handshakes run inside TLS unchanged: TLS encrypts and pins the CA, the handshakes say who
// may do what.
import { statSync, readFileSync } from 'node:fs';
import { isIP, createServer as createTcpServer, connect as tcpConnect, type Server, type ServerOpts, type Socket } from 'node:net';
import { createServer as createTlsServer, connect as tlsConnect, type TLSSocket } from 'node:tls';
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import { defaultTimings } from '../../config/timings.js';

/** A node's TLS material: its certificate and key, and the CA it checks peers and is checked against. */
export interface TlsMaterial {
  cert: Buffer;
  key: Buffer;
  ca: Buffer;
}

/** What a connecting side needs: the CA to verify the server; a node adds its certificate and key. */
export interface TlsClientMaterial {
  ca: Buffer;
  cert?: Buffer;
  key?: Buffer;
}

export interface TlsFiles {
  cert: string;
  key: string;
  ca: string;
}

export type TlsServerMode = 'mutual' | 'request' | 'server';

function readPem(path: string, what: string, private_: boolean): Buffer {
  let b: Buffer;
  let mode: number;
  try {
    mode = statSync(path).mode;
    b = readFileSync(path);
  } catch (err) {
    throw new RowanError(ErrorCodes.BAD_CONFIG, `cannot read the TLS ${what} ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  if (private_ && (mode & 0o077) !== 0)
    throw new RowanError(ErrorCodes.BAD_CONFIG, `the TLS key ${path} has mode 0${(mode & 0o777).toString(8)}: group and others must not read it (chmod 600 ${path})`);
  if (!b.includes('-----BEGIN ')) throw new RowanError(ErrorCodes.BAD_CONFIG, `the TLS ${what} ${path} is not PEM`);
  return b;
}

const loaded = new Map<string, TlsMaterial | null>();

/** The material of `files` (read once per thread), or null when TLS is off (all three empty, or no
 *  tls section at all: a configuration built by hand in a test). */
export function loadTls(files: TlsFiles | undefined): TlsMaterial | null {
  if (files === undefined) return null;
  const k = `${files.cert}\0${files.key}\0${files.ca}`;
  let m = loaded.get(k);
  if (m !== undefined) return m;
  if (files.cert === '' && files.key === '' && files.ca === '') m = null;
  else if (files.cert === '' || files.key === '' || files.ca === '')
    throw new RowanError(ErrorCodes.BAD_CONFIG, 'tls.cert, tls.key and tls.ca go together (all three files, or none: TLS off)');
  else m = { cert: readPem(files.cert, 'certificate', false), key: readPem(files.key, 'key', true), ca: readPem(files.ca, 'CA', false) };
  loaded.set(k, m);
  return m;
}

/** Client-side material from a CA file alone (rowan put --tls-ca, RowanClient tls.ca). */
export function loadTlsCa(path: string): TlsClientMaterial {
  return { ca: readPem(path, 'CA', false) };
}

/**
 * A listening server: plain TCP without material, else TLS in `mode`. `onSocket` gets each connection
 * once it is ready for the protocol (after the TLS handshake). Failed handshakes (a plaintext client,
 * a certificate the CA did not sign) are counted through `onRefused` and never reach `onSocket`.
 */
export function createServer(tls: TlsMaterial | null, mode: TlsServerMode, opts: ServerOpts, onSocket: (s: Socket) => void, onRefused?: (err: Error) => void): Server {
  if (tls === null) return createTcpServer(opts, onSocket);
  const server = createTlsServer(
    {
      ...opts,
      cert: tls.cert,
      key: tls.key,
      ca: tls.ca,
      requestCert: mode !== 'server',
      rejectUnauthorized: mode === 'mutual',
      handshakeTimeout: defaultTimings.tlsHandshakeMs,
      minVersion: 'TLSv1.2',
    },
    onSocket,
  );
  server.on('tlsClientError', (err) => onRefused?.(err));
  return server;
}

/** Whether `s` came over TLS with a peer certificate the CA signed (a node, not a client). */
export function peerCertified(s: Socket): boolean {
  return (s as TLSSocket).encrypted === true && (s as TLSSocket).authorized === true;
}

/**
 * Connect to host:port, plain or over TLS (verifying the server against the CA and its address against
 * the certificate). Returns the socket and the event that says it is ready for the protocol.
 * `readInto` (plain TCP only): the kernel's bytes are read into this one buffer, again and again, and
 * each read is emitted as a 'data' event of a view of it -- no buffer allocated and no stream pushed per
 * read (net.connect's onread), for a connection whose every wakeup counts (the lease's, issue 26). Its
 * reader must copy what it keeps past the event.
 */
export function connectSocket(o: { host: string; port: number; noDelay?: boolean; readInto?: Buffer }, tls: TlsClientMaterial | null): { socket: Socket; ready: 'connect' | 'secureConnect' } {
  const noDelay = o.noDelay ? { noDelay: true } : {};
  if (tls === null && o.readInto !== undefined) {
    const into = o.readInto;
    const socket: Socket = tcpConnect({ host: o.host, port: o.port, ...noDelay, onread: { buffer: into, callback: (n) => (socket.emit('data', into.subarray(0, n)), true) } });
    return { socket, ready: 'connect' };
  }
  if (tls === null) return { socket: tcpConnect({ host: o.host, port: o.port, ...noDelay }), ready: 'connect' };
  const socket = tlsConnect({
    host: o.host,
    port: o.port,
    ca: tls.ca,
    ...(tls.cert && tls.key ? { cert: tls.cert, key: tls.key } : {}),
    // SNI carries names, never addresses (RFC 6066); the address is still checked against the certificate.
    ...(isIP(o.host) === 0 ? { servername: o.host } : {}),
    minVersion: 'TLSv1.2',
    ...noDelay,
  });
  return { socket, ready: 'secureConnect' };
}
