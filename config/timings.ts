// Every timing in one place (CONVENTIONS 8), beside ./limits.ts and like it: qualifiers last, one line
// each on what it bounds and why its value, and `checkTimings` asserting the relations between them at
// load (a bad combination fails at start with ROWAN_ERR_BAD_CONFIG, not as a node fenced, a write
// failed or a member evicted under load).
//
// The lease is the one timing an operator sets (`rowan manager|cluster --lease-ms`, within
// [leaseMsMin, leaseMsMax]); the manager tells every node the lease in force in each grant, and the
// waits that depend on it are derived from that lease (failoverBoundMs and the `...For` functions
// below), never a fixed number that holds only for the default lease. Every other value here is fixed;
// its relations are checked with the default lease and, where the lease enters, hold for every lease
// because the dependent value is derived.
//
// Lease timing argument: actors/manager/leases.ts.
import { ErrorCodes, RowanError } from './base/errors.js';

export interface Timings {
  // ---- lease (§4.5) --------------------------------------------------------------------------------
  /** The lease the manager grants by default (`--lease-ms`). The paper's 10 ms assumes dedicated cores
   *  and RDMA. 100 ms: renewals run on a SCHED_FIFO thread on both sides (actors/node/lease-thread.ts,
   *  the manager's thread), so a busy main thread no longer fences a live node; shorter leases fail
   *  over sooner but renew more often, and a renewal is most of what an idle node spends (issue 26:
   *  ~0.4 ms of CPU per renew and grant on this machine). It was 200 ms. */
  leaseMs: number;
  /** Shortest lease accepted: renewMs = leaseMs / 5 and driftMs = leaseMs / 20 must stay >= 1 ms with
   *  two renewals inside leaseMs - driftMs. */
  leaseMsMin: number;
  /** Longest lease accepted (a node's lease counter is an Int32 of ms, a PEER_LEASE a u32). */
  leaseMsMax: number;

  // ---- configuration manager ------------------------------------------------------------------------
  /** Prepare round (phase 1): a member that has not acknowledged `prepare` by then is left behind (its
   *  lease will tell). Long enough for a gather of a large shard on a loaded machine. */
  prepareTimeoutMs: number;
  /** What a failover takes beyond its prepare round: storing the configuration (a ZooKeeper write) and
   *  the commit reaching the members. Only enters failoverBoundMs. */
  reconfigureSlackMs: number;
  /** A reconfiguration (failover, resume) that failed is tried again after this. */
  failoverRetryMs: number;
  /** A move's targets must report their promotion (catch-up done) within this, else the move is listed
   *  stalled and the manager does not resume moves again before it. */
  movePromoteTimeoutMs: number;
  /** A member that never connected to this manager is suspected after this long (a node's cold start:
   *  index rebuild and recovery of a large pool). Waiting longer than its lease is never unsafe. */
  joinGraceMs: number;
  /** After a takeover, how long members it has not heard from have to reconnect, beyond a full lease. */
  takeoverGraceMs: number;
  /** A manager that hears again from a member after a lease of silence from all of them gives every
   *  member this many leases to reconnect before it suspects one (docs/failover.md "Partitions"). */
  recoveryGraceLeases: number;
  /** Either side of a manager connection drops a peer that has not completed the authentication
   *  handshake by then. */
  managerHandshakeMs: number;
  /** The ZooKeeper session timeout managers ask for (`--zk-session-ms`): ZooKeeper's smallest with its
   *  default tickTime of 2000 ms. */
  managerZkSessionMs: number;

  // ---- a node's lease client (actors/node/lease-client.ts) ---------------------------------------------------
  /** Renew period before the first grant tells the real one. */
  firstRenewMs: number;
  /** A refused or lost manager connection is tried again after this. */
  reconnectMs: number;
  /** Leases without a word from the manager before the lease client opens a second connection. */
  silentLeases: number;
  /** Before the first grant tells the lease: how long one connection attempt to a manager may take. */
  managerConnectTimeoutMs: number;
  /** With several managers: connected but not granted for this long (at least two renew periods of the
   *  lease in force, noGrantMsFor), try the next one -- a standby that lost its election, a paused one. */
  noGrantMs: number;
  /** After a refused handshake: a wrong secret does not heal in reconnectMs. */
  authRetryMs: number;

