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

/** Steps until none is asked for; the kinds taken. */
function run(c: ClusterConfig, all: Set<number>): { c: ClusterConfig; kinds: string[] } {
  const kinds: string[] = [];
  for (let step = nextMembershipStep(c, all); step !== null; step = nextMembershipStep(c, all)) {
    assert.ok(kinds.length < 200, 'the steps end');
    kinds.push(step.kind);
    c = apply(c, step);
  }
  return { c, kinds };
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
