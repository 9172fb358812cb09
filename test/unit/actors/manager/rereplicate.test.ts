import { test } from 'node:test';
import assert from 'node:assert/strict';
import { planCluster, validateCluster, type ClusterConfig } from '../../../../config/cluster.js';
import { planFailover } from '../../../../actors/manager/plan.js';
import { planCaughtUp, planJoin, planRereplication } from '../../../../actors/manager/rereplicate.js';

function cluster(n: number, shards: number, rf: number): ClusterConfig {
  const nodes = Array.from({ length: n }, (_, id) => ({ id, host: '127.0.0.1', dataDir: `/d/${id}`, workerPorts: [7000 + id], fabric: { kind: 'shm' as const, host: '127.0.0.1', port: 0 } }));
  return planCluster({ nodes, shardCount: shards, replicationFactor: rf });
}

test('after a failover every shard below the factor gets a catching-up backup, spread over the nodes with the fewest replicas', () => {
  const c1 = cluster(4, 8, 3);
  const c2 = planFailover(c1, 1).next;
  const plan = planRereplication(c2, new Set([0, 2, 3]))!;
  assert.ok(plan);
  assert.equal(plan.next.term, c2.term + 1);
  assert.ok(plan.next.shards.every((s) => s.backups.length === 2 && !s.backups.includes(1) && s.primary !== 1));
  assert.deepEqual(plan.next.catchingUp, plan.added);
  for (const x of plan.added) assert.ok(!c2.shards[x.shard]!.backups.includes(x.node) && c2.shards[x.shard]!.primary !== x.node);
  // Nothing left to add; a spare that cannot be reached gets nothing.
  assert.equal(planRereplication(plan.next, new Set([0, 2, 3])), null);
  assert.equal(planRereplication(c2, new Set()), null);
});

test('a catching-up backup is never promoted and does not count as a replica left', () => {
  const c1 = cluster(4, 4, 2); // shard s: primary s, backup s+1
  const c2 = planFailover(c1, 1).next; // shard 0 loses its backup, shard 1 moves to node 2
  const c3 = planRereplication(c2, new Set([0, 2, 3]))!.next;
  const newBackup = c3.catchingUp!.find((x) => x.shard === 0)!.node;
  // Shard 0's primary dies while its only backup is still catching up: no replica left.
  assert.throws(() => planFailover(c3, 0), /no replica left.*still catching up/);
  // Once caught up it is promotable.
  const c4 = planCaughtUp(c3, c3.catchingUp!)!.next;
  assert.equal(c4.catchingUp, undefined);
  const c5 = planFailover(c4, 0).next;
  assert.equal(c5.shards[0]!.primary, newBackup);
  // A catching-up node that dies takes its marks with it (replication 3: every shard keeps a full replica).
  const r3 = planRereplication(planFailover(cluster(4, 8, 3), 1).next, new Set([0, 2, 3]))!.next;
  const x = r3.catchingUp![0]!.node;
  const r4 = planFailover(r3, x).next;
  assert.ok(!(r4.catchingUp ?? []).some((y) => y.node === x));
  assert.ok(r4.shards.every((s) => s.primary !== x && !s.backups.includes(x)));
});

test('a dead node rejoins holding no shard; format 2 files still read', () => {
  const c2 = planFailover(cluster(3, 6, 3), 2).next;
  const j = planJoin(c2, 2)!;
  assert.equal(j.dead, undefined);
  assert.ok(j.shards.every((s) => s.primary !== 2 && !s.backups.includes(2)));
  assert.equal(planJoin(j, 2), null);
  const r = planRereplication(j, new Set([0, 1, 2]))!;
  assert.equal(r.added.length, 6);
  assert.ok(r.added.every((x) => x.node === 2));
  const old = validateCluster({ ...structuredClone(c2), format: 2 });
  assert.equal(old.format, 3);
  assert.throws(() => validateCluster({ ...structuredClone(r.next), catchingUp: [{ shard: 0, node: 0 }] }), /catchingUp/);
});
