// Which configuration manager an operator's tool (`rowan reshard`, `rowan status`) asks
// (bin/manager-admin.ts managerFor): with standby managers only the active one listens, on its own port.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { planCluster } from '../../../config/cluster.js';
import { managerFor } from '../../../bin/manager-admin.js';
import type { ElectionEntry } from '../../../actors/manager/election.js';

const nodes = Array.from({ length: 3 }, (_, id) => ({ id, host: '127.0.0.1', dataDir: `/d/${id}`, workerPorts: [7000 + id], fabric: { kind: 'shm' as const, host: '127.0.0.1', port: 0 } }));
const cluster = planCluster({ nodes, shardCount: 4, replicationFactor: 2 });
const entry = (i: number, active: boolean): ElectionEntry => ({ name: `cm-g${i}-000000000${i}`, host: '127.0.0.1', port: 7490 + i, pid: 100 + i, active });

test('managerFor: the active manager of the ZooKeeper election, not base + 490', () => {
  assert.deepEqual(managerFor(undefined, cluster, [entry(0, false), entry(1, true)]), { host: '127.0.0.1', port: 7491 });
});

test('managerFor: none active in the election (a takeover under way) is null, not a standby port', () => {
  assert.equal(managerFor(undefined, cluster, [entry(0, false), entry(1, false)]), null);
  assert.equal(managerFor(undefined, cluster, []), null);
});

test('managerFor: --manager wins; without an election (file store) the port rowan cluster gives the manager', () => {
  assert.deepEqual(managerFor('10.0.0.1:9000', cluster, [entry(1, true)]), { host: '10.0.0.1', port: 9000 });
  assert.deepEqual(managerFor(undefined, cluster, null), { host: '127.0.0.1', port: 7490 });
  assert.throws(() => managerFor('nohost', cluster, null), /not host:port/);
});
