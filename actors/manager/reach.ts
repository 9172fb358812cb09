// Which members reach the configuration manager (README "Partitions"), for ./manager.ts: a manager
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
  /** How many members are being failed over. */
  failing(): number;
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
   * A member is alive and reaches us (granted or not, see the manager's failover()). The first one
   * heard after a lease in which no member was heard means this manager was cut off from all of them
   * (or all were down): the others come back each at its own reconnect, so nobody is suspected for a
   * few leases.
   */
  heardFrom(node: number, now: number): void {
    const t = this.h.timing;
    const silentMs = now - this.heardAny;
    if (Number.isFinite(silentMs) && silentMs > t.leaseMs + t.driftMs && this.h.members().length > 1) {
      const graceMs = defaultTimings.recoveryGraceLeases * t.leaseMs;
      this.h.leases.graceUntil(now + graceMs);
      this.h.log.warn({ node, silentMs: +silentMs.toFixed(0), graceMs }, `heard from node ${node} after ${silentMs.toFixed(0)} ms in which no member was heard (this manager was cut off); no member is suspected for the next ${graceMs} ms while they reconnect`);
    }
    this.heardAny = now;
    this.saidCutOff = false;
    this.h.leases.heard(node, now);
  }

  /**
   * The members that may take `failed`'s shards: candidates heard from at or after `since` (when the
   * failure was detected). Waits, at most a lease, for each candidate's next renew. Why: a manager
   * cut off from the whole cluster sees every lease expire at once, the first one detected while the
   * others still look valid; planning then would move shards between nodes that are all fine, and
   * store a new term the whole cluster has to follow for nothing. A renew received after the
   * detection is evidence the target still reaches this manager. With none heard, no plan is made
   * (planFailover refuses) and the failover is retried.
   */
  async heardSince(failed: number, since: number): Promise<Set<number>> {
    const { timing: t, leases, clock } = this.h;
    const heard = (n: number) => leases.lastHeardAt(n) >= since;
    const until = clock.now() + t.leaseMs + t.driftMs;
    while (!this.h.closed() && this.h.candidates(failed).some((n) => !heard(n)) && clock.now() < until && leases.lastHeardAt(failed) <= since) {
      await this.h.sleep(Math.max(1, Math.floor(t.renewMs / 4)));
    }
    const candidates = this.h.candidates(failed);
    const live = new Set(candidates.filter(heard));
    if (live.size === 0 && candidates.length + this.h.failing() > 1 && !this.saidCutOff) {
      this.saidCutOff = true; // once per silence (heardFrom() resets it)
      this.h.log.warn({ node: failed, since }, `no other member has renewed since node ${failed}'s failure was detected: this manager looks cut off from the cluster; nothing is reassigned`);
    }
    return live;
  }
}
