// The node's control endpoint: a unix socket `<dataDir>/rowan.sock` speaking one JSON request and one
// JSON response per line, answered by the node's main thread from the actors' shared counters.
//
// Why a socket rather than an mmap'd status file: a socket also says whether a node is alive (connect
// refused = no node; a status file outlives a kill -9 and would need a pid check), it carries commands
// (`rowan stop`) as well as reads, it needs no cross-process memory layout to version, and the file's
// mode (0600) limits control to the owner. JSON is fine here: this is the rare admin path, never data.
import { chmodSync, existsSync, unlinkSync } from 'node:fs';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { ErrorCodes, RowanError, fromRecord, toRecord, type ErrorRecord } from '../config/base/errors.js';

import { CONTROL_SOCKET_FILE } from '../config/base/files.js';
/** sun_path is 108 bytes including the terminating NUL. */
const SUN_PATH_MAX = 107;
/** A request line longer than this is not a control request; the connection is closed. */
const REQUEST_BYTES_MAX = 4096;

export type ControlRequest = { op: 'status' } | { op: 'stop' };
export type ControlResponse = { ok: true; result: unknown } | { ok: false; error: ErrorRecord };

export function socketPath(dataDir: string): string {
  const p = join(dataDir, CONTROL_SOCKET_FILE);
  if (Buffer.byteLength(p) > SUN_PATH_MAX)
    throw new RowanError(ErrorCodes.DATA_DIR, `control socket path ${p} is longer than ${SUN_PATH_MAX} bytes; use a shorter --data-dir`);
  return p;
}

/** Is a node answering on `path`? 'stale' = a socket file nobody listens on (a node that was killed). */
export function probeSocket(path: string): Promise<'live' | 'stale' | 'absent'> {
  if (!existsSync(path)) return Promise.resolve('absent');
  return new Promise((resolve) => {
    const s = createConnection(path);
    s.once('connect', () => {
      s.destroy();
      resolve('live');
    });
    s.once('error', () => resolve('stale'));
  });
}

export type ControlHandler = (req: ControlRequest) => Promise<unknown>;

export async function listenControl(path: string, handle: ControlHandler): Promise<Server> {
  if ((await probeSocket(path)) === 'stale') unlinkSync(path);
  const server = createServer((sock) => serve(sock, handle));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(path, () => {
      server.off('error', reject);
      resolve();
    });
  });
  chmodSync(path, 0o600);
  return server;
}

function serve(sock: Socket, handle: ControlHandler): void {
  let buf = '';
  sock.setEncoding('utf8');
  sock.on('error', () => sock.destroy());
  sock.on('data', (chunk: string) => {
    buf += chunk;
    if (buf.length > REQUEST_BYTES_MAX) return void sock.destroy();
    const nl = buf.indexOf('\n');
    if (nl < 0) return;
    const line = buf.slice(0, nl);
    buf = '';
    sock.pause();
    // Closed on our side once the answer is flushed: a client that never closes its end (its process
    // busy or stopped) must not hold the node's shutdown, which waits for open connections.
    void answer(line, handle).then((resp) => sock.end(JSON.stringify(resp) + '\n', () => sock.destroy()));
  });
}

async function answer(line: string, handle: ControlHandler): Promise<ControlResponse> {
  try {
    const req = JSON.parse(line) as { op?: unknown } | null;
    if (req?.op !== 'status' && req?.op !== 'stop')
      throw new RowanError(ErrorCodes.BAD_ARGUMENT, `unknown control op ${JSON.stringify(req?.op)}`);
    return { ok: true, result: await handle(req as ControlRequest) };
  } catch (err) {
    return { ok: false, error: toRecord(err) };
  }
}

/** Client side: one request, one response; ROWAN_ERR_NODE_NOT_RUNNING when nobody listens. */
export function requestControl(path: string, req: ControlRequest, timeoutMs = 5000): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const s = createConnection(path);
    let buf = '';
    const timer = setTimeout(() => {
      s.destroy();
      reject(new RowanError(ErrorCodes.NODE_NOT_RUNNING, `no answer on ${path} within ${timeoutMs} ms`));
    }, timeoutMs);
    s.setEncoding('utf8');
    s.once('connect', () => s.write(JSON.stringify(req) + '\n'));
    s.on('data', (c: string) => (buf += c));
    s.once('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      reject(new RowanError(ErrorCodes.NODE_NOT_RUNNING, `no node is running (cannot connect to ${path}: ${err.code ?? err.message})`));
    });
    s.once('end', () => {
      clearTimeout(timer);
      s.destroy();
      try {
        const resp = JSON.parse(buf) as ControlResponse;
        if (resp.ok) resolve(resp.result);
        else reject(fromRecord(resp.error));
      } catch {
        reject(new RowanError(ErrorCodes.NODE_NOT_RUNNING, `node closed ${path} without an answer`));
      }
    });
  });
}
