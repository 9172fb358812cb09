// A move's primary role changes hands only through a completed prepare (issue 24, hazard 2): the rules
// of actors/manager/handover.ts, and every manager path that commits a stored move it did not prepare
// in one go -- a member behind the stored term on hello/renew, completeStoredTerm, resume() -- driven
// with fake links, an in-memory store and a ManualClock. Each path commits the move only once the
// source acknowledged the prepare (drained) or its lease certainly expired, else rolls it back.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../../../../config/base/clock.js';
import { planCluster, type ClusterConfig, type MigrationTask } from '../../../../config/cluster.js';
import type { Logger } from '../../../../config/base/log.js';
import { ConfigManager, type Link } from '../../../../actors/manager/manager.js';
import { defaultTimings } from '../../../../config/timings.js';

const PREPARE_TIMEOUT_MS = defaultTimings.prepareTimeoutMs;
const FAILOVER_RETRY_MS = defaultTimings.failoverRetryMs;
import { leaseTiming } from '../../../../actors/manager/leases.js';
import { judgeHandovers, type HandoverView } from '../../../../actors/manager/handover.js';
import { MoveRunner, type MoveHost } from '../../../../actors/manager/moves.js';
import type { Prepared } from '../../../../actors/manager/rounds.js';
import { planMoves, undoTasks } from '../../../../actors/manager/reshard.js';
import { ManualTimers, MemoryStore, settle } from '../../../fixtures/manager-fakes.js';
import type { ManagerToNode, NodeToManager } from '../../../../actors/shared/manager-protocol.js';

function logger(): { log: Logger; lines: string[] } {
  const lines: string[] = [];
  const keep = (o: unknown, msg: string) => void lines.push(`${msg} ${JSON.stringify(o)}`);
  return { log: { info: keep, warn: keep, debug: keep, trace: keep, error: keep } as unknown as Logger, lines };
}

function cluster(): ClusterConfig {
  return planCluster({
    nodes: [0, 1, 2].map((id) => ({ id, host: '127.0.0.1', dataDir: `/tmp/n${id}`, workerPorts: [7000 + id], fabric: { kind: 'shm' as const, host: '127.0.0.1', port: 0 } })),
    shardCount: 3,
    replicationFactor: 3,
  });
}

/** Term 2 moving shard 0 from its primary to its first backup; the third node only holds a replica. */
function storedMove(): { c1: ClusterConfig; stored: ClusterConfig; source: number; target: number; other: number } {
  const c1 = cluster();
  const source = c1.shards[0]!.primary;
  const target = c1.shards[0]!.backups[0]!;
  const other = [0, 1, 2].find((n) => n !== source && n !== target)!;
  return { c1, stored: planMoves(c1, [{ shard: 0, from: source, to: target }]), source, target, other };
}

function harness(nodes: number[]) {
  const sent = new Map<number, ManagerToNode[]>(nodes.map((n) => [n, []]));
  const links = new Map<number, Link>(nodes.map((n) => [n, { send: (m: ManagerToNode) => void sent.get(n)!.push(m) }]));
  const of = <T extends ManagerToNode['t']>(n: number, t: T) => sent.get(n)!.filter((m): m is Extract<ManagerToNode, { t: T }> => m.t === t);
  return { sent, links, of };
}

/** Members say hello one after the other, each once the manager is idle: the first behind the move
 *  (a participant) has the stored term completed (completeStoredTerm), which waits for the others. */
async function joinBehind(cm: ConfigManager, h: ReturnType<typeof harness>, timers: ManualTimers, nodes: number[]): Promise<void> {
  for (const n of nodes) {
    cm.onMessage({ t: 'hello', node: n, pid: 1, term: 1 }, h.links.get(n)!);
    await settle();
  }
  await timers.advance(20);
}

/** A manager restarted with `stored` in its store (no election: it acts at once). */
function restarted(stored: ClusterConfig) {
  const clock = new ManualClock(10_000);
  const timers = new ManualTimers(clock);
  const { log, lines } = logger();
  const store = new MemoryStore(stored);
  const cm = new ConfigManager(store, stored, leaseTiming(200), clock, log, timers.sleep);
  return { clock, timers, lines, store, cm, h: harness([0, 1, 2]) };
}

