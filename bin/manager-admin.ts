// Talking to the configuration manager as an operator (`rowan reshard`, `rowan status --cluster`):
// one admin request on its port, one reply (actors/shared/manager-protocol.ts).
import { connect } from 'node:net';
import type { ClusterConfig } from '../config/cluster.js';
import { NodeAuthHandshake } from '../actors/shared/manager-auth.js';
import { ErrorCodes, RowanError } from '../config/base/errors.js';
import { LineReader, encodeLine, type AdminReply, type AdminRequest } from '../actors/shared/manager-protocol.js';
import { managerPortOf } from './cluster-lifecycle.js';
import type { ElectionEntry } from '../actors/manager/election.js';

type AdminBody = AdminRequest extends infer R ? (R extends { id: number } ? Omit<R, 'id' | 't'> : never) : never;

/** "host:port" from --manager, else the port `rowan cluster` gives the manager of `cluster`. */
export function managerAddress(flag: string | undefined, cluster: ClusterConfig): { host: string; port: number } {
  if (flag === undefined) return { host: '127.0.0.1', port: managerPortOf(cluster) };
  const at = flag.lastIndexOf(':');
  const port = Number(flag.slice(at + 1));
  if (at <= 0 || !Number.isInteger(port) || port < 1 || port > 65535) throw new RowanError(ErrorCodes.BAD_ARGUMENT, `--manager: '${flag}' is not host:port`);
  return { host: flag.slice(0, at), port };
}

/**
 * The manager to ask: --manager; else, with ZooKeeper (`managers`: the election's entries,
 * actors/manager/election.ts listManagers), the address the active manager published -- with standbys
 * each manager has a port of its own (base + 490 + i) and only the active one listens; null when none
 * is active (one is taking over). Else the port `rowan cluster` gives the manager of `cluster`.
 */
export function managerFor(flag: string | undefined, cluster: ClusterConfig, managers: readonly ElectionEntry[] | null): { host: string; port: number } | null {
  if (flag !== undefined || managers === null) return managerAddress(flag, cluster);
  const active = managers.find((m) => m.active);
  return active ? { host: active.host, port: active.port } : null;
}

/** Send one admin request (after the manager handshake with `secret`); the reply's result, or its
 *  error as a RowanError. Plain TCP: a manager with TLS on is not reachable from here. */
export function askManager(to: { host: string; port: number }, body: AdminBody, timeoutMs: number, secret: Uint8Array | null): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const s = connect(to);
    const reader = new LineReader<AdminReply>();
    const auth = new NodeAuthHandshake(secret, `${to.host}:${to.port}`);
    let authed = false;
    const timer = setTimeout(() => {
      s.destroy();
      reject(new RowanError(ErrorCodes.TIMEOUT, `the configuration manager at ${to.host}:${to.port} did not answer within ${timeoutMs} ms`));
    }, timeoutMs);
    s.on('connect', () => s.write(auth.hello()));
    s.on('data', (chunk: Buffer) => {
      let replies: AdminReply[];
      try {
        replies = reader.push(chunk);
        while (!authed && replies.length > 0) {
          const next = auth.onMessage(replies.shift());
          if (next !== null) s.write(next);
          else {
            authed = true;
            s.write(encodeLine({ t: 'admin', id: 1, ...body } as AdminRequest));
          }
        }
      } catch (err) {
        replies = [];
        clearTimeout(timer);
        s.destroy();
        reject(err);
      }
      for (const r of replies) {
        if (r.t !== 'adminReply') continue;
        clearTimeout(timer);
        s.destroy();
        if (r.ok) resolve(r.result);
        else reject(new RowanError((r.error?.code ?? ErrorCodes.INTERNAL) as typeof ErrorCodes.INTERNAL, r.error?.message ?? 'the manager refused'));
      }
    });
    s.on('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      reject(new RowanError(ErrorCodes.NODE_NOT_RUNNING, `no configuration manager at ${to.host}:${to.port} (${err.code ?? err.message}); give --manager host:port`));
    });
  });
}
