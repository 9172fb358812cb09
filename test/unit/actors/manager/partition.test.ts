// The manager cut off from the whole cluster (docs/failover.md "Partitions", issue 13 (b)): every lease expires
// at once at the manager, the first detected while the others still look valid. It must reassign
// nothing (no term stored, no prepare sent) while no member is heard from, and grant again once the
// members are back, the term unchanged. A member heard from again before its failover was stored
// keeps its shards. Driven with fake links, an in-memory store and a ManualClock.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../../../../config/base/clock.js';
import { planCluster, type ClusterConfig } from '../../../../config/cluster.js';
import type { Logger } from '../../../../config/base/log.js';
import { ConfigManager, type Link } from '../../../../actors/manager/manager.js';
import { leaseTiming } from '../../../../actors/manager/leases.js';
import { ManualTimers, MemoryStore } from '../../../fixtures/manager-fakes.js';
import type { ManagerToNode } from '../../../../actors/shared/manager-protocol.js';

/** The manager's sleep() and tick(), on the manual clock. */
class Timers extends ManualTimers {
  /** Advance in steps of `step` ms, ticking the manager at each (its timer in production). */
  async run(ms: number, step: number, cm: ConfigManager, each: () => void = () => {}): Promise<void> {
    for (let t = 0; t < ms; t += step) {
      this.clock.advance(step);
      this.fire();
      each();
      cm.tick();
      for (let i = 0; i < 10; i++) await new Promise((r) => setImmediate(r));
    }
  }
}

function cluster(): ClusterConfig {
  return planCluster({
    nodes: [0, 1, 2].map((id) => ({ id, host: '127.0.0.1', dataDir: `/tmp/n${id}`, workerPorts: [7000 + id], fabric: { kind: 'tcp' as const, host: '127.0.0.1', port: 7500 + id } })),
    shardCount: 6,
    replicationFactor: 3,
  });
}

/** Node 2 holds backups only: nodes 0 and 1 are the primaries, each shard on all three nodes. */
function backupsOnly(c: ClusterConfig): ClusterConfig {
  return { ...c, shards: c.shards.map((s) => ({ id: s.id, primary: s.id % 2, backups: [1 - (s.id % 2), 2] })) };
}

/** Node 2 holds nothing: two replicas of each shard on nodes 0 and 1, node 2 a spare member. */
function holdsNothing(c: ClusterConfig): ClusterConfig {
  return { ...c, replicationFactor: 2, shards: c.shards.map((s) => ({ id: s.id, primary: s.id % 2, backups: [1 - (s.id % 2)] })) };
}

function setup(layout: (c: ClusterConfig) => ClusterConfig = (c) => c) {
  const clock = new ManualClock(1000);
  const timers = new Timers(clock);
  const warnings: string[] = [];
  const noop = () => {};
  const log = { info: noop, debug: noop, trace: noop, error: (_o: unknown, m: string) => warnings.push(m), warn: (_o: unknown, m: string) => warnings.push(m) } as unknown as Logger;
  const initial = layout(cluster());
  const store = new MemoryStore(initial);
  const timing = leaseTiming(200, 40); // the scenarios below (silences of 100-150 ms, over two renewal periods) are laid out for 40 ms renewals
  const cm = new ConfigManager(store, initial, timing, clock, log, timers.sleep);
  const sent = new Map<number, ManagerToNode[]>();
  const links = new Map<number, Link>();
  for (const n of [0, 1, 2]) {
    sent.set(n, []);
    links.set(n, { send: (m) => sent.get(n)!.push(m) });
    cm.onMessage({ t: 'hello', node: n, pid: 1, term: 1 }, links.get(n)!);
  }
  let seq = 0;
  const renewAll = () => {
    seq++;
    for (const n of [0, 1, 2]) cm.onMessage({ t: 'renew', node: n, seq, term: 1 }, links.get(n)!);
  };
  return { clock, timers, warnings, store, timing, cm, sent, links, renewAll };
}

