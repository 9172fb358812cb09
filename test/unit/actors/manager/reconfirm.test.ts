// Confirming restarted primaries (actors/manager/reconfirm.ts), driven through the configuration
// manager with fake links, an in-memory store and a ManualClock:
//   * a hello listing held shards starts a round on the same distribution (term + 1): every member is
//     prepared for those shards, the restarted node's restart tail is scattered to the backups that
//     lacked it, and the commit promotes the shards on their primary again (`promote`, `planned`);
//   * a shard is not confirmed while one of its backups is not connected: the round waits for it;
//   * a prepare round stops waiting for a member whose connection closed (Rounds.memberGone).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../../../../config/base/clock.js';
import { planCluster, type ClusterConfig } from '../../../../config/cluster.js';
import { ConfigManager } from '../../../../actors/manager/manager.js';
import { leaseTiming } from '../../../../actors/manager/leases.js';
import { fakeLinks, ManualTimers, MemoryStore, recordingLog, settle } from '../../../fixtures/manager-fakes.js';
import type { GatherEntry } from '../../../../actors/shared/manager-protocol.js';

/** Three nodes, three shards, every node a replica of every shard; shard s's primary is node s. */
function cluster(): ClusterConfig {
  return planCluster({
    nodes: [0, 1, 2].map((id) => ({ id, host: '127.0.0.1', dataDir: `/tmp/n${id}`, workerPorts: [7000 + id], fabric: { kind: 'shm' as const, host: '127.0.0.1', port: 0 } })),
    shardCount: 3,
    replicationFactor: 3,
  });
}

const entry = (s: number, v: number, key: string): GatherEntry => ({ s, v, t: 2, k: Buffer.from(key).toString('base64'), x: '' });


function manager(c: ClusterConfig) {
  const clock = new ManualClock(10_000);
  const timers = new ManualTimers(clock);
  const { log, lines } = recordingLog();
  const store = new MemoryStore(c);
  const cm = new ConfigManager(store, c, leaseTiming(200), clock, log, timers.sleep);
  return { cm, store, timers, lines };
}

test('reconfirm: a restarted primary is prepared and promoted again on the same distribution, its tail scattered to its backups', async () => {
  const c = cluster();
  const shard = c.shards.find((s) => s.primary === 1)!.id;
  const { cm, store, lines, timers } = manager(c);
  const h = fakeLinks([0, 1, 2]);
  cm.onMessage({ t: 'hello', node: 0, pid: 1, term: 1 }, h.links.get(0)!);
  cm.onMessage({ t: 'hello', node: 2, pid: 1, term: 1 }, h.links.get(2)!);
  cm.onMessage({ t: 'hello', node: 1, pid: 2, term: 1, unconfirmed: [shard] }, h.links.get(1)!);
  await settle();
  assert.equal(store.cfg.term, 2, 'the round stores term + 1');
  assert.deepEqual(store.cfg.shards, c.shards, 'on the same distribution');
  for (const n of [0, 1, 2]) assert.deepEqual(h.of(n, 'prepare')[0]?.shards, [shard], `node ${n} is prepared for the held shard`);
  const tail = entry(shard, 41, 'k'); // a DEL the previous incarnation had not replicated
  cm.onMessage({ t: 'prepared', node: 1, term: 2, versions: { [shard]: 1 << 20 }, entries: [tail], truncated: false }, h.links.get(1)!);
  cm.onMessage({ t: 'prepared', node: 0, term: 2, versions: { [shard]: 40 }, entries: [], truncated: false }, h.links.get(0)!);
  await settle();
  assert.equal(h.of(1, 'commit').length, 0, 'not before every replica prepared');
  cm.onMessage({ t: 'prepared', node: 2, term: 2, versions: { [shard]: 40 }, entries: [], truncated: false }, h.links.get(2)!);
  await settle();
  const commit = h.of(1, 'commit')[0]!;
  assert.deepEqual(commit.promote, [shard], 'the primary promotes its shard again');
  assert.deepEqual(commit.planned, [shard], 'without the promotion gap');
  assert.equal(commit.floors[shard], 1 << 20, 'above every version reported');
  for (const n of [0, 2]) assert.deepEqual((h.of(n, 'commit')[0]!.scatter ?? []).map((e) => e.v), [41], `backup ${n} is sent the tail it lacked`);
  assert.equal(h.of(1, 'commit')[0]!.scatter, undefined, 'the primary lacks nothing');
  cm.onMessage({ t: 'promoted', node: 1, term: 2, shards: [shard], ms: 1, entries: 0 }, h.links.get(1)!);
  await timers.advance(10);
  assert.ok(lines.some((l) => /restarted primaries confirmed at term 2: 1 shard\(s\), 1 entries gathered, 2 scattered/.test(l)), lines.join('\n'));
  cm.close();
});

test('reconfirm: a shard waits while one of its backups is not connected, and a prepare stops waiting for a member that disconnects', async () => {
  const c = cluster();
  const shard = c.shards.find((s) => s.primary === 0)!.id;
  const { cm, store, timers } = manager(c);
  const h = fakeLinks([0, 1, 2]);
  cm.onMessage({ t: 'hello', node: 0, pid: 2, term: 1, unconfirmed: [shard] }, h.links.get(0)!);
  cm.onMessage({ t: 'hello', node: 1, pid: 1, term: 1 }, h.links.get(1)!);
  await timers.advance(20);
  assert.equal(store.cfg.term, 1, 'no round while backup node 2 is not connected');
  assert.equal(h.of(0, 'prepare').length, 0);
  cm.onMessage({ t: 'hello', node: 2, pid: 1, term: 1 }, h.links.get(2)!);
  await settle();
  assert.equal(store.cfg.term, 2, 'node 2 connected: the round starts');
  cm.onMessage({ t: 'prepared', node: 0, term: 2, versions: { [shard]: 5 }, entries: [], truncated: false }, h.links.get(0)!);
  cm.onMessage({ t: 'prepared', node: 1, term: 2, versions: { [shard]: 5 }, entries: [], truncated: false }, h.links.get(1)!);
  cm.onClose(2, h.links.get(2)!); // node 2 goes away before it answers
  await settle();
  const commit = h.of(0, 'commit')[0];
  assert.ok(commit, 'the round ended without waiting out the prepare timeout');
  assert.equal(commit.promote, undefined, 'but the shard is not confirmed: a replica did not list what it holds');
  cm.close();
});
