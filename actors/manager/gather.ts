// Gather/scatter planning (§4.5 phase 2), the manager's side: from what each surviving member listed in
// its `prepared` acknowledgement (entries of the shards changing primary that it may hold alone; node
// side in actors/shared/gather-scatter.ts, limits in actors/shared/manager-protocol.ts) build, per moved shard, the union
// by (shard, version) -- a version names one write of a shard -- and for every surviving replica of the
// shard in the new configuration (new primary and remaining backups) the entries it did not list.
// Pure: the manager sends the result in `commit`.
import type { ClusterConfig } from '../../config/cluster.js';
import { SCATTER_BYTES_MAX, gatherEntryBytes, type GatherEntry } from '../shared/manager-protocol.js';

export interface MemberReport {
  entries: GatherEntry[];
  truncated: boolean;
}

export interface ScatterPlan {
  /** Entries to send each member (only those with something to receive). */
  perMember: Map<number, GatherEntry[]>;
  /** Distinct entries in the union over all moved shards. */
  gathered: number;
  /** Entries sent, summed over members. */
  scattered: number;
  /** Why the set cannot be complete (members that listed only part, sends cut at the limit); empty when
   *  every surviving replica ends up with the whole union. */
  incomplete: string[];
}

/**
 * `moved`: shards whose primary changed. `reports`: what each member that acknowledged `prepare` listed.
 * `reachable`: members the manager can send a commit to. A reachable replica that did not acknowledge
 * (its prepare timed out) is sent the whole union: what it holds is unknown, and it skips what it has.
 */
export function planScatter(
  next: ClusterConfig,
  moved: readonly number[],
  reports: ReadonlyMap<number, MemberReport>,
  reachable: ReadonlySet<number>,
  bytesMax = SCATTER_BYTES_MAX,
): ScatterPlan {
  const plan: ScatterPlan = { perMember: new Map(), gathered: 0, scattered: 0, incomplete: [] };
  for (const [node, r] of reports) if (r.truncated) plan.incomplete.push(`node ${node} listed only part of its entries`);
  const bytes = new Map<number, number>();
  for (const shard of moved) {
    const union = new Map<number, GatherEntry>(); // by version
    const has = new Map<number, Set<number>>(); // member -> versions it listed
    for (const [node, r] of reports) {
      const mine = new Set<number>();
      for (const e of r.entries) {
        if (e.s !== shard) continue;
        mine.add(e.v);
        if (!union.has(e.v)) union.set(e.v, e);
      }
      has.set(node, mine);
    }
    plan.gathered += union.size;
    if (union.size === 0) continue;
    const s = next.shards[shard]!;
    for (const member of [s.primary, ...s.backups]) {
      if (!reachable.has(member)) continue;
      const listed = has.get(member);
      for (const [v, e] of union) {
        if (listed?.has(v)) continue;
        const b = (bytes.get(member) ?? 0) + gatherEntryBytes(e);
        if (b > bytesMax) {
          plan.incomplete.push(`node ${member} would be sent over ${bytesMax} B (shard ${shard} version ${v} and later left out)`);
          break;
        }
        bytes.set(member, b);
        let out = plan.perMember.get(member);
        if (!out) plan.perMember.set(member, (out = []));
        out.push(e);
        plan.scattered++;
      }
    }
  }
  return plan;
}
