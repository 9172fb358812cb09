// The node's side of the configuration rounds (actors/node/config-follower.ts). Simulator seeds 1781 and
// 1862 (the never-two-primaries check, test/sim/simulation.ts): a node taking over shards in a commit
// waits out the peer leases it granted their old primary; a prepare of a later term came meanwhile
// (prepares are not queued behind commits) and blocked requests, drained the shard it was handing
// over and was acknowledged, so the manager committed that later term to the others and the shard's
// new primary served. Then the earlier commit finished, published its term and cleared PENDING: the node
// served the shard again, at the old term, beside its new primary, until the later commits arrived.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock, type TimerHandle, type Timers } from '../../../../config/base/clock.js';
import { planCluster, type ClusterConfig } from '../../../../config/cluster.js';
import { ConfigCell } from '../../../../actors/shared/config-cell.js';
import { ConfigFollower } from '../../../../actors/node/config-follower.js';
import { ManualTimers, recordingLog } from '../../../fixtures/manager-fakes.js';

const ME = 2;

function layout(term: number, primaries: number[], dead: number[] = []): ClusterConfig {
  const c = planCluster({
    nodes: [0, 1, 2].map((id) => ({ id, host: '127.0.0.1', dataDir: `/tmp/n${id}`, workerPorts: [7000 + id], fabric: { kind: 'tcp' as const, host: '127.0.0.1', port: 7500 + id } })),
    shardCount: 3,
    replicationFactor: 3,
  });
  return { ...c, term, dead, shards: c.shards.map((s) => ({ ...s, primary: primaries[s.id]!, backups: [0, 1, 2].filter((n) => n !== primaries[s.id] && !dead.includes(n)) })) };
}

/** Timers on the manual clock (the follower's peer-lease wait sleeps on them). */
function manualTimers(t: ManualTimers): Timers {
  return {
    setTimeout: (fn, ms) => (void t.sleep(ms).then(fn), 0 as unknown as TimerHandle),
    clearTimeout: () => {},
    setInterval: () => 0 as unknown as TimerHandle,
    clearInterval: () => {},
    setImmediate: (fn) => setImmediate(fn),
  };
}

test('a commit that finishes after a later prepare keeps requests blocked until that prepare commits', async () => {
  const clock = new ManualClock(1000);
  const timers = new ManualTimers(clock);
  // Term 1: shard 0 on node 0, shards 1 and 2 on node 1 and this node.
  const c1 = layout(1, [0, 1, ME]);
  const c2 = layout(2, [ME, 1, ME], [0]); // node 0 failed over: this node takes shard 0
  const c4 = layout(4, [ME, 1, 1], [0]); // then shard 2 moves from this node to node 1
  const cell = ConfigCell.create(c1, true, clock);
  cell.setLease(clock.now() + 60_000, clock.now());
  cell.recordGrant(0, clock.now() + 100); // a peer lease this node granted node 0: term 2's commit waits it out
  const { log, lines } = recordingLog();
  const sent: string[] = [];
  const follower = new ConfigFollower({
    nodeId: ME,
    cell,
    clock,
    timers: manualTimers(timers),
    log,
    hooks: {
      prepare: async () => ({ versions: {}, entries: [], truncated: false }),
      promote: async () => ({ entries: 0, scattered: 0 }),
    },
    send: (m) => void sent.push(`${m.t} ${'term' in m ? m.term : ''}`),
    timing: () => ({ leaseMs: 50, driftMs: 5 }),
  });

  follower.onMessage({ t: 'commit', term: 2, config: c2, floors: {} });
  await timers.advance(1);
  assert.ok(lines.some((l) => /taking over shards at term 2: waiting/.test(l)), lines.join('\n'));
  follower.onMessage({ t: 'prepare', term: 4, config: c4, shards: [2], planned: true });
  await timers.advance(1);
  assert.deepEqual(sent, ['prepared 4']);
  assert.equal(cell.shardBlocked(2), true, 'the prepare blocks the moved shard');

  await timers.advance(200); // term 2's commit finishes
  assert.equal(cell.term(), 2);
  assert.equal(cell.pendingTerm(), 0, 'term 2 committed: the node serves');
  assert.equal(cell.shardBlocked(2), true, 'the commit of term 2 unblocked shard 2 although term 4 was prepared: this node would serve it beside its new primary');

  follower.onMessage({ t: 'commit', term: 4, config: c4, floors: {}, planned: [2] });
  await timers.advance(1);
  assert.equal(cell.term(), 4, lines.join('\n'));
  assert.equal(cell.pendingTerm(), 0, 'the commit of the prepared term unblocks requests');
  assert.equal(cell.shardBlocked(2), false, 'the commit of the prepared term unblocks the moved shard');
  assert.deepEqual(lines.filter((l) => /without having drained/.test(l)), [], 'shard 2 was drained in the prepare of term 4');
});

