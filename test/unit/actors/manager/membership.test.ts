// Membership plans (actors/manager/membership.ts): a node added and the replicas spread onto it one
// step at a time, a node decommissioned and drained step by step, refusals. Each step is applied as
// the manager's rounds would (a copy: catching up, caught up, handed over, source out; a move).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { planCluster, type ClusterConfig, type ClusterNode } from '../../../../config/cluster.js';
import { ErrorCodes } from '../../../../config/base/errors.js';
import { planCaughtUp } from '../../../../actors/manager/rereplicate.js';
import { clearTasks, planMoves } from '../../../../actors/manager/reshard.js';
import { copyStage, planCopies, planCopiesDone } from '../../../../actors/manager/copy-moves.js';
import { addRefusal, nextMembershipStep, nextNodeId, planAddNode, planBalanced, planLeave, planRemove, spread, type MembershipStep } from '../../../../actors/manager/membership.js';
import { shardWeights, type ShardStats } from '../../../../actors/manager/shard-weights.js';

const node = (id: number): ClusterNode => ({ id, host: '127.0.0.1', dataDir: `/d/${id}`, workerPorts: [7000 + id * 10], fabric: { kind: 'shm', host: '127.0.0.1', port: 0 } });

function cluster(n: number, shards: number, rf: number): ClusterConfig {
  return planCluster({ nodes: Array.from({ length: n }, (_, id) => node(id)), shardCount: shards, replicationFactor: rf });
}

/** `step` carried out as the manager's rounds would, to its end. */
function apply(c: ClusterConfig, step: MembershipStep): ClusterConfig {
  switch (step.kind) {
    case 'move':
      return clearTasks(planMoves(c, [step.move]), [step.move.shard]);
    case 'copy': {
      let x = planCopies(c, [step.move]);
      x = planCaughtUp(x, [{ shard: step.move.shard, node: step.move.to }])!.next;
      if (copyStage(x, x.copies![0]!) === 'handover') x = clearTasks(planMoves(x, [step.move]), [step.move.shard]);
      return planCopiesDone(x, x.copies!);
    }
    case 'remove':
      return planRemove(c, step.node);
    case 'balanced':
      return planBalanced(c);
    case 'wait':
      throw new Error('nothing in flight here: no step waits');
  }
}

/** Steps until none is asked for; the kinds taken (and the steps). */
function run(c: ClusterConfig, all: Set<number>, stats?: ShardStats): { c: ClusterConfig; kinds: string[]; steps: MembershipStep[] } {
  const kinds: string[] = [];
  const steps: MembershipStep[] = [];
  for (let step = nextMembershipStep(c, all, stats); step !== null; step = nextMembershipStep(c, all, stats)) {
    assert.ok(kinds.length < 200, 'the steps end');
    kinds.push(step.kind);
    steps.push(step);
    c = apply(c, step);
  }
  return { c, kinds, steps };
}

function assertFair(c: ClusterConfig, members: number[]): void {
  const { replicas, primaries } = spread(c, members);
  const r = [...replicas.values()];
  const p = [...primaries.values()];
  assert.ok(Math.max(...r) - Math.min(...r) <= 1, `replicas ${JSON.stringify([...replicas])}`);
  assert.ok(Math.max(...p) - Math.min(...p) <= 1, `primaries ${JSON.stringify([...primaries])}`);
  for (const s of c.shards) assert.equal(new Set([s.primary, ...s.backups]).size, c.replicationFactor);
}

test('a node added holds nothing; copies then moves spread replicas and primaries onto it, then balancing ends', () => {
  const c0 = cluster(3, 8, 3);
  assert.equal(nextNodeId(c0), 3);
  const c1 = planAddNode(c0, node(3));
  assert.equal(c1.term, c0.term + 1);
  assert.equal(c1.balancing, true);
  assert.equal(spread(c1, [3]).replicas.get(3), 0);
  // The first step copies a backup from the member holding most (lowest id) to the new node.
  assert.deepEqual(nextMembershipStep(c1, new Set([0, 1, 2, 3])), { kind: 'copy', move: { shard: 1, from: 0, to: 3 }, why: 'balance' }, 'a backup (shard 1), not its primary role (shard 0)');
  // The new node not reached yet (still starting): the balancing waits for it (ending it then would
  // leave the node empty).
  assert.deepEqual(nextMembershipStep(c1, new Set([0, 1, 2])), { kind: 'wait' });
  const { c, kinds } = run(c1, new Set([0, 1, 2, 3]));
  assert.equal(c.balancing, undefined);
  assert.equal(kinds.at(-1), 'balanced');
  assert.ok(kinds.includes('copy') && kinds.includes('move'), kinds.join(','));
  assertFair(c, [0, 1, 2, 3]);
  assert.ok(c.term > c1.term);
});

