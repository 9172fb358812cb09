// Membership on a live cluster with kills (issue 28's fault test): hosts are network namespaces
// (test/fixtures/netns.ts) -- the manager (ZooKeeper beside it where installed), nodes n0-n5, client
// hosts c0 and c1 -- and the cluster starts with 3 nodes (replication 3) under a PUT/GET/DEL load from
// both client hosts with a recorded history (c0 also writes unique keys, each read back at the end).
// It grows to 6: each new node is added as an operator on 6 hosts adds it -- `rowan node add` run on
// the new host, then that host's `rowan start --node-id N --manager ...` -- and the manager spreads
// replicas and primaries onto it. It then shrinks to 4: `rowan node decommission` of two nodes.
// While copies are in flight (a copy task in the stored configuration, waited for, not slept for),
// a copy's target is SIGKILLed (the first node added, mid-copy onto it), then a copy's source (an old
// member copying onto a newer one), then a drain copy's target; each killed node is restarted as
// `rowan cluster` restarts one (bin/cluster-supervise.ts: once the manager lists it dead, with
// --rejoin, its pool kept). Checked: every node ends with a fair share of replicas and primaries
// (within one of each other) after the grow and after the shrink, every shard fully replicated; the
// history is linearizable; every acknowledged unique write reads back; no acknowledged write's b-log
// block was refused as late (the nodes' logs, over every process each ran).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { waitListedDead } from '../../bin/cluster-supervise.js';
import type { ClusterConfig } from '../../config/cluster.js';
import { shardOfKey } from '../../config/slots.js';
import { FileConfigStore, type ConfigStore } from '../../config/store.js';
import { deadWaitMsFor, defaultTimings, leaseTiming } from '../../config/timings.js';
import { spread } from '../../actors/manager/membership.js';
import { checkLinearizability } from '../check/linearizability.js';
import { logRecords, waitFor } from '../fixtures/failover-cluster.js';
import { fullyReplicatedConfig } from '../fixtures/rereplication.js';
import { netnsUnavailable } from '../fixtures/netns.js';
import { ClientLoad, MANAGER_PORT, NIC_PORT, NetnsCluster, WORKER_PORT } from '../fixtures/netns-cluster.js';
import { assertLateOnlyUnknown, loggedLateBlocks } from '../fixtures/node-metrics.js';

const SHARDS = 6;
/** 1 s rather than 400 ms: this shared 2-core machine must not fail healthy nodes over on a stall. */
const LEASE_MS = 1000;
/** Bounds of the waits for a settled cluster (a busy 2-core machine: a node's cold start alone took 16 s at load 30). */
const SETTLE_MS = 240_000;
const T0 = performance.now();
/** A phase of the run, with the seconds since the start (the test's output: where a slow or failed run was). */
const phase = (what: string) => console.log(`[${((performance.now() - T0) / 1000).toFixed(1)} s] ${what}`);
const unavailable = netnsUnavailable();

const members = (c: ClusterConfig) => c.nodes.map((n) => n.id).filter((id) => !(c.dead ?? []).includes(id));

/** Replicas and primaries of `ids` each within one of the others; the spread shown as `0:3r/1p ...`. */
function fairness(c: ClusterConfig, ids: number[]): { fair: boolean; shown: string } {
  const { replicas, primaries } = spread(c, ids);
  const r = [...replicas.values()];
  const p = [...primaries.values()];
  const shown = ids.map((n) => `${n}:${replicas.get(n)}r/${primaries.get(n)}p`).join(' ');
  return { fair: Math.max(...r) - Math.min(...r) <= 1 && Math.max(...p) - Math.min(...p) <= 1, shown };
}

/** Members exactly `ids`, nothing moving or leaving, balancing over, every shard fully replicated. */
function settled(c: ClusterConfig | null, ids: number[]): boolean {
  if (c === null || c.balancing || (c.leaving ?? []).length > 0 || (c.copies ?? []).length > 0 || c.migrations.length > 0) return false;
  return members(c).join() === ids.join() && c.nodes.length === ids.length && fullyReplicatedConfig(c, 3);
}

