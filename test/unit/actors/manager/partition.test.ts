// The manager cut off from the whole cluster (README "Partitions", issue 13 (b)): every lease expires
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
import type { ManagerToNode } from '../../../../actors/kv/manager-protocol.js';

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

function setup() {
  const clock = new ManualClock(1000);
  const timers = new Timers(clock);
  const warnings: string[] = [];
  const noop = () => {};
  const log = { info: noop, debug: noop, trace: noop, error: (_o: unknown, m: string) => warnings.push(m), warn: (_o: unknown, m: string) => warnings.push(m) } as unknown as Logger;
  const initial = cluster();
  const store = new MemoryStore(initial);
  const timing = leaseTiming(200);
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
  assert.ok(warnings.slice(n).some((w) => /no member is suspected for the next/.test(w)), warnings.slice(n).join('\n'));
  assert.equal(cm.config().term, 1);
  cm.close();
});

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
