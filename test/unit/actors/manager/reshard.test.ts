import { test } from 'node:test';
import assert from 'node:assert/strict';
import { planCluster, type ClusterConfig } from '../../../../config/cluster.js';
import { planFailover } from '../../../../actors/manager/plan.js';
import { BACKUP_WRITE_WEIGHT, LoadTable, OverloadDetector, nodeLoads } from '../../../../actors/manager/load.js';
import { IDLE_REPORT_EVERY_PERIODS, LoadReportGate } from '../../../../actors/shared/shard-load.js';
import { gridDelayMs } from '../../../../config/base/clock.js';
import { ConfigManager, type Link } from '../../../../actors/manager/manager.js';
import { CopyRunner as ConfigManagerCopy } from '../../../../actors/manager/copies.js';
import { leaseTiming } from '../../../../actors/manager/leases.js';
import { ManualClock } from '../../../../config/base/clock.js';
import type { Logger } from '../../../../config/base/log.js';
import type { ManagerToNode } from '../../../../actors/shared/manager-protocol.js';
import { ManualTimers, MemoryStore, settle } from '../../../fixtures/manager-fakes.js';
import { DEFAULT_RESHARDING, clearTasks, moveRefusal, planBalance, planMoves, rollBack } from '../../../../actors/manager/reshard.js';
import { LoadCounters, LoadSampler, createLoadCounters } from '../../../../actors/shared/shard-load.js';

function cluster(n: number, shards: number, rf: number): ClusterConfig {
  const nodes = Array.from({ length: n }, (_, id) => ({ id, host: '127.0.0.1', dataDir: `/d/${id}`, workerPorts: [7000 + id], fabric: { kind: 'shm' as const, host: '127.0.0.1', port: 0 } }));
  return planCluster({ nodes, shardCount: shards, replicationFactor: rf });
}

const rates = (m: Record<number, [number, number]>) => new Map(Object.entries(m).map(([s, [reqs, writes]]) => [Number(s), { reqs, writes }]));

test('load counters: per worker rows summed per shard, differences per sample, wrap-around safe', () => {
  const sab = createLoadCounters(4);
  const w0 = new LoadCounters(sab, 4, 0);
  const w3 = new LoadCounters(sab, 4, 3);
  const s = new LoadSampler(sab, 4);
  w0.count(1, false);
  w0.count(1, true);
  w3.count(1, true);
  w3.count(2, false);
  assert.deepEqual(s.sample(), [{ shard: 1, reqs: 3, writes: 2 }, { shard: 2, reqs: 1, writes: 0 }]);
  assert.deepEqual(s.sample(), []);
  new Uint32Array(sab)[2 * 4 * 0 + 2 * 3] = 0xffffffff; // worker 0, shard 3 at the edge of wrapping
  const s2 = new LoadSampler(sab, 4);
  w0.count(3, false);
  w0.count(3, false);
  assert.deepEqual(s2.sample(), [{ shard: 3, reqs: 2, writes: 0 }]);
});

test('node load: primary requests plus weighted replicated writes on each backup', () => {
  const c = cluster(3, 3, 3); // shard s: primary s, backups s+1, s+2
  const l = nodeLoads(c, rates({ 0: [1000, 100], 1: [10, 0] }), [0, 1, 2]);
  assert.equal(l.get(0), 1000);
  assert.equal(l.get(1), 10 + 100 * BACKUP_WRITE_WEIGHT);
  assert.equal(l.get(2), 100 * BACKUP_WRITE_WEIGHT);
  const t = new LoadTable();
  t.record(0, 1, 500, [0, 500, 50, 1, 5, 0], 1000);
  t.record(1, 1, 500, [2, 100, 0], 1000);
  t.record(2, 1, 500, [0, -1, 0, 7], 1000); // a broken report: not counted
  assert.deepEqual([...t.shardRates()], [[0, { reqs: 1000, writes: 100 }], [1, { reqs: 10, writes: 0 }], [2, { reqs: 200, writes: 0 }]]);
  assert.equal(t.freshFor([0, 1], 1000, 1), true);
  assert.equal(t.freshFor([0, 1], 1001, 1), false);
});