/** `rowan <args>` run on host `host`; its stdout, or the failure with its output. */
async function rowanOn(c: NetnsCluster, host: string, args: string[]): Promise<string> {
  const bin = new URL('../../../bin/rowan', import.meta.url).pathname;
  const p = c.lab.spawnNode(host, [bin, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  p.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  p.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const code = await new Promise<number | null>((r) => p.once('close', r));
  assert.equal(code, 0, `rowan ${args.join(' ')} on ${host}:\n${out}`);
  return out;
}

/** How this cluster's store is named on a command line (ZooKeeper, or the manager's file). */
function storeArgs(c: NetnsCluster): string[] {
  return c.zk ? ['--zookeeper', c.zk.server.connect, '--cluster-name', 'netns'] : ['--cluster', c.file];
}

/** Node `id` joins on its own host as an operator adds one: `rowan node add` there, then its `rowan start`. */
async function addNode(c: NetnsCluster, sup: Supervisor, id: number): Promise<void> {
  const host = `n${id}`;
  const out = await rowanOn(c, host, ['node', 'add', ...storeArgs(c), '--host', c.addr(host), '--data-dir', join(c.o.dir, `node-${id}`), '--client-ports', String(WORKER_PORT),
    '--fabric', 'tcp', '--fabric-port', String(NIC_PORT), '--manager', `${c.addr('cm')}:${MANAGER_PORT}`, '--secret-file', c.secretFile]);
  assert.match(out, new RegExp(`node ${id} added to the membership`), out);
  await sup.start(id, false);
}

/** Until a copy `which` picks is in flight (stored); the task. */
async function copyInFlight(c: NetnsCluster, what: string, which: (t: { source: number; target: number; shard: number }) => boolean): Promise<{ source: number; target: number; shard: number }> {
  let task: { source: number; target: number; shard: number } | undefined;
  await waitFor(what, async () => {
    task = ((await c.config())?.copies ?? []).find(which);
    return task !== undefined;
  }, SETTLE_MS, 10);
  return task!;
}

/**
 * Every node process as `rowan cluster` supervises it (bin/cluster-supervise.ts) -- or systemd on each
 * of 6 hosts: one that dies is started again, with --rejoin once the manager lists it dead (its pool
 * kept), with its data when it is not listed within deadWaitMsFor; a decommissioned one (its id
 * retired) is left stopped. Kills made here are planned: kill() restarts the node the same way.
 */
class Supervisor {
  private stopping = false;
  private readonly planned = new WeakSet<ChildProcess>();
  readonly events: string[] = [];
  private readonly pending = new Set<Promise<void>>();

  constructor(private readonly c: NetnsCluster, private readonly store: ConfigStore, private readonly deadWaitMs: number) {}

  watch(id: number): void {
    const p = this.c.procs.get(id)!;
    p.once('exit', (code, signal) => {
      if (this.planned.has(p) || this.stopping) return;
      this.track(this.restart(id, `exited on its own (${code ?? signal})`));
    });
  }

  /** `rowan start` for node `id`; a start that fails is made again after a backoff, as the launcher does. */
  async start(id: number, rejoin: boolean): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.c.startNode(id, rejoin);
        this.watch(id);
        return;
      } catch (err) {
        if (this.stopping || attempt >= 5) throw err;
        this.events.push(`node ${id} did not start (${(err as Error).message.split('\n')[0]}); again`);
        await sleep(1000 * attempt); // the launcher's backoff
        rejoin = ((await this.store.read()).dead ?? []).includes(id);
      }
    }
  }

  async restart(id: number, why: string): Promise<void> {
    if (((await this.store.read()).retired ?? []).includes(id)) {
      this.events.push(`node ${id} ${why}: decommissioned, not restarted`);
      return;
    }
    const dead = await waitListedDead(this.store, id, () => this.stopping, this.deadWaitMs);
    if (this.stopping) return;
    await this.start(id, dead);
    this.events.push(`node ${id} ${why}: restarted ${dead ? 'with --rejoin after its failover' : 'with its data'}`);
  }

  /** SIGKILL node `id`, then restart it. */
  async kill(id: number, why: string): Promise<void> {
    const p = this.c.procs.get(id);
    if (p) this.planned.add(p);
    await this.c.killNode(id);
    await this.restart(id, `SIGKILLed as the ${why}`);
  }

  private track(p: Promise<void>): void {
    const q = p.catch((err: Error) => void this.events.push(`restart failed: ${err.message}`)).finally(() => this.pending.delete(q));
    this.pending.add(q);
  }

  /** Nothing restarted from here on (the lab goes down next: restarts under way fail, quietly). */
  stop(): void {
    this.stopping = true;
  }
}

