// ZooKeeper restarted under a running `rowan cluster --zookeeper --managers 2` with a client load: the
// ZooKeeper server is SIGKILLed and started again on the same port and data dir. While it is down the
// cluster keeps serving reads and writes (no configuration change is needed: the active manager keeps
// granting leases within 3/4 of its session timeout, actors/manager/election.ts; each node's lease is
// polled through the whole outage), no standby takes
// over, and the launcher, the managers and the clients neither hang nor die. Once it is back, normal
// operation resumes: the same manager is active, `rowan status` answers, and a node SIGKILLed then is
// failed over through ZooKeeper. The load's history is linearizable.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { RowanClient } from '../../client/client.js';
import type { LaunchedCluster } from '../fixtures/cluster.js';
import { allShardsServed, nodePids, probeKeys, waitFor } from '../fixtures/failover-cluster.js';
import { KvLoad } from '../fixtures/failover-load.js';
import { checkLinearizability } from '../check/linearizability.js';
import { basePortOf, checkLateBlocks, lateBlockCounts, unknownWrites } from '../fixtures/node-metrics.js';
import { ZooKeeperServer, zookeeperMissing } from '../fixtures/zookeeper.js';
import { ZkView, launchReady, stopClusterBounded, managerPids, nodeLeases } from '../fixtures/zk-cluster.js';

const missing = zookeeperMissing();
const SHARDS = 8;
const rowan = new URL('../../../bin/rowan', import.meta.url).pathname;
const dec = (v: Uint8Array | null) => (v === null ? null : Buffer.from(v).toString());

