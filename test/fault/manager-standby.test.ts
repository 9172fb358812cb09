// A standby configuration manager (actors/manager/election.ts) against a real ZooKeeper and real
// processes: `rowan cluster --zookeeper ... --managers 2`.
//   (a) kill -9 the active manager: the standby becomes active within a bounded time (measured: from
//       the SIGKILL to its address in ZooKeeper), no node's lease runs out meanwhile (leases longer
//       than the takeover; each node's lease is polled through its control socket throughout), the
//       load goes on, and a node SIGKILLed afterwards is failed over by the new manager;
//   (b) kill -9 the active manager DURING a failover: a test hook pauses it after it stored the new
//       term (`--debug-pause failover-stored:MS`), a node is SIGKILLed, the manager is SIGKILLed
//       once the term is in ZooKeeper; the standby completes the failover (prepare, gather/scatter,
//       commit), every acknowledged key reads back, and the concurrent history is linearizable.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
const dec = (v: Uint8Array | null) => (v === null ? null : Buffer.from(v).toString());

interface Env {
  dir: string;
  cdir: string;
  name: string;
  zk: ZooKeeperServer;
  view: ZkView;
  run: LaunchedCluster;
  /** Its base port (node N's metrics on base + 800 + N). */
  base: number;
  clients: RowanClient[];
  connect(): Promise<RowanClient>;
}

/** A 3-node cluster with 2 managers, session timeout 2 s, leases of `leaseMs`; `env` goes to the launcher. */
async function withCluster(prefix: string, leaseMs: number, extra: string[], body: (e: Env) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  let zk: ZooKeeperServer | null = null;
  let run: LaunchedCluster | null = null;
  let view: ZkView | null = null;
  const clients: RowanClient[] = [];
  try {
    zk = await ZooKeeperServer.start(join(dir, 'zk'));
    const launched = await launchReady(dir, 'standby', (n) => ['--zookeeper', zk!.connect, '--cluster-name', n, '--managers', '2', '--zk-session-ms', '2000',
      '--lease-ms', String(leaseMs), '--shards', String(SHARDS), '--nodes', '3', '--replication', '2', '--no-restart', ...extra]);
    run = launched.run;
    const { cdir, name } = launched;
    view = await ZkView.open(zk.connect, name);
    const z = zk;
    const connect = async () => {
      const c = await RowanClient.connect({ zookeeper: z.connect, clusterName: name, retries: 12, timeoutMs: 5000, passwordFile: join(cdir, 'client-password') });
      clients.push(c);
      return c;
    };
    await body({ dir, cdir, name, zk, view, run, base: basePortOf(run.output()), clients, connect });
  } finally {
    for (const c of clients) await c.close().catch(() => {});
    view?.close();
    if (run) await stopClusterBounded(run);
    await zk?.stop();
    if (process.env['ROWAN_TEST_KEEP'] === undefined) rmSync(dir, { recursive: true, force: true });
    else console.log(`kept ${dir}`);
  }
}

function managerLog(cdir: string, i: number): string {
  try {
    return readFileSync(join(cdir, i === 0 ? 'manager.log' : `manager-${i}.log`), 'utf8');
  } catch {
    return '';
  }
}

