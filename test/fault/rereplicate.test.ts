// Re-replication (§4.5 phase 3): a 4-node `rowan cluster`, replication 3, a few MB of data and a
// concurrent PUT/GET/DEL load; SIGKILL one node (--no-restart: it stays down). The manager fails it
// over and then adds a new backup, catching up, for every shard that lost one; each new backup copies
// the shard from its primary while the shard keeps serving, and reports; the manager clears the mark.
// Checked: every shard back to 3 replicas, none catching up, within a bound (measured); every
// replica holds the same value of the preloaded keys and of the load's keys (getReplica); the
// history is linearizable per key (so no acknowledged write was lost). Printed: time to 3 replicas,
// entries, bytes and MB/s copied (from the nodes' "caught-up" log lines).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RowanClient } from '../../client/client.js';
import { checkLinearizability } from '../check/linearizability.js';
import { launchCluster, randomBasePort, stopCluster } from '../fixtures/cluster.js';
import { allShardsServed, nodePids, probeKeys, readCluster, storedTerm, waitFor } from '../fixtures/failover-cluster.js';
import { KvLoad } from '../fixtures/failover-load.js';
import { copyStats, fullyReplicated, replicasAgree } from '../fixtures/rereplication.js';
import { checkLateBlocks, lateBlockCounts, unknownWrites } from '../fixtures/node-metrics.js';

const SHARDS = 8;
const PRELOAD = 6000;
const VALUE_BYTES = 1000;
const KEYS = Array.from({ length: 6 }, (_, i) => `key-${i}`);
const CLIENTS = 3;

test('SIGKILL of one of 4 nodes (replication 3) under load: every shard back to 3 caught-up replicas, replicas agree, history linearizable', { timeout: 240_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-rerep-'));
  const base = randomBasePort();
  const run = launchCluster(dir, base, ['--nodes', '4', '--replication', '3', '--shards', String(SHARDS), '--lease-ms', '1000', '--pool-mib', '64', '--no-restart']);
  const clients: RowanClient[] = [];
  try {
    await run.ready;
    const file = join(dir, 'cluster.json');
    const pids = nodePids(run.output());
    assert.equal(pids.size, 4, run.output());
    for (let i = 0; i < CLIENTS + 1; i++) clients.push(await RowanClient.connect({ cluster: file, retries: 5, timeoutMs: 5000 }));
    const probe = clients.pop()!;
    // Data to copy: PRELOAD keys of VALUE_BYTES, 16 PUTs in flight.
    const pre = (i: number) => `pre-${i}`;
    const value = (i: number) => `${i}:`.padEnd(VALUE_BYTES, 'x');
    for (let i = 0; i < PRELOAD; i += 16) await Promise.all(Array.from({ length: Math.min(16, PRELOAD - i) }, (_, j) => probe.put(pre(i + j), value(i + j))));
    const load = new KvLoad(clients, KEYS, 50_000);
    load.start();
    await waitFor('load to start', () => load.ops > 100, 30_000);

    const victim = 1 + Math.floor(Math.random() * 3);
    const term = storedTerm(file);
    const t0 = performance.now();
    process.kill(pids.get(victim)!, 'SIGKILL');
    await waitFor(`failover of node ${victim}`, () => storedTerm(file) > term, 20_000);
    await allShardsServed(probe, probeKeys(SHARDS), 20_000);
    const servedMs = performance.now() - t0;
    await waitFor('every shard back to 3 caught-up replicas', () => fullyReplicated(file, 3), 120_000, 20);
    const replicatedMs = performance.now() - t0;
    const ops = load.ops;
    await waitFor('load to go on after re-replication', () => load.ops > ops + 100, 30_000);
    await load.stop();
    for (const key of KEYS) await load.one(probe, CLIENTS, key, 'get');
    const r = checkLinearizability(load.operations(), { timeLimitMs: 60_000 });
    assert.equal(r.ok, true, r.describe());

    // Every replica of every shard holds the same (expected) values. A backup indexes its b-log
    // segments once they are full (§4.3): filler moves every backup past the ones holding the keys.
    const c = readCluster(file);
    assert.deepEqual(c.dead, [victim]);
    const filler = 'f'.repeat(2048);
    for (let i = 0; i < 1600; i += 16) await Promise.all(Array.from({ length: 16 }, (_, j) => probe.put(`filler-${i + j}`, filler)));
    const sample = Array.from({ length: 200 }, (_, k) => Math.floor((k * PRELOAD) / 200));
    const expected = [
      ...sample.map((i) => ({ key: pre(i), want: value(i) as string | null })),
      ...(await Promise.all(KEYS.map(async (k) => ({ key: k, want: ((v) => (v === null ? null : Buffer.from(v).toString()))(await probe.get(k)) })))),
    ];
    await waitFor('every replica to index the keys', () => replicasAgree(probe, c, expected).then(() => true, () => false), 30_000, 100);
    const checked = await replicasAgree(probe, c, expected);
    const s = copyStats(dir);
    // A SIGKILLed primary's in-flight writes (unknown outcomes) may land late at a backup.
    const unknown = unknownWrites(load.operations());
    const late = checkLateBlocks(await lateBlockCounts([0, 1, 2, 3], base), unknown > 0, `${unknown} write(s) of unknown outcome`);
    assert.ok(s.shards >= 1, 'some shard was copied to a new backup');
    assert.match(run.output(), /re-replication: term \d+ -> \d+; new backup/);
    await waitFor('the launcher to report the catch-up', () => /caught up: term \d+ -> \d+; .*every shard has 3 replicas/.test(run.output()), 10_000, 50);
    console.log(
      `re-replication test: node ${victim} killed; every shard served again after ${servedMs.toFixed(0)} ms, back to 3 caught-up replicas after ${replicatedMs.toFixed(0)} ms; ` +
        `${s.shards} shard copies: ${s.entries} entries, ${(s.bytes / 1e6).toFixed(2)} MB copied, per copy max ${s.maxMs.toFixed(0)} ms, ${s.mbps.toFixed(2)} MB/s (bytes / summed copy time); ` +
        `${load.ops} ops (${load.counts.ok} ok, ${load.counts.fail} not applied, ${load.counts.unknown} unknown ${JSON.stringify(load.counts.codes)}), linearizable (${r.ok === true ? r.checked : 0} checked), 0 acknowledged writes lost; ` +
        `${checked} replica reads agree; ${late}`,
    );
    // Keep the figure honest: the copy was of the preloaded data (~PRELOAD x VALUE_BYTES x shards lost / SHARDS).
    assert.ok(s.entries >= PRELOAD / 4, `copied ${s.entries} entries`);
    assert.ok(readFileSync(join(dir, 'manager.log'), 'utf8').includes('"event":"re-replicate"'));
  } finally {
    await Promise.all(clients.map((c) => c.close()));
    await stopCluster(run.child);
    if (process.env['ROWAN_TEST_KEEP'] === undefined) rmSync(dir, { recursive: true, force: true });
    else console.log(`kept ${dir}`);
  }
});
