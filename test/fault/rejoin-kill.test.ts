// The failover kill test with rejoin (issue 13): one long-lived `rowan cluster` (3 nodes, replication
// 3) under a concurrent PUT/GET/DEL load; each cycle SIGKILLs a random node (a primary: every node is
// one), waits until every shard is served again (measured), then until `rowan cluster` has restarted
// the node, it has rejoined (with the pool it kept) and re-replication has given it every shard again
// (measured), so the next kill may take any node. The whole history is checked for linearizability
// at the end (no acknowledged write lost, no stale read across the kills and rejoins).
// ROWAN_REJOIN_KILLS kills (default 3); `npm run test:rejoin-kills` runs 100.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RowanClient } from '../../client/client.js';
import { checkLinearizability } from '../check/linearizability.js';
import { killNode, launchCluster, randomBasePort, stopCluster } from '../fixtures/cluster.js';
import { allShardsServed, nodePids, probeKeys, readCluster, waitFor } from '../fixtures/failover-cluster.js';
import { KvLoad } from '../fixtures/failover-load.js';
import { fullyReplicated } from '../fixtures/rereplication.js';
import { checkLateBlocks, lateBlockCounts, unknownWrites } from '../fixtures/node-metrics.js';

const KILLS = Number(process.env['ROWAN_REJOIN_KILLS'] ?? 3);
const SHARDS = 8;
const KEYS = Array.from({ length: 8 }, (_, i) => `key-${i}`);

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
}

test(`${KILLS} SIGKILLs of random nodes of one cluster, each rejoining: every shard served again, back to 3 replicas, history linearizable`, { timeout: 120_000 + KILLS * 30_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-rejoin-kill-'));
  const base = randomBasePort();
  const cl = launchCluster(dir, base, ['--shards', String(SHARDS), '--lease-ms', '200', '--pool-mib', '48', '--no-auto-reshard']);
  const clients: RowanClient[] = [];
  const servedMs: number[] = [];
  const backMs: number[] = [];
  try {
    await cl.ready;
    const file = join(dir, 'cluster.json');
    for (let i = 0; i < 4; i++) clients.push(await RowanClient.connect({ cluster: file, retries: 10, timeoutMs: 5000 }));
    const probe = clients.pop()!;
    const maxOps = 40_000 + KILLS * 8_000;
    const load = new KvLoad(clients, KEYS, maxOps, 5);
    load.start();
    await waitFor('load to start', () => load.ops > 50, 30_000);
    let last = Math.floor(Math.random() * 3);
    let gone = 0;
    for (let k = 0; k < KILLS; k++) {
      await waitFor(`kill ${k}: every shard with 3 caught-up replicas`, () => fullyReplicated(file, 3) && (readCluster(file).dead ?? []).length === 0, 90_000, 50);
      assert.ok(load.ops < maxOps, `the load reached its bound of ${maxOps} operations`);
      const ops = load.ops;
      await waitFor('load to go on', () => load.ops > ops + 20, 30_000);
      // Not the previous victim: its restart is recent, and a second death within stableRunMs
      // doubles `rowan cluster`'s restart delay (bin/cluster-supervise.ts).
      const victim = (last + 1 + Math.floor(Math.random() * 2)) % 3;
      last = victim;
      const t0 = performance.now();
      if (!killNode(nodePids(cl.output()).get(victim)!)) {
        gone++; // it died on its own (evicted after a stall; it restarts to rejoin): not a kill of ours
        assert.ok(gone <= KILLS, `${gone} nodes died on their own: the cluster is not stable`);
        k--;
        continue;
      }
      await waitFor(`kill ${k}: failover of node ${victim}`, () => (readCluster(file).dead ?? []).includes(victim), 30_000, 10);
      await allShardsServed(probe, probeKeys(SHARDS), 30_000);
      servedMs.push(performance.now() - t0);
      await waitFor(`kill ${k}: node ${victim} back with every shard`, () => fullyReplicated(file, 3) && (readCluster(file).dead ?? []).length === 0, 90_000, 20);
      backMs.push(performance.now() - t0);
    }
    await load.stop();
    for (const key of KEYS) await load.one(probe, 3, key, 'get');
    const r = checkLinearizability(load.operations(), { timeLimitMs: 120_000 });
    assert.equal(r.ok, true, r.describe());
    // A SIGKILLed primary's in-flight writes (unknown outcomes) may land late at a backup.
    const unknown = unknownWrites(load.operations());
    const late = checkLateBlocks(await lateBlockCounts([0, 1, 2], base), unknown > 0, `${unknown} write(s) of unknown outcome`);
    console.log(
      `rejoin kill test: ${KILLS} SIGKILLs of one cluster's nodes, each restarted and rejoined (${gone} victims had died on their own first); every shard served again after p50 ${pct(servedMs, 50).toFixed(0)} ms, max ${Math.max(...servedMs).toFixed(0)} ms; ` +
        `back to 3 caught-up replicas (restart delay included) after p50 ${pct(backMs, 50).toFixed(0)} ms, max ${Math.max(...backMs).toFixed(0)} ms; ` +
        `${load.ops} ops (${load.counts.ok} ok, ${load.counts.fail} not applied, ${load.counts.unknown} unknown ${JSON.stringify(load.counts.codes)}), linearizable (${r.ok === true ? r.checked : 0} checked), 0 acknowledged writes lost; ${late}`,
    );
  } finally {
    await Promise.all(clients.map((c) => c.close()));
    await stopCluster(cl.child);
    if (process.env['ROWAN_TEST_KEEP'] === undefined) rmSync(dir, { recursive: true, force: true });
    else console.log(`kept ${dir}`);
  }
});