test('standby manager: kill -9 the active one; the standby takes over, no lease runs out, a later node failure is failed over by it', { skip: missing ?? false, timeout: 240_000 }, async () => {
  // Leases (5 s) outlast the takeover (about the 2 s session timeout): nodes never stop serving.
  await withCluster('rowan-standby-a-', 5000, [], async (e) => {
    await waitFor('an active manager', async () => (await e.view.active()) !== null, 30_000, 50);
    const first = (await e.view.active())!;
    const pids = managerPids(e.run.output());
    assert.equal(pids.size, 2, e.run.output());
    assert.ok([...pids.values()].includes(first.pid), `the active manager (pid ${first.pid}) is one of the launcher's`);
    assert.equal((await e.view.managers()).length, 2);

    const c = await e.connect();
    const keys = Array.from({ length: 200 }, (_, i) => `k-${i}`);
    for (let i = 0; i < keys.length; i += 20) await Promise.all(keys.slice(i, i + 20).map((k) => c.put(k, `v1-${k}`)));
    const loadClients = [await e.connect(), await e.connect()];
    const loadKeys = Array.from({ length: 10 }, (_, i) => `h-${i}`);
    const load = new KvLoad(loadClients, loadKeys, 40_000, 5); // paced, to stay under its bound
    load.start();
    try {
      await waitFor('the load to start', () => load.ops > 50, 30_000);

      // Kill the active manager; poll every node's lease until the standby is active.
      const t0 = performance.now();
      process.kill(first.pid, 'SIGKILL');
      const expiredSeen: string[] = [];
      let polls = 0;
      await waitFor('the standby to become active', async () => {
        const leases = await nodeLeases(e.cdir, [0, 1, 2]);
        polls++;
        for (const [id, l] of leases) if (l !== null && !l.startsWith('valid')) expiredSeen.push(`node ${id}: ${l}`);
        const a = await e.view.active();
        return a !== null && a.pid !== first.pid;
      }, 60_000, 50);
      const takeoverMs = performance.now() - t0;
      const second = (await e.view.active())!;
      const opsAtTakeover = load.ops;
      // Nodes find the new manager and renew with it: their leases stay valid past the old one's.
      await waitFor('every node to renew with the new manager', async () => [...(await nodeLeases(e.cdir, [0, 1, 2])).values()].every((l) => l !== null && l.startsWith('valid')), 20_000, 50);
      await waitFor('the load to go on', () => load.ops > opsAtTakeover + 100, 30_000);
      assert.deepEqual(expiredSeen, [], 'no node lease ran out during the takeover');
      const newLog = managerLog(e.cdir, [...pids.entries()].find(([, p]) => p === second.pid)![0]);
      assert.match(newLog, /"event":"active".*took over/);

      // A node failure afterwards is handled by the new manager (after a full lease, as it must).
      const cfg = (await e.view.config())!;
      const victim = 0;
      const t1 = performance.now();
      process.kill(nodePids(e.run.output()).get(victim)!, 'SIGKILL');
      await waitFor(`the failover of node ${victim} in ZooKeeper`, async () => ((await e.view.config())?.dead ?? []).includes(victim), 60_000, 50);
      const failoverMs = performance.now() - t1;
      await allShardsServed(c, probeKeys(SHARDS), 30_000);
      assert.ok((await e.view.config())!.term > cfg.term);
      await waitFor('the new manager to log the commit', () => /"event":"committed"/.test(managerLog(e.cdir, [...pids.entries()].find(([, p]) => p === second.pid)![0])), 20_000, 50);
      for (const k of keys) assert.equal(dec(await c.get(k)), `v1-${k}`, k);
      const opsNow = load.ops;
      await waitFor('the load to go on after the node failover', () => load.ops > opsNow + 50, 30_000);
      await load.stop();
      for (const k of loadKeys) await load.one(c, loadClients.length, k, 'get');
      const lin = checkLinearizability(load.operations(), { timeLimitMs: 60_000 });
      assert.equal(lin.ok, true, lin.describe());
      // The SIGKILLed node's in-flight writes (unknown outcomes) may land late at a backup.
      const unknown = unknownWrites(load.operations());
      const late = checkLateBlocks(await lateBlockCounts([0, 1, 2], e.base), unknown > 0, `${unknown} write(s) of unknown outcome`);
      console.log(`standby takeover: active manager SIGKILLed, standby active after ${takeoverMs.toFixed(0)} ms (ZooKeeper session 2000 ms, lease 5000 ms); ` +
        `${polls} lease polls of 3 nodes during it, none expired; node ${victim} SIGKILLed next: failover stored by the new manager ${failoverMs.toFixed(0)} ms later; ` +
        `load ${load.ops} ops (${load.counts.ok} ok, ${load.counts.unknown} unknown), linearizable (${lin.ok === true ? lin.checked : 0} checked); ${late}`);
    } finally {
      await load.stop();
    }
  });
});

