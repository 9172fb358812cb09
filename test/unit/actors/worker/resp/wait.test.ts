// WAIT's count (actors/worker/resp/wait.ts): the fewest backups holding all of a shard, over the shards
// of the slots a connection wrote to -- a dead backup gone from the configuration and a catching-up one
// do not count.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ClusterConfig } from '../../../../../config/cluster.js';
import { backupsHolding } from '../../../../../actors/worker/resp/wait.js';

const config = (over: Partial<ClusterConfig>): ClusterConfig =>
  ({
    format: 3, term: 2, replicationFactor: 3, replication: 'rowan', shardCount: 2, nodes: [], migrations: [],
    shards: [
      { id: 0, primary: 0, backups: [1, 2] },
      { id: 1, primary: 1, backups: [2] },
    ],
    ...over,
  }) as ClusterConfig;

test('WAIT counts the full backups of the shards written to; all shards when nothing was written', () => {
  const c = config({});
  assert.equal(backupsHolding(c, new Set([0])), 2, 'slot 0 is shard 0: two backups');
  assert.equal(backupsHolding(c, new Set([16383])), 1, 'slot 16383 is shard 1: one backup');
  assert.equal(backupsHolding(c, new Set([0, 16383])), 1);
  assert.equal(backupsHolding(c, new Set()), 1);
  const catching = config({ catchingUp: [{ shard: 0, node: 2 }] });
  assert.equal(backupsHolding(catching, new Set([0])), 1, 'a backup still catching up does not hold the older writes');
});
