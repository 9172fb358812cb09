// Peer leases: a node keeps serving while the configuration manager is unreachable, as long as no
// configuration that takes its shards can have been made (docs/failover.md "Partitions", issue 13).
//
// The manager's lease (../node/lease-client.ts, actors/manager/leases.ts) fences a node that the manager may fail
// over: the manager reassigns X's shards only after X's lease has certainly expired. A manager cut off
// from everyone therefore fenced every node after one lease, although it could reassign nothing (it
// reaches no node to prepare or commit anything). Peer leases let the nodes prove that themselves:
//
//   request  X asks every other live member Y of its configuration (term T), every renewMs while
//            its manager lease runs low -- a renewal half a period overdue (askBelowMs) -- for a manager
//            lease renewed on time needs no vouching, and an idle cluster sends no request for it:
//            PEER_LEASE {from X, leaseMs, driftMs} at term T, over Y's client port (authenticated with
//            the cluster secret like any client). The grants come a round trip later, with most of
//            the manager lease still to run
//   grant    Y grants only while Y is at term T with no configuration pending (prepared, not
//            committed), and not evicted. It first records the promise -- X's shards are not taken
//            over by Y before t_recv + leaseMs + driftMs on Y's clock -- then checks; a refusal
//            after recording only makes Y wait longer
//   serve    X serves while its manager lease holds, OR while it holds a grant from every other live
//            member: until min over Y of (t_send + leaseMs - driftMs), its send time on its own clock
//   keep     Y publishes a configuration that makes it primary of a shard X was primary of only
//            once its promise to X has certainly expired (../node/lease-client.ts commit()); from the moment it
//            prepares (or, without a prepare, starts that commit) it grants nothing more
//
// Why no shard of X is served by two primaries. X's shard s moves only through a failover the
// manager commits after X's manager lease certainly expired (its own timing argument); the new
// primary Y of s is a member of X's configuration (planFailover promotes a backup), so X needed Y's
// grant to serve past its manager lease, and Y starts serving s only after that grant certainly
// expired (the same 2 x driftMs margin as the manager's lease). X cannot renew it after Y prepared
// (Y grants nothing while a configuration is pending, then Y is at a newer term than X). A member
// that joins later is no primary of s before some member of X's configuration published a newer term
// (a joined node holds no shard; re-replication never promotes), which ends X's grants first. A
// restarted Y forgot its promises: it treats every promise as running to its start + leaseMs + driftMs.
// The grant checks happen after the promise is recorded, and the main thread sets PENDING before it
// reads the promise (sequentially consistent Atomics on both words): one of them sees the other.
//
// What it does not cover: a node that reaches some members but not all (a partial partition) falls
// back to its manager lease; nothing here lets the manager itself be replaced (a standby manager is
// another issue).
import { nodeOf, liveNodes } from '../../config/cluster.js';
import { realTimers, type Clock, type TimerHandle, type Timers } from '../../config/base/clock.js';
import type { Logger } from '../../config/base/log.js';
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import { NODE_ID_MAX } from '../../config/base/ids.js';
import { defaultTimings } from '../../config/timings.js';
import type { FrameLimits } from '../../runtime/rpc/frames-layout.js';
import { Op, Status } from '../../runtime/rpc/frames-layout.js';
import { encodeRequest } from '../../runtime/rpc/frames.js';
import { RpcConnection, remoteError } from '../../client/worker-connection.js';
import type { TlsMaterial } from '../../runtime/net/tls.js';
import type { ConfigCell } from './config-cell.js';

/** The request body: from u16 · leaseMs u32 · driftMs u32 (little-endian). */
export const PEER_LEASE_REQUEST_BYTES = 10;

export interface PeerLeaseRequest {
  from: number;
  leaseMs: number;
  driftMs: number;
}

export function encodePeerLeaseRequest(r: PeerLeaseRequest): Uint8Array {
  const b = Buffer.alloc(PEER_LEASE_REQUEST_BYTES);
  b.writeUInt16LE(r.from, 0);
  b.writeUInt32LE(r.leaseMs, 2);
  b.writeUInt32LE(r.driftMs, 6);
  return b;
}

export function decodePeerLeaseRequest(u: Uint8Array): PeerLeaseRequest {
  if (u.length !== PEER_LEASE_REQUEST_BYTES) throw new RowanError(ErrorCodes.BAD_ARGUMENT, `PEER_LEASE request of ${u.length} B, not ${PEER_LEASE_REQUEST_BYTES}`);
  const b = Buffer.from(u.buffer, u.byteOffset, u.length);
  const r = { from: b.readUInt16LE(0), leaseMs: b.readUInt32LE(2), driftMs: b.readUInt32LE(6) };
  if (r.from > NODE_ID_MAX) throw new RowanError(ErrorCodes.BAD_ARGUMENT, `PEER_LEASE from node ${r.from}, beyond ${NODE_ID_MAX}`);
  if (r.leaseMs < 1 || r.leaseMs > defaultTimings.leaseMsMax || r.driftMs >= r.leaseMs) throw new RowanError(ErrorCodes.BAD_ARGUMENT, `PEER_LEASE of ${r.leaseMs} ms (drift ${r.driftMs} ms) is not a lease`);
  return r;
}

