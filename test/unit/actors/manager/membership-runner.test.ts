// The membership runner (actors/manager/membership-runner.ts) driven to its end on a fake manager: its
// copies and moves carried out at once as the manager's rounds would end them, each stored term kept.
// A decommission leaves the primaries as fair as an add does (issue 28: draining one of 4 nodes left
// 48 primaries 17/17/14 -- the drain hands each of the leaving node's primary roles to the full backup
// primary of fewest, and nothing evened out the others afterwards).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../../../../config/base/clock.js';
import { planCluster, type ClusterConfig, type ClusterNode } from '../../../../config/cluster.js';
import type { Logger } from '../../../../config/base/log.js';
import { planCaughtUp } from '../../../../actors/manager/rereplicate.js';
import { clearTasks, planMoves, type Move } from '../../../../actors/manager/reshard.js';
import { copyStage, planCopies, planCopiesDone } from '../../../../actors/manager/copy-moves.js';
import { spread } from '../../../../actors/manager/membership.js';
import { MembershipRunner, type MembershipHost } from '../../../../actors/manager/membership-runner.js';
import type { CopyRunner } from '../../../../actors/manager/copies.js';
import type { MoveRunner } from '../../../../actors/manager/moves.js';

const node = (id: number): ClusterNode => ({ id, host: '127.0.0.1', dataDir: `/d/${id}`, workerPorts: [7000 + id * 10], fabric: { kind: 'shm', host: '127.0.0.1', port: 0 } });

/** A manager whose rounds end at once: a copy caught up, handed over and done; a move committed. */
function fakeManager(initial: ClusterConfig): { host: MembershipHost; cfg: () => ClusterConfig } {
  let cfg = initial;
  const noop = () => {};
  const log = { info: noop, debug: noop, trace: noop, error: noop, warn: noop } as unknown as Logger;
  const moves = { run: async (ms: Move[]) => { cfg = clearTasks(planMoves(cfg, ms), ms.map((m) => m.shard)); } } as unknown as MoveRunner;
  const copies = {
    start: async (ms: Move[], _why: string, reply: (err: Error | null) => void) => {
      const m = ms[0]!;
      let x = planCopies(cfg, [m]);
      x = planCaughtUp(x, [{ shard: m.shard, node: m.to }])!.next;
      if (copyStage(x, x.copies![0]!) === 'handover') x = clearTasks(planMoves(x, [m]), [m.shard]);
      cfg = planCopiesDone(x, x.copies!);
      reply(null);
    },
  } as unknown as CopyRunner;
  const host: MembershipHost = {
    config: () => cfg,
    reachable: () => new Set(cfg.nodes.map((n) => n.id)),
    push: async (next) => { cfg = next; },
    moves, copies, clock: new ManualClock(1000), log,
  };
  return { host, cfg: () => cfg };
}

/** Steps until the runner asks for none. */
async function drive(r: MembershipRunner): Promise<void> {
  for (let i = 0; r.wanted(); i++) {
    assert.ok(i < 500, 'the steps end');
    await r.advance();
  }
}

function assertFair(c: ClusterConfig, members: number[], what: string): void {
  const { replicas, primaries } = spread(c, members);
  const r = [...replicas.values()];
  const p = [...primaries.values()];
  const shown = members.map((n) => `${n}:${replicas.get(n)}r/${primaries.get(n)}p`).join(' ');
  assert.ok(Math.max(...r) - Math.min(...r) <= 1, `${what}: replicas not fair: ${shown}`);
  assert.ok(Math.max(...p) - Math.min(...p) <= 1, `${what}: primaries not fair: ${shown}`);
}

for (const [nodes, shards, leave] of [[4, 48, 0], [4, 48, 3], [5, 30, 2], [6, 8, 1]] as const) {
  test(`decommission of node ${leave} of ${nodes} (${shards} shards): replicas and primaries end as fair as after an add`, async () => {
    const { host, cfg } = fakeManager(planCluster({ nodes: Array.from({ length: nodes }, (_, id) => node(id)), shardCount: shards, replicationFactor: 3 }));
    const r = new MembershipRunner(host);
    let err: Error | null | undefined;
    r.request({ kind: 'leave', node: leave }, (e) => (err = e));
    await drive(r);
    assert.equal(err, null);
    const c = cfg();
    assert.ok(!c.nodes.some((n) => n.id === leave) && (c.retired ?? []).includes(leave), JSON.stringify(c.retired));
    assert.equal(c.balancing, undefined, 'the balancing after the removal ended');
    assertFair(c, c.nodes.map((n) => n.id), 'after the decommission');
  });
}

test('an add through the runner ends fair too (the fake manager carries copies and moves out)', async () => {
  const { host, cfg } = fakeManager(planCluster({ nodes: [0, 1, 2].map(node), shardCount: 8, replicationFactor: 3 }));
  const r = new MembershipRunner(host);
  r.request({ kind: 'add', node: node(3) }, () => {});
  await drive(r);
  assert.equal(cfg().balancing, undefined);
  assertFair(cfg(), [0, 1, 2, 3], 'after the add');
});