/** A follower of node ME on `cell` whose hooks answer at once; what it sends goes to `sent`. */
function follower(cell: ConfigCell, clock: ManualClock, timers: ManualTimers, sent: string[]): ConfigFollower {
  return new ConfigFollower({
    nodeId: ME,
    cell,
    clock,
    timers: manualTimers(timers),
    log: recordingLog().log,
    hooks: { prepare: async () => ({ versions: {}, entries: [], truncated: false }), promote: async () => ({ entries: 0, scattered: 0 }) },
    send: (m) => void sent.push(`${m.t} ${'term' in m ? m.term : ''}`),
    timing: () => ({ leaseMs: 50, driftMs: 5 }),
  });
}

// Issue 28: a move's prepare used to set the node-wide PENDING on every member, so every shard of
// every node waited for the move's commit (a slow participant held them all up to prepareTimeoutMs).
test('a move\'s prepare blocks only the moved shard; the other shards admit requests at the old term until the commit', async () => {
  const clock = new ManualClock(1000);
  const timers = new ManualTimers(clock);
  const c1 = layout(1, [0, 1, ME]);
  const c2 = layout(2, [0, 1, 1]); // shard 2 moves from this node to node 1
  const cell = ConfigCell.create(c1, true, clock);
  cell.setLease(clock.now() + 60_000, clock.now());
  const sent: string[] = [];
  const f = follower(cell, clock, timers, sent);
  f.onMessage({ t: 'prepare', term: 2, config: c2, shards: [2], planned: true });
  await timers.advance(1);
  assert.deepEqual(sent, ['prepared 2']);
  assert.equal(cell.admit(1, clock.now()), 'ok', 'requests at term 1 are admitted while the move is prepared');
  assert.equal(cell.pendingTerm(), 0);
  assert.deepEqual([0, 1, 2].map((s) => cell.shardBlocked(s)), [false, false, true], 'only the moved shard waits');
  assert.deepEqual([0, 1, 2].map((s) => cell.reconfiguring(s)), [false, false, true], 'writes of the moved shard claimed before the fence are refused after it');
  f.onMessage({ t: 'commit', term: 2, config: c2, floors: {}, planned: [2] });
  await timers.advance(1);
  assert.equal(cell.term(), 2);
  assert.deepEqual([0, 1, 2].map((s) => cell.shardBlocked(s)), [false, false, false], 'the commit lifts the fence');
});

test('a move rolled back (a later term published without it) lifts its fence; a failover\'s prepare still blocks the whole node', async () => {
  const clock = new ManualClock(1000);
  const timers = new ManualTimers(clock);
  const c1 = layout(1, [0, 1, ME]);
  const cell = ConfigCell.create(c1, true, clock);
  cell.setLease(clock.now() + 60_000, clock.now());
  const sent: string[] = [];
  const f = follower(cell, clock, timers, sent);
  f.onMessage({ t: 'prepare', term: 2, config: layout(2, [0, ME, ME]), shards: [1], planned: true });
  await timers.advance(1);
  assert.equal(cell.shardBlocked(1), true);
  f.onMessage({ t: 'commit', term: 3, config: layout(3, [0, 1, ME]), floors: {} }); // the roll-back
  await timers.advance(1);
  assert.deepEqual([0, 1, 2].map((s) => cell.shardBlocked(s)), [false, false, false]);
  f.onMessage({ t: 'prepare', term: 4, config: layout(4, [ME, 1, ME], [0]), shards: [0] }); // node 0 failed
  await timers.advance(1);
  assert.equal(cell.pendingTerm(), 4, 'a failover blocks every request of the node');
  assert.equal(cell.admit(3, clock.now()), 'wait');
});
