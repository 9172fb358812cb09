// A simulated node's side of the control plane, one per incarnation, wired as actors/node/node-application.ts
// startLease() wires a node process: the configuration cell (leased: fenced until the first grant), the
// real lease client (actors/node/lease-client.ts: renewals, prepare, commit, eviction) dialing the simulated
// manager (./wire.ts), its hooks -- drain, gather (actors/shared/gather-scatter.ts), promotion with scatter
// (actors/node/promote.ts), the replica record (actors/shared/trust.ts) -- and peer leases
// (actors/shared/peer-lease.ts) asked of the other nodes' workers over the simulated network. All of it on
// the incarnation's timers (./timers.ts). Not simulated: re-replication's copies (actors/migration/copy.ts),
// so a backup the manager adds stays catching up and is never checked as a full replica.
import type { ClusterConfig } from '../../config/cluster.js';
import { defaultLimits } from '../../config/limits.js';
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import type { Logger } from '../../config/base/log.js';
import { PROMOTION_ACTOR_ID } from '../../config/base/ids.js';
import { ConfigCell, holdUnconfirmedMoves } from '../../actors/shared/config-cell.js';
import { LeaseClient, type LeaseHooks } from '../../actors/node/lease-client.js';
import { PeerLeases } from '../../actors/shared/peer-lease.js';
import { promotionHooks } from '../../actors/node/lease-hooks.js';
import { receivedShards, type ReplicaRecord } from '../../actors/shared/trust.js';
import type { KvShared } from '../../actors/shared/node-shared.js';
import { OwnerRole, type Pool } from '../../shm/pool.js';
import { TLog } from '../../shm/tlog.js';
import { RestartHold } from '../../actors/node/restart-hold.js';
import type { FailedWrites } from '../../actors/shared/failed-writes.js';
import { CommitPoints } from '../../actors/shared/commit-points.js';
import type { ShardVersionStore } from '../../actors/shared/shard-versions-file.js';
import { defaultTimings } from '../../config/timings.js';
import type { SimNet } from './net.js';
import { SimCellWake, type SimTimers } from './timers.js';
import { SimSocket } from './wire.js';
import type { SimManager } from './manager.js';

/** What a node's control plane needs of the simulated node (one incarnation). */
export interface ControlHost {
  id: number;
  pool: Pool;
  shared: KvShared;
  record: ReplicaRecord;
  timers: SimTimers;
  net: SimNet;
  manager: SimManager;
  /** Where this node's commit points are saved (actors/shared/commit-points.ts). */
  points: ShardVersionStore;
  /** The writes that failed after their t-log append (left out of the restart tail). */
  failed: FailedWrites;
  /** Hold the primaries at cold start until the manager confirms them (false: the mutation). */
  holdPrimaries: boolean;
  /** False: no manager -- the configuration cell unleased, no lease client, no peer leases, nothing
   *  held (actors/node/node-application.ts without --manager). */
  managed: boolean;
  /** Ask node `peer`'s worker for a peer lease (the simulated client port). */
  askPeer(peer: number, term: number, body: Uint8Array, timeoutMs: number): Promise<void>;
  /** The manager removed this node: it stops (it would be restarted with --rejoin). */
  evicted(): void;
  log: Logger;
}

export class NodeControl {
  readonly cell: ConfigCell;
  readonly lease: LeaseClient | null = null;
  readonly peers: PeerLeases | null = null;
  private readonly sockets: SimSocket[] = [];
  /** The primaries held since this cold start (actors/node/restart-hold.ts). */
  readonly hold: RestartHold;

  constructor(
    private readonly h: ControlHost,
    boot: ClusterConfig,
  ) {
    const clock = h.net.loop.clock;
    this.cell = ConfigCell.create(boot, h.managed, clock, new SimCellWake(h.timers));
    const g = h.shared.gc;
    if (g) {
      const points = new CommitPoints(h.shared.versions.buffer as SharedArrayBuffer, g.buffers, h.points);
      h.timers.setInterval(() => points.flush(), defaultTimings.commitPointsSaveMs);
    }
    if (!h.managed) {
      this.hold = RestartHold.none();
      return;
    }
    holdUnconfirmedMoves(this.cell, boot, h.id);
    this.hold = h.holdPrimaries ? RestartHold.atColdStart(h.pool, this.cell, boot, h.id, defaultLimits, h.points.load(), h.failed) : RestartHold.none();
    const dial = () => {
      const s = new SimSocket(h.net, h.id, h.timers.alive);
      this.sockets.push(s);
      h.manager.accept(s);
      return { socket: s, ready: 'connect' };
    };
    this.lease = new LeaseClient([{ host: 'manager', port: 1 }], h.id, this.cell, clock, h.log, this.hooks(), false, null, null, 500, { timers: h.timers, dial });
    const lc = this.lease;
    this.peers = new PeerLeases(h.id, this.cell, clock, h.log, null, defaultLimits, null, () => lc.leaseTiming(), (until) => lc.setPeerLease(until), () => lc.managerLeaseUntil(), {
      timers: h.timers,
      ask: (peer, term, body, ms) => h.askPeer(peer, term, body, ms),
    });
  }

  start(): void {
    this.lease?.start(); // its renew timer ticks the peer leases (hooks().tick), as on a node
  }

  /** The process died: its connections close (the manager sees it), nothing of it runs again. */
  kill(): void {
    for (const s of this.sockets) s.kill();
  }

  /** The product's prepare and promote (actors/node/lease-hooks.ts); re-replication is not simulated,
   *  and an evicted node stops (./node.ts). */
  private hooks(): LeaseHooks {
    const { id, pool, shared, record } = this.h;
    let plog: TLog | null = null;
    const promotionLog = (): TLog => (plog ??= TLog.recover(pool, PROMOTION_ACTOR_ID, defaultLimits, OwnerRole.Digest));
    return {
      ...promotionHooks({ nodeId: id, cell: this.cell, pool, shared, shardCount: this.cell.config().shardCount, record, clock: this.h.net.loop.clock, log: this.h.log, promotionLog, sleep: this.h.timers.sleep, hold: this.hold }),
      configured: () => record.noteBackups(receivedShards(this.cell.config(), id)),
      evicted: () => this.h.evicted(),
      tick: () => this.peers?.tick(),
    };
  }
}

/** Peer leases' PEER_LEASE over the simulated network: the peer's worker answers after the delays;
 *  a cut, a peer down or a requester gone ends without a grant. */
export function askPeer(net: SimNet, from: number, fromAlive: () => boolean, worker: (peer: number) => { peerLease(b: Uint8Array, term: number): Promise<void> } | null, peer: number, term: number, body: Uint8Array, timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    let settled = false;
    const settle = (err: Error | null): void => {
      if (settled || !fromAlive()) return;
      settled = true;
      if (err) reject(err);
      else resolve();
    };
    // The timeout event runs (and is traced) either way; its error is built only if it still decides.
    net.loop.at(timeoutMs, ['peer-timeout', from, peer], () => !settled && settle(new RowanError(ErrorCodes.TIMEOUT, `no answer from node ${peer}`)), true);
    net.loop.at(net.delay(), ['peer-ask', from, peer], () => {
      const w = worker(peer);
      if (!w || net.cut(from, peer)) return;
      w.peerLease(body, term).then(
        () => net.loop.at(net.delay(), ['peer-grant', peer, from], () => !net.cut(from, peer) && settle(null), true),
        (err: Error) => net.loop.at(net.delay(), ['peer-refuse', peer, from], () => !net.cut(from, peer) && settle(err), true),
      );
    }, true);
  });
}

