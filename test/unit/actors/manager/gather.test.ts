// Gather/scatter at promotion (§4.5 phase 2), the manager's side: ConfigManager driven with fake links,
// an in-memory store and a ManualClock. Three surviving replicas of the failed primary's shard list
// different entries in `prepared`; each must be sent in `commit` exactly the entries it did not list,
// and the commit must still wait until the failed node's lease has certainly expired (the prepare need
// not, when the node's connection closed).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../../../../config/base/clock.js';
import { planCluster, type ClusterConfig } from '../../../../config/cluster.js';
import type { Logger } from '../../../../config/base/log.js';
import { ConfigManager, type Link } from '../../../../actors/manager/manager.js';
import { planScatter } from '../../../../actors/manager/gather.js';
import { leaseTiming } from '../../../../actors/manager/leases.js';
import { ManualTimers, MemoryStore, settle } from '../../../fixtures/manager-fakes.js';
import type { GatherEntry, ManagerToNode } from '../../../../actors/shared/manager-protocol.js';

function capturingLogger(): { log: Logger; errors: string[] } {
  const errors: string[] = [];
  const noop = () => {};
  const log = { info: noop, warn: noop, debug: noop, trace: noop, error: (_o: unknown, msg: string) => errors.push(msg) } as unknown as Logger;
  return { log, errors };
}

const entry = (s: number, v: number, key: string): GatherEntry => ({ s, v, t: 1, k: Buffer.from(key).toString('base64'), x: Buffer.from(`value-${v}`).toString('base64') });

function cluster(): ClusterConfig {
  // Replication factor 4: shard 0's primary is node 0, and nodes 1, 2, 3 all back it up.
  return planCluster({
    nodes: [0, 1, 2, 3].map((id) => ({ id, host: '127.0.0.1', dataDir: `/tmp/n${id}`, workerPorts: [7000 + id], fabric: { kind: 'shm' as const, host: '127.0.0.1', port: 0 } })),
    shardCount: 4,
    replicationFactor: 4,
  });
}

test('gather/scatter: each surviving replica is sent exactly the entries it lacks, and only once the lease certainly expired', async () => {
  const clock = new ManualClock(1000);
  const timers = new ManualTimers(clock);
  const { log, errors } = capturingLogger();
  const initial = cluster();
  const timing = leaseTiming(200);
  const cm = new ConfigManager(new MemoryStore(initial), initial, timing, clock, log, timers.sleep);
  const sent = new Map<number, ManagerToNode[]>();
  const links = new Map<number, Link>();
  for (const n of [0, 1, 2, 3]) {
    sent.set(n, []);
    links.set(n, { send: (m) => sent.get(n)!.push(m) });
    cm.onMessage({ t: 'hello', node: n, pid: 1, term: 1 }, links.get(n)!);
  }
  await timers.advance(50);
  for (const n of [1, 2, 3]) cm.onMessage({ t: 'renew', node: n, seq: 1, term: 1 }, links.get(n)!);
  const expiresAt = cm.leases.certainlyExpiredAt(0); // node 0's last renewal (t=1000) + lease + drift
  assert.equal(expiresAt, 1000 + timing.leaseMs + timing.driftMs);

  cm.onClose(0, links.get(0)!); // node 0 dies: its connection closes
  await settle();
  const of = (n: number, t: ManagerToNode['t']) => sent.get(n)!.filter((m) => m.t === t);
  // Its connection closed (its kernel closed its sockets): planning and the prepare need not wait for
  // its lease -- the members were heard from at the detection -- only the commit does.
  for (const n of [1, 2, 3]) assert.equal(of(n, 'prepare').length, 1, `node ${n} prepared before the lease expired`);
  assert.ok(clock.now() < expiresAt);
  const term = (of(1, 'prepare')[0] as { term: number }).term;
  assert.equal(term, 2);

  // Shard 0 changes primary. Node 1 holds versions 10, 11; node 2 holds 11, 12; node 3 none of them.
  const e10 = entry(0, 10, 'a');
  const e11 = entry(0, 11, 'b');
  const e12 = entry(0, 12, 'c');
  cm.onMessage({ t: 'prepared', node: 1, term, versions: { 0: 11 }, entries: [e10, e11], truncated: false }, links.get(1)!);
  cm.onMessage({ t: 'prepared', node: 2, term, versions: { 0: 12 }, entries: [e11, e12], truncated: false }, links.get(2)!);
  await settle();
  assert.equal(of(1, 'commit').length, 0, 'no commit while a member has not answered');
  cm.onMessage({ t: 'prepared', node: 3, term, versions: { 0: 9 }, entries: [], truncated: false }, links.get(3)!);
  await settle();
  await timers.advance(expiresAt - clock.now() - 1);
  assert.equal(of(1, 'commit').length, 0, 'no commit 1 ms before the lease certainly expired');
  await timers.advance(1);

  const commits = [1, 2, 3].map((n) => of(n, 'commit') as Extract<ManagerToNode, { t: 'commit' }>[]);
  for (const c of commits) assert.equal(c.length, 1);
  const rec = cm.history[0]!;
  assert.ok(rec.committedAt! >= expiresAt, `committed at ${rec.committedAt}, lease certainly expired at ${expiresAt}`);
  const versions = (n: number) => (commits[n - 1]![0]!.scatter ?? []).map((e) => e.v).sort((a, b) => a - b);
  assert.deepEqual(versions(1), [12]);
  assert.deepEqual(versions(2), [10]);
  assert.deepEqual(versions(3), [10, 11, 12]);
  assert.deepEqual(commits[2]![0]!.scatter!.find((e) => e.v === 12), e12, 'entries are forwarded as listed');
  assert.equal(commits[0]![0]!.floors['0'], 12, 'the floor is the highest version any survivor holds');
  assert.equal(rec.gathered, 3);
  assert.equal(rec.scattered, 5);
  assert.deepEqual(errors, []);
  cm.close();
});