/**
 * The granting side, on a worker: record the promise, then check this node may make it (see the
 * header). Throws (nothing granted) with STALE_TERM or LEASE_EXPIRED.
 */
export function grantPeerLease(cell: ConfigCell, request: Uint8Array, clientTerm: number, now: number, selfId: number): void {
  const r = decodePeerLeaseRequest(request);
  if (r.from === selfId) throw new RowanError(ErrorCodes.BAD_ARGUMENT, 'a node asked itself for a peer lease');
  cell.recordGrant(r.from, now + r.leaseMs + r.driftMs); // before the checks: see the header
  if (cell.evicted()) throw new RowanError(ErrorCodes.LEASE_EXPIRED, 'this node was removed from the cluster; it promises nothing');
  const pending = cell.pendingTerm();
  const term = cell.term();
  if (pending !== 0 || term !== clientTerm) {
    throw new RowanError(ErrorCodes.STALE_TERM, `peer lease for node ${r.from} at term ${clientTerm} refused: this node is at term ${term}${pending !== 0 ? `, term ${pending} pending` : ''}`);
  }
  const c = cell.config();
  if (!liveNodes(c).some((n) => n.id === r.from)) throw new RowanError(ErrorCodes.STALE_TERM, `node ${r.from} is no member at term ${term}`);
}

/** The instant from which this node's promises to `node` have certainly expired. */
export function promisesOverAt(cell: ConfigCell, node: number, leaseMs: number, driftMs: number): number {
  return Math.max(cell.grantedUntil(node), cell.createdAt() + leaseMs + driftMs);
}

export interface PeerLeaseTiming {
  leaseMs: number;
  renewMs: number;
  driftMs: number;
}

/** A node asks for peer grants once less than this is left of its manager lease: the last grant it
 *  got is a renewal and a half old (leaseMs - driftMs is what a fresh one holds for). */
export function askBelowMs(t: PeerLeaseTiming): number {
  return t.leaseMs - t.driftMs - 1.5 * t.renewMs;
}

/** What peer leases' time and requests come from (CONVENTIONS 9; the simulator, test/sim, passes its
 *  own). Default: Node's timers and a PEER_LEASE request over the peer's client port. */
export interface PeerLeaseSeams {
  timers?: Timers;
  /** Ask `peer` for a grant at `term`; resolves when granted, rejects (a RowanError) when not. */
  ask?: (peer: number, term: number, body: Uint8Array, timeoutMs: number) => Promise<void>;
}

interface Peer {
  conn: RpcConnection | null;
  busy: boolean;
  /** This node's lease from the peer holds until then (own clock). */
  until: number;
}

/**
 * The asking side, on the node's main thread: while the manager lease runs low (askBelowMs), asks every other live
 * member for a grant each renewMs (at each tick() of the lease client's renew timer), and reports the instant until which it holds a grant from all of
 * them (-Infinity: not from all).
 */
export class PeerLeases {
  private readonly peers = new Map<number, Peer>();
  private timer: TimerHandle | undefined;
  private stopped = false;
  private term = 0;

  constructor(
    private readonly nodeId: number,
    private readonly cell: ConfigCell,
    private readonly clock: Clock,
    private readonly log: Logger,
    /** The cluster secret it proves as a peer (PEER_LEASE is a peer-only op); null = --no-auth. */
    private readonly secret: Uint8Array | null,
    private readonly limits: FrameLimits,
    /** Mutual TLS to the other nodes; null = plain TCP. */
    private readonly tls: TlsMaterial | null,
    /** The manager's lease timing, once it granted one (peer leases have the same length). */
    private readonly timing: () => PeerLeaseTiming | null,
    /** Called whenever the instant this node holds every peer's grant until changes. */
    private readonly onChange: (until: number) => void,
    /** Until when the manager's lease holds (own clock): grants are asked for only when it runs low. */
    private readonly managerLeaseUntil: () => number,
    private readonly seams: PeerLeaseSeams = {},
  ) {
    this.timers = seams.timers ?? realTimers;
  }

  private readonly timers: Timers;

