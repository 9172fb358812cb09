// What the configuration manager (CM, §4.5) and a node's lease client (actors/node/lease-client.ts, on the
// node's main thread) say to each other: one JSON object per line over TCP (a control path: a few
// messages per lease period per node, never on the data path); renewals and grants, the only steady
// traffic, go as small binary frames between builds that both read them (./manager-frames.ts).
//
//   node -> CM   hello      {node, pid, term, rejoin,  once per connection; rejoin: a node started
//                            unconfirmed, frames}      with an empty pool asks to leave `dead`;
//                                                      unconfirmed: the shards it was primary of at
//                                                      its cold start, held until a round confirms
//                                                      it (../node/restart-hold.ts); frames: 1 = it
//                                                      reads grants as binary frames
//                caughtUp   {node, term, shard, from,  re-replication (§4.5 phase 3): the shard's
//                            entries, bytes, absorbed, entries are copied from primary `from`
//                            ms}                       (../migration/copy.ts)
//                renew      {node, seq, term}          every renewMs; term = the node's committed term
//                                                      (a binary frame once framed grants came)
//                prepared   {node, term, versions,     phase 1 ack: the node blocks requests; versions =
//                            entries, truncated}       the highest version it holds per affected shard;
//                                                      entries = what it gathered for phase 2 (below)
//                promoted   {node, term, shards, ms,   phase 2 done for the shards promoted to it
//                            entries, gathered, scattered}
//                load       {node, term, periodMs,     resharding statistics (§4.6, ./shard-load.ts): per
//                            loads}                    shard requests served as primary and writes
//                                                      replicated, since the last one (flat triples)
//   CM -> node   grant      {seq, leaseMs, renewMs,    a binary frame to a node whose hello said frames
//                            driftMs, term}            (./manager-frames.ts), else a line
//                prepare    {term, config, shards,     block, ack with prepared; shards = those whose
//                            planned}                  primary changes, or is confirmed again (a move
//                                                      resumed after a restart); absent: by the configs;
//                                                      planned: a move from a live primary, which
//                                                      drains: versions from the counters, no gather
//                commit     {term, config, floors,     serve `config`; promoted shards catch up first
//                            scatter, promote,         and start above floors[shard]; scatter = the
//                            planned}                  gathered entries this node did not report;
//                                                      promote = shards to promote again although this
//                                                      node is their primary already; planned = shards
//                                                      a live, drained primary handed over (no gap)
//                evicted    {term, retired?}           removed from the membership: serve nothing;
//                                                      retired: decommissioned, its id never back
//
// An operator's tool (`rowan reshard`, `rowan status`) uses the same port without a lease:
//   tool -> CM   admin      {id, op, shard?, to?}      op: move (shard to node `to`), plan (what the
//                                                      manager would move now), loads (per node/shard),
//                                                      addNode {node: its entry}, decommission {node}
//                                                      (actors/manager/membership.ts)
//   CM -> tool   adminReply {id, ok, result?, error?}  error: {code, message}
//
// Gather/scatter (§4.5 phase 2). In `prepared` a node lists the complete PUT/DEL entries of the shards
// changing primary found in its Using/Used b-log segments with a version above the highest CommitVer
// it saw for the shard there (at or below it the old primary had finished the write: on every replica,
// or failed with an outcome the client was told is unknown). The manager takes the union per shard and
// sends every surviving replica, in `commit`, the entries it did not report. Both directions are
// bounded, well under LINE_BYTES_MAX: a node lists at most GATHER_BYTES_MAX bytes of entries (as
// encoded on the line) and says `truncated` if it had more; a node is sent at most SCATTER_BYTES_MAX.
// What does not fit is left out and the manager logs an error (the set could not be made complete);
// the failover itself goes on as it would without gathering.
//
// It lives in actors/shared/ because both sides use it: the manager role (actors/manager/) and every
// node's lease client (../node/lease-client.ts).
import type { ClusterConfig, ClusterNode } from '../../config/cluster.js';
import { ErrorCodes, RowanError } from '../../config/base/errors.js';

export type NodeToManager =
  | { t: 'hello'; node: number; pid: number; term: number; rejoin?: boolean; unconfirmed?: number[]; frames?: 1 }
  | { t: 'caughtUp'; node: number; term: number; shard: number; from: number; entries: number; bytes: number; absorbed: number; ms: number }
  | { t: 'renew'; node: number; seq: number; term: number }
  | { t: 'prepared'; node: number; term: number; versions: Record<string, number>; entries?: GatherEntry[]; truncated?: boolean }
  | { t: 'promoted'; node: number; term: number; shards: number[]; ms: number; entries: number; gathered?: number; scattered?: number }
  | { t: 'load'; node: number; term: number; periodMs: number; loads: number[]; bytes?: number[] };

export type ManagerToNode =
  | { t: 'grant'; seq: number; leaseMs: number; renewMs: number; driftMs: number; term: number }
  | { t: 'prepare'; term: number; config: ClusterConfig; shards?: number[]; planned?: boolean }
  | { t: 'commit'; term: number; config: ClusterConfig; floors: Record<string, number>; scatter?: GatherEntry[]; promote?: number[]; planned?: number[] }
  | { t: 'evicted'; term: number; retired?: true }
  /** Renew now, besides the period's renewals: a failover's verdict waits for every candidate to be
   *  heard after the detection (../manager/reach.ts heardSince), which otherwise is its next renewal. */
  | { t: 'renewNow' };

export type AdminRequest =
  | { t: 'admin'; id: number; op: 'move'; shard: number; to: number; from?: number }
  | { t: 'admin'; id: number; op: 'plan' }
  | { t: 'admin'; id: number; op: 'loads' }
  | { t: 'admin'; id: number; op: 'addNode'; node: ClusterNode }
  | { t: 'admin'; id: number; op: 'decommission'; node: number };

export interface AdminReply {
  t: 'adminReply';
  id: number;
  ok: boolean;
  result?: unknown;
  error?: { code: string; message: string };
}

/** One gathered log entry: shard, version, type (EntryType PUT or DEL), key and value in base64. */
export interface GatherEntry {
  s: number;
  v: number;
  t: number;
  k: string;
  x: string;
  /** The entry's expiry deadline (Unix ms), when it has one. */
  e?: number;
}

/** Lines longer than this are a broken peer, not a message (a configuration of 4096 shards is ~200 KB). */
export const LINE_BYTES_MAX = 8 * 1024 * 1024;

/** Encoded bytes of entries a node lists in `prepared`. */
export const GATHER_BYTES_MAX = 2 * 1024 * 1024;
/** Encoded bytes of entries the manager sends one node in `commit` (e.g. the union of two other
 *  replicas' lists); with the configuration (~200 KB for 4096 shards) the line stays under 8 MiB. */
export const SCATTER_BYTES_MAX = 5 * 1024 * 1024;
if (SCATTER_BYTES_MAX + 1024 * 1024 > LINE_BYTES_MAX || GATHER_BYTES_MAX + 1024 * 1024 > LINE_BYTES_MAX) {
  throw new Error('manager-protocol: gather/scatter limits must leave room for the rest of a line');
}

/** Bytes an entry takes on a line (its JSON; numbers at their widest), counted against the limits above. */
export function gatherEntryBytes(e: GatherEntry): number {
  return e.k.length + e.x.length + 56;
}

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

export function encodeLine(m: NodeToManager | ManagerToNode | AdminRequest | AdminReply): string {
  return JSON.stringify(m) + '\n';
}