test('gather/scatter: a member that listed only part of its entries is logged as an error, and the commit still goes out', async () => {
  const clock = new ManualClock(0);
  const timers = new ManualTimers(clock);
  const { log, errors } = capturingLogger();
  const initial = cluster();
  const cm = new ConfigManager(new MemoryStore(initial), initial, leaseTiming(200), clock, log, timers.sleep);
  const sent = new Map<number, ManagerToNode[]>();
  const links = new Map<number, Link>();
  for (const n of [0, 1, 2, 3]) {
    sent.set(n, []);
    links.set(n, { send: (m) => sent.get(n)!.push(m) });
    cm.onMessage({ t: 'hello', node: n, pid: 1, term: 1 }, links.get(n)!);
  }
  cm.onClose(0, links.get(0)!);
  // The survivors renew every renewMs (a silence of all of them would be this manager's: ./partition.test.ts);
  // only members heard from after the failure may take its shards.
  let seq = 0;
  while (clock.now() < cm.leases.certainlyExpiredAt(0) + cm.timing.renewMs) {
    seq++;
    for (const n of [1, 2, 3]) cm.onMessage({ t: 'renew', node: n, seq, term: 1 }, links.get(n)!);
    await timers.advance(cm.timing.renewMs);
  }
  cm.onMessage({ t: 'prepared', node: 1, term: 2, versions: { 0: 10 }, entries: [entry(0, 10, 'a')], truncated: true }, links.get(1)!);
  cm.onMessage({ t: 'prepared', node: 2, term: 2, versions: { 0: 0 }, entries: [], truncated: false }, links.get(2)!);
  cm.onMessage({ t: 'prepared', node: 3, term: 2, versions: { 0: 0 }, entries: [], truncated: false }, links.get(3)!);
  await settle();
  for (const n of [1, 2, 3]) assert.equal(sent.get(n)!.filter((m) => m.t === 'commit').length, 1);
  assert.equal(errors.filter((e) => /cannot be complete/.test(e)).length, 1, errors.join('\n'));
  cm.close();
});

test('planScatter: a member that did not acknowledge gets the whole union; sends stop at the byte limit', () => {
  const next = cluster();
  const reports = new Map([
    [1, { entries: [entry(0, 1, 'a'), entry(0, 2, 'b')], truncated: false }],
    [2, { entries: [entry(0, 2, 'b'), entry(1, 7, 'z')], truncated: false }],
  ]);
  const all = planScatter(next, [0], reports, new Set([1, 2, 3]));
  assert.deepEqual(all.perMember.get(1)?.map((e) => e.v), undefined);
  assert.deepEqual(all.perMember.get(2)?.map((e) => e.v), [1]);
  assert.deepEqual(all.perMember.get(3)?.map((e) => e.v).sort(), [1, 2], 'node 3 never answered prepare');
  assert.equal(all.gathered, 2, 'shard 1 did not move: its entries are not gathered');
  assert.deepEqual(all.incomplete, []);
  const cut = planScatter(next, [0], reports, new Set([1, 2, 3]), 80); // one entry (72 B on the line) fits
  assert.equal(cut.perMember.get(3)?.length, 1);
  assert.ok(cut.incomplete.some((w) => /node 3/.test(w)), cut.incomplete.join('; '));
});