test('the plan moves the hottest shard of an overloaded node to its least loaded full backup, and no more than helps', () => {
  const c = cluster(3, 6, 3); // node n is primary of shards n and n+3
  const o = { ...DEFAULT_RESHARDING };
  // Shard 0 (node 0) is hot; node 1 is idle.
  const p = planBalance(c, rates({ 0: [9000, 0], 3: [1000, 0], 1: [100, 0], 4: [100, 0], 2: [3000, 0], 5: [1000, 0] }), [0, 1, 2], o);
  assert.deepEqual(p.overloaded, [0]);
  assert.deepEqual(p.moves, [{ shard: 0, from: 0, to: 1 }]);
  // Balanced within 30 %: nothing. Too little load overall: nothing.
  // Each empty plan says why (rowan reshard --plan prints it).
  const balanced = planBalance(c, rates({ 0: [1000, 0], 1: [900, 0], 2: [1100, 0] }), [0, 1, 2], o);
  assert.deepEqual([balanced.moves, balanced.none], [[], 'no node is overloaded']);
  const idle = planBalance(c, rates({ 0: [500, 0] }), [0, 1, 2], o);
  assert.deepEqual(idle.moves, []);
  assert.deepEqual(idle.overloaded, [0]);
  assert.match(idle.none!, /load \(500 requests\/s\) is under the 1000/);
  // One shard carries everything: moving it only moves the hotspot.
  const single = planBalance(c, rates({ 0: [9000, 0] }), [0, 1, 2], o);
  assert.deepEqual(single.moves, []);
  assert.match(single.none!, /^no move lowers/);
  assert.equal(p.none, undefined);
  // An unreachable backup is not a target; with node 1 out, shard 0 on node 2 would overload node 2
  // more than node 0 is now, so the next hottest shard of node 0 goes instead.
  assert.deepEqual(planBalance(c, rates({ 0: [9000, 0], 3: [1000, 0], 2: [3000, 0] }), [0, 2], o).moves, [{ shard: 3, from: 0, to: 2 }]);
});

test('with copyMoves, a shard no full backup can take goes to the least loaded node holding no replica of it (a copy move), one copy per target; without, nothing', () => {
  const c = cluster(4, 8, 3); // node n is primary of shards n and n+4
  assert.deepEqual([c.shards[0]!.primary, ...c.shards[0]!.backups], [0, 1, 2]); // node 3 holds none of shard 0
  // Shard 0 on node 0 is hot; its full backups (1, 2) carry enough that handing them the role would
  // only move the hotspot. Node 3, which holds no replica of shard 0, is nearly idle.
  const r = rates({ 0: [4000, 0], 4: [2000, 0], 1: [2250, 0], 5: [2250, 0], 2: [2250, 0], 6: [2250, 0], 3: [50, 0], 7: [50, 0] });
  const roleOnly = planBalance(c, r, [0, 1, 2, 3], { ...DEFAULT_RESHARDING });
  assert.deepEqual(roleOnly.moves, []);
  assert.match(roleOnly.none!, /resharding.copyMoves/);
  const withCopies = planBalance(c, r, [0, 1, 2, 3], { ...DEFAULT_RESHARDING, copyMoves: true });
  assert.deepEqual(withCopies.moves, [{ shard: 0, from: 0, to: 3 }]);
  assert.equal(ConfigManagerCopy.isCopy(c, withCopies.moves), true);
  // A full backup that can take it still does, copy moves on or not.
  const easy = rates({ 0: [4000, 0], 4: [2000, 0], 1: [50, 0], 5: [50, 0], 2: [2250, 0], 6: [2250, 0], 3: [2250, 0], 7: [2250, 0] });
  assert.deepEqual(planBalance(c, easy, [0, 1, 2, 3], { ...DEFAULT_RESHARDING, copyMoves: true }).moves, [{ shard: 0, from: 0, to: 1 }]);
  // Node 3 already receives a copy: no second one; a shard being copied is not planned again.
  assert.deepEqual(planBalance({ ...c, copies: [{ source: 1, target: 3, shard: 1 }] }, r, [0, 1, 2, 3], { ...DEFAULT_RESHARDING, copyMoves: true }).moves, [], 'node 3 receives a copy already');
  const copying0 = { ...c, copies: [{ source: 1, target: 3, shard: 0 }] };
  assert.deepEqual(planBalance(copying0, r, [0, 1, 2, 3], { ...DEFAULT_RESHARDING, copyMoves: true }).moves.filter((m) => m.shard === 0), [], 'shard 0 is being copied already');
  // An unreachable node holding no replica is no target either.
  assert.deepEqual(planBalance(c, r, [0, 1, 2], { ...DEFAULT_RESHARDING, copyMoves: true }).moves, []);
});

