// Dynamic resharding (ROWAN §6.6, Figure 15): a read-intensive load (95 % GET, 5 % PUT, uniform keys)
// on a local 3-node cluster with automatic resharding on; at t = HOTSPOT_MS, 80 % of the requests that
// went to node A's shards go to one shard S whose primary is node B (A holds a full replica of S), so
// B is overloaded and A underloaded. The manager detects it from the nodes' load reports and moves S
// to the least loaded of its full backups; throughput per bucket is recorded over the run, with marks
// for the hotspot, the overload detected, the move started and finished (from the manager's log,
// whose `at` is the same CLOCK_MONOTONIC this process reads).
//
// Flags: --duration=ms (default 10000), --hotspot=ms (3000), --keys=N (30000), --concurrency=C (48),
// --workers=W (per node, default 1), --shards=S (12), --period=ms (resharding.periodMs, 500),
// --node-cpu=C (each node process limited to C CPUs by a cgroup quota, default 0.5; 0: no limit).
// Through the harness: npm run bench -- reshard. The three nodes and the client share this machine's
// 2 cores: without a budget per node a hot node simply takes the CPU an idle one leaves and no
// overload shows, so each node process gets a cgroup CPU quota (--node-cpu) as a server has its CPUs.
import { findSecret } from '../config/base/secret.js';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RowanClient } from '../actors/kv/client/client.js';
import { monotonicClock } from '../config/base/clock.js';
import type { ClusterConfig } from '../config/cluster.js';
import { shardOfKey } from '../config/slots.js';
import { progress, recordParams, resultsDir, type Row } from './report.js';
import { reshardTimelineSvg, type Mark } from './reshard/timeline.js';
import { limitCpu } from './reshard/cpu-budget.js';
import { mulberry32 } from './ycsb/zipfian.js';
import { askManager, managerAddress } from '../bin/manager-admin.js';

const bin = new URL('../../bin/rowan', import.meta.url).pathname;
const BUCKET_MS = 100;

function flag(name: string, dflt: number): number {
  const a = process.argv.find((x) => x.startsWith(`--${name}=`));
  const v = a ? Number(a.slice(name.length + 3)) : dflt;
  if (!Number.isFinite(v) || v <= 0) throw new Error(`--${name}: '${a}' is not a positive number`);
  return v;
}

interface Cluster {
  dir: string;
  file: string;
  /** The node processes' pids (from the launcher's "node N ready (pid P)" lines). */
  pids: number[];
  stop(): Promise<void>;
}

