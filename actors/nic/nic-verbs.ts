// The verbs the soft RNIC executes on its node's memory: SEND lands a Rowan write in the b-log through
// the shared receive queue (exactly the shm rules: runtime/rowan/land.ts), WRITE and READ are one-sided
// on the pool, ALLOC hands out a free segment for one-sided logs. Everything is synchronous and
// validated before memory is touched.
//
// The NIC does only what Rowan needs (docs/security.md), like an RNIC whose memory regions are
// registered per peer:
//   SEND   lands only in posted receive buffers (the queue picks the slot, never the peer);
//   ALLOC  only for the peer's own owner id (remoteRegionOwner of the node id it named in HELLO, which
//          an authenticated peer proved it belongs to the cluster for; on a KV node that id must be a
//          live member of the configuration other than this node), never out of the GC reserve
//          (gc.reserveSegments free segments stay for clean actors, as for every other role), and
//          never past the peer node's quota: fabric.remoteSegmentsMax segments of its owner id that
//          are not Free, counted in the meta table (so across a NIC restart) until GC frees them.
//          Over it: ROWAN_ERR_QUOTA, retryable like PM_FULL;
//   WRITE  only inside a segment that is Using, of role Remote, owned by the peer's owner id: the
//          regions ALLOC handed to that node (any of its connections: the share baseline's workers
//          write into one region through their own connections; the meta table, not a per-process
//          set, is the registration, so it holds across a NIC restart);
//   READ   only inside those same regions, plus a 1-byte READ inside the write this connection landed
//          last (the persistence READ of a Rowan write, §3; the tcp sender needs none because the NIC
//          persists before it acknowledges, but a sender that issues it keeps working). A READ of any
//          other pool byte -- another key's value in the b-log, a t-log -- is refused.
// Refusals are ROWAN_ERR_NOT_GRANTED (an ALLOC over the quota or into the reserve: QUOTA, PM_FULL) and
// name only what the peer sent, never the pool's layout.
//
// Regions of a node the configuration no longer names at all -- the cold start's rule for freeing them
// (actors/node/recovery.ts, trust.ts remoteOwnersOf) -- are released while the node runs too: on this
// thread, before the next verb once the configuration changed (and on a timer, server.ts), they go
// Committed and the clean actors free them like any Committed segment (live entries an index points at
// are moved first, then the segment is freed once no reader holds an address in it). A WRITE or READ
// re-checks the segment's state, so none reaches a released region, and the removed node is no live
// member, so it gets no new one. A dead node that is still named keeps its regions: they may hold the
// only copy of what it replicated.
//
// The nic maps the pool and the receive queue itself (each actor maps the pool, DESIGN §3). The queue is
// created by the control actor; until it exists a SEND waits (RECEIVER_NOT_READY, retryable), and when
// a receiver restart closes it, the nic attaches the new one.
import { defaultLimits } from '../../config/limits.js';
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import { shmPaths } from '../../runtime/fabric/shm.js';
import { land } from '../../runtime/rowan/land.js';
import { NO_BUFFER, SRQ_CLOSED, SharedReceiveQueue } from '../../runtime/rowan/srq.js';
import { OwnerRole, SegmentState, type Pool } from '../../shm/pool.js';
import { NODE_ID_MAX, remoteRegionOwner } from '../../config/base/ids.js';
import { scaleRemoteToPool } from '../../config/defaults.js';
import type { HelloInfo } from '../../runtime/fabric/nic-frames.js';

export interface NicMemoryOptions {
  dataDir: string;
  /** The node's pool, injected (NicServerOptions.pool); the nic never unmaps it. */
  pool: () => Pool;
  frameBytesMax: number;
  now: () => number;
  /** Free segments ALLOC never takes (config gc.reserveSegments): kept for garbage collection whatever
   *  reserve the injected pool was opened with. */
  reserveSegments: number;
  /** The node's membership now (a ROWAN-KV node's configuration cell): ALLOC is refused to a peer that
   *  names this node itself or a node that is not a live member. Absent (a standalone NIC): no check. */
  members?: () => NicMembership;
  /** Segments (not Free) one peer node's regions may hold (config fabric.remoteSegmentsMax). Absent: a
   *  quarter of the pool, as the config's default. */
  remoteSegmentsMax?: number;
  /** Owner ids of the nodes the configuration names (trust.ts remoteOwnersOf), the same Set until the
   *  configuration changes: the regions of any other owner id are released (see the header). Absent:
   *  none is released while the NIC runs. */
  remoteOwners?: () => ReadonlySet<number>;
}

export interface NicMembership {
  /** This node's id: a node never replicates to itself. */
  self: number;
  /** Live members' node ids (not listed dead). */
  live: ReadonlySet<number>;
}

/** What the NIC knows about one connection's peer (actors/nic/nic-connection.ts holds one per connection). */
export interface NicPeer {
  /** The node id the peer named in HELLO (null before HELLO): its one-sided regions' owner id. */
  nodeId: number | null;
  /** The pool range of the last SEND this connection landed (its 1-byte persistence READ may read it). */
  lastLanded: { at: number; length: number } | null;
}

