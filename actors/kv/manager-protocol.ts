// What the configuration manager (CM, §4.5) and a node's lease client (actors/kv/lease.ts, on the
// node's main thread) say to each other: one JSON object per line over TCP on loopback (a control
// path: a few messages per lease period per node, never on the data path).
//
//   node -> CM   hello      {node, pid, term}          once per connection
//                renew      {node, seq, term}          every renewMs; term = the node's committed term
//                prepared   {node, term, versions}     phase 1 ack: the node blocks requests; versions =
//                                                      the highest version it holds per affected shard
//                promoted   {node, term, shards, ms}   phase 2 done for the shards promoted to it
//   CM -> node   grant      {seq, leaseMs, renewMs, driftMs, term}
//                prepare    {term, config}             block, ack with prepared
//                commit     {term, config, floors}     serve `config`; promoted shards catch up first
//                                                      and start above floors[shard]
//                evicted    {term}                     removed from the membership: serve nothing
//
// It lives in actors/kv/ because both sides use it: the manager role (actors/manager/) and every
// node's lease client (./lease.ts).
import type { ClusterConfig } from '../../config/cluster.js';
import { ErrorCodes, RowanError } from '../../config/base/errors.js';

export type NodeToManager =
  | { t: 'hello'; node: number; pid: number; term: number }
  | { t: 'renew'; node: number; seq: number; term: number }
  | { t: 'prepared'; node: number; term: number; versions: Record<string, number> }
  | { t: 'promoted'; node: number; term: number; shards: number[]; ms: number; entries: number };

export type ManagerToNode =
  | { t: 'grant'; seq: number; leaseMs: number; renewMs: number; driftMs: number; term: number }
  | { t: 'prepare'; term: number; config: ClusterConfig }
  | { t: 'commit'; term: number; config: ClusterConfig; floors: Record<string, number> }
  | { t: 'evicted'; term: number };

/** Lines longer than this are a broken peer, not a message (a configuration of 4096 shards is ~200 KB). */
export const LINE_BYTES_MAX = 8 * 1024 * 1024;

/** Splits a byte stream into JSON messages, one per line. */
export class LineReader<T> {
  private buf = '';

  /** Messages completed by `chunk`; BAD_FRAME for a line that is not JSON or too long. */
  push(chunk: Buffer | string): T[] {
    this.buf += typeof chunk === 'string' ? chunk : chunk.toString('utf8');
    const out: T[] = [];
    for (let nl = this.buf.indexOf('\n'); nl >= 0; nl = this.buf.indexOf('\n')) {
      const line = this.buf.slice(0, nl);
      this.buf = this.buf.slice(nl + 1);
      if (line.length === 0) continue;
      try {
        out.push(JSON.parse(line) as T);
      } catch {
        throw new RowanError(ErrorCodes.BAD_FRAME, `manager protocol: a line that is not JSON (${line.slice(0, 80)})`);
      }
    }
    if (this.buf.length > LINE_BYTES_MAX) throw new RowanError(ErrorCodes.FRAME_TOO_LARGE, `manager protocol: a line over ${LINE_BYTES_MAX} B`);
    return out;
  }
}

export function encodeLine(m: NodeToManager | ManagerToNode): string {
  return JSON.stringify(m) + '\n';
}