const prepared = (node: number, term: number): NodeToManager => ({ t: 'prepared', node, term, versions: { 0: 100 + node }, entries: [], truncated: false });

const view = (o: Partial<HandoverView> & { answered?: ReadonlySet<number> }): HandoverView => ({
  term: 2,
  answered: new Set(),
  connected: () => true,
  reportedTerm: () => 1,
  leaseExpired: () => false,
  ...o,
});

test('handover rules: drained, source or target on the term, source lease expired -> commit; target unserved -> roll back; neither known -> undecided', () => {
  const t: MigrationTask = { source: 0, target: 1, shard: 5 };
  const drained = judgeHandovers([t], view({ answered: new Set([0, 1]) }));
  assert.deepEqual([drained.safe, drained.drained], [[t], [5]], 'the source acknowledged the prepare: drained, planned');
  for (const [why, v] of [
    ['source on the term', view({ reportedTerm: (n) => (n === 0 ? 2 : 1) })],
    ['target on the term', view({ reportedTerm: (n) => (n === 1 ? 2 : 1) })],
    ['source lease expired', view({ connected: (n) => n !== 0, leaseExpired: (n) => n === 0 })],
  ] as const) {
    const r = judgeHandovers([t], v);
    assert.deepEqual([r.safe, r.drained, r.unsafe, r.undecided], [[t], [], [], []], why);
  }
  const back = judgeHandovers([t], view({ answered: new Set([1]) }));
  assert.equal(back.unsafe.length, 1, 'the source missed the prepare, the target answered behind the term: roll back');
  assert.match(back.unsafe[0]!.why, /node 0, did not acknowledge the prepare of term 2/);
  const gone = judgeHandovers([t], view({ connected: (n) => n !== 0, leaseExpired: (n) => n === 1 }));
  assert.match(gone.unsafe[0]!.why, /not connected and its lease may still hold/, 'a target whose lease expired has not served it either');
  const neither = judgeHandovers([t], view({}));
  assert.deepEqual([neither.safe, neither.unsafe, neither.undecided.length], [[], [], 1]);
});

test('undoTasks gives a moved shard back to its source with the same replicas in the same places', () => {
  const { c1, stored } = storedMove();
  const back = undoTasks(stored, stored.migrations);
  assert.equal(back.term, stored.term + 1);
  assert.deepEqual(back.shards, c1.shards);
  assert.deepEqual(back.migrations, []);
  assert.throws(() => undoTasks(c1, stored.migrations), /not moving/);
});

test('hello/renew behind a stored move: no bare commit to the source or target; both prepared first, committed once the source drained', async () => {
  const { stored, source, target, other } = storedMove();
  const { timers, cm, h } = restarted(stored);
  cm.onMessage({ t: 'hello', node: other, pid: 1, term: 1 }, h.links.get(other)!);
  assert.equal(h.of(other, 'commit')[0]?.term, 2, 'a member the move does not involve catches up with a bare commit');
  cm.onMessage({ t: 'renew', node: other, seq: 1, term: 2 }, h.links.get(other)!);
  await settle(); // the manager is idle again
  cm.onMessage({ t: 'hello', node: target, pid: 1, term: 1 }, h.links.get(target)!);
  await timers.advance(20);
  assert.equal(h.of(target, 'prepare').length, 0, 'not before the source reconnected (bounded)');
  cm.onMessage({ t: 'hello', node: source, pid: 1, term: 1 }, h.links.get(source)!);
  await timers.advance(20);
  for (const n of [source, target]) assert.equal(h.of(n, 'grant').length, 1, `node ${n} is granted (it answers the prepare, or its lease holds and the move rolls back)`);
  for (const n of [source, target]) {
    assert.equal(h.of(n, 'commit').length, 0, `node ${n}: no bare commit`);
    assert.deepEqual(h.of(n, 'prepare').map((p) => p.term), [2], `node ${n} is prepared for the stored term`);
  }
  cm.onMessage(prepared(target, 2), h.links.get(target)!);
  cm.onMessage({ t: 'renew', node: source, seq: 1, term: 1 }, h.links.get(source)!);
  await settle();
  assert.equal(h.of(target, 'commit').length, 0, 'nothing commits before the source acknowledged');
  cm.onMessage(prepared(source, 2), h.links.get(source)!);
  await settle();
  const commit = h.of(target, 'commit')[0]!;
  assert.equal(commit.term, 2);
  assert.deepEqual(commit.planned, [0], 'the source drained: the target takes the shard over as planned');
  assert.equal(h.of(source, 'commit')[0]!.term, 2);
  cm.close();
});

