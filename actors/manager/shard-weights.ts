// What one replica of a shard weighs when the membership balancing (./membership.ts) spreads replicas
// and primaries over the members (issue 28: "by load and by bytes, not only by count"). Pure and
// deterministic: the same configuration and statistics give the same weights.
//
// A shard's weight is the mean of three measures, each scaled so that the average shard scores 1:
//   count   1 for every shard (what the balancing counted before: many small shards still cost room,
//           index memory and a share of the node's work, and with no statistics this is all there is)
//   bytes   its live bytes (its primary's report, ../shared/shard-load.ts primaryShardBytes) over the
//           mean shard's
//   load    its requests/s (its primary's report, ./load.ts) over the mean shard's
// A measure nobody reported (an idle cluster, a manager just started) scores 1 for every shard, so the
// weights fall back to the counts. The mean shard weighs 1, and a member's weight is the sum of its
// replicas' (or its primaries') weights: "one replica more than another member" keeps its meaning.
import type { ClusterConfig } from '../../config/cluster.js';
import type { ShardRate } from './load.js';

/** What the manager knows of each shard's size and load (./load.ts LoadTable). */
export interface ShardStats {
  rates: ReadonlyMap<number, ShardRate>;
  bytes: ReadonlyMap<number, number>;
}

/** Weights are rounded to millionths: a plan does not hinge on floating-point noise. */
const PER_UNIT = 1e6;

/** Each shard's weight (index = shard id); all 1 without statistics. */
export function shardWeights(c: ClusterConfig, stats?: ShardStats): number[] {
  const ids = c.shards.map((s) => s.id);
  const bytes = scaled(ids.map((s) => stats?.bytes.get(s) ?? 0));
  const load = scaled(ids.map((s) => stats?.rates.get(s)?.reqs ?? 0));
  return ids.map((_, i) => Math.round(((1 + bytes[i]! + load[i]!) / 3) * PER_UNIT) / PER_UNIT);
}

/** `xs` over their mean (1 each when they sum to nothing). */
function scaled(xs: readonly number[]): number[] {
  const total = xs.reduce((a, b) => a + b, 0);
  if (!(total > 0)) return xs.map(() => 1);
  return xs.map((x) => (x * xs.length) / total);
}