// The time it takes is mostly node starts: at load 50-65 on this 2-core machine each `rowan start` took
// 80-180 s to READY (the grow passed its checks at 604 s, the shrink was done at about 900 s); on a
// quiet machine it is meant to take about 90 s. Hence the long timeout.
test('3 nodes in namespaces under load grow to 6 (rowan node add on each new host) and shrink to 4 (decommission), copies\' sources and targets SIGKILLed mid-copy: fair spread, linearizable, nothing acknowledged lost', { timeout: 1_500_000, skip: unavailable ?? false }, async (t) => {
  const { c, dir } = await NetnsCluster.forTest(t, 'growkill', SHARDS, { leaseMs: LEASE_MS, spareHosts: 3 });
  const sup = new Supervisor(c, c.zk?.store ?? new FileConfigStore(c.file), deadWaitMsFor(defaultTimings, leaseTiming(LEASE_MS)));
  for (const id of [0, 1, 2]) sup.watch(id);
  try {
    await growShrink(c, dir, sup);
  } finally {
    sup.stop();
  }
});

/** 3 -> 6: node 3 added, the first copy onto it loses its target; 4 and 5 added, a copy from an old member loses its source. */
async function grow(c: NetnsCluster, sup: Supervisor): Promise<{ shown: string; ms: number }> {
  const t0 = performance.now();
  await addNode(c, sup, 3);
  phase('node 3 added and started');
  const toNew = await copyInFlight(c, 'a copy onto node 3', (x) => x.target === 3);
  await sup.kill(3, `target of shard ${toNew.shard}'s copy from node ${toNew.source}`);
  phase(`node 3 killed mid-copy and restarted`);
  await addNode(c, sup, 4);
  await addNode(c, sup, 5);
  phase('nodes 4 and 5 added and started');
  // A copy from an old member (0-2) onto a new one loses its source.
  const fromOld = await copyInFlight(c, 'a copy from nodes 0-2', (x) => x.source <= 2);
  await sup.kill(fromOld.source, `source of shard ${fromOld.shard}'s copy to node ${fromOld.target}`);
  phase(`node ${fromOld.source} killed mid-copy and restarted`);
  let cfg: ClusterConfig | null = null;
  await waitFor('6 members, balanced and fully replicated', async () => settled((cfg = await c.config()), [0, 1, 2, 3, 4, 5]), SETTLE_MS, 50);
  const grown = fairness(cfg!, [0, 1, 2, 3, 4, 5]);
  assert.ok(grown.fair, `not fairly spread after the grow: ${grown.shown}`);
  return { shown: grown.shown, ms: performance.now() - t0 };
}