test('completeStoredTerm: a source that renews but does not acknowledge the prepare -> the move is rolled back (term 3, shard back at the source)', async () => {
  const { c1, stored, source, target, other } = storedMove();
  const { timers, cm, h, store, lines } = restarted(stored);
  await joinBehind(cm, h, timers, [other, source, target]);
  cm.onMessage(prepared(target, 2), h.links.get(target)!);
  cm.onMessage(prepared(other, 2), h.links.get(other)!);
  for (let ms = 0, seq = 1; ms < PREPARE_TIMEOUT_MS; ms += 40, seq++) {
    cm.onMessage({ t: 'renew', node: source, seq, term: 1 }, h.links.get(source)!); // alive: its lease may hold
    await timers.advance(40);
  }
  await settle();
  assert.equal(store.cfg.term, 3, 'the rollback is stored');
  assert.deepEqual(store.cfg.shards, c1.shards, 'with the distribution before the move');
  assert.deepEqual(store.cfg.migrations, []);
  for (const n of [source, target]) assert.deepEqual(h.of(n, 'commit').map((m) => m.term), [3], `node ${n}: term 2 is never committed, term 3 is`);
  assert.deepEqual(h.of(other, 'commit').map((m) => m.term), [2, 3], 'the member the move does not involve had the bare commit of term 2');
  assert.deepEqual(h.of(target, 'commit')[0]!.planned ?? [], []);
  assert.ok(lines.some((l) => /stored move of shard 0 .* rolled back at term 3: its source, node \d, did not acknowledge/.test(l)), lines.join('\n'));
  cm.close();
});

test('completeStoredTerm: a source that is silent until its lease certainly expired -> the move is committed (not planned: the target waits out its promises)', async () => {
  const { stored, source, target, other } = storedMove();
  const { timers, cm, h } = restarted(stored);
  await joinBehind(cm, h, timers, [other, source, target]);
  cm.onMessage(prepared(target, 2), h.links.get(target)!);
  cm.onMessage(prepared(other, 2), h.links.get(other)!);
  await timers.advance(PREPARE_TIMEOUT_MS);
  const commit = h.of(target, 'commit')[0]!;
  assert.equal(commit.term, 2);
  assert.deepEqual(commit.planned ?? [], [], 'not planned: the source did not drain');
  const grants = h.of(source, 'grant').length;
  cm.onMessage({ t: 'renew', node: source, seq: 7, term: 1 }, h.links.get(source)!);
  assert.equal(h.of(source, 'grant').length, grants, 'the source, back before it committed, gets no lease: it could serve the shard again');
  cm.onMessage({ t: 'renew', node: source, seq: 8, term: 2 }, h.links.get(source)!);
  assert.equal(h.of(source, 'grant').length, grants + 1, 'once it reports the term it is granted again');
  cm.close();
});

