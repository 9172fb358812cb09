// Membership changes on a live cluster (issue 28), pure: a node added, a node decommissioned, and the
// one step at a time that spreads replicas onto the first or off the second. The manager runs them
// (./membership-runner.ts); every step is a copy move (./copy-moves.ts) or a move of a primary role to
// a full backup (./moves.ts), so a step rolls back, resumes and fences exactly as those do.
//
//   add        term t+1: the node listed in `nodes` holding no shard, `balancing` set. Its process
//              starts from this configuration (it finds its entry), says hello and gets leases.
//   balance    while `balancing` and nothing is moving: one step, deterministic. Replicas are counted
//              and weighed by their shard's bytes and load (./shard-weights.ts: the mean shard weighs
//              1; without statistics every shard does). Counts stay fair; the weights decide which
//              replica goes where --
//                replicas  while two members' counts differ by 2 or more, the one holding most
//                          (heaviest, then lowest id on a tie) copies one replica to the one holding
//                          fewest (lightest on a tie): the shard that brings their weights closest (a
//                          backup first: no handover; lowest id on a tie). Then, between members whose
//                          counts differ by one, a copy that keeps them fair where the giver weighs
//                          more than one average replica above the taker, of a shard lighter than
//                          that difference (every step lowers a sum of squares: balancing ends);
//                primaries then likewise with the primary roles, to a member that holds a full
//                          backup of the shard (a plain move, nothing copied); where none does, along
//                          a chain of full backups (primaryChain).
//              Nothing left to do: term t+1 without `balancing`.
//   leave      term t+1: the node listed in `leaving` (refused, ROWAN_ERR_TOO_FEW_NODES, when the
//              members left would be fewer than the replication factor).
//   drain      while it is leaving and nothing is moving: one step -- a shard it is primary of hands
//              the role to a full backup (the one primary of fewest, the lightest on a tie; a copy when
//              it has none), then a shard it is a backup of is copied to the member holding fewest
//              replicas (the lightest on a tie) among those holding none of it.
//   remove     it holds nothing and no task names it: term t+1 with it out of `nodes`, `leaving` and
//              `dead`, its id in `retired` (never given again). Its next renewal is answered `evicted`:
//              the process stops.
// Members the manager does not reach are neither sources nor targets; a balancing waits for them (or
// for their failover: a dead node is no member). Catching-up backups (re-replication, a copy) are waited for, never moved.
import { isCatchingUp, liveNodes, validateCluster, type ClusterConfig, type ClusterNode } from '../../config/cluster.js';
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import { NODE_ID_MAX } from '../../config/base/ids.js';
import type { Move } from './reshard.js';
import { shardWeights, type ShardStats } from './shard-weights.js';

/** What the manager does next for the membership: a copy move, a plain move, a removal, the end of a
 *  balancing, or nothing now (`wait`: a task in flight, or no usable member). */
export type MembershipStep =
  | { kind: 'copy'; move: Move; why: 'balance' | 'decommission' }
  | { kind: 'move'; move: Move; why: 'balance' | 'decommission' }
  | { kind: 'remove'; node: number }
  | { kind: 'balanced' }
  | { kind: 'wait' };

/** The id a new node gets: above every member's and every retired one's. */
export function nextNodeId(c: ClusterConfig): number {
  const id = Math.max(-1, ...c.nodes.map((n) => n.id), ...(c.retired ?? [])) + 1;
  if (id > NODE_ID_MAX) throw new RowanError(ErrorCodes.MEMBERSHIP_REFUSED, `no node id left (the highest is ${NODE_ID_MAX})`);
  return id;
}

/** Why `node` cannot be added to `c`, or null. */
export function addRefusal(c: ClusterConfig, node: ClusterNode): string | null {
  if ((c.retired ?? []).includes(node.id)) return `node id ${node.id} was retired (a decommissioned node's id is never reused)`;
  if (c.nodes.some((n) => n.id === node.id)) return `node ${node.id} is a member already`;
  const ports = (n: ClusterNode) => [...n.workerPorts, n.fabric.port, ...(n.resp?.ports ?? []), ...(n.resp?.clusterPorts ?? [])].filter((p) => p !== 0).map((p) => `${n.host}:${p}`);
  const taken = new Set(c.nodes.flatMap(ports));
  const clash = ports(node).find((p) => taken.has(p));
  if (clash) return `${clash} is another node's port`;
  if (c.nodes.some((n) => n.dataDir === node.dataDir && n.host === node.host)) return `${node.dataDir} is another node's data directory`;
  return null;
}

