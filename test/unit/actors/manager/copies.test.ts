// The manager's copy-move runner (actors/manager/copies.ts) against a fake host: a copy is stored, the
// target's catch-up is reported, the primary role is handed over through the move runner, the source
// leaves and the request is answered; a copy a failover ended is answered as rolled back; a handover
// that failed is not tried again at once (no busy loop in the manager's drain loop).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../../../../config/base/clock.js';
import { ErrorCodes, RowanError } from '../../../../config/base/errors.js';
import { planCluster, type ClusterConfig } from '../../../../config/cluster.js';
import type { Logger } from '../../../../config/base/log.js';
import { CopyRunner, type CopyRecord } from '../../../../actors/manager/copies.js';
import type { MoveRunner } from '../../../../actors/manager/moves.js';
import { planFailover } from '../../../../actors/manager/plan.js';
import { planCaughtUp } from '../../../../actors/manager/rereplicate.js';
import { clearTasks, planMoves, type Move } from '../../../../actors/manager/reshard.js';

const quiet = { info: () => {}, warn: () => {}, error: () => {}, debug: () => {} } as unknown as Logger;

function setup(moveFails = false) {
  const nodes = Array.from({ length: 4 }, (_, id) => ({ id, host: '127.0.0.1', dataDir: `/d/${id}`, workerPorts: [7000 + id], fabric: { kind: 'shm' as const, host: '127.0.0.1', port: 0 } }));
  let cfg: ClusterConfig = planCluster({ nodes, shardCount: 4, replicationFactor: 3 });
  const clock = new ManualClock();
  const moved: Move[][] = [];
  const moves = {
    run: async (ms: Move[]) => {
      moved.push(ms);
      if (moveFails) throw new RowanError(ErrorCodes.MOVE_REFUSED, 'the move was rolled back: node did not prepare in time');
      cfg = clearTasks(planMoves(cfg, ms), ms.map((m) => m.shard));
      return {};
    },
  } as unknown as MoveRunner;
  const runner = new CopyRunner({ config: () => cfg, reachable: () => new Set([0, 1, 2, 3]), push: async (next) => void (cfg = next), moves, clock, log: quiet });
  const s = cfg.shards[0]!;
  const to = [0, 1, 2, 3].find((n) => n !== s.primary && !s.backups.includes(n))!;
  const replies: (Error | CopyRecord)[] = [];
  return { runner, clock, moved, replies, to, from: s.primary, cfg: () => cfg, set: (c: ClusterConfig) => void (cfg = c), reply: (err: Error | null, rec?: CopyRecord) => void replies.push(err ?? rec!) };
}

test('a primary copy: stored, reported caught up, handed over by a move, source out, answered done', async () => {
  const h = setup();
  await h.runner.start([{ shard: 0, from: h.from, to: h.to }], 'test', h.reply);
  assert.deepEqual(h.cfg().copies, [{ source: h.from, target: h.to, shard: 0 }]);
  assert.equal(h.runner.wanted(), false, 'nothing to do while the target copies');
  h.runner.noteCaughtUp({ shard: 0, node: h.to, entries: 5, bytes: 500, ms: 3 });
  h.set(planCaughtUp(h.cfg(), [{ shard: 0, node: h.to }])!.next);
  assert.equal(h.runner.wanted(), true);
  await h.runner.advance();
  assert.deepEqual(h.moved, [[{ shard: 0, from: h.from, to: h.to }]]);
  assert.equal(h.cfg().shards[0]!.primary, h.to);
  assert.ok(!h.cfg().shards[0]!.backups.includes(h.from));
  assert.equal(h.cfg().copies, undefined);
  const rec = h.replies[0] as CopyRecord;
  assert.ok(rec.doneAt !== undefined && rec.entries === 5 && rec.copyMs === 3, JSON.stringify(rec));
  assert.equal(h.runner.wanted(), false);
});

test('a copy a failover ended is answered rolled back; a failed handover waits before it is tried again', async () => {
  const h = setup();
  await h.runner.start([{ shard: 0, from: h.from, to: h.to }], 'test', h.reply);
  h.set(planFailover(h.cfg(), h.to).next);
  assert.equal(h.runner.wanted(), true);
  await h.runner.advance();
  assert.match((h.replies[0] as Error).message, /rolled back/);
  assert.equal(h.runner.wanted(), false);

  const f = setup(true);
  await f.runner.start([{ shard: 0, from: f.from, to: f.to }], 'test', f.reply);
  f.set(planCaughtUp(f.cfg(), [{ shard: 0, node: f.to }])!.next);
  await f.runner.advance();
  assert.equal(f.moved.length, 1);
  assert.equal(f.runner.wanted(), false, 'not at once again');
  f.clock.advance(1000);
  assert.equal(f.runner.wanted(), true);
});
