// `rowan cluster status` names what a mode cannot do: erda has no failover and no log cleaning.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatClusterStatus, type ClusterStatus } from '../../../bin/cluster-status.js';

const status = (replication: string): ClusterStatus => ({
  term: 1, replication, dead: [], replicationFactor: 3, shardCount: 3, nodes: [], shards: [], migrations: [], manager: null,
});

test('cluster status of an erda cluster says it has no failover and no log cleaning', () => {
  const out = formatClusterStatus(status('erda'));
  assert.match(out, /replication 3 \(erda\)/);
  assert.match(out, /failover: NOT SUPPORTED for replication mode erda/);
  assert.match(out, /no log cleaning/);
  assert.doesNotMatch(formatClusterStatus(status('rowan')), /failover: NOT SUPPORTED|log cleaning/);
});