export function newNicPeer(): NicPeer {
  return { nodeId: null, lastLanded: null };
}

/** The sender id of a HELLO as a node id, or null when it cannot name a node. */
export function peerNodeId(senderId: number): number | null {
  return Number.isInteger(senderId) && senderId >= 0 && senderId <= NODE_ID_MAX ? senderId : null;
}

/** SEND outcome: landed at a pool offset, or wait and try again (nothing was written). */
export type SendResult = { at: number; reissues: number } | { wait: WaitCode };
/** Why a SEND waits: no buffer posted, no buffer because the receiver's pool is full, no queue yet. */
export type WaitCode = typeof ErrorCodes.NO_BUFFER | typeof ErrorCodes.PM_FULL | typeof ErrorCodes.RECEIVER_NOT_READY;

/** After the queue closed, look for a new one at most this often. */
const REATTACH_MS = 100;

export class NicMemory {
  private pool: Pool | null = null;
  private srq: SharedReceiveQueue | null = null;
  private closedAt = -Infinity;
  private readonly now: () => number;
  private closed = false;
  /** The owner set regions were last released against (see releaseRemoved). */
  private owners: ReadonlySet<number> | null = null;

  constructor(private readonly o: NicMemoryOptions) {
    this.now = o.now;
  }

  hello(): Omit<HelloInfo, 'version'> {
    let segmentBytes = 0;
    try {
      segmentBytes = this.mapPool().segmentBytes;
    } catch {
      // no pool yet: the sender learns the segment size is unknown (0) and SENDs wait for the receiver
    }
    return { stride: defaultLimits.entryAlignBytes, segmentBytes, frameBytesMax: this.o.frameBytesMax };
  }

  /** SEND: land `data` in the b-log, persistent before this returns an offset. */
  send(data: Uint8Array, senderId: number, peer?: NicPeer): SendResult {
    const stride = defaultLimits.entryAlignBytes;
    if (data.length % stride !== 0)
      throw new RowanError(ErrorCodes.BAD_ARGUMENT, `a Rowan write is whole ${stride} B strides, got ${data.length} B`);
    const srq = this.queue();
    if (!srq) return { wait: ErrorCodes.RECEIVER_NOT_READY };
    const r = land(srq, this.mapPool().region, data, senderId);
    if (r.at === NO_BUFFER) return { wait: srq.starved() ? ErrorCodes.PM_FULL : ErrorCodes.NO_BUFFER };
    if (r.at === SRQ_CLOSED) {
      this.detachQueue();
      // The reply goes to the peer: it names no local path.
      throw new RowanError(ErrorCodes.RECEIVER_CLOSED, 'the receiver has shut down');
    }
    if (peer) peer.lastLanded = { at: r.at, length: data.length };
    return r;
  }

  /** WRITE: copy + persist inside one region ALLOC handed to this peer's node. */
  write(peer: NicPeer, offset: number, data: Uint8Array): void {
    const pool = this.mapPool();
    this.releaseRemoved();
    if (!this.inPeerRegion(pool, peer, offset, data.length))
      throw new RowanError(ErrorCodes.NOT_GRANTED, `WRITE of ${data.length} B at ${offset}: not inside a region ALLOC handed to this peer`);
    pool.region.bytes.set(data, offset);
    pool.region.persist(offset, data.length);
  }

  /** READ: a copy of bytes of this peer's own regions, or the 1-byte persistence READ of its last SEND
   *  (a reply must fit one frame). */
  read(peer: NicPeer, offset: number, length: number): Uint8Array {
    const pool = this.mapPool();
    this.releaseRemoved();
    const max = this.o.frameBytesMax - 12;
    if (!Number.isSafeInteger(length) || length < 0 || length > max)
      throw new RowanError(ErrorCodes.BAD_ARGUMENT, `READ of ${length} B exceeds the ${max} B a reply can carry`);
    const l = peer.lastLanded;
    const persistenceRead = length <= 1 && l !== null && offset >= l.at && offset + length <= l.at + l.length;
    if (!persistenceRead && !this.inPeerRegion(pool, peer, offset, length))
      throw new RowanError(ErrorCodes.NOT_GRANTED, `READ of ${length} B at ${offset}: not inside a region ALLOC handed to this peer`);
    return pool.region.bytes.subarray(offset, offset + length);
  }

