// A node added to a running cluster (`rowan node add`, issue 28) has the join grace to say hello --
// its cold start, which took 16 s on this shared machine -- counted from when it was added, not from
// when the manager started. Failed before: added more than joinGraceMs after the manager started, it
// was suspected and failed over at once, listed dead before its process was up (the grow-shrink test
// in network namespaces then saw every node it added failed over and rejoined empty).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../../../../config/base/clock.js';
import { planCluster, type ClusterConfig, type ClusterNode } from '../../../../config/cluster.js';
import type { Logger } from '../../../../config/base/log.js';
import { defaultTimings } from '../../../../config/timings.js';
import { ConfigManager, type Link } from '../../../../actors/manager/manager.js';
import { leaseTiming } from '../../../../actors/manager/leases.js';
import { ManualTimers, MemoryStore } from '../../../fixtures/manager-fakes.js';

const node = (id: number): ClusterNode => ({ id, host: '127.0.0.1', dataDir: `/tmp/n${id}`, workerPorts: [7000 + id], fabric: { kind: 'tcp', host: '127.0.0.1', port: 7500 + id } });

test('a node added long after the manager started is not failed over before its join grace from the add', async () => {
  const clock = new ManualClock(1000);
  const timers = new ManualTimers(clock);
  const noop = () => {};
  const log = { info: noop, debug: noop, trace: noop, error: noop, warn: noop } as unknown as Logger;
  const initial: ClusterConfig = planCluster({ nodes: [0, 1, 2].map(node), shardCount: 6, replicationFactor: 3 });
  const store = new MemoryStore(initial);
  const timing = leaseTiming(200, 40);
  const cm = new ConfigManager(store, initial, timing, clock, log, timers.sleep);
  const links = new Map<number, Link>([0, 1, 2].map((n) => [n, { send: noop }]));
  for (const [n, l] of links) cm.onMessage({ t: 'hello', node: n, pid: 1, term: 1 }, l);
  let seq = 0;
  const run = async (ms: number) => {
    for (let t = 0; t < ms; t += timing.renewMs) {
      clock.advance(timing.renewMs);
      timers.fire();
      seq++;
      for (const [n, l] of links) cm.onMessage({ t: 'renew', node: n, seq, term: store.cfg.term }, l);
      cm.tick();
      for (let i = 0; i < 10; i++) await new Promise((r) => setImmediate(r));
    }
  };
  await run(defaultTimings.joinGraceMs + 2000); // the manager's own join grace is long over
  assert.deepEqual(store.cfg.dead ?? [], []);
  let added: { term: number } | undefined;
  cm.requestMembership({ kind: 'add', node: node(3) }, (err, r) => {
    assert.equal(err, null);
    added = r;
  });
  await run(5 * timing.leaseMs);
  assert.ok(added && store.cfg.nodes.some((n) => n.id === 3), 'node 3 stored as a member');
  assert.deepEqual(store.cfg.dead ?? [], [], 'node 3, still starting, is not failed over within its join grace');
  await run(defaultTimings.joinGraceMs);
  assert.deepEqual(store.cfg.dead ?? [], [3], 'a node that never says hello is failed over once its join grace from the add is over');
});