test('a step waits while a copy, a move or a catching-up backup is in flight', () => {
  const c1 = planAddNode(cluster(3, 4, 2), node(3));
  const copying = planCopies(c1, [{ shard: 0, from: 0, to: 3 }]);
  assert.deepEqual(nextMembershipStep(copying, new Set([0, 1, 2, 3])), { kind: 'wait' });
  assert.deepEqual(nextMembershipStep(planMoves(c1, [{ shard: 0, from: 0, to: 1 }]), new Set([0, 1, 2, 3])), { kind: 'wait' });
  assert.equal(nextMembershipStep(cluster(3, 4, 2), new Set([0, 1, 2])), null, 'nothing asked: no step');
});

test('decommission: primary roles handed to full backups, backups copied to the members holding fewest, then removed', () => {
  const grown = run(planAddNode(cluster(3, 8, 3), node(3)), new Set([0, 1, 2, 3])).c;
  const c1 = planLeave(grown, 1);
  assert.deepEqual(c1.leaving, [1]);
  const first = nextMembershipStep(c1, new Set([0, 1, 2, 3]))!;
  assert.equal(first.kind, 'move', 'a primary hands its role over first');
  const { c, kinds } = run(c1, new Set([0, 1, 2, 3]));
  assert.equal(kinds.at(-1), 'remove');
  assert.ok(!c.nodes.some((n) => n.id === 1));
  assert.deepEqual(c.retired, [1]);
  assert.equal(c.leaving, undefined);
  assertFair(c, [0, 2, 3]);
  assert.equal(nextNodeId(c), 4, 'a retired id is never given again');
  assert.match(addRefusal(c, node(1))!, /retired/);
});