test('standby manager: kill -9 the active one during a failover (after it stored the new term); the standby completes it', { skip: missing ?? false, timeout: 240_000 }, async () => {
  await withCluster('rowan-standby-b-', 1000, ['--debug-pause', 'failover-stored:60000'], async (e) => {
    await waitFor('an active manager', async () => (await e.view.active()) !== null, 30_000, 50);
    const first = (await e.view.active())!;
    const pids = managerPids(e.run.output());
    const firstIdx = [...pids.entries()].find(([, p]) => p === first.pid)![0];
    const c = await e.connect();
    const keys = Array.from({ length: 300 }, (_, i) => `k-${i}`);
    for (let i = 0; i < keys.length; i += 20) await Promise.all(keys.slice(i, i + 20).map((k) => c.put(k, `v1-${k}`)));
    const loadClients = [await e.connect(), await e.connect(), await e.connect()];
    const loadKeys = Array.from({ length: 12 }, (_, i) => `h-${i}`);
    const load = new KvLoad(loadClients, loadKeys, 40_000, 5); // paced, to stay under its bound
    load.start();
    try {
      await waitFor('the load to start', () => load.ops > 50, 30_000);
      const before = (await e.view.config())!;
      const victim = 1;
      process.kill(nodePids(e.run.output()).get(victim)!, 'SIGKILL');
      // The failover's configuration is stored, then the manager pauses (test hook) before pushing it.
      await waitFor('the failover to be stored in ZooKeeper', async () => ((await e.view.config())?.term ?? 0) > before.term, 60_000, 20);
      await waitFor('the manager to pause after storing', () => /"event":"debug-pause"/.test(managerLog(e.cdir, firstIdx)), 10_000, 20);
      const stored = (await e.view.config())!;
      assert.ok((stored.dead ?? []).includes(victim));
      const leases = await nodeLeases(e.cdir, [0, 2]);
      const t0 = performance.now();
      process.kill(first.pid, 'SIGKILL');
      await waitFor('the standby to become active', async () => {
        const a = await e.view.active();
        return a !== null && a.pid !== first.pid;
      }, 60_000, 50);
      const takeoverMs = performance.now() - t0;
      const second = (await e.view.active())!;
      const secondIdx = [...pids.entries()].find(([, p]) => p === second.pid)![0];
      // The standby completes the stored term: the survivors prepare and commit it, every shard is served again.
      await waitFor('the standby to complete the stored term', () => /completed term \d+ stored by the previous manager/.test(managerLog(e.cdir, secondIdx)), 60_000, 50);
      await allShardsServed(c, probeKeys(SHARDS), 30_000);
      const completedMs = performance.now() - t0;
      const status = await Promise.all([0, 2].map((id) => nodeLeases(e.cdir, [id])));
      assert.ok(status.every((m) => [...m.values()].every((l) => l !== null && l.startsWith('valid'))), `survivors hold leases again: ${JSON.stringify(status.map((m) => [...m]))}`);
      const log = managerLog(e.cdir, secondIdx);
      assert.match(log, new RegExp(`"event":"takeover","term":${stored.term}`));
      for (const k of keys) assert.equal(dec(await c.get(k)), `v1-${k}`, k);
      const opsNow = load.ops;
      await waitFor('the load to go on', () => load.ops > opsNow + 100, 30_000);
      await load.stop();
      for (const k of loadKeys) await load.one(c, loadClients.length, k, 'get');
      const lin = checkLinearizability(load.operations(), { timeLimitMs: 60_000 });
      assert.equal(lin.ok, true, lin.describe());
      const term = (await e.view.config())!.term;
      assert.ok(term >= stored.term);
      // The SIGKILLed node's in-flight writes (unknown outcomes) may land late at a backup.
      const unknown = unknownWrites(load.operations());
      const late = checkLateBlocks(await lateBlockCounts([0, 1, 2], e.base), unknown > 0, `${unknown} write(s) of unknown outcome`);
      console.log(`standby completes a failover: node ${victim} SIGKILLed, term ${stored.term} stored, active manager SIGKILLed before pushing it (leases then: ${JSON.stringify([...leases])}); ` +
        `standby active after ${takeoverMs.toFixed(0)} ms, every shard served ${completedMs.toFixed(0)} ms after the manager's kill; all ${keys.length} keys read back; ` +
        `load ${load.ops} ops (${load.counts.ok} ok, ${load.counts.unknown} unknown), linearizable (${lin.ok === true ? lin.checked : 0} checked); ${late}`);
    } finally {
      await load.stop();
    }
  });
});

test('standby manager: the active one paused (SIGSTOP) past its session stops acting; the standby takes over and the old one leaves once resumed', { skip: missing ?? false, timeout: 240_000 }, async () => {
  await withCluster('rowan-standby-c-', 5000, [], async (e) => {
    await waitFor('an active manager', async () => (await e.view.active()) !== null, 30_000, 50);
    const first = (await e.view.active())!;
    const pids = managerPids(e.run.output());
    const firstIdx = [...pids.entries()].find(([, p]) => p === first.pid)![0];
    const c = await e.connect();
    for (let i = 0; i < 50; i++) await c.put(`k-${i}`, `v-${i}`);
    const before = (await e.view.config())!;
    // A paused process looks, to ZooKeeper and to the nodes, like one cut off by a partition.
    process.kill(first.pid, 'SIGSTOP');
    const t0 = performance.now();
    try {
      await waitFor('the standby to become active', async () => {
        const a = await e.view.active();
        return a !== null && a.pid !== first.pid;
      }, 60_000, 50);
    } finally {
      process.kill(first.pid, 'SIGCONT');
    }
    const takeoverMs = performance.now() - t0;
    // Resumed, the old manager finds its validity lapsed and its session expired: it acts no more and leaves.
    await waitFor('the old manager to stop', () => /"event":"lost"/.test(managerLog(e.cdir, firstIdx)), 30_000, 50);
    await waitFor('the old manager process to exit', () => {
      try {
        process.kill(first.pid, 0);
        return false;
      } catch {
        return true;
      }
    }, 30_000, 50);
    const oldLog = managerLog(e.cdir, firstIdx);
    assert.ok(!/"event":"(stored|committed)"/.test(oldLog), 'the old manager stored and pushed nothing');
    // Every node renews with the new manager and serves; nobody was failed over.
    await waitFor('every node to hold a lease from the new manager', async () => [...(await nodeLeases(e.cdir, [0, 1, 2])).values()].every((l) => l !== null && l.startsWith('valid')), 30_000, 50);
    await allShardsServed(c, probeKeys(SHARDS), 30_000);
    for (let i = 0; i < 50; i++) assert.equal(dec(await c.get(`k-${i}`)), `v-${i}`);
    const after = (await e.view.config())!;
    assert.deepEqual(after.dead ?? [], before.dead ?? [], 'no node was failed over');
    const active = (await e.view.active())!;
    assert.notEqual(active.pid, first.pid);
    const late = checkLateBlocks(await lateBlockCounts([0, 1, 2], e.base), false, 'every write acknowledged, no node killed or paused');
    console.log(`standby after a paused active manager: standby active ${takeoverMs.toFixed(0)} ms after SIGSTOP (session 2000 ms); the old one, resumed, logged its lost session and exited; no node failed over; ${late}`);
  });
});
