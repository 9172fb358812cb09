// Which members reach the configuration manager (docs/failover.md "Partitions"), for ./manager.ts: a manager
// cut off from the whole cluster must not mistake its own isolation for the members' failures.
import type { Clock } from '../../config/base/clock.js';
import type { Logger } from '../../config/base/log.js';
import type { LeaseTable, LeaseTiming } from './leases.js';
import { defaultTimings } from '../../config/timings.js';

export interface ReachHost {
  readonly timing: LeaseTiming;
  readonly leases: LeaseTable;
  members(): number[];
  /** Members that could take `failed`'s shards: connected and not being failed over themselves. */
  candidates(failed: number): number[];
  /** Ask `nodes` to renew now (absent: wait for their periodic renewals). */
  solicit?(nodes: number[]): void;
  closed(): boolean;
  sleep(ms: number): Promise<void>;
  readonly clock: Clock;
  readonly log: Logger;
}

export class Reach {
  private heardAny = -Infinity;
  private saidCutOff = false;

  constructor(private readonly h: ReachHost) {}

  /**
   * A member is alive and reaches us (granted or not, see the manager's failover()). Every member
   * renews each renewMs, so the first one heard after more than two renewal periods in which no
   * member was heard means this manager was cut off from all of them, or paused (or all were down):
   * the others come back each at its own pace -- a reconnect, or a TCP connection still backing off
   * the retransmissions the cut lost, which can take longer than the cut itself -- so those whose
   * lease was valid when the silence began are not suspected for a few leases (LeaseTable.excuse).
   * A cut shorter than a lease needs it as much as a long one (nemesis seed 884161638: a 762 ms cut
   * under a 1000 ms lease evicted a healthy node).
   */
  heardFrom(node: number, now: number): void {
    const t = this.h.timing;
    const silentMs = now - this.heardAny;
    if (Number.isFinite(silentMs) && silentMs > 2 * t.renewMs && this.h.members().length > 1) {
      const graceMs = defaultTimings.recoveryGraceLeases * t.leaseMs;
      const excused = this.h.leases.excuse(this.h.members(), this.heardAny, now + graceMs);
      this.h.log.warn({ node, silentMs: +silentMs.toFixed(0), graceMs, excused }, `heard from node ${node} after ${silentMs.toFixed(0)} ms in which no member was heard (this manager was cut off or paused); node(s) ${excused.join(', ') || 'none'} not suspected for the next ${graceMs} ms while they reconnect`);
    }
    this.heardAny = now;
    this.saidCutOff = false;
    this.h.leases.heard(node, now);
  }

  /**
   * The members that may take `failed`'s shards: candidates heard from at or after `since` (when the
   * failure was detected). Waits, at most a lease, for each candidate's next renew -- and for any
   * other member's, when none is a candidate. Why: a manager cut off from the whole cluster sees
   * every lease expire at once, the first one detected while the others still look valid; planning
   * then would move shards between nodes that are all fine, and store a new term the whole cluster
   * has to follow for nothing. A renew received after the detection is evidence the target still
   * reaches this manager. Whether anything may be stored at all is cutOff()'s answer, not this set's
   * size: a node holding backups only (or nothing) needs no target. The members not heard yet are
   * asked to renew now, so the wait is a round trip rather than up to a renewal period (every node
   * renews on the same grid, renewMs apart: 10 ms of a failover on average at the default lease).
   */
  async heardSince(failed: number, since: number): Promise<Set<number>> {
    const { timing: t, leases, clock } = this.h;
    const heard = (n: number) => leases.lastHeardAt(n) >= since;
    this.h.solicit?.(this.h.members().filter((n) => n !== failed && !heard(n)));
    const until = clock.now() + t.leaseMs + t.driftMs;
    const waiting = () => this.h.candidates(failed).some((n) => !heard(n)) || this.cutOff(failed, since);
    while (!this.h.closed() && waiting() && clock.now() < until && leases.lastHeardAt(failed) <= since) {
      await this.h.sleep(Math.max(1, Math.floor(t.renewMs / 4)));
    }
    return new Set(this.h.candidates(failed).filter(heard));
  }

  /**
   * Whether this manager looks cut off from the cluster: there are members besides `failed`, and
   * none of them was heard from at or after `since`. Its own silence is then no evidence that
   * `failed` is down -- it may be this manager that nobody reaches -- so no configuration change may
   * be stored, whatever `failed` holds: evicting a healthy node that holds backups only would leave
   * its shards a replica short, and it would rejoin empty to be copied again.
   */
  cutOff(failed: number, since: number): boolean {
    const others = this.h.members().filter((n) => n !== failed);
    return others.length > 0 && others.every((n) => this.h.leases.lastHeardAt(n) < since);
  }

  /** Say, once per silence (heardFrom() resets it), that nothing is stored while cut off. */
  sayCutOff(failed: number, since: number): void {
    if (this.saidCutOff) return;
    this.saidCutOff = true;
    this.h.log.warn({ node: failed, since }, `no other member has renewed since node ${failed}'s failure was detected: this manager looks cut off from the cluster; nothing is reassigned, whatever node ${failed} holds, until members renew again`);
  }

  /** Wait until some member (`failed` included) is heard from after `from`, or the manager closes. */
  async untilHeard(from: number): Promise<void> {
    const { timing: t, leases } = this.h;
    while (!this.h.closed() && this.h.members().every((n) => leases.lastHeardAt(n) <= from)) {
      await this.h.sleep(Math.max(1, Math.floor(t.renewMs / 4)));
    }
  }
}
