// The TRAP of "cold start applies b-log blocks only to shards the node legitimately received"
// (actors/shared/trust.ts): a node promoted to primary at a failover (§4.5) holds that shard's
// pre-promotion data in its b-log. On a real `rowan cluster`: SIGKILL a primary, let a backup be
// promoted, overwrite some of the keys through the new primary, then restart the whole cluster: the
// promoted node's cold start must serve every acknowledged value -- the ones only its b-log holds
// included -- and must not have refused any block of a healthy cluster.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RowanClient } from '../../client/client.js';
import { shardOfKey } from '../../config/slots.js';
import { launchCluster, randomBasePort, stopCluster } from '../fixtures/cluster.js';
import { nodePids, readCluster, storedTerm, waitFor } from '../fixtures/failover-cluster.js';
import { checkLateBlocks, lateBlockCounts } from '../fixtures/node-metrics.js';

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array | null) => (b === null ? null : Buffer.from(b).toString());

test('a node promoted at a failover serves its pre-promotion data after a full restart (cold start keeps promoted shards)', { timeout: 240_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-promoted-cold-'));
  const base = randomBasePort();
  const flags = ['--shards', '12', '--lease-ms', '200', '--no-restart'];
  let run = launchCluster(dir, base, flags);
  try {
    await run.ready;
    const file = join(dir, 'cluster.json');
    const c1 = readCluster(file);
    const client = await RowanClient.connect({ cluster: file, retries: 5 });
    const keys = Array.from({ length: 200 }, (_, i) => `k-${i}`);
    const shardOf = (k: string) => shardOfKey(enc(k), c1.shardCount);
    for (const k of keys) await client.put(k, `v1-${k}`);

    const victim = 0;
    const moved = keys.filter((k) => c1.shards[shardOf(k)]!.primary === victim);
    assert.ok(moved.length > 10);
    process.kill(nodePids(run.output()).get(victim)!, 'SIGKILL');
    await waitFor('the failover of node 0 to be stored', () => storedTerm(file) === 2, 30_000);
    // Half of the moved keys are overwritten through their new primaries; the other half stay as the
    // old primary replicated them: on the promoted node they live in its b-log only.
    const overwritten = new Set(moved.filter((_, i) => i % 2 === 0));
    for (const k of overwritten) await client.put(k, `v2-${k}`);
    const expected = (k: string) => (overwritten.has(k) ? `v2-${k}` : `v1-${k}`);
    for (const k of keys) assert.equal(dec(await client.get(k)), expected(k), `before the restart: ${k}`);
    const c2 = readCluster(file);
    const promoted = new Set(moved.map((k) => c2.shards[shardOf(k)]!.primary));
    await client.close();
    await stopCluster(run.child); // non-zero: the launcher reports node 0's SIGKILL

    // Full restart: node 0 is dead in the configuration and stays down (--no-restart).
    run = launchCluster(dir, base, flags);
    await run.ready;
    const again = await RowanClient.connect({ cluster: file, retries: 5 });
    for (const k of keys) assert.equal(dec(await again.get(k)), expected(k), `after the restart: ${k}`);
    for (const k of moved.filter((x) => !overwritten.has(x)))
      assert.equal(dec(await again.getReplica(c2.shards[shardOf(k)]!.primary, k)), `v1-${k}`, `the promoted primary's own index: ${k}`);
    await again.close();
    // The promoted node recorded its promotion, and no node refused a block of this healthy cluster.
    for (const id of promoted) {
      const node = c2.nodes.find((n) => n.id === id)!;
      const rec = JSON.parse(readFileSync(join(node.dataDir, 'replicas.json'), 'utf8')) as { promoted: Record<string, number> };
      assert.ok(Object.keys(rec.promoted).length > 0, `node ${id} recorded its promotion: ${JSON.stringify(rec)}`);
    }
    for (const f of readdirSync(dir).filter((n) => /^node-\d+\.log$/.test(n))) {
      assert.doesNotMatch(readFileSync(join(dir, f), 'utf8'), /b-log block\(s\) not applied/, `${f}: a healthy cluster's cold start refused blocks`);
    }
    console.log(`# promoted cold start: ${moved.length} keys moved at the failover, all read back after the restart; ${checkLateBlocks(await lateBlockCounts([0, 1, 2], base), false, 'every write acknowledged before the kill, none in flight')}`);
  } finally {
    if (run.child.exitCode === null) await stopCluster(run.child);
    rmSync(dir, { recursive: true, force: true });
  }
});
