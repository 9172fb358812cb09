// A failed-over node taken back (actors/manager/healing.ts) in a cluster with more members than the
// replication factor: re-replication gave its shards to the others already, so it holds nothing and
// nothing would ever give it some -- the join's term turns balancing on (issue 28: a node SIGKILLed
// while replicas were spread onto it rejoined after the balancing had ended without it, and stayed
// empty). With as many members as the factor, re-replication gives it every shard back: no balancing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../../../../config/base/clock.js';
import { planCluster, type ClusterConfig, type ClusterNode } from '../../../../config/cluster.js';
import type { Logger } from '../../../../config/base/log.js';
import { Healing } from '../../../../actors/manager/healing.js';

const node = (id: number): ClusterNode => ({ id, host: '127.0.0.1', dataDir: `/d/${id}`, workerPorts: [7000 + id * 10], fabric: { kind: 'shm', host: '127.0.0.1', port: 0 } });

/** `n` nodes, node `dead` failed over: listed dead, holding nothing (its replicas re-placed on the others). */
function failedOver(n: number, dead: number): ClusterConfig {
  const c = planCluster({ nodes: Array.from({ length: n }, (_, id) => node(id)), shardCount: 8, replicationFactor: 3 });
  const others = c.nodes.map((x) => x.id).filter((id) => id !== dead);
  const shards = c.shards.map((s, i) => {
    const primary = others[i % others.length]!;
    return { id: s.id, primary, backups: others.filter((o) => o !== primary).slice(0, 2) };
  });
  return { ...c, term: 5, dead: [dead], shards };
}

async function rejoin(c: ClusterConfig, who: number): Promise<ClusterConfig> {
  let cfg = c;
  const noop = () => {};
  const log = { info: noop, debug: noop, trace: noop, error: noop, warn: noop } as unknown as Logger;
  const h = new Healing({
    config: () => cfg, members: () => cfg.nodes.map((n) => n.id), usable: () => true, connected: () => true, admitted: noop,
    push: async (next) => { cfg = next; }, clock: new ManualClock(1000), log,
  });
  h.join(who);
  await h.pass();
  return cfg;
}

test('a node rejoining a cluster with more members than the factor turns balancing on', async () => {
  const c = await rejoin(failedOver(6, 4), 4);
  assert.deepEqual(c.dead ?? [], []);
  assert.equal(c.balancing, true);
});

test('with as many members as the factor, no balancing (re-replication gives it every shard back)', async () => {
  const c = await rejoin(failedOver(3, 2), 2);
  assert.deepEqual(c.dead ?? [], []);
  assert.equal(c.balancing, undefined);
});