async function startCluster(shards: number, workers: number, periodMs: number): Promise<Cluster> {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-reshard-bench-'));
  const base = 10_000 + Math.floor(Math.random() * 220) * 100;
  const child = spawn(process.execPath, [bin, 'cluster', '--dir', dir, '--base-port', String(base), '--shards', String(shards), '--workers', String(workers), '--pool-mib', '128'], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ROWAN_RESHARDING_PERIOD_MS: String(periodMs) },
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const t0 = Date.now();
  while (!out.includes('serving.')) {
    if (child.exitCode !== null || Date.now() - t0 > 120_000) throw new Error(`rowan cluster did not start:\n${out}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  const pids = [...out.matchAll(/node \d+ ready \(pid (\d+)\)/g)].map((m) => Number(m[1]));
  return {
    dir,
    file: join(dir, 'cluster.json'),
    pids,
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGINT');
      await new Promise((r) => (child.exitCode !== null ? r(null) : child.once('exit', r)));
    },
  };
}

function managerEvents(dir: string): Record<string, unknown>[] {
  return readFileSync(join(dir, 'manager.log'), 'utf8').split('\n').filter((l) => l.startsWith('{') && l.includes('"event"')).map((l) => JSON.parse(l) as Record<string, unknown>);
}

export async function run(): Promise<Row[]> {
  const durationMs = flag('duration', 10_000);
  const hotspotMs = flag('hotspot', 3_000);
  const keyCount = flag('keys', 30_000);
  const concurrency = flag('concurrency', 48);
  const workers = flag('workers', 1);
  const shards = flag('shards', 12);
  const periodMs = flag('period', 500);
  const nodeCpu = process.argv.some((a) => a === '--node-cpu=0') ? 0 : flag('node-cpu', 0.5);
  recordParams({ nodeCpu, durationMs, hotspotMs, keys: keyCount, concurrency, workers, shards, periodMs, nodes: 3, replication: 3, workload: '95 % GET / 5 % PUT, uniform keys, 100 B values; after the hotspot 80 % of the requests to one node go to one shard of another' });
  const cl = await startCluster(shards, workers, periodMs);
  // One CPU budget per node, as the paper's servers each have their own CPUs (./reshard/cpu-budget.ts).
  const budgets = nodeCpu > 0 ? limitCpu(cl.pids, nodeCpu, `rowan-reshard-${process.pid}`) : { how: 'none (--node-cpu=0)', release: () => {} };
  progress(`reshard: CPU budget: ${budgets.how}`, 0, 1);
  try {
    const c0 = JSON.parse(readFileSync(cl.file, 'utf8')) as ClusterConfig;
    const clients = await Promise.all(Array.from({ length: 4 }, () => RowanClient.connect({ cluster: cl.file, retries: 10, timeoutMs: 10_000 })));
    const keys = Array.from({ length: keyCount }, (_, i) => `user${String(i).padStart(10, '0')}`);
    const shardOf = keys.map((k) => shardOfKey(Buffer.from(k), shards));
    // The hot shard S on node B, and node A: a full backup of S (so the manager can hand S to it).
    const hot = 0;
    const nodeB = c0.shards[hot]!.primary;
    const nodeA = c0.shards[hot]!.backups[0]!;
    const hotKeys = keys.filter((_, i) => shardOf[i] === hot);
    const value = Buffer.alloc(100, 'v');
    progress(`reshard: loading ${keyCount} keys`, 0, 1);
    for (let i = 0; i < keys.length; i += 64) await Promise.all(keys.slice(i, i + 64).map((k, j) => clients[j % clients.length]!.put(k, value)));
    const rand = mulberry32(42);
    const buckets = new Array<number>(Math.ceil(durationMs / BUCKET_MS)).fill(0);
    let errors = 0;
    const t0 = monotonicClock.now();
    const end = t0 + durationMs;
    const pick = (now: number): string => {
      const i = Math.floor(rand() * keys.length);
      // After the hotspot: 80 % of what went to node A's primary shards goes to the hot shard instead.
      if (now - t0 >= hotspotMs && c0.shards[shardOf[i]!]!.primary === nodeA && rand() < 0.8) return hotKeys[Math.floor(rand() * hotKeys.length)]!;
      return keys[i]!;
    };
    const loop = async (c: RowanClient) => {
      for (;;) {
        const now = monotonicClock.now();
        if (now >= end) return;
        const key = pick(now);
        try {
          if (rand() < 0.05) await c.put(key, value);
          else await c.get(key);
          const b = Math.floor((monotonicClock.now() - t0) / BUCKET_MS);
          if (b < buckets.length) buckets[b]!++;
        } catch {
          errors++;
        }
      }
    };
    progress(`reshard: ${durationMs} ms of 95 % GET, hotspot on shard ${hot} (node ${nodeB}) at ${hotspotMs} ms`, 0, 1);
    // The manager's view of each node's load (requests/s as primary + weighted backup writes), sampled.
    const loads: { atMs: number; loads: Record<string, number> }[] = [];
    const secret = findSecret(undefined, cl.file);
    const sampler = (async () => {
      while (monotonicClock.now() < end) {
        const r = (await askManager(managerAddress(undefined, c0), { op: 'loads' }, 1000, secret).catch(() => null)) as { loads: Record<string, number> } | null;
        if (r) loads.push({ atMs: monotonicClock.now() - t0, loads: r.loads });
        await new Promise((res) => setTimeout(res, 250));
      }
    })();
    await Promise.all(Array.from({ length: concurrency }, (_, i) => loop(clients[i % clients.length]!)));
    await sampler;
    await Promise.all(clients.map((c) => c.close()));
    const ev = managerEvents(cl.dir);
    const rel = (e: Record<string, unknown> | undefined) => (e ? (e['at'] as number) - t0 : null);
    const detected = ev.find((e) => e['event'] === 'overload-detected' && (e['at'] as number) >= t0 + hotspotMs);
    const started = ev.find((e) => e['event'] === 'move-started' && detected && (e['at'] as number) >= (detected['at'] as number));
    const done = started ? ev.find((e) => e['event'] === 'move-done' && e['term'] === started['term']) : undefined;
    const promoted = started ? ev.find((e) => e['event'] === 'move-promoted' && e['term'] === started['term']) : undefined;
    const moves = (started?.['moves'] as { shard: number; from: number; to: number }[] | undefined) ?? [];
    const rate = (from: number, to: number) => {
      const bs = buckets.slice(Math.max(0, Math.floor(from / BUCKET_MS)), Math.max(0, Math.floor(to / BUCKET_MS)));
      return bs.length ? Math.round((bs.reduce((a, b) => a + b, 0) * 1000) / (bs.length * BUCKET_MS)) : 0;
    };
    const detectedMs = rel(detected);
    const doneMs = rel(done);
    const hotObjects = hotKeys.length;
    const row: Row = {
      nodes: 3,
      shards,
      workers,
      keys: keyCount,
      concurrency,
      hotShard: hot,
      hotspotMs,
      detectedAfterMs: detectedMs === null ? null : Math.round(detectedMs - hotspotMs),
      moved: moves.map((m) => `shard ${m.shard} ${m.from}->${m.to}`).join(', ') || 'none',
      moveMs: done && started ? +((done['at'] as number) - (started['at'] as number)).toFixed(1) : null,
      handoverMs: promoted && started ? +((promoted['at'] as number) - (started['at'] as number)).toFixed(1) : null,
      objectsHandedOver: moves.length ? hotObjects : 0,
      objectsCopied: 0,
      blogEntriesApplied: (done?.['entries'] as number | undefined) ?? null,
      opsPerSecBefore: rate(hotspotMs - 2000, hotspotMs),
      opsPerSecHotspot: rate(hotspotMs + 100, detectedMs ?? hotspotMs + 1000),
      opsPerSecAfter: rate((doneMs ?? durationMs) + 500, durationMs),
      errors,
      cpuBudget: budgets.how,
    };
    const marks: Mark[] = [{ label: 'hotspot', atMs: hotspotMs, color: '#d62728' }];
    if (detectedMs !== null) marks.push({ label: 'overload detected', atMs: detectedMs, color: '#ff7f0e' });
    if (started) marks.push({ label: 'move started', atMs: rel(started)!, color: '#2ca02c' });
    if (doneMs !== null) marks.push({ label: 'move finished', atMs: doneMs, color: '#9467bd' });
    writeFileSync(
      join(resultsDir, 'reshard-timeline.svg'),
      reshardTimelineSvg(`Resharding (Figure 15): 3 nodes, ${shards} shards, 95 % GET; hotspot on shard ${hot} of node ${nodeB} at ${hotspotMs / 1000} s`, BUCKET_MS, buckets, marks, loads),
    );
    const loadAt = (ms: number) => loads.filter((l) => l.atMs <= ms).pop()?.loads ?? {};
    row['loadsBeforeHotspot'] = JSON.stringify(loadAt(hotspotMs));
    row['loadsAtDetection'] = JSON.stringify(loadAt((detectedMs ?? hotspotMs) + 1));
    row['loadsAtEnd'] = JSON.stringify(loadAt(durationMs));
    writeFileSync(join(resultsDir, 'reshard-timeline.json'), JSON.stringify({ bucketMs: BUCKET_MS, buckets, marks, loads, row, events: ev.filter((e) => String(e['event']).startsWith('move') || e['event'] === 'overload-detected').map((e) => ({ event: e['event'], atMs: rel(e), term: e['term'], moves: e['moves'] })) }, null, 1) + '\n');
    return [row];
  } finally {
    await cl.stop();
    budgets.release();
    if (process.env['ROWAN_BENCH_KEEP'] === undefined) rmSync(cl.dir, { recursive: true, force: true });
    else console.log(`kept ${cl.dir}`);
  }
}
