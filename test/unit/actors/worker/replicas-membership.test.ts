// A worker's replication links reach a backup by the configuration in force, not the one the worker
// started with (issue 28): a node added to the cluster later (rowan cluster add-node) becomes a backup
// of shards whose primaries started before it existed. Failed before: "cluster config: nodes has no
// node 3" (ROWAN_ERR_BAD_CONFIG), every write to the new backup an unknown outcome.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { planCluster, type ClusterNode } from '../../../../config/cluster.js';
import { openReplicas } from '../../../../actors/worker/replicas.js';
import type { ActorContext } from '../../../../runtime/actor.js';
import type { PeerEndpoint } from '../../../../runtime/fabric/transport.js';

const node = (id: number): ClusterNode => ({ id, host: '127.0.0.1', dataDir: `/d/${id}`, workerPorts: [7000 + id * 10], fabric: { kind: 'shm', host: '127.0.0.1', port: 0 } });

test('a backup added after the worker started is reached through the current configuration', async () => {
  const started = planCluster({ nodes: [0, 1, 2].map(node), shardCount: 3, replicationFactor: 3 });
  let current = started;
  const reached: PeerEndpoint[] = [];
  const written: number[] = [];
  const ctx = {
    transport: {
      connect: async (peer: PeerEndpoint) => {
        reached.push(peer);
        return { write: async (b: Uint8Array) => (written.push(b.length), 0), close: async () => {} };
      },
    },
  } as unknown as ActorContext;
  const set = openReplicas(started, 0, ctx, undefined, () => current.term, () => current);
  current = { ...structuredClone(started), term: started.term + 1, nodes: [...started.nodes, node(3)] };
  await set.channel(3, 0).write(new Uint8Array(8));
  assert.deepEqual(reached.map((p) => [p.id, p.dataDir]), [[3, '/d/3']]);
  assert.deepEqual(written, [8]);
  await set.close();
});
