// INFO on a single-endpoint port counts the whole cluster's keys by asking the other nodes; with one of
// them dead and not yet failed over (a long lease keeps it in the configuration) INFO still answers --
// ioredis sends INFO as its ready check, so a failing INFO would keep every new client from connecting --
// and says the count is incomplete instead of giving a wrong one. DBSIZE answers the error.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { Redis } from 'ioredis';
import { launchReadyCluster, stopCluster, type LaunchedCluster } from '../fixtures/cluster.js';
import { nodePids } from '../fixtures/failover-cluster.js';
import { readCluster, respPorts, useClusterPassword } from '../fixtures/redis.js';
import { basePortOf, checkLateBlocks, lateBlockCounts } from '../fixtures/node-metrics.js';

test('INFO on a single-endpoint port answers while another node is dead, its keyspace marked incomplete; ioredis still connects', { timeout: 180_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-redis-info-down-'));
  let run: LaunchedCluster | null = null;
  const conns: Redis[] = [];
  try {
    run = await launchReadyCluster(dir, ['--nodes', '2', '--replication', '2', '--shards', '4', '--lease-ms', '60000', '--no-restart']);
    const password = useClusterPassword(dir);
    const c = readCluster(dir);
    const port = respPorts(c).single[1]!;
    const open = () => {
      const r = new Redis({ port, host: '127.0.0.1', password, maxRetriesPerRequest: 0, retryStrategy: () => null });
      conns.push(r);
      return r;
    };
    const a = open();
    for (let i = 0; i < 10; i++) await a.set(`info:${i}`, 'v');
    assert.match(await a.info('keyspace'), /db0:keys=10,/);
    process.kill(nodePids(run.output()).get(c.nodes[0]!.id)!, 'SIGKILL');
    await assert.rejects(a.dbsize(), /ROWAN_ERR_PEER_(GONE|UNREACHABLE)/); // the link cut, or no link to open
    const info = await a.info();
    assert.match(info, /rowan_keyspace_incomplete:.*ROWAN_ERR_PEER_(GONE|UNREACHABLE)/);
    assert.doesNotMatch(info, /db0:/);
    const b = open();
    assert.equal(await b.ping(), 'PONG', 'a new ioredis client passes its INFO ready check');
    // The SETs were all acknowledged before the kill: the survivor refused none of their blocks as late.
    console.log(`# ${checkLateBlocks(await lateBlockCounts([c.nodes[1]!.id], basePortOf(run.output())), false, 'every SET was acknowledged before the kill')}`);
  } finally {
    for (const r of conns) r.disconnect();
    if (run) await stopCluster(run.child);
    rmSync(dir, { recursive: true, force: true });
  }
});