/** 6 -> 4: nodes 0 and 1 decommissioned; a drain copy loses its target. */
async function shrink(c: NetnsCluster, sup: Supervisor): Promise<{ shown: string; ms: number }> {
  let cfg: ClusterConfig | null = null;
  const t1 = performance.now();
  for (const id of [0, 1]) await rowanOn(c, 'cm', ['node', 'decommission', String(id), ...storeArgs(c), '--manager', `${c.addr('cm')}:${MANAGER_PORT}`, '--secret-file', c.secretFile, '--no-wait']);
  phase('nodes 0 and 1 leaving');
  const drain = await copyInFlight(c, 'a drain copy', (x) => x.source <= 1);
  await sup.kill(drain.target, `target of shard ${drain.shard}'s drain copy from node ${drain.source}`);
  phase(`node ${drain.target} killed mid-copy and restarted`);
  await waitFor('4 members, balanced and fully replicated', async () => settled((cfg = await c.config()), [2, 3, 4, 5]), SETTLE_MS, 50);
  assert.deepEqual(cfg!.retired, [0, 1]);
  const shrunk = fairness(cfg!, [2, 3, 4, 5]);
  assert.ok(shrunk.fair, `not fairly spread after the shrink: ${shrunk.shown}`);
  return { shown: shrunk.shown, ms: performance.now() - t1 };
}

async function growShrink(c: NetnsCluster, dir: string, sup: Supervisor): Promise<void> {
  const keys = Array.from({ length: 16 }, (_, i) => `h-${i}`);
  const common = { cluster: c.file, passwordFile: c.passwordFile, maxOps: 2_000_000, keys };
  const l0 = ClientLoad.start(c, 'c0', { ...common, out: join(dir, 'load-c0.json'), clients: 2, clientBase: 0, unique: true });
  const l1 = ClientLoad.start(c, 'c1', { ...common, out: join(dir, 'load-c1.json'), clients: 2, clientBase: 10 });
  const ok = () => l0.progress()!.fresh.ok + l1.progress()!.fresh.ok;
  await waitFor('both client hosts to be served', () => (l0.progress()?.fresh.ok ?? 0) > 200 && (l1.progress()?.fresh.ok ?? 0) > 200, 60_000, 50);
  const grown = await grow(c, sup);
  let before = ok();
  await waitFor('the load to go on after the grow', () => ok() > before + 100, 60_000, 50);

  const shrunk = await shrink(c, sup);
  before = ok();
  await waitFor('the load to go on after the shrink', () => ok() > before + 100, 60_000, 50);

  // The decommissioned nodes said so when they stopped (not 'restart it with --rejoin').
  for (const id of [0, 1]) {
    await waitFor(`node ${id} to stop`, () => c.procs.get(id)!.exitCode !== null || c.procs.get(id)!.signalCode !== null, 60_000, 50);
    const lines = logRecords(c.logOf(id)).map((r) => String(r['msg']));
    assert.ok(lines.some((l) => l.startsWith('decommissioned:')), `node ${id} did not say it was decommissioned`);
  }
  const r0 = await l0.stop();
  const r1 = await l1.stop();
  assert.deepEqual(r0.uniqueMissing, [], 'acknowledged writes missing');
  assert.ok(r0.uniqueAcked > 0);
  const history = [...r0.history, ...r1.history];
  const lin = checkLinearizability(history, { timeLimitMs: 60_000 });
  assert.equal(lin.ok, true, lin.describe());
  const late = assertLateOnlyUnknown(loggedLateBlocks(dir, [0, 1, 2, 3, 4, 5]), history, (k) => shardOfKey(new TextEncoder().encode(k), SHARDS), 2);
  const codes = (s: { codes: Record<string, number> }) => JSON.stringify(s.codes);
  console.log(
    `grow-shrink in namespaces (${c.store}): grown to 6 in ${(grown.ms / 1000).toFixed(1)} s (${grown.shown}), shrunk to 4 in ${(shrunk.ms / 1000).toFixed(1)} s (${shrunk.shown}); ` +
      `${sup.events.join('; ')}; c0 ${r0.fresh.ops} ops (${r0.fresh.ok} ok, ${r0.fresh.unknown} unknown, ${codes(r0.fresh)}), c1 ${r1.fresh.ops} ops (${r1.fresh.ok} ok, ${r1.fresh.unknown} unknown, ${codes(r1.fresh)}); ` +
      `${r0.uniqueAcked} unique writes acknowledged, all read back; history of ${history.length} ops linearizable (${lin.ok === true ? lin.checked : 0} checked); ${late}`,
  );
}

if (unavailable) console.log(`grow-shrink in namespaces skipped: ${unavailable}`);