  /** ALLOC: a free segment for one-sided writes by the peer's node, owned by its owner id. QUOTA when
   *  the node holds its quota already, PM_FULL when none is free outside the GC reserve. */
  alloc(peer: NicPeer, ownerId: number): { segment: number; offset: number; length: number } {
    const pool = this.mapPool();
    this.releaseRemoved();
    if (peer.nodeId === null)
      throw new RowanError(ErrorCodes.NOT_GRANTED, 'ALLOC before a HELLO naming the sending node: regions are granted per node');
    const m = this.o.members?.();
    if (m && (peer.nodeId === m.self || !m.live.has(peer.nodeId)))
      throw new RowanError(ErrorCodes.NOT_GRANTED, `ALLOC for node ${peer.nodeId}, which is ${peer.nodeId === m.self ? 'this node itself' : 'not a live member of the configuration'}`);
    const own = remoteRegionOwner(peer.nodeId);
    if (ownerId !== own)
      throw new RowanError(ErrorCodes.NOT_GRANTED, `ALLOC for owner id ${ownerId}: node ${peer.nodeId} may only allocate regions of its own owner id ${own}`);
    // Counted from the meta table, not per connection or process: every region of the node until GC
    // frees it (Free segments carry no owner), whichever NIC incarnation handed it out.
    const quota = this.o.remoteSegmentsMax ?? scaleRemoteToPool(pool.segmentCount);
    const held = pool.segments({ role: OwnerRole.Remote, ownerId: own }).length;
    if (held >= quota)
      throw new RowanError(ErrorCodes.QUOTA, `ALLOC for node ${peer.nodeId}: it holds ${held} regions here, its quota (fabric.remoteSegmentsMax); retry once garbage collection frees one`);
    // The NIC cannot rely on the pool's own reserve (a standalone NIC's pool may be opened without
    // one): the same rule as Pool.allocate for every role but Clean, checked here.
    const reserve = Math.max(this.o.reserveSegments, pool.reserveSegments);
    if (reserve > 0 && pool.freeCount() <= reserve)
      throw new RowanError(ErrorCodes.PM_FULL, `no free segment for a remote region: the last ${reserve} are kept for garbage collection`);
    const segment = pool.allocate(OwnerRole.Remote, own);
    return { segment, offset: pool.segmentOffset(segment), length: pool.segmentBytes };
  }

  /**
   * Release the regions of owner ids the configuration no longer names, if it changed since the last
   * call (see the header). Returns how many were released.
   */
  releaseRemoved(): number {
    const owners = this.o.remoteOwners?.();
    if (!owners || owners === this.owners) return 0;
    const n = this.releaseForeign(this.mapPool(), owners);
    this.owners = owners;
    return n;
  }

  /** Hand every role-Remote region whose owner id is not in `owners` to garbage collection: Committed,
   *  which no verb reaches, and which clean actors free (Using -> Committed as a full t-log segment). */
  private releaseForeign(pool: Pool, owners: ReadonlySet<number>): number {
    let n = 0;
    for (const seg of pool.segments({ role: OwnerRole.Remote })) {
      const m = pool.meta(seg);
      if (owners.has(m.ownerId) || (m.state !== SegmentState.Using && m.state !== SegmentState.Used)) continue;
      pool.transition(seg, m.state, SegmentState.Committed);
      n++;
    }
    return n;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.detachQueue();
    this.pool = null;
  }

  private mapPool(): Pool {
    if (this.closed) throw new RowanError(ErrorCodes.RECEIVER_CLOSED, 'the nic is stopping');
    if (this.pool) return this.pool;
    try {
      this.pool = this.o.pool();
    } catch (err) {
      if (err instanceof RowanError && err.code === ErrorCodes.POOL_NOT_FOUND)
        throw new RowanError(ErrorCodes.RECEIVER_NOT_READY, `no pool in ${this.o.dataDir} yet`);
      throw err;
    }
    return this.pool;
  }

  /** The receive queue, attached on first use; null while control has not created it. */
  private queue(): SharedReceiveQueue | null {
    if (this.srq) return this.srq;
    if (this.now() - this.closedAt < REATTACH_MS) throw new RowanError(ErrorCodes.RECEIVER_CLOSED, 'the receiver has shut down');
    try {
      this.mapPool();
      this.srq = SharedReceiveQueue.attach(shmPaths(this.o.dataDir).srq);
    } catch (err) {
      if (err instanceof RowanError && err.code === ErrorCodes.RECEIVER_NOT_READY) return null;
      throw err;
    }
    return this.srq;
  }

  private detachQueue(): void {
    if (!this.srq) return;
    this.srq.close();
    this.srq = null;
    this.closedAt = this.now();
  }

  /** [offset, +length) lies inside one segment that is a live region of the peer's node. */
  private inPeerRegion(pool: Pool, peer: NicPeer, offset: number, length: number): boolean {
    if (peer.nodeId === null || !Number.isSafeInteger(offset) || !Number.isSafeInteger(length) || length < 0) return false;
    const first = pool.segmentOffset(0);
    if (offset < first || offset >= pool.segmentOffset(pool.segmentCount - 1) + pool.segmentBytes) return false;
    const seg = pool.segmentOf(offset);
    if (offset + length > pool.segmentOffset(seg) + pool.segmentBytes) return false;
    const m = pool.meta(seg);
    return m.role === OwnerRole.Remote && m.ownerId === remoteRegionOwner(peer.nodeId) && (m.state === SegmentState.Using || m.state === SegmentState.Used);
  }
}