/** Term t+1 with `node` a member holding no shard, and the spread (balancing) wanted. */
export function planAddNode(c: ClusterConfig, node: ClusterNode): ClusterConfig {
  const refusal = addRefusal(c, node);
  if (refusal) throw new RowanError(ErrorCodes.MEMBERSHIP_REFUSED, `cannot add node ${node.id}: ${refusal}`);
  const next = structuredClone(c);
  next.term = c.term + 1;
  next.nodes.push(structuredClone(node));
  next.balancing = true;
  return validateCluster(next);
}

/** Live members not leaving. */
export function stayingMembers(c: ClusterConfig): number[] {
  const leaving = new Set(c.leaving ?? []);
  return liveNodes(c).map((n) => n.id).filter((id) => !leaving.has(id));
}

/** Term t+1 with `node` leaving; TOO_FEW_NODES when the members left would be fewer than the factor. */
export function planLeave(c: ClusterConfig, node: number): ClusterConfig {
  if (!c.nodes.some((n) => n.id === node)) throw new RowanError(ErrorCodes.MEMBERSHIP_REFUSED, `there is no node ${node}`);
  if ((c.leaving ?? []).includes(node)) throw new RowanError(ErrorCodes.MEMBERSHIP_REFUSED, `node ${node} is being decommissioned already`);
  const left = stayingMembers(c).filter((n) => n !== node).length;
  if (left < c.replicationFactor) {
    throw new RowanError(ErrorCodes.TOO_FEW_NODES, `cannot decommission node ${node}: ${left} live member(s) would be left, fewer than the replication factor ${c.replicationFactor} (add a node first)`);
  }
  const next = structuredClone(c);
  next.term = c.term + 1;
  next.leaving = [...(c.leaving ?? []), node];
  return validateCluster(next);
}

/** Whether `node` holds a replica of any shard or is named by a task. */
export function holdsAnything(c: ClusterConfig, node: number): boolean {
  if (c.shards.some((s) => s.primary === node || s.backups.includes(node))) return true;
  const tasks = [...c.migrations, ...(c.copies ?? [])];
  return tasks.some((t) => t.source === node || t.target === node);
}

/** Term t+1 with `node` (holding nothing) out of the membership for good. */
export function planRemove(c: ClusterConfig, node: number): ClusterConfig {
  if (holdsAnything(c, node)) throw new RowanError(ErrorCodes.MEMBERSHIP_REFUSED, `node ${node} still holds replicas`);
  const next = structuredClone(c);
  next.term = c.term + 1;
  next.nodes = c.nodes.filter((n) => n.id !== node);
  const without = (xs: number[] | undefined) => (xs ?? []).filter((x) => x !== node);
  for (const k of ['leaving', 'dead'] as const) {
    const rest = without(c[k]);
    if (rest.length > 0) next[k] = rest;
    else delete next[k];
  }
  next.retired = [...(c.retired ?? []), node];
  return validateCluster(next);
}

/** Term t+1 without the `balancing` flag. */
export function planBalanced(c: ClusterConfig): ClusterConfig {
  const next = structuredClone(c);
  next.term = c.term + 1;
  delete next.balancing;
  return validateCluster(next);
}

/** Replicas (any role, catching up or not) and primaries each of `members` holds: counted, or summed
 *  by shard weight (`weights[shard]`, ./shard-weights.ts) when given. */
export function spread(c: ClusterConfig, members: readonly number[], weights?: readonly number[]): { replicas: Map<number, number>; primaries: Map<number, number> } {
  const replicas = new Map(members.map((m) => [m, 0]));
  const primaries = new Map(members.map((m) => [m, 0]));
  for (const s of c.shards) {
    const w = weights?.[s.id] ?? 1;
    if (primaries.has(s.primary)) primaries.set(s.primary, primaries.get(s.primary)! + w);
    for (const r of [s.primary, ...s.backups]) if (replicas.has(r)) replicas.set(r, replicas.get(r)! + w);
  }
  return { replicas, primaries };
}

