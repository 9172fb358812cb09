// The manager's view of the cluster's load (§4.6): every node reports, each resharding period, the
// requests it served per shard as primary and the writes among them (actors/shared/shard-load.ts). A node's load
// is what it serves as primary plus, for every shard it backs up, the writes its primary replicated to
// it, weighted by BACKUP_WRITE_WEIGHT: a Rowan write costs the backup no worker CPU, only its digest
// actor's parse and index update (§4.3), about half of what serving the request costs the primary.
import type { ClusterConfig } from '../../config/cluster.js';

export const BACKUP_WRITE_WEIGHT = 0.5;

/** Per shard requests/s (as primary) and writes/s among them. */
export interface ShardRate {
  reqs: number;
  writes: number;
}

interface Report {
  at: number;
  term: number;
  /** Its place among every report recorded (1, 2, ...): which reports came after a plan. */
  seq: number;
  rates: Map<number, ShardRate>;
  /** Live bytes of the shards the node is primary of (issue 28). */
  bytes: Map<number, number>;
}

export class LoadTable {
  private readonly reports = new Map<number, Report>();
  /** Reports recorded so far. */
  seq = 0;

  /** A node's `load` message: flat (shard, requests, writes) triples counted over `periodMs`, and flat
   *  (shard, live bytes) pairs of the shards it is primary of. */
  record(node: number, term: number, periodMs: number, flat: readonly number[], now: number, sizes: readonly number[] = []): void {
    if (!(periodMs > 0) || flat.length % 3 !== 0) return;
    const rates = new Map<number, ShardRate>();
    for (let i = 0; i + 2 < flat.length; i += 3) {
      const [shard, reqs, writes] = [flat[i]!, flat[i + 1]!, flat[i + 2]!];
      if (!Number.isInteger(shard) || shard < 0 || !(reqs >= 0) || !(writes >= 0)) continue; // a broken report counts nothing
      rates.set(shard, { reqs: (reqs * 1000) / periodMs, writes: (writes * 1000) / periodMs });
    }
    const bytes = new Map<number, number>();
    for (let i = 0; i + 1 < sizes.length; i += 2) {
      const [shard, b] = [sizes[i]!, sizes[i + 1]!];
      if (Number.isInteger(shard) && shard >= 0 && b >= 0 && Number.isFinite(b)) bytes.set(shard, b);
    }
    this.reports.set(node, { at: now, term, seq: ++this.seq, rates, bytes });
  }

  /** Live bytes per shard, from the latest report naming it (its primary's; during a move both the
   *  source and the target may name it, and the newer one wins). */
  shardBytes(): Map<number, number> {
    const out = new Map<number, number>();
    const newest = new Map<number, number>();
    for (const r of this.reports.values()) {
      for (const [s, b] of r.bytes) {
        if ((newest.get(s) ?? -1) > r.seq) continue;
        newest.set(s, r.seq);
        out.set(s, b);
      }
    }
    return out;
  }

  forget(node: number): void {
    this.reports.delete(node);
  }

  /** Whether every node in `nodes` reported since `since` at term `term` or later, and after the
   *  report numbered `afterSeq` (default: any). An empty report at such a term stands until the node
   *  sends another: an idle node repeats it only every IDLE_REPORT_EVERY_PERIODS periods
   *  (../shared/shard-load.ts LoadReportGate), and reports at once when it counts anything. */
  freshFor(nodes: readonly number[], since: number, term: number, afterSeq = 0): boolean {
    return nodes.every((n) => {
      const r = this.reports.get(n);
      return r !== undefined && r.term >= term && (r.rates.size === 0 || (r.at >= since && r.seq > afterSeq));
    });
  }

  /** Rates per shard, summed over the nodes' latest reports (one primary reports each shard). */
  shardRates(): Map<number, ShardRate> {
    const out = new Map<number, ShardRate>();
    for (const r of this.reports.values()) {
      for (const [s, x] of r.rates) {
        const o = out.get(s) ?? { reqs: 0, writes: 0 };
        out.set(s, { reqs: o.reqs + x.reqs, writes: o.writes + x.writes });
      }
    }
    return out;
  }
}

/** Load of each of `nodes` under configuration `c` with the given shard rates. */
export function nodeLoads(c: ClusterConfig, rates: ReadonlyMap<number, ShardRate>, nodes: readonly number[]): Map<number, number> {
  const load = new Map<number, number>(nodes.map((n) => [n, 0]));
  for (const s of c.shards) {
    const r = rates.get(s.id);
    if (!r) continue;
    if (load.has(s.primary)) load.set(s.primary, load.get(s.primary)! + r.reqs);
    for (const b of s.backups) if (load.has(b)) load.set(b, load.get(b)! + BACKUP_WRITE_WEIGHT * r.writes);
  }
  return load;
}

/**
 * When automatic resharding plans (§4.6): once per generation of reports -- as soon as every reachable
 * member has reported since the last plan, a whole period after the last configuration change -- and
 * it moves only when two generations in a row are overloaded. One report period straddling the onset
 * of a hotspot shows a mix of the old and the new load, and would move the wrong shard. Planning on
 * the report that completes a generation, not on a timer of the manager's own, adds no wait for a tick
 * and never counts one report twice.
 */
export class OverloadDetector {
  private lastPlanSeq = 0;
  private seen = 0;

  /** Whether a new generation is complete: every one of `members` reported after the last plan, at
   *  `term` or later, and since `since`. */
  due(loads: LoadTable, members: readonly number[], since: number, term: number): boolean {
    return members.length > 0 && loads.freshFor(members, since, term, this.lastPlanSeq);
  }

  /** Whether any report came since the last plan (a generation may be complete): one comparison, for
   *  the manager's every-millisecond tick. */
  news(loads: LoadTable): boolean {
    return loads.seq > this.lastPlanSeq;
  }

  /** The generation was planned, with `moves` moves: true when it is the second overloaded one in a row
   *  (the counting starts over). */
  planned(loads: LoadTable, moves: number): boolean {
    this.lastPlanSeq = loads.seq;
    this.seen = moves === 0 ? 0 : this.seen + 1;
    if (this.seen < 2) return false;
    this.seen = 0;
    return true;
  }
}
