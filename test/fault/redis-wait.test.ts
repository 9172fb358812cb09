// WAIT after a node died (issue 27, "WAIT lies"): WAIT counts the backups that hold the connection's
// writes -- the backups of the shards it wrote to that hold all of the shard in the current
// configuration -- not the replication factor. Three nodes, three replicas per shard: WAIT 2 answers 2;
// a node is SIGKILLed and failed over, every shard is left with one backup, and WAIT 2 <timeout>
// answers 1 once the timeout passed (WAIT 1 at once).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { Redis } from 'ioredis';
import { launchReadyCluster, stopCluster, type LaunchedCluster } from '../fixtures/cluster.js';
import { nodePids, storedTerm, waitFor } from '../fixtures/failover-cluster.js';
import { readCluster, respPorts, useClusterPassword } from '../fixtures/redis.js';
import { basePortOf, checkLateBlocks, lateBlockCounts } from '../fixtures/node-metrics.js';

test('WAIT counts the backups that hold the writes: 2 before a node dies, 1 after its failover', { timeout: 180_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-redis-wait-'));
  let run: LaunchedCluster | null = null;
  const conns: Redis[] = [];
  try {
    run = await launchReadyCluster(dir, ['--shards', '6', '--lease-ms', '200', '--no-restart']);
    const password = useClusterPassword(dir);
    const c1 = readCluster(dir);
    assert.equal(c1.replicationFactor, 3);
    const ports = respPorts(c1);
    const open = (port: number) => {
      const r = new Redis({ port, host: '127.0.0.1', password, maxRetriesPerRequest: 0 });
      conns.push(r);
      return r;
    };
    const victim = 0;
    const survivor = open(ports.single[1]!);
    for (let i = 0; i < 20; i++) assert.equal(await survivor.set(`w:${i}`, 'v1'), 'OK');
    assert.equal(await survivor.call('WAIT', '2', '0'), 2);
    assert.equal(await open(ports.single[2]!).call('WAIT', '3', '50'), 2, 'no more replicas than there are backups');

    process.kill(nodePids(run.output()).get(victim)!, 'SIGKILL');
    const file = join(dir, 'cluster.json');
    await waitFor('the failover to be stored', () => storedTerm(file) > c1.term, 60_000, 20);
    const c2 = readCluster(dir);
    assert.deepEqual(c2.dead, [victim]);
    assert.ok(c2.shards.every((s) => s.backups.length === 1), JSON.stringify(c2.shards));
    await waitFor('the survivor to serve the new term', async () => new RegExp(`cluster_current_epoch:${c2.term}\\b`).test(String(await survivor.call('CLUSTER', 'INFO'))), 30_000, 50);

    for (let i = 0; i < 20; i++) assert.equal(await survivor.set(`w:${i}`, 'v2'), 'OK');
    assert.equal(await survivor.call('WAIT', '1', '0'), 1);
    assert.equal(await survivor.call('WAIT', '2', '100'), 1, 'one backup per shard is left: WAIT 2 times out with 1');
    const fresh = open(ports.single[2]!);
    assert.equal(await fresh.set('w:fresh', 'v'), 'OK');
    assert.equal(await fresh.call('WAIT', '2', '100'), 1);
    // Every SET was acknowledged before the kill or after the failover: none may be refused as late.
    console.log(`# ${checkLateBlocks(await lateBlockCounts([1, 2], basePortOf(run.output())), false, 'every SET was acknowledged before the kill or after the failover')}`);
  } finally {
    for (const r of conns) r.disconnect();
    if (run) await stopCluster(run.child);
    rmSync(dir, { recursive: true, force: true });
  }
});