test('ZooKeeper restarted under load: the cluster serves throughout, nothing hangs, failover works after', { skip: missing ?? false, timeout: 300_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-zk-restart-'));
  let zk: ZooKeeperServer | null = null;
  let run: LaunchedCluster | null = null;
  let view: ZkView | null = null;
  const clients: RowanClient[] = [];
  let load: KvLoad | null = null;
  let polling = false;
  let poller: Promise<void> = Promise.resolve();
  try {
    zk = await ZooKeeperServer.start(join(dir, 'zk'));
    // A 60 s session (the fixture's maximum): the active manager rides out an outage of up to 45 s -- a
    // JVM start on this shared machine has taken 30 s under load.
    const z0 = zk;
    const launched = await launchReady(dir, 'zk-restart', (n) => ['--zookeeper', z0.connect, '--cluster-name', n, '--managers', '2', '--zk-session-ms', '60000',
      '--lease-ms', '1000', '--shards', String(SHARDS), '--nodes', '3', '--replication', '2', '--no-restart']);
    run = launched.run;
    const { cdir, name } = launched;
    view = await ZkView.open(zk.connect, name);
    await waitFor('an active manager', async () => (await view!.active()) !== null, 30_000, 50);
    const active = (await view.active())!;
    const z = zk;
    const connect = async () => {
      const c = await RowanClient.connect({ zookeeper: z.connect, clusterName: name, retries: 12, timeoutMs: 5000, passwordFile: join(cdir, 'client-password') });
      clients.push(c);
      return c;
    };
    const c = await connect();
    const keys = Array.from({ length: 200 }, (_, i) => `k-${i}`);
    for (let i = 0; i < keys.length; i += 20) await Promise.all(keys.slice(i, i + 20).map((k) => c.put(k, `v1-${k}`)));
    const loadClients = [await connect(), await connect()];
    const loadKeys = Array.from({ length: 10 }, (_, i) => `h-${i}`);
    load = new KvLoad(loadClients, loadKeys, 60_000, 5); // paced: an unpaced load reached its bound before the last wait
    load.start();
    await waitFor('the load to start', () => load!.ops > 50, 30_000);

    // ZooKeeper down: the cluster keeps serving, and every node keeps a valid lease (polled until it is back).
    const expiredSeen: string[] = [];
    let polls = 0;
    polling = true;
    poller = (async () => {
      while (polling) {
        for (const [id, l] of await nodeLeases(cdir, [0, 1, 2])) if (l === null || !l.startsWith('valid')) expiredSeen.push(`node ${id}: ${l}`);
        polls++;
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    const t0 = performance.now();
    await zk.stop();
    const okAtStop = load.counts.ok;
    await waitFor('200 operations to complete with ZooKeeper down', () => load!.counts.ok > okAtStop + 200, 30_000, 50);
    for (let i = 0; i < 40; i++) await c.put(`down-${i}`, `d-${i}`);
    const servedDown = load.counts.ok - okAtStop;
    const tRestart = performance.now();
    await zk.restart();
    const outageMs = performance.now() - t0;
    const restartMs = performance.now() - tRestart;
    polling = false;
    await poller;
    assert.deepEqual(expiredSeen, [], `no node lost its lease during the ZooKeeper outage (${outageMs.toFixed(0)} ms)`);

    // Back: the same manager is active (no takeover), status answers, the launcher is alive.
    await waitFor('ZooKeeper to answer the test again', async () => (await view!.config()) !== null, 30_000, 100);
    await waitFor('the active manager to be listed again', async () => (await view!.active()) !== null, 30_000, 100);
    assert.equal((await view.active())!.pid, active.pid, 'no standby took over during the outage');
    const st = await promisify(execFile)(process.execPath, [rowan, 'status', '--zookeeper', zk.connect, '--cluster-name', name], { timeout: 30_000 });
    assert.match(st.stdout, new RegExp(`configuration manager: 127\\.0\\.0\\.1:\\d+ \\(pid ${active.pid}\\) active, 1 standby`));
    assert.equal(run.child.exitCode, null, 'the launcher is still running');
    assert.match(readFileSync(join(cdir, 'manager.log'), 'utf8') + readFileSync(join(cdir, 'manager-1.log'), 'utf8'), /ZooKeeper session lost/);

    // A node failure now goes through ZooKeeper as usual.
    const before = (await view.config())!;
    const victim = 2;
    process.kill(nodePids(run.output()).get(victim)!, 'SIGKILL');
    await waitFor(`the failover of node ${victim} in ZooKeeper`, async () => ((await view!.config())?.dead ?? []).includes(victim), 60_000, 50);
    assert.ok((await view.config())!.term > before.term);
    await allShardsServed(c, probeKeys(SHARDS), 30_000);
    for (const k of keys) assert.equal(dec(await c.get(k)), `v1-${k}`, k);
    for (let i = 0; i < 40; i++) assert.equal(dec(await c.get(`down-${i}`)), `d-${i}`);
    const opsNow = load.ops;
    await waitFor('the load to go on after the failover', () => load!.ops > opsNow + 50, 30_000);
    await load.stop();
    for (const k of loadKeys) await load.one(c, loadClients.length, k, 'get');
    const lin = checkLinearizability(load.operations(), { timeLimitMs: 60_000 });
    assert.equal(lin.ok, true, lin.describe());
    // The SIGKILLed node's in-flight writes (unknown outcomes) may land late at a backup.
    const unknown = unknownWrites(load.operations());
    const late = checkLateBlocks(await lateBlockCounts([0, 1, 2], basePortOf(run.output())), unknown > 0, `${unknown} write(s) of unknown outcome`);
    console.log(`ZooKeeper restart: down ${outageMs.toFixed(0)} ms (its restart ${restartMs.toFixed(0)} ms); ${servedDown} load ops + 40 writes served meanwhile, no lease expired in ${polls} polls of 3 nodes, no takeover; ` +
      `node ${victim} failed over after; load ${load.ops} ops (${load.counts.ok} ok, ${load.counts.unknown} unknown), linearizable (${lin.ok === true ? lin.checked : 0} checked); ${late}`);
  } finally {
    polling = false;
    await poller;
    await load?.stop();
    for (const c of clients) await c.close().catch(() => {});
    view?.close();
    if (run) await stopClusterBounded(run);
    await zk?.stop();
    if (process.env['ROWAN_TEST_KEEP'] === undefined) rmSync(dir, { recursive: true, force: true });
    else console.log(`kept ${dir}`);
  }
});

// An outage longer than the managers' validity window (3/4 of a 2 s session): the active manager pauses
// -- it grants nothing and can fail nothing over. The nodes' manager leases run out, and they go on
// serving on peer leases (docs/failover.md "Partitions": every member grants every other one, and nothing can
// take a shard without waiting those grants out); before peer leases every node fenced itself here.
// Once ZooKeeper is back the manager resumes (or, had its session expired, a manager is elected
// afresh): every node holds a lease again, every shard is served, no acknowledged write is lost.
test('ZooKeeper down longer than the manager may act: it pauses, nodes serve on peer leases, and it resumes once ZooKeeper is back', { skip: missing ?? false, timeout: 300_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-zk-outage-'));
  let zk: ZooKeeperServer | null = null;
  let run: LaunchedCluster | null = null;
  let view: ZkView | null = null;
  let client: RowanClient | null = null;
  try {
    zk = await ZooKeeperServer.start(join(dir, 'zk'));
    const z0 = zk;
    const launched = await launchReady(dir, 'zk-outage', (n) => ['--zookeeper', z0.connect, '--cluster-name', n, '--managers', '2', '--zk-session-ms', '2000',
      '--lease-ms', '1000', '--shards', String(SHARDS), '--nodes', '3', '--replication', '2', '--no-restart']);
    run = launched.run;
    const { cdir, name } = launched;
    view = await ZkView.open(zk.connect, name);
    await waitFor('an active manager', async () => (await view!.active()) !== null, 30_000, 50);
    const active = (await view.active())!;
    const activeLog = join(cdir, managerPids(run.output()).get(0) === active.pid ? 'manager.log' : 'manager-1.log');
    client = await RowanClient.connect({ zookeeper: zk.connect, clusterName: name, retries: 12, timeoutMs: 5000, passwordFile: join(cdir, 'client-password') });
    for (let i = 0; i < 100; i++) await client.put(`k-${i}`, `v-${i}`);

    const t0 = performance.now();
    await zk.stop();
    await waitFor('the active manager to pause', () => /"event":"paused"/.test(readFileSync(activeLog, 'utf8')), 30_000, 50);
    const pausedMs = performance.now() - t0;
    // Two leases without a word from the paused manager: each node says so (its manager lease is over).
    await waitFor('every node to notice the silent manager', () => [0, 1, 2].every((id) => /no word from the configuration manager/.test(readFileSync(join(cdir, `node-${id}.log`), 'utf8'))), 30_000, 50);
    for (let i = 0; i < 20; i++) await client.put(`during-${i}`, `d-${i}`);
    for (let i = 0; i < 20; i++) assert.equal(dec(await client.get(`during-${i}`)), `d-${i}`);
    const during = await nodeLeases(cdir, [0, 1, 2]);
    assert.ok([...during.values()].every((l) => l !== null && l.startsWith('valid')), `every node serves on peer leases: ${JSON.stringify([...during])}`);
    await zk.restart();
    const t1 = performance.now();
    // The nodes held their (peer) leases throughout: what comes back is a manager that acts -- the same
    // one resumed (it logs it), or, its session having expired, a newly elected one.
    await waitFor('a manager acting again', async () => {
      const a = await view!.active();
      return a !== null && (a.pid !== active.pid || /active again: every member gets a full lease/.test(readFileSync(activeLog, 'utf8')));
    }, 60_000, 50);
    await waitFor('every node to hold a lease again', async () => [...(await nodeLeases(cdir, [0, 1, 2])).values()].every((l) => l !== null && l.startsWith('valid')), 60_000, 50);
    const backMs = performance.now() - t1;
    await allShardsServed(client, probeKeys(SHARDS), 30_000);
    for (let i = 0; i < 100; i++) assert.equal(dec(await client.get(`k-${i}`)), `v-${i}`);
    for (let i = 0; i < 20; i++) assert.equal(dec(await client.get(`during-${i}`)), `d-${i}`);
    await client.put('after', 'outage');
    const now = (await view.active())!;
    const how = now.pid === active.pid ? `the same manager resumed (${/active again/.test(readFileSync(activeLog, 'utf8')) ? 'logged' : 'NOT logged'})` : `its session expired; manager pid ${now.pid} was elected`;
    if (now.pid === active.pid) assert.match(readFileSync(activeLog, 'utf8'), /active again: every member gets a full lease/);
    const late = checkLateBlocks(await lateBlockCounts([0, 1, 2], basePortOf(run.output())), false, 'every write acknowledged, no node killed or paused');
    console.log(`ZooKeeper outage past the validity window: manager paused ${pausedMs.toFixed(0)} ms after ZooKeeper went down (session 2000 ms); nodes served on peer leases (20 writes and reads with the manager silent); ` +
      `a manager acting again ${backMs.toFixed(0)} ms after ZooKeeper answered; ${how}; all 120 keys read back; ${late}`);
  } finally {
    await client?.close().catch(() => {});
    view?.close();
    if (run) await stopClusterBounded(run);
    await zk?.stop();
    if (process.env['ROWAN_TEST_KEEP'] === undefined) rmSync(dir, { recursive: true, force: true });
    else console.log(`kept ${dir}`);
  }
});