test('a manager cut off from every node reassigns nothing, and grants again once they are back, the term unchanged', async () => {
  const { timers, warnings, store, timing, cm, sent, links, renewAll } = setup();
  await timers.run(400, timing.renewMs, cm, renewAll); // a healthy cluster: nobody suspected
  assert.equal(store.writes, 0);
  // The cut: nothing from anyone for 3 s (15 leases); the links stay (TCP does not notice a dead path).
  await timers.run(3000, 10, cm);
  assert.equal(store.writes, 0, 'no configuration stored while cut off');
  assert.equal(store.cfg.term, 1);
  for (const n of [0, 1, 2]) assert.equal(sent.get(n)!.filter((m) => m.t === 'prepare' || m.t === 'commit' || m.t === 'evicted').length, 0, `node ${n} was told nothing but grants`);
  assert.ok(warnings.some((w) => /looks cut off from the cluster; nothing is reassigned/.test(w)), warnings.join('\n'));
  const n = warnings.length;
  // Healed: renewals arrive again, node 2's only 600 ms after the others' (a slower reconnect):
  // it is not failed over meanwhile, and within a failover retry every node is granted again.
  const granted = () => [0, 1, 2].map((n) => sent.get(n)!.filter((m) => m.t === 'grant').length);
  const before = granted();
  let seq = 5000;
  await timers.run(600, timing.renewMs, cm, () => {
    seq++;
    for (const n of [0, 1]) cm.onMessage({ t: 'renew', node: n, seq, term: 1 }, links.get(n)!);
  });
  assert.equal(store.writes, 0, 'node 2, reconnecting late, was failed over');
  await timers.run(1500, timing.renewMs, cm, renewAll);
  const after = granted();
  for (const n of [0, 1, 2]) assert.ok(after[n]! > before[n]! + 5, `node ${n} granted again after the heal (${before[n]} -> ${after[n]})`);
  assert.equal(store.writes, 0, 'still nothing reassigned');
  assert.ok(warnings.slice(n).some((w) => /not suspected for the next/.test(w)), warnings.slice(n).join('\n'));
  assert.equal(cm.config().term, 1);
  cm.close();
});

// Issue 24 hazard 3: the cut-off manager refused only a failover that had to move a primary; a node
// holding backups only (or nothing) needed no live taker and was evicted -- term stored, the node
// told it was removed -- while every node was healthy.
for (const [what, layout] of [['backups only', backupsOnly], ['nothing', holdsNothing]] as const) {
  test(`a manager cut off from every node stores nothing when a node holds ${what}, and fails it over once the others renew and it stays silent`, async () => {
    const { timers, warnings, store, timing, cm, sent, links } = setup(layout);
    const renew = (nodes: number[], seq: number) => {
      for (const n of nodes) cm.onMessage({ t: 'renew', node: n, seq, term: 1 }, links.get(n)!);
    };
    let seq = 0;
    await timers.run(400, timing.renewMs, cm, () => renew([0, 1, 2], ++seq));
    // The cut: node 2's path goes first (its failover is the first planned, while nodes 0 and 1 still
    // look valid), then everyone's; 3 s of silence, many leases.
    await timers.run(2 * timing.renewMs, timing.renewMs, cm, () => renew([0, 1], ++seq));
    await timers.run(3000, 10, cm);
    assert.ok(warnings.some((w) => /suspected failed/.test(w)), 'nobody was even suspected');
    assert.equal(store.writes, 0, `a configuration was stored while this manager was cut off (term ${store.cfg.term}, dead ${JSON.stringify(store.cfg.dead ?? [])})`);
    // Grants, and asks to renew now (a failover's verdict asks the members it has not heard since).
    for (const n of [0, 1, 2]) assert.deepEqual(sent.get(n)!.filter((m) => m.t !== 'grant' && m.t !== 'renewNow').map((m) => m.t), [], `node ${n} was told nothing but grants and renewNow`);
    assert.ok(warnings.some((w) => /looks cut off from the cluster; nothing is reassigned/.test(w)), warnings.join('\n'));
    // Healed for nodes 0 and 1; node 2 stays silent (it did die): once they renew, the manager acts
    // again -- node 2 is failed over, after the reconnect grace.
    await timers.run(4000, timing.renewMs, cm, () => renew([0, 1], ++seq));
    assert.equal(store.cfg.term, 2, warnings.join('\n'));
    assert.deepEqual(store.cfg.dead, [2]);
    assert.deepEqual(store.cfg.shards.map((s) => s.primary), layout(cluster()).shards.map((s) => s.primary), 'no primary moved');
    cm.close();
  });
}

test('a node whose renewals are held up past its lease, then arrive again, keeps its shards; one that stays silent is failed over', async () => {
  const { timers, store, timing, cm, links, renewAll } = setup();
  await timers.run(400, timing.renewMs, cm, renewAll);
  // Node 0 goes silent while 1 and 2 renew: detected after its lease, then its renewals come back
  // (a stalled link) before the failover is planned -- it must keep its shards.
  let t = 0;
  await timers.run(600, 10, cm, () => {
    t += 10;
    if (t % timing.renewMs !== 0) return;
    for (const n of [1, 2]) cm.onMessage({ t: 'renew', node: n, seq: 1000 + t, term: 1 }, links.get(n)!);
    if (t >= 230) cm.onMessage({ t: 'renew', node: 0, seq: 1000 + t, term: 1 }, links.get(0)!);
  });
  assert.equal(store.writes, 0, 'node 0 was heard again before its failover was stored');
  // Now node 0 stays silent for good: it is failed over to the nodes that still renew.
  await timers.run(2000, 10, cm, () => {
    t += 10;
    if (t % timing.renewMs === 0) for (const n of [1, 2]) cm.onMessage({ t: 'renew', node: n, seq: 1000 + t, term: 1 }, links.get(n)!);
  });
  assert.equal(store.cfg.term, 2);
  assert.deepEqual(store.cfg.dead, [0]);
  cm.close();
});