test('decommission refused with ROWAN_ERR_TOO_FEW_NODES below the replication factor; bad requests refused', () => {
  const c = cluster(3, 4, 3);
  assert.throws(() => planLeave(c, 0), (e: { code?: string }) => e.code === ErrorCodes.TOO_FEW_NODES);
  const four = planAddNode(c, node(3));
  const leaving = planLeave(four, 0);
  assert.throws(() => planLeave(leaving, 1), (e: { code?: string }) => e.code === ErrorCodes.TOO_FEW_NODES, 'one leaving already counts');
  assert.throws(() => planLeave(four, 0 + 9), (e: { code?: string }) => e.code === ErrorCodes.MEMBERSHIP_REFUSED);
  assert.throws(() => planLeave(leaving, 0), /already/);
  assert.throws(() => planAddNode(four, node(3)), (e: { code?: string }) => e.code === ErrorCodes.MEMBERSHIP_REFUSED);
  assert.throws(() => planAddNode(four, { ...node(4), workerPorts: [7000] }), /another node's port/);
  assert.throws(() => planRemove(four, 0), /still holds/);
});

test('a leaving node that died (failed over, holding nothing) is removed from dead too', () => {
  const four = planLeave(planAddNode(cluster(3, 4, 3), node(3)), 3);
  const dead = { ...structuredClone(four), term: four.term + 1, dead: [3] };
  assert.deepEqual(nextMembershipStep(dead, new Set([0, 1, 2])), { kind: 'remove', node: 3 });
  const c = planRemove(dead, 3);
  assert.equal(c.dead, undefined);
  assert.deepEqual(c.retired, [3]);
});

// Issue 28: the balancing weighs bytes and load, not only counts (actors/manager/shard-weights.ts).
const stats = (bytes: Record<number, number>, reqs: Record<number, number> = {}): ShardStats => ({
  bytes: new Map(Object.entries(bytes).map(([s, b]) => [Number(s), b])),
  rates: new Map(Object.entries(reqs).map(([s, r]) => [Number(s), { reqs: r, writes: 0 }])),
});

/** Live bytes each member holds (every replica of a shard holds its bytes). */
function bytesHeld(c: ClusterConfig, members: number[], bytes: Record<number, number>): Map<number, number> {
  const out = new Map(members.map((m) => [m, 0]));
  for (const s of c.shards) for (const r of [s.primary, ...s.backups]) if (out.has(r)) out.set(r, out.get(r)! + (bytes[s.id] ?? 0));
  return out;
}

test('shard weights: 1 each without statistics; the mean of count, bytes and load over their means, the mean shard 1', () => {
  const c = cluster(3, 4, 3);
  assert.deepEqual(shardWeights(c), [1, 1, 1, 1]);
  assert.deepEqual(shardWeights(c, stats({})), [1, 1, 1, 1], 'nothing reported: counts');
  const w = shardWeights(c, stats({ 0: 700, 1: 100, 2: 100, 3: 100 }));
  assert.deepEqual(w, [(1 + 2.8 + 1) / 3, (1 + 0.4 + 1) / 3, (1 + 0.4 + 1) / 3, (1 + 0.4 + 1) / 3].map((x) => Math.round(x * 1e6) / 1e6));
  assert.ok(Math.abs(w.reduce((a, b) => a + b, 0) - 4) < 1e-5, 'the mean shard weighs 1');
  const hot = shardWeights(c, stats({}, { 2: 1000 }));
  assert.ok(hot[2]! > 1.9 && hot[0]! < 0.7, JSON.stringify(hot));
});

test('a node added: with one shard 10x the others\' bytes, counts stay fair and the bytes spread more evenly than by counts alone, deterministically', () => {
  const members = [0, 1, 2, 3];
  const all = new Set(members);
  const bytes: Record<number, number> = { 0: 100, 1: 100, 2: 100, 3: 100, 4: 100, 5: 100, 6: 1000 };
  const c1 = planAddNode(cluster(3, 7, 2), node(3));
  const counted = run(c1, all).c;
  const weighed = run(c1, all, stats(bytes));
  assert.deepEqual(run(c1, all, stats(bytes)).steps, weighed.steps, 'the same statistics, the same steps');
  assert.equal(weighed.kinds.at(-1), 'balanced');
  assertFair(weighed.c, members);
  const spreadOf = (m: Map<number, number>) => Math.max(...m.values()) - Math.min(...m.values());
  const byCount = bytesHeld(counted, members, bytes);
  const byWeight = bytesHeld(weighed.c, members, bytes);
  assert.ok(spreadOf(byWeight) < spreadOf(byCount), `bytes per node by weight ${JSON.stringify([...byWeight])}, by count ${JSON.stringify([...byCount])}`);
  for (const s of weighed.c.shards) assert.equal(new Set([s.primary, ...s.backups]).size, weighed.c.replicationFactor);
});

test('primaries by load: the member primary of a hot shard gives its other primary roles away', () => {
  const members = [0, 1, 2, 3];
  const all = new Set(members);
  const c1 = planAddNode(cluster(3, 6, 3), node(3));
  const grown = run(c1, all).c; // spread by counts: 2, 2, 1, 1 primaries
  const before = spread(grown, members).primaries;
  const hotShard = grown.shards.find((s) => before.get(s.primary) === 2)!; // on a member primary of 2
  const load = stats({}, Object.fromEntries(grown.shards.map((s) => [s.id, s.id === hotShard.id ? 5000 : 100])));
  const again = run({ ...structuredClone(grown), term: grown.term + 1, balancing: true }, all, load);
  assert.equal(again.kinds.at(-1), 'balanced');
  assert.ok(again.kinds.includes('move'), `a primary role moved: ${JSON.stringify(again.steps)}`);
  const hotNode = again.c.shards[hotShard.id]!.primary;
  const { primaries } = spread(again.c, members);
  assert.ok(primaries.get(hotNode)! < Math.max(...primaries.values()), `node ${hotNode} (primary of the hot shard) is primary of fewer shards: ${JSON.stringify([...primaries])}; steps ${JSON.stringify(again.steps)}`);
  assertFair(again.c, members);
});

test('decommission: a backup goes to the member whose replicas weigh least, not the one holding fewest', () => {
  const c0 = cluster(4, 4, 2);
  // Four shards on four nodes, two replicas each; node 3 leaves. Its backups go where the bytes are fewest.
  const c1 = planLeave(c0, 3);
  const bytes = Object.fromEntries(c0.shards.map((s) => [s.id, s.primary === 0 || s.backups.includes(0) ? 1000 : 10]));
  const counted = run(c1, new Set([0, 1, 2, 3])).c;
  const weighed = run(c1, new Set([0, 1, 2, 3]), stats(bytes)).c;
  const held = bytesHeld(weighed, [0, 1, 2], bytes);
  assert.ok(!weighed.nodes.some((n) => n.id === 3));
  assert.ok(Math.max(...held.values()) <= Math.max(...bytesHeld(counted, [0, 1, 2], bytes).values()), `by weight ${JSON.stringify([...held])}`);
});

test('primaries: the member primary of fewest takes a role along a chain of full backups when it backs up none of the surplus member\'s shards', () => {
  // Replicas fair (3 each); primaries 0/1/2/1/1/1; node 0 is a full backup of shards whose primaries hold
  // one role each, none of node 2's: no direct move evens them out (seen in grow-shrink-netns after a
  // node rejoined: balancing ended with 0 primaries on it).
  const layout: [number, number[]][] = [[2, [1, 3]], [2, [4, 5]], [1, [0, 3]], [3, [0, 4]], [4, [0, 5]], [5, [1, 2]]];
  const base = cluster(6, 6, 3);
  const c0: ClusterConfig = { ...base, balancing: true, shards: base.shards.map((s, i) => ({ ...s, primary: layout[i]![0], backups: layout[i]![1] })) };
  const all = new Set([0, 1, 2, 3, 4, 5]);
  assert.deepEqual(nextMembershipStep(c0, all), { kind: 'move', move: { shard: 2, from: 1, to: 0 }, why: 'balance' }, 'node 1 hands shard 2 to node 0 (node 2 then hands shard 0 to node 1)');
  const { c, kinds } = run(c0, all);
  assert.deepEqual(kinds, ['move', 'move', 'balanced']);
  assertFair(c, [0, 1, 2, 3, 4, 5]);
});
