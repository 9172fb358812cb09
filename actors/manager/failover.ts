// The failover of one node (§4.5 phase 1), run by the configuration manager's drain loop
// (./manager.ts), one node at a time:
//   detected   X's connection dropped (a hint) or its lease certainly expired; X gets no more grants
//   (wait)     when its lease expired with its connection still open (a pause, a cut): until X's lease
//              has certainly expired (./leases.ts), so that X, heard from again meanwhile, keeps its
//              shards. When its connection closed (its process died: the kernel closed its sockets),
//              planning starts at once -- X gets no grant from the detection on -- and only the
//              commit waits for the lease (below). Either way planning waits for the other members'
//              next renewals (./reach.ts heardSince): nodes that died with X (the whole cluster, in a
//              power loss) have dropped their connections by then, and no shard is handed to one of
//              them -- with none live the failover waits and retries, so a cluster restarted after it
//              keeps every node.
//              While no other member is heard at all, this manager may be the one cut off: nothing is
//              stored, whatever X holds (primaries, backups only, nothing), until members renew
//   stored     the new configuration (./plan.ts) written with a compare-and-set on the term
//   prepared   every live member acknowledged `prepare` (it blocks requests) -- or timed out; each
//              listed the entries of the moved shards it may hold alone (gather, ./gather.ts)
//   (wait)     until X's lease has certainly expired: never a second primary. A write X acknowledges
//              in between is persistent on every replica, the new primary's among them, whose promotion
//              applies its b-log after the commit; one X does not acknowledge is the late entry
//              docs/failover.md describes, as a write in flight at the prepare always was.
//   committed  `commit` sent, with each surviving replica of a moved shard the gathered entries it
//              lacks (scatter): members serve the new configuration; promoted shards catch up first
//   promoted   every new primary reported phase 2 done
// Each step is one log line with `event` and `at` (monotonic ms, comparable across processes on this
// host): `rowan cluster` prints them, the failover benchmark plots them.
import type { Clock } from '../../config/base/clock.js';
import type { ClusterConfig } from '../../config/cluster.js';
import type { Logger } from '../../config/base/log.js';
import type { RoundsHost } from './rounds.js';
import type { LeaseTable, LeaseTiming } from './leases.js';
import { planFailover, type FailoverPlan } from './plan.js';
import type { Reach } from './reach.js';

export interface FailoverRecord {
  node: number;
  term: number;
  moved: FailoverPlan['moved'];
  detectedAt: number;
  storedAt?: number;
  preparedAt?: number;
  committedAt?: number;
  promotedAt?: number;
  /** Distinct entries gathered for the moved shards, and entries scattered (summed over members). */
  gathered?: number;
  scattered?: number;
}

export type FailoverStep = 'stored' | 'prepared' | 'committed' | 'promoted';

/** What a failover needs of the manager. */
export interface FailoverHost extends RoundsHost {
  closed(): boolean;
  readonly leases: LeaseTable;
  readonly timing: LeaseTiming;
  readonly reach: Reach;
  /** `node` spoke again before anything was reassigned: it is no longer being failed over. */
  spared(node: number): void;
  /** Whether `node` holds a connection to this manager now. */
  connected(node: number): boolean;
  /** The failover is planned: keep its record (the manager's history). */
  begin(rec: FailoverRecord): void;
  storeConfig(next: ClusterConfig): Promise<void>;
  /** The failed node's configuration is stored: forget its load reports. */
  stored(node: number): void;
  /** Tests only: hold the failover this long after storing its term. */
  pauseAfterStoreMs?: number | undefined;
  /** Tell `node` (should it still listen) that it was removed at `term`. */
  evict(node: number, term: number): void;
  /** The failed node's replicas are to be made again (re-replication). */
  healingWanted(): void;
}