test('a move swaps the primary with a full backup (the source stays a replica), lists the task, and can be cleared or rolled back', () => {
  const c = cluster(3, 3, 3);
  const live = new Set([0, 1, 2]);
  assert.equal(moveRefusal(c, 0, 1, live), null);
  assert.match(moveRefusal(c, 0, 0, live)!, /primary already/);
  assert.match(moveRefusal(c, 7, 1, live)!, /no shard 7/);
  assert.match(moveRefusal(c, 0, 1, new Set([0, 2]))!, /not a live member/);
  const next = planMoves(c, [{ shard: 0, from: 0, to: 1 }]);
  assert.equal(next.term, c.term + 1);
  assert.equal(next.shards[0]!.primary, 1);
  assert.deepEqual(next.shards[0]!.backups.sort(), [0, 2]);
  assert.deepEqual(next.migrations, [{ source: 0, target: 1, shard: 0 }]);
  assert.match(moveRefusal(next, 0, 2, live)!, /being moved already/);
  const done = clearTasks(next, [0]);
  assert.deepEqual(done.migrations, []);
  assert.equal(done.shards[0]!.primary, 1);
  const back = rollBack(c, next);
  assert.equal(back.term, next.term + 1);
  assert.deepEqual(back.shards, c.shards);
  // A node holding no full replica cannot take the shard (4 nodes, replication 2).
  const c4 = cluster(4, 4, 2);
  assert.match(moveRefusal(c4, 0, 2, new Set([0, 1, 2, 3]))!, /no full replica/);
});

test('the failover of a move\'s source re-promotes the shard at the target; of its target, moves it on; the task ends', () => {
  const c = planMoves(cluster(3, 3, 3), [{ shard: 0, from: 0, to: 1 }]);
  const bySource = planFailover(c, 0);
  assert.ok(bySource.moved.some((m) => m.shard === 0 && m.to === 1), JSON.stringify(bySource.moved));
  assert.equal(bySource.next.shards[0]!.primary, 1);
  assert.deepEqual(bySource.next.migrations, []);
  const byTarget = planFailover(c, 1);
  assert.ok(byTarget.moved.some((m) => m.shard === 0 && m.from === 1));
  assert.notEqual(byTarget.next.shards[0]!.primary, 1);
  assert.deepEqual(byTarget.next.migrations, []);
});

test('overload detection: one plan per generation of reports (every member reported since the last plan), a move after two overloaded generations in a row', () => {
  const t = new LoadTable();
  const d = new OverloadDetector();
  const members = [0, 1, 2];
  const report = (n: number, at: number, term = 1) => t.record(n, term, 500, [n, 100, 0], at);
  for (const n of members) report(n, 1000);
  assert.equal(d.due(t, members, 500, 1), true, 'a whole generation');
  assert.equal(d.planned(t, 1), false, 'the first overloaded generation only counts');
  assert.equal(d.due(t, members, 500, 1), false, 'the same reports are not planned twice');
  assert.equal(d.news(t), false, 'no report since the plan');
  report(0, 1500);
  assert.equal(d.news(t), true);
  report(1, 1500);
  assert.equal(d.due(t, members, 500, 1), false, 'node 2 has not reported since the last plan');
  report(2, 1500);
  assert.equal(d.due(t, members, 500, 1), true);
  assert.equal(d.planned(t, 1), true, 'the second overloaded generation in a row moves');
  for (const n of members) report(n, 2000);
  assert.equal(d.planned(t, 1), false, 'after a move the counting starts over');
  for (const n of members) report(n, 2500);
  assert.equal(d.planned(t, 0), false, 'a balanced generation');
  for (const n of members) report(n, 3000);
  assert.equal(d.planned(t, 1), false, 'breaks the run: this one is the first again');
  for (const n of members) report(n, 3500);
  assert.equal(d.due(t, members, 4000, 1), false, 'reports from before a configuration change (+ a period) do not count');
  assert.equal(d.due(t, members, 500, 2), false, 'nor reports of an older term');
  assert.equal(d.due(t, [], 500, 1), false, 'no members, no plan');
});

