// Leases (§4.5, FaRM [31]) and the timing argument that makes them safe.
//
// A node's lease client sends `renew` at t_send (its clock) every renewMs and, on the grant, holds its
// lease until t_send + leaseMs - driftMs. The manager records t_recv, the instant it received the last
// renew it granted, and counts the node's lease as *certainly* expired only at
//     t_recv + leaseMs + driftMs.
// Because the renew was sent before it was received (t_send <= t_recv in real time), the node stops
// serving at least 2 * driftMs before the manager may reassign its shards, as long as the two clocks
// disagree on the length of one lease by less than 2 * driftMs (a rate drift, not an offset: each side
// only measures an interval on its own monotonic clock). On one host both read the same
// CLOCK_MONOTONIC, so the margin only covers scheduling (a check that read the clock just before the
// lease end and acknowledges just after -- the worker checks the lease again before it acknowledges a
// write, actors/worker/primary.ts). Across hosts crystal drift is < 100 ppm; driftMs = leaseMs / 20
// (5 %) leaves orders of magnitude to spare.
//
// Numbers (defaults of `rowan cluster` / `rowan manager`, config/timings.ts): leaseMs 100, renewMs 20 (five renewals per
// lease: a live node fences itself once no renewal got through for leaseMs - driftMs - renewMs = 75 ms;
// the period bears on that only, not on safety), driftMs 5. A dead node's shards
// move at the earliest 105 ms after its last renew. The paper uses 10 ms leases on dedicated cores
// with RDMA; here renewals and grants run on SCHED_FIFO threads (the node's lease thread, this
// manager's thread), and every renewal costs an idle node CPU, so the default is longer.
import { defaultTimings, type LeaseTiming } from '../../config/timings.js';

export { leaseTiming, type LeaseTiming } from '../../config/timings.js';

/** The manager's view: the last renew received from each member. */
export class LeaseTable {
  private readonly lastRenew = new Map<number, number>();
  /** The last hello/renew received from each member, granted or not (a member being failed over
   *  gets no grant, but what it sends still shows it is alive and reaches this manager). */
  private readonly lastHeard = new Map<number, number>();

  constructor(
    readonly timing: LeaseTiming,
    /** When this manager started: a node it never heard from may still hold a lease granted by a
     *  previous manager until at most startedAt + leaseMs + driftMs. */
    private readonly startedAt: number,
    /** How long a member that never connected to this manager has to do so (a node's cold start)
     *  before it is suspected. Waiting longer than its lease is never unsafe, only slower. */
    private readonly joinGraceMs: number = defaultTimings.joinGraceMs,
  ) {}

  /** When each member added while this manager runs was added (its join grace counts from there). */
  private readonly addedAt = new Map<number, number>();

  /** `node` becomes a member at `at` (`rowan node add`): a node never heard from has its join grace
   *  from then, not from this manager's start (which may be long over: it was failed over before its
   *  cold start could end). */
  added(node: number, at: number): void {
    this.addedAt.set(node, at);
  }

  /** A renew from `node` received at `at`; returns the gap since the previous one (Infinity: none). */
  renewed(node: number, at: number): number {
    const prev = this.lastRenew.get(node) ?? -Infinity;
    this.lastRenew.set(node, Math.max(at, prev));
    return at - prev;
  }

  /** The instant from which `node` certainly serves nothing under its lease. */
  certainlyExpiredAt(node: number): number {
    return (this.lastRenew.get(node) ?? this.startedAt) + this.timing.leaseMs + this.timing.driftMs;
  }

  /**
   * This manager heard no member from `silentFrom` until now (it was cut off, or paused): excuse,
   * until `until`, every member whose lease was still valid when that silence began -- their
   * renewals were lost or held up with everyone's, and each comes back at its own pace (see
   * ./reach.ts). A member already expired then is not excused (it was silent before the manager
   * was): however often the manager's own silences recur, a dead node waits at most one excuse.
   * Only ever delays a failover.
   */
  excuse(members: number[], silentFrom: number, until: number): number[] {
    const excused = members.filter((n) => this.certainlyExpiredAt(n) > silentFrom);
    for (const n of excused) this.excusedUntil.set(n, Math.max(until, this.excusedUntil.get(n) ?? -Infinity));
    return excused;
  }

  /** Whether `node` is excused at `now` (not suspected, its failover waits). */
  excused(node: number, now: number): boolean {
    return now < (this.excusedUntil.get(node) ?? -Infinity);
  }

  private readonly excusedUntil = new Map<number, number>();

  /** Members whose lease has certainly expired at `now` (one never heard from: after the join
   *  grace), not counting the excused. */
  expired(members: number[], now: number): number[] {
    return members.filter((n) => now >= this.expiresAt(n, now));
  }

  /** The earliest instant at which expired() could list one of `members` (Infinity: none). */
  nextExpiry(members: number[], now: number): number {
    let next = Infinity;
    for (const n of members) next = Math.min(next, this.expiresAt(n, now));
    return next;
  }

  /** From when expired() lists `node`, as of `now`: its lease certainly expired (one never heard from:
   *  its join grace ran out) and no excuse holds any more. */
  private expiresAt(node: number, now: number): number {
    const joinFrom = Math.max(this.startedAt, this.addedAt.get(node) ?? -Infinity);
    const at = this.lastRenew.has(node) ? this.certainlyExpiredAt(node) : joinFrom + Math.max(this.joinGraceMs, this.timing.leaseMs + this.timing.driftMs);
    return this.excused(node, now) ? Math.max(at, this.excusedUntil.get(node)!) : at;
  }

  heard(node: number, at: number): void {
    this.lastHeard.set(node, Math.max(at, this.lastHeard.get(node) ?? -Infinity));
  }

  /** When `node` was last heard from (-Infinity: never by this manager). */
  lastHeardAt(node: number): number {
    return this.lastHeard.get(node) ?? -Infinity;
  }

  /** The last renew received, for status. */
  lastRenewAt(node: number): number | undefined {
    return this.lastRenew.get(node);
  }
}
