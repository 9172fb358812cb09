import { test } from 'node:test';
import assert from 'node:assert/strict';
import { planCluster, validateCluster, type ClusterConfig } from '../../../../config/cluster.js';
import { planFailover } from '../../../../actors/manager/plan.js';
import { planCaughtUp, planRereplication } from '../../../../actors/manager/rereplicate.js';
import { planMoves, clearTasks } from '../../../../actors/manager/reshard.js';
import { copyRefusal, copyStage, planCopies, planCopiesDone, undoCopies } from '../../../../actors/manager/copy-moves.js';

function cluster(n: number, shards: number, rf: number): ClusterConfig {
  const nodes = Array.from({ length: n }, (_, id) => ({ id, host: '127.0.0.1', dataDir: `/d/${id}`, workerPorts: [7000 + id], fabric: { kind: 'shm' as const, host: '127.0.0.1', port: 0 } }));
  return planCluster({ nodes, shardCount: shards, replicationFactor: rf });
}

/** A node of a 4-node, replication-3 cluster that holds no replica of shard 0. */
function outsider(c: ClusterConfig): number {
  const s = c.shards[0]!;
  return [0, 1, 2, 3].find((n) => n !== s.primary && !s.backups.includes(n))!;
}

test("a primary's copy move: target catching up, copied, handed over by a move, source out", () => {
  const c1 = cluster(4, 4, 3);
  const s = c1.shards[0]!;
  const to = outsider(c1);
  const m = { shard: 0, from: s.primary, to };
  assert.equal(copyRefusal(c1, m, new Set([0, 1, 2, 3])), null);
  const c2 = planCopies(c1, [m]);
  assert.equal(c2.term, c1.term + 1);
  assert.deepEqual(c2.shards[0]!.backups, [...s.backups, to]);
  assert.deepEqual(c2.catchingUp, [{ shard: 0, node: to }]);
  assert.equal(copyStage(c2, c2.copies![0]!), 'copying');
  assert.match(copyRefusal(c2, { shard: 0, from: s.primary, to: s.backups[0]! }, new Set([0, 1, 2, 3]))!, /holds a replica/);
  const c3 = planCaughtUp(c2, [{ shard: 0, node: to }])!.next;
  assert.equal(copyStage(c3, c3.copies![0]!), 'handover');
  assert.throws(() => planCopiesDone(c3, c3.copies!), /cannot leave/);
  const c4 = clearTasks(planMoves(c3, [m]), [0]);
  assert.equal(c4.shards[0]!.primary, to);
  assert.equal(copyStage(c4, c4.copies![0]!), 'drop');
  const c5 = planCopiesDone(c4, c4.copies!);
  assert.equal(c5.copies, undefined);
  assert.equal(c5.shards[0]!.primary, to);
  assert.deepEqual([...c5.shards[0]!.backups].sort(), [...s.backups].sort());
});

test("a backup's copy move drops the source once copied; an undone copy takes the target out again", () => {
  const c1 = cluster(4, 4, 3);
  const s = c1.shards[0]!;
  const to = outsider(c1);
  const from = s.backups[0]!;
  const c2 = planCopies(c1, [{ shard: 0, from, to }]);
  assert.deepEqual(undoCopies(c2, c2.copies!).shards, c1.shards);
  assert.equal(undoCopies(c2, c2.copies!).catchingUp, undefined);
  const c3 = planCaughtUp(c2, [{ shard: 0, node: to }])!.next;
  assert.equal(copyStage(c3, c3.copies![0]!), 'drop');
  assert.throws(() => undoCopies(c3, c3.copies!), /past its copy/);
  const c4 = planCopiesDone(c3, c3.copies!);
  assert.equal(c4.shards[0]!.primary, s.primary);
  assert.deepEqual(c4.shards[0]!.backups, [s.backups[1]!, to]);
});

test('a participant that dies mid-copy ends the task: a dead target leaves the shard, a dead source leaves the target in its place', () => {
  const c1 = cluster(4, 4, 3);
  const s = c1.shards[0]!;
  const to = outsider(c1);
  const c2 = planCopies(c1, [{ shard: 0, from: s.primary, to }]);
  const t = planFailover(c2, to).next;
  assert.equal(t.copies, undefined);
  assert.ok(!t.shards[0]!.backups.includes(to) && !(t.catchingUp ?? []).some((x) => x.node === to));
  const f = planFailover(c2, s.primary).next;
  assert.equal(f.copies, undefined);
  assert.notEqual(f.shards[0]!.primary, to); // never promoted while catching up
  assert.ok(f.shards[0]!.backups.includes(to) && f.catchingUp!.some((x) => x.shard === 0 && x.node === to));
  assert.equal(f.shards[0]!.backups.length, 2);
  // Re-replication adds nothing for shard 0 while the copy holds it one over the factor.
  assert.ok(!(planRereplication(c2, new Set([0, 1, 2, 3]))?.added ?? []).some((x) => x.shard === 0));
});

test('a configuration lists a copy only with both ends replicas of the shard, and one per shard', () => {
  const c1 = cluster(4, 4, 3);
  const to = outsider(c1);
  const c2 = planCopies(c1, [{ shard: 0, from: c1.shards[0]!.primary, to }]);
  assert.throws(() => validateCluster({ ...structuredClone(c2), copies: [...c2.copies!, { ...c2.copies![0]! }] }), /copies\[1\]/);
  assert.throws(() => validateCluster({ ...structuredClone(c2), copies: undefined }), /backups/); // one over the factor without its copy
  assert.match(copyRefusal(c2, { shard: 0, from: c1.shards[0]!.backups[0]!, to: 99 }, new Set([0, 1, 2, 3]))!, /no node 99/);
});