test('the manager plans on the report that completes a generation: two overloaded generations start the move, with no timer advanced', async () => {
  const clock = new ManualClock(10_000);
  const timers = new ManualTimers(clock);
  const c = cluster(3, 6, 3); // node n is primary of shards n and n+3
  const sent = new Map<number, ManagerToNode[]>([0, 1, 2].map((n) => [n, []]));
  const links = new Map<number, Link>([0, 1, 2].map((n) => [n, { send: (m: ManagerToNode) => void sent.get(n)!.push(m) }]));
  const lines: string[] = [];
  const keep = (_o: unknown, msg: string) => void lines.push(msg);
  const log = { info: keep, warn: keep, debug: keep, trace: keep, error: keep } as unknown as Logger;
  const cm = new ConfigManager(new MemoryStore(c), c, leaseTiming(200), clock, log, timers.sleep, undefined, { ...DEFAULT_RESHARDING, auto: true });
  for (const n of [0, 1, 2]) cm.onMessage({ t: 'hello', node: n, pid: 1, term: 1 }, links.get(n)!);
  await settle();
  clock.advance(600); // a whole period after the manager started
  // Shard 0 (node 0) is hot: node 0 serves 9,000 requests/s, the others 600.
  const generation = () => {
    cm.onMessage({ t: 'load', node: 0, term: 1, periodMs: 500, loads: [0, 4000, 0, 3, 500, 0] }, links.get(0)!);
    cm.onMessage({ t: 'load', node: 1, term: 1, periodMs: 500, loads: [1, 150, 0, 4, 150, 0] }, links.get(1)!);
    const before = lines.length;
    cm.onMessage({ t: 'load', node: 2, term: 1, periodMs: 500, loads: [2, 150, 0, 5, 150, 0] }, links.get(2)!);
    return lines.slice(before);
  };
  assert.ok(!generation().some((l) => /^overload/.test(l)), 'the first overloaded generation moves nothing');
  const second = generation();
  assert.ok(second.some((l) => /^overload: node 0 above the average/.test(l)), second.join('\n'));
  await settle();
  assert.equal(sent.get(1)!.filter((m) => m.t === 'prepare').length, 1, 'the move of shard 0 is under way (prepare sent)');
  cm.close();
});

test('with copyMoves on, the manager copies the hot shard no full backup can take to the node holding none of it: the copy\'s term is stored and pushed', async () => {
  const clock = new ManualClock(10_000);
  const timers = new ManualTimers(clock);
  const c = cluster(4, 8, 3); // node n is primary of shards n and n+4; node 3 holds none of shards 0 and 4
  const nodes = [0, 1, 2, 3];
  const sent = new Map<number, ManagerToNode[]>(nodes.map((n) => [n, []]));
  const links = new Map<number, Link>(nodes.map((n) => [n, { send: (m: ManagerToNode) => void sent.get(n)!.push(m) }]));
  const lines: string[] = [];
  const keep = (_o: unknown, msg: string) => void lines.push(msg);
  const log = { info: keep, warn: keep, debug: keep, trace: keep, error: keep } as unknown as Logger;
  const cm = new ConfigManager(new MemoryStore(c), c, leaseTiming(200), clock, log, timers.sleep, undefined, { ...DEFAULT_RESHARDING, auto: true, copyMoves: true });
  for (const n of nodes) cm.onMessage({ t: 'hello', node: n, pid: 1, term: 1 }, links.get(n)!);
  await settle();
  clock.advance(600);
  // Per 500 ms: node 0 serves shard 0 (hot) and shard 4; its full backups 1 and 2 are busy; node 3 idle.
  const reports: Record<number, number[]> = { 0: [0, 2000, 0, 4, 1000, 0], 1: [1, 1125, 0, 5, 1125, 0], 2: [2, 1125, 0, 6, 1125, 0], 3: [3, 25, 0, 7, 25, 0] };
  for (let g = 0; g < 2; g++) for (const n of nodes) cm.onMessage({ t: 'load', node: n, term: 1, periodMs: 500, loads: reports[n]! }, links.get(n)!);
  assert.ok(lines.some((l) => /^overload: node 0 above the average .* moving shard 0 0->3/.test(l)), lines.join('\n'));
  await settle();
  const commit = sent.get(3)!.find((m) => m.t === 'commit' && m.config.copies?.some((t) => t.shard === 0));
  assert.ok(commit && commit.t === 'commit', `a commit with the copy reached node 3: ${JSON.stringify(sent.get(3)!.map((m) => m.t))}`);
  assert.deepEqual(commit.config.copies, [{ source: 0, target: 3, shard: 0 }]);
  assert.deepEqual(commit.config.catchingUp, [{ shard: 0, node: 3 }]);
  assert.ok(commit.config.shards[0]!.backups.includes(3), 'the target is a catching-up backup while it copies');
  cm.close();
});

