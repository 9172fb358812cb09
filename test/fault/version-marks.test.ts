// Versions never go backwards across restarts (issue 24, hazard 1; DESIGN §6). A primary tells its
// backups CommitVer from its in-memory shard counter, and backups raise and persist their tombstone
// floors to it (actors/shared/floors.ts). That counter counts versions with nothing persisted at them --
// the promotion gap, dropped tombstones whose segments were freed -- so a cold start that rebuilt it
// from the pool alone came up below the floors: the next acknowledged PUT landed in every backup's
// b-log, digest refused it there as late, and the write was gone at the next failover (GET returned
// the old value). On real `rowan cluster`s, with every client operation recorded and the history
// checked for linearizability:
//   (i)  a shard promoted at a failover gets no writes; full restart; PUT K; SIGKILL its primary; GET K;
//   (ii) a unique-key PUT+DEL churn on one shard, its t-log segments freed by GC once their tombstones
//        are dropped; full restart; PUT K; SIGKILL its primary; GET K.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RowanClient } from '../../client/client.js';
import { PROMOTION_VERSION_GAP } from '../../actors/node/promote.js';
import { dataDirFiles } from '../../config/base/files.js';
import type { ClusterConfig } from '../../config/cluster.js';
import { shardOfKey } from '../../config/slots.js';
import { assertLinearizable } from '../check/linearizability.js';
import { launchCluster, randomBasePort, stopCluster, type LaunchedCluster } from '../fixtures/cluster.js';
import { RecordedClient } from '../fixtures/recorded-client.js';
import { nodePids, probeKeys, readCluster, storedTerm, waitFor } from '../fixtures/failover-cluster.js';
import { assertNoLateBlocks, nodeMetric } from '../fixtures/node-metrics.js';

const enc = (s: string) => new TextEncoder().encode(s);

/** Shard -> the tombstone floor node `dataDir` persisted (0 where none). */
function persistedFloors(dataDir: string): Map<number, number> {
  try {
    const f = JSON.parse(readFileSync(dataDirFiles(dataDir).floors, 'utf8')) as { floors: Record<string, number> };
    return new Map(Object.entries(f.floors).map(([s, v]) => [Number(s), v]));
  } catch {
    return new Map();
  }
}

function dataDirOf(c: ClusterConfig, id: number): string {
  return c.nodes.find((n) => n.id === id)!.dataDir;
}

/** Overwrite keys of the shards `node` backs up (but `except`) until `done` holds: its 256 KiB b-log
 *  segments fill, get digested and committed, and a floor raised in them becomes effective and is
 *  persisted. Bounded; writing on rather than once covers a CommitVer block that lands after a fill. */
async function fillBlogUntil(r: RecordedClient, c: ClusterConfig, node: number, except: number, what: string, done: () => boolean): Promise<void> {
  const keys = probeKeys(c.shardCount, 'fill').filter((_, s) => s !== except && c.shards[s]!.backups.includes(node));
  assert.ok(keys.length > 0, `node ${node} backs up another shard`);
  const value = 'f'.repeat(400);
  const t0 = performance.now();
  while (!done()) {
    if (performance.now() - t0 > 180_000) throw new Error(`timed out after 180 s waiting for ${what}`);
    for (let i = 0; i < 100; i++) await Promise.all(keys.map((k) => r.client.put(k, value)));
  }
}

/** Full restart: stop the launcher and its nodes, start the cluster again from its pools. */
async function restart(run: LaunchedCluster, dir: string, base: number, flags: string[]): Promise<LaunchedCluster> {
  await stopCluster(run.child); // non-zero when the launcher reports a node it lost: expected here
  const again = launchCluster(dir, base, flags);
  await again.ready;
  return again;
}

/** SIGKILL the primary of `shard`, wait for its failover to be stored, and return the new configuration. */
async function failPrimary(run: LaunchedCluster, file: string, shard: number): Promise<ClusterConfig> {
  const before = readCluster(file);
  const victim = before.shards[shard]!.primary;
  process.kill(nodePids(run.output()).get(victim)!, 'SIGKILL');
  await waitFor(`the failover of node ${victim} to be stored`, () => storedTerm(file) > before.term && readCluster(file).shards[shard]!.primary !== victim, 120_000);
  return readCluster(file);
}

/** The checks both triggers end with: K reads its acknowledged value, the history is linearizable,
 *  and the surviving replica refused no block as late. */
async function readBackAfterFailover(r: RecordedClient, key: string, want: string, base: number, survivors: number[]): Promise<void> {
  const got = await r.get(key);
  assertLinearizable(r.history.history());
  assert.equal(got, want, `${key} after the failover: the acknowledged PUT must survive`);
  await assertNoLateBlocks(base, survivors, 'no write of this test failed or was unknown');
}

