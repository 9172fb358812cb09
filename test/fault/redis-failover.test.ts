// The Redis front end across a failover (issues 11 and 15): a node of a real `rowan cluster` is
// SIGKILLed; once the configuration manager has committed the next term, CLUSTER SLOTS on the
// survivors no longer lists it, a survivor answers MOVED with the new primary for a slot the dead node
// served, `redis-cli -c` follows it, and an ioredis Cluster client that still holds the old slot map
// reads every value written before the kill and writes to the moved slots.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { Cluster } from 'ioredis';
import { keySlot, shardOfSlot } from '../../config/slots.js';
import { launchCluster, randomBasePort, stopCluster } from '../fixtures/cluster.js';
import { nodePids, storedTerm, waitFor } from '../fixtures/failover-cluster.js';
import { checkLateBlocks, lateBlockCounts } from '../fixtures/node-metrics.js';
import { cli, haveRedisTools, readCluster, respPorts, useClusterPassword } from '../fixtures/redis.js';

const skip = haveRedisTools();

test('after a failover CLUSTER SLOTS drops the dead node, MOVED names the new primary, redis-cli -c and ioredis Cluster follow', { skip, timeout: 180_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-redis-failover-'));
  const base = randomBasePort();
  const run = launchCluster(dir, base, ['--shards', '12', '--lease-ms', '200', '--no-restart']);
  let io: Cluster | null = null;
  try {
    await run.ready;
    const password = useClusterPassword(dir);
    const c1 = readCluster(dir);
    const ports = respPorts(c1).cluster;
    io = new Cluster(ports.map((port) => ({ host: '127.0.0.1', port })), { clusterRetryStrategy: (n) => (n > 100 ? null : 50), maxRedirections: 32, redisOptions: { password } });
    const keys = Array.from({ length: 60 }, (_, i) => `rf:${i}`);
    for (const k of keys) assert.equal(await io.set(k, `v1-${k}`), 'OK');

    const victim = 0;
    const shardOf = (k: string) => shardOfSlot(keySlot(Buffer.from(k)), c1.shardCount);
    const onVictim = keys.filter((k) => c1.shards[shardOf(k)]!.primary === victim);
    assert.ok(onVictim.length > 0, 'some keys live on the victim');
    process.kill(nodePids(run.output()).get(victim)!, 'SIGKILL');
    const file = join(dir, 'cluster.json');
    await waitFor('the failover to be stored', () => storedTerm(file) > c1.term, 30_000, 20);
    const c2 = readCluster(dir);
    assert.deepEqual(c2.dead, [victim]);

    // A survivor that is not the new primary of a moved key's shard redirects to the one that is.
    const k = onVictim[0]!;
    const newPrimary = c2.shards[shardOf(k)]!.primary;
    const other = c2.nodes.find((n) => n.id !== victim && n.id !== newPrimary)!;
    const portOf = (id: number) => ports[c1.nodes.findIndex((n) => n.id === id)]!;
    const [otherPort, newPort, deadPort] = [portOf(other.id), portOf(newPrimary), portOf(victim)];
    // The survivors publish the commit a moment after it is stored: wait for MOVED to name the new owner.
    let moved = '';
    await waitFor('MOVED to name the new primary', async () => {
      moved = await cli(otherPort, 'GET', k);
      return moved === `MOVED ${keySlot(Buffer.from(k))} 127.0.0.1:${newPort}`;
    }, 30_000, 50);
    const slots = await cli(otherPort, 'CLUSTER', 'SLOTS');
    assert.ok(!slots.split('\n').includes(String(deadPort)), `CLUSTER SLOTS no longer lists the dead node's port ${deadPort}:\n${slots}`);
    assert.match(await cli(otherPort, 'CLUSTER', 'INFO'), new RegExp(`cluster_current_epoch:${c2.term}`));
    assert.equal(await cli(otherPort, '-c', 'GET', k), `v1-${k}`);

    // ioredis still routes by the term-1 map (the dead node among it): it re-reads the slots and follows.
    for (const key of keys) assert.equal(await io.get(key), `v1-${key}`);
    for (const key of onVictim) assert.equal(await io.set(key, `v2-${key}`), 'OK');
    for (const key of onVictim) assert.equal(await cli(portOf(c2.shards[shardOf(key)]!.primary), 'GET', key), `v2-${key}`);
    const late = checkLateBlocks(await lateBlockCounts([0, 1, 2], base), false, 'every write acknowledged before the kill, none in flight');
    console.log(`# redis failover: node ${victim} killed, term ${c1.term} -> ${c2.term}; ${onVictim.length} of ${keys.length} keys moved; MOVED, redis-cli -c and ioredis Cluster followed; ${late}`);
  } finally {
    io?.disconnect();
    await stopCluster(run.child);
    rmSync(dir, { recursive: true, force: true });
  }
});