// Issue 26: an idle node sends its empty load report once (then every IDLE_REPORT_EVERY_PERIODS
// periods), so the manager must count its standing empty report as fresh, or one idle member would
// hold up every generation -- and resharding among the busy ones -- until its keepalive.
test('an idle member\'s standing empty report completes generations; a busy one must report anew', () => {
  const t = new LoadTable();
  const d = new OverloadDetector();
  const members = [0, 1, 2];
  t.record(2, 1, 500, [], 1000); // node 2 idle: one empty report, then silence
  const busy = (at: number) => {
    t.record(0, 1, 500, [0, 100, 0], at);
    t.record(1, 1, 500, [1, 100, 0], at);
  };
  busy(1000);
  assert.equal(d.due(t, members, 500, 1), true);
  d.planned(t, 1);
  busy(1500);
  assert.equal(d.due(t, members, 1200, 1), true, 'the idle member did not report again, and need not');
  d.planned(t, 1);
  t.record(0, 1, 500, [0, 100, 0], 2000);
  assert.equal(d.due(t, members, 1200, 1), false, 'node 1, busy, has not reported since the plan');
  assert.equal(d.due(t, members, 500, 2), false, 'an empty report of an older term does not stand');
});

test('load reports: each one that counted something, the first idle one, one per new term, then idle ones only every IDLE_REPORT_EVERY_PERIODS periods', () => {
  const g = new LoadReportGate(500);
  const sent: number[] = [];
  let term = 1;
  for (let i = 0; i < 60; i++) {
    const at = i * 500;
    const empty = !(i === 3 || i === 4);
    if (i === 30) term = 2;
    if (g.send(empty, term, at)) sent.push(i);
  }
  // 0: first idle; 3, 4: busy; 5: the first idle after; 25: keepalive; 30: new term; 50: keepalive.
  assert.deepEqual(sent, [0, 3, 4, 5, 5 + IDLE_REPORT_EVERY_PERIODS, 30, 30 + IDLE_REPORT_EVERY_PERIODS]);
  g.reset();
  assert.equal(g.send(true, term, 60 * 500), true, 'a new connection hears the idle report at once');
});

test('load samples end on the host\'s grid of periods: two nodes sampling at their own phase count the same interval; an early timer skips a sliver', () => {
  // Two nodes started 130 ms and 310 ms into a period: each next sample lands on the same boundary;
  // one started 410 ms in takes the next one (90 ms would be a sliver, not a period).
  assert.equal(1130 + gridDelayMs(1130, 500), 1500);
  assert.equal(1310 + gridDelayMs(1310, 500), 1500);
  assert.equal(1410 + gridDelayMs(1410, 500), 2000);
  // A late timer (1500 fired at 1537): the next sample is still at 2000, not 2037.
  assert.equal(1537 + gridDelayMs(1537, 500), 2000);
  // An early one (1500 fired at 1499.5): the period 1000..1500 is not followed by a 0.5 ms one.
  assert.equal(1499.5 + gridDelayMs(1499.5, 500), 2000);
  // Exactly on a boundary: a whole period.
  assert.equal(gridDelayMs(2000, 500), 500);
});

test('load reports carry each primary shard\'s live bytes; the newest report naming a shard wins; a broken pair counts nothing', () => {
  const t = new LoadTable();
  t.record(0, 3, 500, [], 0, [0, 1000, 1, 2000]);
  t.record(1, 3, 500, [], 1, [2, 500, -1, 7, 3, Number.NaN]);
  assert.deepEqual([...t.shardBytes()].sort((a, b) => a[0] - b[0]), [[0, 1000], [1, 2000], [2, 500]]);
  t.record(1, 4, 500, [], 2, [1, 2500]); // shard 1 moved to node 1: its report is newer
  assert.equal(t.shardBytes().get(1), 2500);
  t.record(0, 4, 500, [], 3, [0, 1100]); // node 0 reports again without shard 1: node 1's value stands
  assert.equal(t.shardBytes().get(1), 2500);
  assert.equal(t.shardBytes().get(0), 1100);
});
