// A decommissioned node's eviction says so (issue 28): once `rowan node decommission N` removed N from
// the membership and retired its id, N's next renewal is answered `evicted` with `retired`, and the
// node's line says it was decommissioned, not "restart it with --rejoin" (a retired id is never taken
// back). A node evicted because its lease expired (failed over) is still told to rejoin.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../../../../config/base/clock.js';
import { planCluster, type ClusterConfig } from '../../../../config/cluster.js';
import type { Logger } from '../../../../config/base/log.js';
import { ConfigManager } from '../../../../actors/manager/manager.js';
import { leaseTiming } from '../../../../actors/manager/leases.js';
import { ManualTimers, MemoryStore } from '../../../fixtures/manager-fakes.js';
import type { ManagerToNode } from '../../../../actors/shared/manager-protocol.js';
import { evictionLine } from '../../../../actors/node/eviction.js';

function cluster(): ClusterConfig {
  const c = planCluster({
    nodes: [0, 1, 2].map((id) => ({ id, host: '127.0.0.1', dataDir: `/tmp/n${id}`, workerPorts: [7000 + id], fabric: { kind: 'tcp' as const, host: '127.0.0.1', port: 7500 + id } })),
    shardCount: 6,
    replicationFactor: 3,
  });
  return { ...c, retired: [3] };
}

test('a retired (decommissioned) node is told so when evicted; a node that never was a member is not', () => {
  const clock = new ManualClock(1000);
  const noop = () => {};
  const log = { info: noop, debug: noop, trace: noop, error: noop, warn: noop } as unknown as Logger;
  const initial = cluster();
  const cm = new ConfigManager(new MemoryStore(initial), initial, leaseTiming(200, 40), clock, log, new ManualTimers(clock).sleep);
  const sent: ManagerToNode[] = [];
  cm.onMessage({ t: 'renew', node: 3, seq: 1, term: 1 }, { send: (m) => sent.push(m) });
  assert.deepEqual(sent, [{ t: 'evicted', term: 1, retired: true }]);
  sent.length = 0;
  cm.onMessage({ t: 'hello', node: 5, pid: 1, term: 1 }, { send: (m) => sent.push(m) });
  assert.deepEqual(sent, [{ t: 'evicted', term: 1 }]);
});

test("the node's line: decommissioned and not to be restarted when retired; restart with --rejoin otherwise", () => {
  const retired = evictionLine(true, 500);
  assert.match(retired, /decommissioned/);
  assert.doesNotMatch(retired, /--rejoin/);
  assert.match(evictionLine(false, 500), /restart it with --rejoin/);
});