  // ---- a node serving (actors/worker, actors/node) --------------------------------------------------
  /** A request waits this long for a pending configuration to commit or a promoted shard to catch up
   *  before STALE_TERM (a manager that died mid-failover must not hang clients). */
  admitWaitMs: number;
  /** A write whose backup is gone waits for the manager to remove that backup at least this long; with
   *  the lease in force, at least until the manager may have failed it over (backupGoneWaitMsFor). */
  backupGoneWaitMs: number;
  /** A move's source waits this long for the writes it claimed for the shards it hands over to end;
   *  past it the prepare is not acknowledged and the manager rolls the move back. */
  drainTimeoutMs: number;
  /** An evicted node keeps answering LEASE_EXPIRED this long before it stops (clients learn why). */
  evictedExitMs: number;
  /** A shard copy's source waits this long for the writes older than the copy to end. */
  copyBarrierMs: number;
  /** A backup catching up re-sends its mark to the manager this often while it stays (the manager may
   *  have missed it: reconnecting, failing over). */
  catchUpResendMs: number;
  /** One catch-up request to the primary (a copy of a whole shard) may take this long. */
  catchUpRequestTimeoutMs: number;
  /** Tombstone sweep cycles start this often (backing off while they drop nothing). */
  tombstoneSweepPeriodMs: number;
  /** A primary saves the CommitVers it computed this often when they moved (a later restart's tail
   *  starts above them: actors/shared/commit-points.ts); a longer period only lengthens that tail. */
  commitPointsSaveMs: number;

  // ---- fabric and clients ---------------------------------------------------------------------------
  /** A Rowan write that finds no posted receive buffer for this long fails (WRITE_TIMEOUT, PM_FULL). */
  noBufferTimeoutMs: number;
  /** The nic parks a write that finds no buffer this long before answering it retryable (NO_BUFFER). */
  nicParkMs: number;
  /** The tcp fabric re-sends a retryable request after this, doubling up to tcpBackoffMsMax. */
  tcpBackoffFirstMs: number;
  tcpBackoffMsMax: number;
  /** A Used b-log buffer waits this long for its senders' reservations before it is fenced. */
  receiverHoldTimeoutMs: number;
  /** A client's backoff between retries of a refused request (stale term, lease expired) is capped here. */
  clientBackoffMsMax: number;
  /** A peer that has not finished the TLS handshake within this is dropped. */
  tlsHandshakeMs: number;
  /** Shared-log baseline (actors/baselines/share.ts): a sender waits this long for another to finish
   *  allocating a region before giving up. */
  sharedLogAllocationWaitMs: number;

  // ---- ZooKeeper configuration store (config/zk-store.ts) ------------------------------------------
  zkConnectTimeoutMs: number;
  zkSessionTimeoutMs: number;
  /** Bounds on how long a reconnect handshake may go unanswered before it is restarted. */
  zkStallMsMin: number;
  zkStallMsMax: number;
  /** A closing client's socket is dropped after this, should the server not end the session first. */
  zkCloseSessionGraceMs: number;

  // ---- `rowan cluster`'s supervisor (bin/cluster-supervise.ts) -------------------------------------
  /** A node that died is restarted after this, doubling per quick death up to restartDelayMsMax. */
  restartDelayMs: number;
  restartDelayMsMax: number;
  /** A run that lasted this long resets the restart backoff. */
  stableRunMs: number;
  /** A dead node not listed dead by then restarts with its data (a mode without failover); with the
   *  lease in force, at least until the manager may have failed it over (deadWaitMsFor). */
  deadWaitMs: number;
  /** `rowan cluster --detach` waits this long for the cluster to be ready. */
  detachReadyTimeoutMs: number;
}

export const defaultTimings: Readonly<Timings> = Object.freeze({
  leaseMs: 100,
  leaseMsMin: 4,
  leaseMsMax: 600_000,

  prepareTimeoutMs: 2000,
  reconfigureSlackMs: 500,
  failoverRetryMs: 1000,
  movePromoteTimeoutMs: 10_000,
  joinGraceMs: 120_000,
  takeoverGraceMs: 3000,
  recoveryGraceLeases: 5,
  managerHandshakeMs: 10_000,
  managerZkSessionMs: 4000,

  firstRenewMs: 10,
  reconnectMs: 20,
  silentLeases: 2,
  managerConnectTimeoutMs: 1000,
  noGrantMs: 3000,
  authRetryMs: 1000,

  admitWaitMs: 2000,
  backupGoneWaitMs: 3000,
  drainTimeoutMs: 1500,
  evictedExitMs: 2000,
  copyBarrierMs: 10_000,
  catchUpResendMs: 2000,
  catchUpRequestTimeoutMs: 15_000,
  tombstoneSweepPeriodMs: 100,
  commitPointsSaveMs: 200,

  noBufferTimeoutMs: 5000,
  nicParkMs: 200,
  tcpBackoffFirstMs: 1,
  tcpBackoffMsMax: 50,
  receiverHoldTimeoutMs: 1000,
  clientBackoffMsMax: 20,
  tlsHandshakeMs: 10_000,
  sharedLogAllocationWaitMs: 10_000,

  zkConnectTimeoutMs: 5000,
  zkSessionTimeoutMs: 10_000,
  zkStallMsMin: 1000,
  zkStallMsMax: 3000,
  zkCloseSessionGraceMs: 2000,

  restartDelayMs: 1000,
  restartDelayMsMax: 30_000,
  stableRunMs: 10_000,
  deadWaitMs: 10_000,
  detachReadyTimeoutMs: 300_000,
});