test('completeStoredTerm: source and target both unresponsive -> nothing committed or rolled back; retried, then committed once they answer', async () => {
  const { stored, source, target, other } = storedMove();
  const { timers, cm, h, store, lines } = restarted(stored);
  await joinBehind(cm, h, timers, [other, source, target]);
  cm.onMessage(prepared(other, 2), h.links.get(other)!);
  for (let ms = 0, seq = 1; ms < PREPARE_TIMEOUT_MS; ms += 40, seq++) {
    for (const n of [source, target]) cm.onMessage({ t: 'renew', node: n, seq, term: 1 }, h.links.get(n)!);
    await timers.advance(40);
  }
  await settle();
  assert.equal(store.cfg.term, 2);
  for (const n of [source, target]) assert.equal(h.of(n, 'commit').length, 0, `node ${n}: no commit`);
  assert.ok(lines.some((l) => /cannot be completed yet, nor its move rolled back/.test(l)), lines.join('\n'));
  for (let ms = 0, seq = 100; ms <= FAILOVER_RETRY_MS; ms += 40, seq++) {
    for (const n of [source, target]) cm.onMessage({ t: 'renew', node: n, seq, term: 1 }, h.links.get(n)!);
    await timers.advance(40);
  }
  assert.equal(h.of(source, 'prepare').length, 2, 'prepared again');
  for (const n of [source, target, other]) cm.onMessage(prepared(n, 2), h.links.get(n)!);
  await settle();
  assert.deepEqual(h.of(target, 'commit').map((m) => [m.term, m.planned]), [[2, [0]]]);
  cm.close();
});

/** A MoveHost whose prepare round answers with the members in `answered`. */
function moveHost(stored: ClusterConfig, answered: number[], reported: Record<number, number>) {
  const clock = new ManualClock(0);
  const { log, lines } = logger();
  let cfg = stored;
  const calls = { pushed: [] as ClusterConfig[], committed: [] as { term: number; again: number[]; planned: number[] }[] };
  const host: MoveHost = {
    config: () => cfg,
    reachable: () => new Set([0, 1, 2]),
    suspected: () => false,
    reportedTerm: (n) => reported[n],
    leaseExpired: () => false,
    fence: () => assert.fail('no source is fenced here'),
    storeConfig: async (next) => void (cfg = next),
    push: async (next) => void (cfg = next, calls.pushed.push(next)),
    prepareRound: async (): Promise<Prepared> => ({ versions: new Map([[0, 50]]), reports: new Map(answered.map((n) => [n, { entries: [], truncated: false }])), missing: [0, 1, 2].filter((n) => !answered.includes(n)) }),
    commitRound: (next, _moved, _prep, again, planned) => (calls.committed.push({ term: next.term, again, planned }), { gathered: 0, scattered: 0 }),
    awaitPromoted: (_term, _to, done) => done(),
    log,
    clock,
    sleep: async (ms) => clock.advance(ms),
  };
  return { host, calls, lines, config: () => cfg };
}

test('resume(): a source that missed the prepare while behind the move\'s term and a target behind too -> rolled back, not re-promoted', async () => {
  const { c1, stored, source, target, other } = storedMove();
  const m = moveHost(stored, [target, other], { [source]: 1, [target]: 1, [other]: 2 });
  const rec = await new MoveRunner(m.host).resume();
  assert.ok(rec?.rolledBackAt !== undefined, 'rolled back');
  assert.deepEqual(m.calls.committed, [], 'no commit hands the shard to the target');
  assert.equal(m.calls.pushed.length, 1);
  assert.deepEqual(m.config().shards, c1.shards);
  assert.equal(m.config().term, stored.term + 2);
  assert.ok(m.lines.some((l) => /resumed move rolled back \(term 4\)/.test(l)), m.lines.join('\n'));
});

test('resume(): a source that acknowledged, or that missed it while already on the move\'s term -> the target is promoted again', async () => {
  const { stored, source, target, other } = storedMove();
  for (const [answered, reported, planned] of [
    [[source, target, other], { [source]: 1, [target]: 1, [other]: 2 }, [0]],
    [[target, other], { [source]: 2, [target]: 2, [other]: 2 }, []],
  ] as const) {
    const m = moveHost(stored, [...answered], reported);
    const rec = await new MoveRunner(m.host).resume();
    assert.equal(rec?.rolledBackAt, undefined);
    assert.deepEqual(m.calls.committed, [{ term: 3, again: [0], planned: [...planned] }], 'drained: planned; else with the promotion gap');
    assert.deepEqual(m.config().migrations, [], 'done: the task is cleared');
  }
});
