// A standby manager taking over (actors/manager/manager.ts with an Activation, ./election.ts), driven
// with fake links, an in-memory store and a ManualClock:
//   * it completes a term the previous manager stored but did not push: the members still below it are
//     prepared and committed with the highest reported version as floor and the gathered entries
//     scattered, and members already on it are not waited for; the commit waits until the dead node's
//     lease certainly expired (the previous manager may have stored the term before it did);
//   * while its activation is not valid it grants nothing, suspects no one and stores nothing; resume()
//     starts over with no lease knowledge: a member it has not heard from is suspected only after a
//     full lease + drift + the takeover grace, never sooner.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../../../../config/base/clock.js';
import { planCluster, type ClusterConfig } from '../../../../config/cluster.js';
import { ConfigManager, type Activation } from '../../../../actors/manager/manager.js';
import { defaultTimings } from '../../../../config/timings.js';
import { planFailover } from '../../../../actors/manager/plan.js';
import { leaseTiming } from '../../../../actors/manager/leases.js';
import { fakeLinks, ManualTimers, MemoryStore, recordingLog, settle } from '../../../fixtures/manager-fakes.js';
import type { GatherEntry } from '../../../../actors/shared/manager-protocol.js';

function cluster(): ClusterConfig {
  return planCluster({
    nodes: [0, 1, 2, 3].map((id) => ({ id, host: '127.0.0.1', dataDir: `/tmp/n${id}`, workerPorts: [7000 + id], fabric: { kind: 'shm' as const, host: '127.0.0.1', port: 0 } })),
    shardCount: 4,
    replicationFactor: 4,
  });
}

const entry = (s: number, v: number, key: string): GatherEntry => ({ s, v, t: 1, k: Buffer.from(key).toString('base64'), x: Buffer.from(`value-${v}`).toString('base64') });


test('takeover: a stored term the previous manager did not push is completed with floors and scatter; members already on it are not waited for', async () => {
  const clock = new ManualClock(10_000);
  const timers = new ManualTimers(clock);
  const { log, lines } = recordingLog();
  const c1 = cluster();
  const stored = planFailover(c1, 0, new Set([1, 2, 3])).next; // node 0 failed; stored at term 2, never pushed
  const store = new MemoryStore(stored);
  const act: Activation = { valid: () => true, elected: true, takeover: true };
  const cm = new ConfigManager(store, stored, leaseTiming(200), clock, log, timers.sleep, act);
  const h = fakeLinks([0, 1, 2, 3]);
  cm.onMessage({ t: 'hello', node: 0, pid: 1, term: 1 }, h.links.get(0)!);
  assert.equal(h.of(0, 'evicted').length, 1, 'the dead node is told it was removed');
  cm.onMessage({ t: 'hello', node: 1, pid: 1, term: 1 }, h.links.get(1)!);
  cm.onMessage({ t: 'hello', node: 2, pid: 1, term: 1 }, h.links.get(2)!);
  await settle();
  assert.equal(h.of(1, 'grant').length, 1, 'members are granted at once');
  assert.equal(h.of(1, 'commit').length, 0, 'no bare catch-up commit while the takeover completes the term');
  assert.equal(h.of(1, 'prepare').length, 0, 'not before every member reconnected (or the bound passed)');
  cm.onMessage({ t: 'hello', node: 3, pid: 1, term: stored.term }, h.links.get(3)!); // node 3 had the commit already
  await timers.advance(20);
  for (const n of [1, 2, 3]) assert.equal(h.of(n, 'prepare').length, 1, `node ${n} is sent the prepare`);
  assert.equal(h.of(1, 'prepare')[0]!.term, stored.term);
  cm.onMessage({ t: 'prepared', node: 1, term: stored.term, versions: { 0: 11 }, entries: [entry(0, 10, 'a'), entry(0, 11, 'b')], truncated: false }, h.links.get(1)!);
  await settle();
  assert.equal(h.of(1, 'commit').length, 0, 'node 2 is still below the term and has not answered');
  cm.onMessage({ t: 'prepared', node: 2, term: stored.term, versions: { 0: 12 }, entries: [entry(0, 12, 'c')], truncated: false }, h.links.get(2)!);
  await settle();
  // The previous manager may have stored the failover before node 0's lease expired (it plans at once
  // after a closed connection): no commit until it certainly has, as this manager knows it -- from its
  // activation, a lease and the drift, since it never granted node 0 anything.
  const expiresAt = 10_000 + cm.timing.leaseMs + cm.timing.driftMs;
  await timers.advance(expiresAt - clock.now() - 1);
  assert.equal(h.of(1, 'commit').length, 0, 'no commit before the dead node\'s lease certainly expired');
  await timers.advance(cm.timing.renewMs);
  for (const n of [1, 2, 3]) assert.equal(h.of(n, 'commit').length, 1, `node ${n} is sent the commit (node 3, already on it, ignores it)`);
  const commit1 = h.of(1, 'commit')[0]!;
  assert.equal(commit1.floors['0'], 12, 'the floor is the highest version reported');
  assert.deepEqual((commit1.scatter ?? []).map((e) => e.v), [12]);
  assert.deepEqual((h.of(2, 'commit')[0]!.scatter ?? []).map((e) => e.v).sort(), [10, 11]);
  assert.equal(store.writes, 0, 'completing a stored term stores nothing new');
  assert.ok(lines.some((l) => /completed term 2 stored by the previous manager: 1 shard\(s\) changing primary/.test(l)), lines.join('\n'));
  cm.close();
});

