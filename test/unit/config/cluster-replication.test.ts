// ClusterConfig.replication (ROWAN §6.1 replication modes): defaults to rowan, old files without the
// field read as rowan, anything else is refused.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CLUSTER_REPLICATION_MODES, planCluster, validateCluster } from '../../../config/cluster.js';

const nodes = [0, 1, 2].map((id) => ({
  id, host: '127.0.0.1', dataDir: `/d/${id}`, workerPorts: [7100 + id], fabric: { kind: 'shm' as const, host: '127.0.0.1', port: 0 },
}));

test('replication mode: default rowan, every mode accepted, old configs read as rowan, others refused', () => {
  assert.equal(planCluster({ nodes, shardCount: 6, replicationFactor: 3 }).replication, 'rowan');
  for (const m of CLUSTER_REPLICATION_MODES) {
    const c = planCluster({ nodes, shardCount: 6, replicationFactor: 3, replication: m });
    assert.equal(validateCluster(JSON.parse(JSON.stringify(c))).replication, m);
  }
  const old = JSON.parse(JSON.stringify(planCluster({ nodes, shardCount: 6, replicationFactor: 3 })));
  delete old.replication;
  assert.equal(validateCluster(old).replication, 'rowan');
  assert.throws(() => validateCluster({ ...old, replication: 'farm' }), (e: Error & { code?: string }) => e.code === 'ROWAN_ERR_BAD_CONFIG' && /replication/.test(e.message));
});