const holds = (c: ClusterConfig, shard: number, node: number) => c.shards[shard]!.primary === node || c.shards[shard]!.backups.includes(node);
const fullBackup = (c: ClusterConfig, shard: number, node: number) => c.shards[shard]!.backups.includes(node) && !isCatchingUp(c, shard, node);

/** Whether a task is in flight or a backup is catching up: the next step waits for it. */
function busy(c: ClusterConfig): boolean {
  return c.migrations.length > 0 || (c.copies ?? []).length > 0 || (c.catchingUp ?? []).length > 0;
}

/** The next membership step of `c`, given the members the manager reaches and what it knows of the
 *  shards' bytes and load (none: replicas are counted). */
export function nextMembershipStep(c: ClusterConfig, reachable: ReadonlySet<number>, stats?: ShardStats): MembershipStep | null {
  const leaving = c.leaving ?? [];
  if (leaving.length === 0 && !c.balancing) return null;
  // A leaving node holding nothing (drained, or failed over) goes whatever else is in flight.
  for (const node of leaving) if (!holdsAnything(c, node)) return { kind: 'remove', node };
  if (busy(c)) return { kind: 'wait' };
  for (const node of leaving) {
    const step = drainStep(c, node, reachable, shardWeights(c, stats));
    if (step) return step;
  }
  if (leaving.length > 0) return { kind: 'wait' };
  // A member not reached yet (a node just added, still starting) or not failed over yet: the spread
  // is judged once every member is there.
  if (stayingMembers(c).some((n) => !reachable.has(n))) return { kind: 'wait' };
  return balanceStep(c, reachable, stats) ?? { kind: 'balanced' };
}

/** One replica off leaving `node`: a primary role to a full backup first, then a backup copied away. */
function drainStep(c: ClusterConfig, node: number, reachable: ReadonlySet<number>, weights: readonly number[]): MembershipStep | null {
  if ((c.dead ?? []).includes(node) || !reachable.has(node)) return null; // its failover takes its replicas
  const staying = stayingMembers(c).filter((n) => reachable.has(n));
  const { replicas, primaries } = tallies(c, staying, weights);
  const fewest = (x: Tally, ok: (n: number) => boolean) => lightestFirst(x).find(ok);
  for (const s of c.shards) {
    if (s.primary !== node) continue;
    const to = fewest(primaries, (n) => fullBackup(c, s.id, n));
    if (to !== undefined) return { kind: 'move', move: { shard: s.id, from: node, to }, why: 'decommission' };
    const copyTo = fewest(replicas, (n) => !holds(c, s.id, n));
    if (copyTo !== undefined) return { kind: 'copy', move: { shard: s.id, from: node, to: copyTo }, why: 'decommission' };
  }
  for (const s of c.shards) {
    if (!s.backups.includes(node)) continue;
    const to = fewest(replicas, (n) => !holds(c, s.id, n));
    if (to !== undefined) return { kind: 'copy', move: { shard: s.id, from: node, to }, why: 'decommission' };
  }
  return null;
}

/** Each member's count and weight (of its replicas, or of its primaries). */
interface Tally {
  n: Map<number, number>;
  w: Map<number, number>;
}

/** The replicas' and the primaries' tallies of `members`, counted and weighed by `weights`. */
function tallies(c: ClusterConfig, members: readonly number[], weights: readonly number[]): { replicas: Tally; primaries: Tally } {
  const counted = spread(c, members);
  const weighed = spread(c, members, weights);
  return { replicas: { n: counted.replicas, w: weighed.replicas }, primaries: { n: counted.primaries, w: weighed.primaries } };
}

/** Members by count ascending, then weight ascending, then id. */
function lightestFirst(x: Tally): number[] {
  return [...x.n.keys()].sort((a, b) => x.n.get(a)! - x.n.get(b)! || x.w.get(a)! - x.w.get(b)! || a - b);
}

/** Members by count descending, then weight descending, then id. */
function heaviestFirst(x: Tally): number[] {
  return [...x.n.keys()].sort((a, b) => x.n.get(b)! - x.n.get(a)! || x.w.get(b)! - x.w.get(a)! || a - b);
}

/** One copy from a member holding more replicas to one holding fewer, else one primary role likewise
 *  (to a member holding a full backup); null: balanced. See the header for which and why. */