/** A lease as the manager grants it: renew every renewMs, held until t_send + leaseMs - driftMs. */
export interface LeaseTiming {
  leaseMs: number;
  renewMs: number;
  driftMs: number;
}

/** renewMs = leaseMs / 5, driftMs = leaseMs / 20 (at least 1 ms), checked (BAD_ARGUMENT: a flag).
 *  The renew period does not bear on safety (a grant holds from when its renew was sent), only on how
 *  long a node may go without a renewal getting through before it fences itself: leaseMs - driftMs -
 *  renewMs (75 ms at the default 100 ms lease). leaseMs / 3 saves 40 % of the renewals, most of an
 *  idle cluster's CPU (issue 26), but live nodes lost leases with it under load on the 2-core machine
 *  when the main thread renewed (failover-lease once in four runs at load 25, 200 ms leases): `--renew-ms`
 *  chooses it. */
export function leaseTiming(leaseMs: number, renewMs?: number, driftMs?: number, t: Timings = defaultTimings): LeaseTiming {
  const l = {
    leaseMs,
    renewMs: renewMs ?? Math.max(1, Math.floor(leaseMs / 5)),
    driftMs: driftMs ?? Math.max(1, Math.ceil(leaseMs / 20)),
  };
  if (!(l.leaseMs >= t.leaseMsMin && l.leaseMs <= t.leaseMsMax)) throw new RowanError(ErrorCodes.BAD_ARGUMENT, `leaseMs ${l.leaseMs} is not in [${t.leaseMsMin}, ${t.leaseMsMax}]`);
  // A node must get at least two renewals in before its lease (minus the margin) runs out.
  if (!(l.renewMs >= 1 && 2 * l.renewMs <= l.leaseMs - l.driftMs)) {
    throw new RowanError(ErrorCodes.BAD_ARGUMENT, `renewMs ${l.renewMs} must allow two renewals within leaseMs - driftMs (${l.leaseMs - l.driftMs} ms)`);
  }
  return l;
}

// ---- waits derived from the lease in force --------------------------------------------------------

/** By when, after a node's last renew, the manager may have failed it over: its lease certainly
 *  expired (leaseMs + driftMs on the manager's clock, `leaseSpanMs`), a prepare round, then the store
 *  and the commit. A wait for the outcome of that failover must be at least this long. */
export function failoverBoundMs(t: Timings, leaseSpanMs: number): number {
  return leaseSpanMs + t.prepareTimeoutMs + t.reconfigureSlackMs;
}

/** How long a write waits for a gone backup to be removed, under a lease of `leaseSpanMs` (leaseMs +
 *  driftMs; 0 before the first grant). backupGoneWaitMs at the default lease. */
export function backupGoneWaitMsFor(t: Timings, leaseSpanMs: number): number {
  return Math.max(t.backupGoneWaitMs, failoverBoundMs(t, leaseSpanMs));
}

/** How long the supervisor waits for a dead node to be listed dead under `lease`. */
export function deadWaitMsFor(t: Timings, lease: LeaseTiming): number {
  return Math.max(t.deadWaitMs, failoverBoundMs(t, lease.leaseMs + lease.driftMs));
}

/** How long a node waits for a grant before it tries the next manager, when grants come every
 *  `renewMs` (null: none came yet): a healthy manager is never left for a late grant or two. */
export function noGrantMsFor(t: Timings, renewMs: number | null): number {
  return Math.max(t.noGrantMs, 2 * (renewMs ?? 0));
}

// ---- relations, asserted at load ------------------------------------------------------------------