  /** Run on a timer of its own (tests). A node instead calls tick() from its lease client's renew
   *  timer (../node/lease-client.ts LeaseHooks.tick): one timer per node, not two. */
  start(): void {
    this.selfTimed = true;
    this.schedule(10);
  }

  /** One look, each renew period: asks for grants if the manager's lease runs low. */
  tick(): void {
    this.round();
  }

  private selfTimed = false;

  stop(): void {
    this.stopped = true;
    this.timers.clearTimeout(this.timer);
    for (const p of this.peers.values()) p.conn?.close();
    this.peers.clear();
  }

  /** Until when every other live member's grant holds (-Infinity when one is missing). */
  heldUntil(): number {
    const c = this.cell.config();
    if (this.cell.term() !== this.term) return -Infinity;
    let until = Infinity;
    for (const n of liveNodes(c)) {
      if (n.id === this.nodeId) continue;
      until = Math.min(until, this.peers.get(n.id)?.until ?? -Infinity);
    }
    return until === Infinity ? -Infinity : until; // a single-node cluster has no peer to vouch for it
  }

  private schedule(ms: number): void {
    if (this.stopped || !this.selfTimed) return;
    this.timer = this.timers.setTimeout(() => this.round(), ms);
    this.timer.unref();
  }

  private round(): void {
    const t = this.timing();
    if (this.stopped || this.cell.evicted()) return this.stop();
    if (t === null) return this.schedule(10);
    const term = this.cell.term();
    if (term !== this.term) {
      // Grants were asked for at the old term: start over (the manager's lease covers the change),
      // and forget members the new configuration no longer lists.
      this.term = term;
      const live = new Set(liveNodes(this.cell.config()).map((n) => n.id));
      for (const [id, p] of this.peers) {
        p.until = -Infinity;
        if (!live.has(id)) {
          p.conn?.close();
          this.peers.delete(id);
        }
      }
      this.onChange(this.heldUntil());
    }
    // The manager's lease is enough: no request (one clock read a renew period, on an idle node).
    if (this.managerLeaseUntil() - this.clock.now() >= askBelowMs(t)) return this.schedule(t.renewMs);
    for (const n of liveNodes(this.cell.config())) {
      const id = n.id;
      if (id === this.nodeId) continue;
      let p = this.peers.get(id);
      if (!p) this.peers.set(id, (p = { conn: null, busy: false, until: -Infinity }));
      if (!p.busy) void this.ask(id, p, term, t);
    }
    this.schedule(t.renewMs);
  }

  /** The connection to the peer's client port (kept per peer). */
  private async open(id: number, p: Peer, t: PeerLeaseTiming): Promise<RpcConnection> {
    const n = nodeOf(this.cell.config(), id);
    // A grant arriving later than a lease would be over already: the request is bounded by one.
    p.conn ??= await RpcConnection.open({ host: n.host, port: n.workerPorts[0]! }, t.leaseMs, this.limits, this.secret === null ? null : { role: 'peer', secret: this.secret }, this.tls);
    return p.conn;
  }

  private async ask(id: number, p: Peer, term: number, t: PeerLeaseTiming): Promise<void> {
    p.busy = true;
    try {
      const conn = this.seams.ask ? null : await this.open(id, p, t);
      const body = encodePeerLeaseRequest({ from: this.nodeId, leaseMs: t.leaseMs, driftMs: t.driftMs });
      const sent = this.clock.now();
      await (conn ? request(conn, term, body) : this.seams.ask!(id, term, body, t.leaseMs));
      if (this.term !== term || this.stopped) return;
      const until = sent + t.leaseMs - t.driftMs;
      if (until > p.until) {
        p.until = until;
        this.onChange(this.heldUntil());
      }
    } catch (err) {
      const code = err instanceof RowanError ? err.code : 'other';
      // A peer that moved to another term, is preparing one, or cannot be reached: no grant. The
      // connection is dropped unless the peer answered (a request timed out may hang forever).
      if (code !== ErrorCodes.STALE_TERM && code !== ErrorCodes.LEASE_EXPIRED) {
        p.conn?.close();
        p.conn = null;
      }
      this.log.debug({ peer: id, code, err: (err as Error).message }, 'peer lease not granted');
    } finally {
      p.busy = false;
    }
  }
}

/** PEER_LEASE over a peer's client port: resolves when granted. */
async function request(conn: RpcConnection, term: number, body: Uint8Array): Promise<void> {
  const r = await conn.request((rid) => encodeRequest({ op: Op.PEER_LEASE, id: rid, term, key: body }));
  if (r.status === Status.ERROR) throw remoteError(r);
  if (r.status !== Status.OK) throw new RowanError(ErrorCodes.BAD_FRAME, `PEER_LEASE answered with status ${r.status}`);
}