export function balanceStep(c: ClusterConfig, reachable: ReadonlySet<number>, stats?: ShardStats): MembershipStep | null {
  const members = stayingMembers(c).filter((n) => reachable.has(n));
  const w = shardWeights(c, stats);
  const { replicas, primaries } = tallies(c, members, w);
  const copy = evenOut(replicas, w, (from, to) => [
    c.shards.filter((s) => s.backups.includes(from) && !holds(c, s.id, to)), // a backup first: no handover
    c.shards.filter((s) => s.primary === from && !holds(c, s.id, to)),
  ]);
  if (copy) return { kind: 'copy', move: copy, why: 'balance' };
  const move = evenOut(primaries, w, (from, to) => [c.shards.filter((s) => s.primary === from && fullBackup(c, s.id, to))]) ?? primaryChain(c, primaries.n);
  return move ? { kind: 'move', move, why: 'balance' } : null;
}

/**
 * Primary roles whose counts differ by 2 or more where no member holding most is primary of a shard
 * the member holding fewest fully backs up: roles pass along a chain of full backups. From each member
 * holding fewest (min), a breadth-first search backwards over "X is primary of a shard T fully backs
 * up", through members holding min + 1 only, to one holding min + 2 or more; the step is the chain's
 * last hop, X to T (X goes to min, T to min + 1: no count leaves [min, max]). The member it leaves at
 * min is one hop nearer the surplus, so the next steps walk the chain down to a direct move (evenOut),
 * which lowers the counts' sum of squares. The nearest chain first; lowest ids on a tie. Null: none.
 */
function primaryChain(c: ClusterConfig, n: Map<number, number>): Move | null {
  const min = Math.min(...n.values());
  let best: { dist: number; move: Move } | null = null;
  for (const t of [...n.keys()].filter((m) => n.get(m) === min).sort((a, b) => a - b)) {
    const found = chainTo(c, n, t, min);
    if (found && (best === null || found.dist < best.dist)) best = found;
  }
  return best?.move ?? null;
}

/** The nearest chain into `t` (see primaryChain): its length and its last hop. */
function chainTo(c: ClusterConfig, n: Map<number, number>, t: number, min: number): { dist: number; move: Move } | null {
  const hop = new Map<number, Move>([[t, { shard: -1, from: t, to: t }]]);
  let frontier = [t];
  for (let dist = 1; frontier.length > 0; dist++) {
    const next: number[] = [];
    for (const y of frontier) {
      for (const s of c.shards) {
        const x = s.primary;
        if (!n.has(x) || hop.has(x) || !fullBackup(c, s.id, y)) continue;
        const last = y === t ? { shard: s.id, from: x, to: t } : hop.get(y)!;
        if (n.get(x)! >= min + 2) return { dist, move: last };
        if (n.get(x)! !== min + 1) continue;
        hop.set(x, last);
        next.push(x);
      }
    }
    frontier = next.sort((a, b) => a - b);
  }
  return null;
}

/** Slack on the weight comparisons (weights are multiples of 1e-6, ./shard-weights.ts). */
const EPS = 1e-9;

/**
 * A member holding more (count) to one holding fewer, and the shard to give. Counts first: while two
 * members differ by 2 or more, the one holding most (heaviest on a tie) gives to the one holding fewest
 * (lightest on a tie) whichever candidate brings their weights closest. Then, where they differ by
 * one -- a move keeps the counts fair -- only when the giver weighs more than one average replica
 * above the taker, and only a shard lighter than that difference (the weights' sum of squares falls).
 * Of the groups of candidates, the first that has one; the lowest shard id on a tie. Null: none.
 */
function evenOut(x: Tally, w: readonly number[], groups: (from: number, to: number) => { id: number }[][]): Move | null {
  const up = lightestFirst(x);
  for (const from of heaviestFirst(x)) {
    for (const to of up) {
      const dn = x.n.get(from)! - x.n.get(to)!;
      const dw = x.w.get(from)! - x.w.get(to)!;
      if (dn <= 0) break;
      if (dn === 1 && dw <= 1 + EPS) continue;
      for (const group of groups(from, to)) {
        let best: { id: number; gap: number } | null = null;
        for (const s of group) {
          const gap = Math.abs(dw - 2 * w[s.id]!);
          if ((dn >= 2 || w[s.id]! < dw - EPS) && (best === null || gap < best.gap - EPS)) best = { id: s.id, gap };
        }
        if (best) return { shard: best.id, from, to };
      }
    }
  }
  return null;
}
