// `rowan cluster --zookeeper` against a real standalone ZooKeeper (test/fixtures/zookeeper.ts), one
// cluster through every step:
//   1. a new cluster's configuration is created in the znode (no DIR/cluster.json); keys are written
//      through RowanClient.connect({ zookeeper }) and `rowan put/get --zookeeper`;
//   2. a node is SIGKILLed: the manager's failover is stored in ZooKeeper (the term there goes up), the
//      launcher prints it, and the client writes to the moved shards;
//   3. the whole cluster is stopped and started again on DIR (the launcher finds the znode through
//      DIR/cluster-store.json): the configuration of step 2 survived, and every key reads back;
// (A ZooKeeper restart under a running cluster is covered at the store level in
// test/integration/zookeeper-store.test.ts; at the cluster level it is not yet reliable here.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { RowanClient } from '../../client/client.js';
import { shardOfKey } from '../../config/slots.js';
import { ZooKeeperConfigStore } from '../../config/zk-store.js';
import { zkConfigPath } from '../../config/zk-path.js';
import { launchCluster, randomBasePort, stopCluster, type LaunchedCluster } from '../fixtures/cluster.js';
import { nodePids, waitFor } from '../fixtures/failover-cluster.js';
import { basePortOf, checkLateBlocks, lateBlockCounts } from '../fixtures/node-metrics.js';
import { ZooKeeperServer, zookeeperMissing } from '../fixtures/zookeeper.js';

const rowan = new URL('../../../bin/rowan', import.meta.url).pathname;
const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array | null) => (b === null ? null : Buffer.from(b).toString());
const missing = zookeeperMissing();

test('rowan cluster --zookeeper: keys written, a failover stored in ZooKeeper, the whole cluster restarted from it', { skip: missing ?? false, timeout: 300_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-zk-cluster-'));
  let zk: ZooKeeperServer | null = null;
  let run: LaunchedCluster | null = null;
  let store: ZooKeeperConfigStore | null = null;
  const clients: RowanClient[] = [];
  try {
    zk = await ZooKeeperServer.start(join(dir, 'zk'));
    const name = 'zk-test';
    const cdir = join(dir, 'cluster');
    run = launchCluster(cdir, randomBasePort(), ['--zookeeper', zk.connect, '--cluster-name', name, '--shards', '12', '--lease-ms', '200']);
    await run.ready;
    assert.ok(!existsSync(join(cdir, 'cluster.json')), 'the configuration is in ZooKeeper only');
    assert.match(run.output(), new RegExp(`configuration in zk://${zk.connect}/rowan/${name}/config`));
    store = await ZooKeeperConfigStore.open({ connect: zk.connect, path: zkConfigPath(name) });
    const c1 = await store.read();
    assert.equal(c1.term, 1);

    // 1. Keys through the client (configuration from ZooKeeper) and through the CLI.
    const client = await RowanClient.connect({ zookeeper: zk.connect, clusterName: name, retries: 5, passwordFile: join(cdir, 'client-password') });
    clients.push(client);
    const keys = Array.from({ length: 120 }, (_, i) => `k-${i}`);
    for (const k of keys) await client.put(k, `v1-${k}`);
    const exec = promisify(execFile);
    await exec(process.execPath, [rowan, 'put', 'cli-key', 'cli-value', '--zookeeper', zk.connect, '--cluster-name', name, '--password-file', join(cdir, 'client-password')]);
    assert.equal((await exec(process.execPath, [rowan, 'get', 'cli-key', '--zookeeper', zk.connect, '--cluster-name', name, '--password-file', join(cdir, 'client-password')])).stdout, 'cli-value\n');
    const st = await exec(process.execPath, [rowan, 'status', '--zookeeper', zk.connect, '--cluster-name', name]);
    assert.match(st.stdout, /cluster term 1: 3 nodes \(none dead\)/);

    // 2. A failover is stored in ZooKeeper.
    const victim = 0;
    const onVictim = keys.filter((k) => c1.shards[shardOfKey(enc(k), c1.shardCount)]!.primary === victim);
    assert.ok(onVictim.length > 0);
    const t0 = performance.now();
    process.kill(nodePids(run.output()).get(victim)!, 'SIGKILL');
    await waitFor('the failover to be stored in ZooKeeper', async () => (await store!.read().catch(() => c1)).term === 2, 30_000, 20);
    const stored = await store.read();
    assert.deepEqual(stored.dead, [victim]);
    console.log(`failover stored in ZooKeeper ${(performance.now() - t0).toFixed(0)} ms after SIGKILL (lease 200 ms)`);
    for (const k of onVictim) await client.put(k, `v2-${k}`);
    assert.equal(client.config().term, 2);
    await waitFor('the launcher to report the failover', () => /failover: term 1 -> 2; dead node\(s\) 0/.test(run!.output()), 10_000);
    const stored2 = /"event":"stored".*?"sinceDetectedMs":([\d.]+)/.exec(readManagerLog(cdir));
    if (stored2) console.log(`manager: failover stored ${stored2[1]} ms after detection (includes the lease wait)`);

    // 3. The whole cluster down and up again, from ZooKeeper (no --zookeeper: DIR remembers it).
    for (const c of clients.splice(0)) await c.close();
    await stopCluster(run.child); // exits 1: node 0 was SIGKILLed (it says so)
    assert.match(run.output(), /cluster stopped/);
    run = launchCluster(cdir, randomBasePort());
    const r2 = run;
    await waitFor('the restarted cluster to serve', () => r2.output().includes('serving.') || r2.child.exitCode !== null, 120_000, 50).catch((e: Error) => {
      throw new Error(`${e.message}; launcher output:\n${r2.output()}`);
    });
    await run.ready;
    assert.match(run.output(), /existing cluster in .*term 2; configuration in zk:\/\//);
    const again = await RowanClient.connect({ zookeeper: zk.connect, clusterName: name, retries: 5, passwordFile: join(cdir, 'client-password') });
    clients.push(again);
    for (const k of keys) assert.equal(dec(await again.get(k)), onVictim.includes(k) ? `v2-${k}` : `v1-${k}`, k);
    assert.equal(dec(await again.get('cli-key')), 'cli-value');
    const late = checkLateBlocks(await lateBlockCounts([0, 1, 2], basePortOf(run.output())), false, 'every write acknowledged before the kill, none in flight');
    console.log(`restart from ZooKeeper: term ${again.config().term}, all ${keys.length + 1} keys read back; ${late}`);
  } finally {
    for (const c of clients) await c.close().catch(() => {});
    store?.close();
    if (run) await stopCluster(run.child);
    await zk?.stop();
    if (process.env.ROWAN_KEEP_TMP) console.log(`kept ${dir}`);
    else rmSync(dir, { recursive: true, force: true });
  }
});

function readManagerLog(cdir: string): string {
  try {
    return readFileSync(join(cdir, 'manager.log'), 'utf8');
  } catch {
    return '';
  }
}