// Nemesis seed 884161638 (shm), its first fault: the manager cut off for 762 ms, under a lease of
// 1000 ms. After the heal nodes 1 and 2 renewed at once, node 0 only later -- its TCP connection was
// still backing off the retransmissions the cut had lost -- and the manager failed node 0 over,
// healthy, for having heard the two others. A silence of the whole cluster longer than two renewal
// periods is this manager's own (a cut or a pause), however short: every member gets the grace.
test('a manager cut off for less than a lease reassigns nothing when one member comes back late (its retransmissions backing off)', async () => {
  const { timers, warnings, store, timing, cm, links, renewAll } = setup();
  await timers.run(400, timing.renewMs, cm, renewAll);
  // The cut: 150 ms of silence from everyone (under one lease, over two renewal periods).
  await timers.run(150, 10, cm);
  // Healed: nodes 0 and 1 renew at once, node 2 only 500 ms later (past its lease at the manager).
  let t = 0;
  await timers.run(1500, 10, cm, () => {
    t += 10;
    if (t % timing.renewMs !== 0) return;
    for (const n of t >= 500 ? [0, 1, 2] : [0, 1]) cm.onMessage({ t: 'renew', node: n, seq: 9000 + t, term: 1 }, links.get(n)!);
  });
  assert.equal(store.writes, 0, `node 2 was failed over though the silence was the manager's:\n${warnings.join('\n')}`);
  assert.equal(cm.config().term, 1);
  assert.ok(warnings.some((w) => /not suspected for the next/.test(w)), warnings.join('\n'));
  cm.close();
});

// The other side of the excuse: a manager whose own silences recur (a loaded machine, an event loop
// held up longer than two renewal periods again and again) must still fail over a node that died
// before them. Only members whose lease was valid when a silence began are excused.
test("a node that died before the manager's silences is failed over, however often they recur", async () => {
  const { timers, warnings, store, timing, cm, links, renewAll } = setup();
  await timers.run(400, timing.renewMs, cm, renewAll);
  // Node 2 dies; nodes 0 and 1 renew, but every 150 ms the manager hears nobody for 100 ms (more
  // than two renewal periods): each time it comes back it takes the silence for its own.
  let t = 0;
  await timers.run(3000, 10, cm, () => {
    t += 10;
    if (t % 150 < 100 || t % timing.renewMs !== 0) return;
    for (const n of [0, 1]) cm.onMessage({ t: 'renew', node: n, seq: 7000 + t, term: 1 }, links.get(n)!);
  });
  assert.ok(warnings.filter((w) => /not suspected for the next/.test(w)).length >= 10, warnings.join('\n'));
  assert.equal(store.cfg.term, 2, `node 2 was not failed over:\n${warnings.join('\n')}`);
  assert.deepEqual(store.cfg.dead, [2]);
  cm.close();
});

test('a failover asks the members it has not heard since the detection to renew now, and stores once they answer, not at their next periodic renewal', async () => {
  const { clock, timers, store, timing, cm, sent, links } = setup();
  let seq = 0;
  const renew = (nodes: number[]) => {
    seq++;
    for (const n of nodes) cm.onMessage({ t: 'renew', node: n, seq, term: 1 }, links.get(n)!);
  };
  await timers.run(400, timing.renewMs, cm, () => renew([0, 1, 2]));
  // Node 2's process dies right after a renewal: its connection closes (no lease wait for the
  // verdict). Nodes 0 and 1 renew periodically only every renewMs (40 ms here).
  clock.advance(5);
  cm.onClose(2, links.get(2)!);
  await timers.run(1, 1, cm);
  for (const n of [0, 1]) assert.deepEqual(sent.get(n)!.filter((m) => m.t === 'renewNow').length, 1, `node ${n} asked to renew now`);
  assert.equal(sent.get(2)!.filter((m) => m.t === 'renewNow').length, 0, 'not the failed node');
  assert.equal(store.writes, 0, 'nothing stored before the others were heard');
  // They answer at once (2 ms later, far from their next periodic renewal): the failover is stored.
  const asked = clock.now();
  await timers.run(2, 1, cm);
  renew([0, 1]);
  await timers.run(timing.renewMs / 4 + 2, 1, cm);
  assert.equal(store.cfg.term, 2, 'stored after the solicited renewals');
  assert.ok(clock.now() - asked < timing.renewMs / 2, `stored ${clock.now() - asked} ms after asking, not a renewal period later`);
  assert.deepEqual(store.cfg.dead, [2]);
  cm.close();
});
