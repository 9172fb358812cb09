// A flush stays a flush (issue 27): keys written before a FLUSHALL do not come back after a cold start
// of the whole cluster (every node rebuilds its indexes from pools that still hold their entries: the
// FLUSH entry's floor drops them), nor after the primary of half the shards is SIGKILLed right after a
// flush (its backups are promoted; a promoted backup applies the FLUSH it holds, or is scattered it);
// keys written after each flush survive both, and DBSIZE counts exactly them.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { Redis } from 'ioredis';
import { launchCluster, randomBasePort, stopCluster, type LaunchedCluster } from '../fixtures/cluster.js';
import { nodePids, storedTerm, waitFor } from '../fixtures/failover-cluster.js';
import { readCluster, respPorts, useClusterPassword } from '../fixtures/redis.js';

const FLAGS = ['--shards', '12', '--lease-ms', '200', '--no-restart'];
const VICTIM = 0;

async function writeKeys(r: Redis, prefix: string, n: number): Promise<string[]> {
  const keys = Array.from({ length: n }, (_, i) => `${prefix}:${i}`);
  const p = r.pipeline();
  for (const k of keys) p.set(k, `v-${k}`);
  for (const [e, v] of (await p.exec())!) assert.equal(e === null ? v : e, 'OK');
  return keys;
}

/** None of `gone` and all of `kept` readable, and DBSIZE counts exactly `kept`. */
async function exactly(r: Redis, gone: string[], kept: string[], what: string): Promise<void> {
  assert.equal(await r.exists(...gone), 0, `${what}: no flushed key came back`);
  for (const k of kept) assert.equal(await r.get(k), `v-${k}`, `${what}: ${k}`);
  assert.equal(await r.dbsize(), kept.length, `${what}: DBSIZE`);
  assert.deepEqual((await r.keys('*')).sort(), [...kept].sort(), `${what}: KEYS`);
}

test('keys flushed stay flushed across a cold start and a failover; keys written after the flush stay', { timeout: 300_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-redis-flush-failover-'));
  const base = randomBasePort();
  let run: LaunchedCluster = launchCluster(dir, base, FLAGS);
  let r: Redis | null = null;
  try {
    await run.ready;
    const password = useClusterPassword(dir);
    r = new Redis({ port: respPorts(readCluster(dir)).single[1]!, password });
    const old = await writeKeys(r, 'old', 200);
    assert.equal(await r.flushall(), 'OK');
    const kept = await writeKeys(r, 'new', 40);
    await exactly(r, old, kept, 'after FLUSHALL');
    r.disconnect();
    assert.equal(await stopCluster(run.child), 0, run.output());

    run = launchCluster(dir, base, FLAGS); // a cold start: every node rebuilds its indexes from its pool
    await run.ready;
    r = new Redis({ port: respPorts(readCluster(dir)).single[1]!, password });
    await exactly(r, old, kept, 'after the cold start');

    // A second flush, then the primary of a third of the shards dies at once.
    const c2 = readCluster(dir);
    const old2 = await writeKeys(r, 'old2', 200);
    assert.equal(await r.flushdb(), 'OK');
    const kept2 = await writeKeys(r, 'new2', 40);
    process.kill(nodePids(run.output()).get(VICTIM)!, 'SIGKILL');
    const file = join(dir, 'cluster.json');
    await waitFor('the failover to be stored', () => storedTerm(file) > c2.term, 30_000, 20);
    assert.deepEqual(readCluster(dir).dead, [VICTIM]);
    const all = [...old, ...kept, ...old2]; // the second flush took the keys kept through the cold start too
    await waitFor('every shard served again', async () => (await r!.dbsize().catch(() => -1)) >= 0, 30_000, 50);
    await exactly(r, all, [...kept2], 'after the failover');
    console.log(`# redis flush: ${all.length} flushed keys stayed gone across a cold start and a failover (term ${c2.term} -> ${readCluster(dir).term}); ${kept2.length} written after the flush kept`);
  } finally {
    r?.disconnect();
    await stopCluster(run.child);
    rmSync(dir, { recursive: true, force: true });
  }
});