/** Fail `node` over: nothing is stored when it is heard from again first, or the manager closes. */
export async function failOver(h: FailoverHost, node: number): Promise<void> {
  const rec: FailoverRecord = { node, term: h.config().term + 1, moved: [], detectedAt: h.clock.now() };
  failoverEvent(h.log, rec, 'detected', rec.detectedAt);
  const live = await awaitVerdict(h, rec, !h.connected(node));
  if (live === null) return;
  const old = h.config();
  const plan = planFailover(old, node, live);
  h.begin(rec);
  rec.moved = plan.moved;
  await h.storeConfig(plan.next); // compare-and-set on the term; refused when not the active manager
  markFailover(h.log, h.clock, rec, 'stored');
  h.stored(node);
  if (h.pauseAfterStoreMs) {
    h.log.warn({ event: 'debug-pause', term: plan.next.term, ms: h.pauseAfterStoreMs }, `--debug-pause: holding ${h.pauseAfterStoreMs} ms after storing term ${plan.next.term}`);
    await h.sleep(h.pauseAfterStoreMs);
  }
  // Phase 1: push, and every live member blocks and acknowledges.
  const prep = await h.prepareRound(plan.next, plan.moved.map((m) => m.shard));
  if (prep.missing.length > 0) h.log.warn({ term: plan.next.term, missing: prep.missing }, 'prepare not acknowledged by every member in time; committing without them');
  markFailover(h.log, h.clock, rec, 'prepared');
  await untilExpired(h, node);
  if (h.closed()) return;
  // A shard whose move away from the failed node had committed keeps its new primary, which
  // promotes it again, with the floors and the scatter of this failover (./plan.ts).
  const again = plan.moved.filter((m) => old.shards[m.shard]!.primary !== node).map((m) => m.shard);
  const scatter = h.commitRound(plan.next, plan.moved, prep, again, []);
  rec.gathered = scatter.gathered;
  rec.scattered = scatter.scattered;
  h.awaitPromoted(plan.next.term, plan.moved.map((m) => m.to), () => markFailover(h.log, h.clock, rec, 'promoted'));
  h.evict(node, plan.next.term);
  markFailover(h.log, h.clock, rec, 'committed');
  h.log.warn(
    { node, term: plan.next.term, oldTerm: old.term, moved: plan.moved, degraded: plan.degraded.length, gathered: scatter.gathered, scattered: scatter.scattered },
    `failover of node ${node}: term ${plan.next.term}, ${plan.moved.length} shard(s) moved (${plan.moved.map((m) => `${m.shard}->${m.to}`).join(' ')}); ${scatter.gathered} entries gathered, ${scatter.scattered} scattered`,
  );
  h.healingWanted();
}

/**
 * Wait until `rec.node` may be failed over, and return the members that may take its shards; null
 * when it is not to be (heard from again: spared; or the manager closed). Not before its lease has
 * certainly expired unless its connection had closed at the detection (`closed`: the commit waits
 * instead), nor while members reconnect after this manager was cut off, nor while this
 * manager hears no other member at all: then it may be the one cut off, and nothing is stored
 * whatever the node holds (issue 24) -- it waits for members to renew and decides again.
 */
async function awaitVerdict(h: FailoverHost, rec: FailoverRecord, closed: boolean): Promise<Set<number> | null> {
  const node = rec.node;
  for (let first = true; ; first = false) {
    // A node whose connection is open (paused, cut off) gets its whole lease to be heard from again.
    if (!closed || !first) await untilExpired(h, node);
    if (h.closed()) return null;
    // Members reconnecting after this manager was cut off: give `node` the same chance.
    while (!h.closed() && h.leases.excused(node, h.clock.now()) && h.leases.lastHeardAt(node) <= rec.detectedAt) {
      await h.sleep(Math.max(1, Math.floor(h.timing.renewMs / 4)));
    }
    const live = await h.reach.heardSince(node, rec.detectedAt);
    if (h.closed()) return null;
    // The members heard meanwhile showed this manager was the one cut off (`node` was excused):
    // it gets the same chance as they did.
    if (h.leases.excused(node, h.clock.now()) && h.leases.lastHeardAt(node) <= rec.detectedAt) continue;
    if (h.leases.lastHeardAt(node) > rec.detectedAt) {
      // It talks to us again (its renewals were held up, or this manager was the one cut off):
      // nothing was reassigned, so it keeps its shards and is granted again from its next renew.
      h.spared(node);
      const term = h.config().term;
      h.log.warn({ node, term }, `node ${node} was heard from again before its failover was stored: it keeps its shards (term ${term} unchanged)`);
      return null;
    }
    if (!h.reach.cutOff(node, rec.detectedAt)) return live;
    h.reach.sayCutOff(node, rec.detectedAt);
    await h.reach.untilHeard(h.clock.now());
  }
}

/** Wait until `node`'s lease has certainly expired (or the manager closes). */
async function untilExpired(h: FailoverHost, node: number): Promise<void> {
  const wait = h.leases.certainlyExpiredAt(node) - h.clock.now();
  if (wait > 0 && !h.closed()) await h.sleep(wait);
}

/** Record that `rec` reached `step`, and log it. */
export function markFailover(log: Logger, clock: Clock, rec: FailoverRecord, step: FailoverStep): void {
  const at = clock.now();
  rec[`${step}At`] = at;
  failoverEvent(log, rec, step, at);
}

export function failoverEvent(log: Logger, rec: FailoverRecord, event: string, at: number): void {
  log.info({ event, at, node: rec.node, term: rec.term, sinceDetectedMs: +(at - rec.detectedAt).toFixed(2) }, `failover ${event}: node ${rec.node}, term ${rec.term}`);
}