test('takeover: an invalid activation grants, suspects and stores nothing; after resume() a silent member is suspected only after lease + drift + grace', async () => {
  const clock = new ManualClock(0);
  const timers = new ManualTimers(clock);
  const { log } = recordingLog();
  const c1 = cluster();
  const store = new MemoryStore(c1);
  let valid = false;
  const timing = leaseTiming(200);
  const cm = new ConfigManager(store, c1, timing, clock, log, timers.sleep, { valid: () => valid, elected: true, takeover: true });
  const h = fakeLinks([0, 1, 2, 3]);
  for (const n of [0, 1, 2, 3]) cm.onMessage({ t: 'hello', node: n, pid: 1, term: 1 }, h.links.get(n)!);
  cm.onClose(3, h.links.get(3)!);
  await timers.advance(60_000);
  for (let i = 0; i < 5; i++) cm.tick();
  await timers.advance(10_000);
  for (const n of [0, 1, 2]) assert.equal(h.sent.get(n)!.length, 0, `node ${n}: nothing sent while not valid`);
  assert.equal(store.writes, 0);

  valid = true;
  cm.resume();
  const resumedAt = clock.now();
  for (const n of [0, 1, 2]) cm.onMessage({ t: 'renew', node: n, seq: 1, term: 1 }, h.links.get(n)!);
  for (const n of [0, 1, 2]) assert.equal(h.of(n, 'grant').length, 1, `node ${n} is granted again`);
  // Node 3 (gone) was never heard from after the resume: not suspected before the bound.
  const bound = resumedAt + Math.max(defaultTimings.takeoverGraceMs, timing.leaseMs + timing.driftMs);
  const renewAll = () => {
    for (const n of [0, 1, 2]) cm.onMessage({ t: 'renew', node: n, seq: 1, term: 1 }, h.links.get(n)!);
  };
  while (clock.now() < bound - 50) {
    await timers.advance(40);
    renewAll();
    cm.tick();
    await settle();
    assert.equal(store.writes, 0, `no failover stored at ${clock.now() - resumedAt} ms after the resume`);
  }
  for (let i = 0; i < 40 && store.writes === 0; i++) {
    await timers.advance(40);
    renewAll();
    cm.tick();
    await settle();
  }
  assert.equal(store.writes, 1, 'the silent member is failed over once the bound has passed');
  assert.deepEqual(store.cfg.dead, [3]);
  cm.close();
});