export function checkTimings(t: Timings): Timings {
  const bad = (msg: string): never => {
    throw new RowanError(ErrorCodes.BAD_CONFIG, `timings: ${msg}`);
  };
  for (const [k, v] of Object.entries(t) as [string, number][]) {
    if (!(Number.isFinite(v) && v > 0)) bad(`${k} must be a positive number of ms (got ${v})`);
  }
  for (const k of ['silentLeases', 'recoveryGraceLeases'] as const) if (!Number.isInteger(t[k])) bad(`${k} must be a whole number of leases (got ${t[k]})`);
  if (!(t.leaseMsMin >= 4 && t.leaseMsMin <= t.leaseMs && t.leaseMs <= t.leaseMsMax && t.leaseMsMax <= 2 ** 31 - 1))
    bad(`leases must satisfy 4 <= leaseMsMin (${t.leaseMsMin}) <= leaseMs (${t.leaseMs}) <= leaseMsMax (${t.leaseMsMax}) <= 2^31 - 1 (renewals of at least 1 ms; a lease counter of Int32 ms)`);
  let lease: LeaseTiming;
  try {
    lease = leaseTiming(t.leaseMs, undefined, undefined, t);
  } catch (err) {
    return bad(`the default lease: ${(err as Error).message}`);
  }
  const span = lease.leaseMs + lease.driftMs;
  // A move's source gives up draining (and says so) while the manager still waits for its `prepared`:
  // otherwise the manager moves on without the source's answer and the source drains for nothing.
  if (!(t.drainTimeoutMs < t.prepareTimeoutMs)) bad(`drainTimeoutMs (${t.drainTimeoutMs}) must be below prepareTimeoutMs (${t.prepareTimeoutMs}): a move's source must answer before the manager stops waiting for it`);
  // A write waiting for a gone backup, and the supervisor waiting for a dead node to be listed dead,
  // must outlast the failover that removes it (at the default lease; failoverBoundMs derives the
  // others).
  const bound = failoverBoundMs(t, span);
  if (!(t.backupGoneWaitMs >= bound))
    bad(`backupGoneWaitMs (${t.backupGoneWaitMs}) must be at least leaseMs + driftMs + prepareTimeoutMs + reconfigureSlackMs (${bound}): a write must outlast the failover that removes its gone backup`);
  if (!(t.deadWaitMs >= bound))
    bad(`deadWaitMs (${t.deadWaitMs}) must be at least leaseMs + driftMs + prepareTimeoutMs + reconfigureSlackMs (${bound}): a failed-over node must not restart with its stale data`);
  // Grants come every renewMs: a node must not leave a healthy manager for one late grant.
  if (!(t.noGrantMs >= 2 * lease.renewMs)) bad(`noGrantMs (${t.noGrantMs}) must be at least two renew periods of the default lease (${2 * lease.renewMs})`);
  // A member left on a silent previous manager moves on to the new one within noGrantMs: the new
  // manager must not suspect it before then. And a cold start takes longer than a reconnect.
  if (!(t.takeoverGraceMs >= t.noGrantMs)) bad(`takeoverGraceMs (${t.takeoverGraceMs}) must be at least noGrantMs (${t.noGrantMs}): members of a silent manager move on only after noGrantMs`);
  if (!(t.joinGraceMs >= t.takeoverGraceMs)) bad(`joinGraceMs (${t.joinGraceMs}) must be at least takeoverGraceMs (${t.takeoverGraceMs})`);
  // After a manager was cut off, each member reconnects once it heard nothing for silentLeases leases:
  // the manager's grace must cover that, or it suspects members that are about to come back.
  if (!(t.recoveryGraceLeases > t.silentLeases)) bad(`recoveryGraceLeases (${t.recoveryGraceLeases}) must exceed silentLeases (${t.silentLeases}): members reconnect only after silentLeases leases`);
  // A node's first renewals come before the first grant tells the period: no slower than reconnects.
  if (!(t.firstRenewMs <= t.reconnectMs && t.reconnectMs <= t.authRetryMs)) bad(`firstRenewMs (${t.firstRenewMs}) <= reconnectMs (${t.reconnectMs}) <= authRetryMs (${t.authRetryMs}) must hold`);
  // A parked or backed-off write is answered and re-sent well before its sender gives up on it.
  if (!(t.nicParkMs < t.noBufferTimeoutMs)) bad(`nicParkMs (${t.nicParkMs}) must be below noBufferTimeoutMs (${t.noBufferTimeoutMs})`);
  if (!(t.tcpBackoffFirstMs <= t.tcpBackoffMsMax && t.tcpBackoffMsMax < t.noBufferTimeoutMs))
    bad(`tcp backoffs must satisfy tcpBackoffFirstMs (${t.tcpBackoffFirstMs}) <= tcpBackoffMsMax (${t.tcpBackoffMsMax}) < noBufferTimeoutMs (${t.noBufferTimeoutMs})`);
  // A stalled ZooKeeper reconnect is restarted while the server would still restore the session.
  if (!(t.zkStallMsMin <= t.zkStallMsMax && t.zkStallMsMax < t.zkSessionTimeoutMs))
    bad(`zookeeper stalls must satisfy zkStallMsMin (${t.zkStallMsMin}) <= zkStallMsMax (${t.zkStallMsMax}) < zkSessionTimeoutMs (${t.zkSessionTimeoutMs})`);
  if (!(t.restartDelayMs <= t.restartDelayMsMax && t.restartDelayMs <= t.stableRunMs))
    bad(`restarts must satisfy restartDelayMs (${t.restartDelayMs}) <= restartDelayMsMax (${t.restartDelayMsMax}) and <= stableRunMs (${t.stableRunMs})`);
  return t;
}