test('(i) a shard promoted at a failover and idle until a full restart keeps the writes acknowledged after it through the next failover', { timeout: 300_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-vmarks-i-'));
  const base = randomBasePort();
  const flags = ['--nodes', '3', '--shards', '6', '--lease-ms', '200', '--no-restart'];
  let run = launchCluster(dir, base, flags);
  try {
    await run.ready;
    const file = join(dir, 'cluster.json');
    const c1 = readCluster(file);
    const keys = probeKeys(c1.shardCount, 'vm');
    let r = new RecordedClient(await RowanClient.connect({ cluster: file, retries: 5 }));
    for (const k of keys) await r.put(k, `v1-${k}`);

    // Node 0's shards are promoted on a backup (their counters jump by the promotion gap, and CommitVer
    // tells the other backup so); none of them is written again before the restart.
    const shard = c1.shards.find((s) => s.primary === 0)!.id;
    const key = keys[shard]!;
    const c2 = await failPrimary(run, file, shard);
    const backup = c2.shards[shard]!.backups[0]!;
    // Other shards' writes fill `backup`'s b-log past the CommitVer block that told it the promoted
    // counter: that segment is digested and committed, its floor effective, and the sweep persists it.
    await fillBlogUntil(r, c2, backup, shard, `node ${backup}'s persisted floor of shard ${shard} to pass the promotion gap`, () => (persistedFloors(dataDirOf(c2, backup)).get(shard) ?? 0) > PROMOTION_VERSION_GAP);
    assert.equal(await r.get(key), `v1-${key}`);
    await r.client.close();

    run = await restart(run, dir, base, flags);
    r.client = await RowanClient.connect({ cluster: file, retries: 5 });
    await r.put(key, `v2-${key}`); // acknowledged: persistent on the primary and on `backup`
    const c3 = await failPrimary(run, file, shard);
    assert.equal(c3.shards[shard]!.primary, backup);
    await readBackAfterFailover(r, key, `v2-${key}`, base, [backup]);
    await r.client.close();
  } finally {
    if (run.child.exitCode === null) await stopCluster(run.child);
    if (process.env['ROWAN_TEST_KEEP'] === undefined) rmSync(dir, { recursive: true, force: true });
    else console.log(`kept ${dir}`);
  }
});

test('(ii) after a PUT+DEL churn whose tombstones and segments are gone, a full restart keeps the next acknowledged write through a failover', { timeout: 300_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-vmarks-ii-'));
  const base = randomBasePort();
  const flags = ['--nodes', '3', '--replication', '2', '--shards', '6', '--lease-ms', '200', '--no-restart', '--pool-mib', '24', '--segment-kib', '256'];
  let run = launchCluster(dir, base, flags);
  try {
    await run.ready;
    const file = join(dir, 'cluster.json');
    const c1 = readCluster(file);
    const key = '{vm}k';
    const shard = shardOfKey(enc(key), c1.shardCount);
    const { primary, backups } = c1.shards[shard]!;
    const backup = backups[0]!;
    let r = new RecordedClient(await RowanClient.connect({ cluster: file, retries: 5 }));
    await r.put(key, 'v1');
    // Unique keys of the same shard (one hash tag), each PUT then DEL: 4,000 versions whose tombstones
    // the sweeps drop, then other shards' overwrites roll the primary's t-log on, so GC frees the
    // churn's segments and nothing on the primary's PM remembers how far the shard's counter went.
    const value = 'x'.repeat(200);
    for (let i = 0; i < 2000; i += 50) {
      await Promise.all(
        Array.from({ length: 50 }, async (_, j) => {
          const k = `{vm}c-${i + j}`;
          await r.client.put(k, value);
          await r.client.del(k);
        }),
      );
    }
    const others = probeKeys(c1.shardCount, 'roll').filter((_, s) => s !== shard && c1.shards[s]!.primary === primary);
    assert.ok(others.length > 0, `node ${primary} is primary of another shard too`);
    await waitFor(`node ${primary} to drop the churn's tombstones`, async () => ((await nodeMetric(base, primary, 'rowan_tombstones_dropped_total')) ?? 0) >= 2000, 120_000, 50);
    const big = 'r'.repeat(4000);
    for (let round = 0; round < 800; round++) await Promise.all(others.map((k) => r.client.put(k, big)));
    await fillBlogUntil(r, c1, backup, shard, `node ${backup}'s persisted floor of shard ${shard} to pass the churn`, () => (persistedFloors(dataDirOf(c1, backup)).get(shard) ?? 0) >= 4000);
    await waitFor(`node ${primary}'s GC to reclaim the churn's segments`, async () => ((await nodeMetric(base, primary, 'rowan_gc_reclaimed_bytes_total')) ?? 0) >= 2 * 1024 * 1024, 120_000, 50);
    assert.equal(await r.get(key), 'v1');
    await r.client.close();

    run = await restart(run, dir, base, flags);
    r.client = await RowanClient.connect({ cluster: file, retries: 5 });
    await r.put(key, 'v2');
    const c2 = await failPrimary(run, file, shard);
    assert.notEqual(c2.shards[shard]!.primary, primary);
    await readBackAfterFailover(r, key, 'v2', base, [c2.shards[shard]!.primary]);
    await r.client.close();
  } finally {
    if (run.child.exitCode === null) await stopCluster(run.child);
    if (process.env['ROWAN_TEST_KEEP'] === undefined) rmSync(dir, { recursive: true, force: true });
    else console.log(`kept ${dir}`);
  }
});
