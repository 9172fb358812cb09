// Failover benchmark (ROWAN Figure 14): a write-intensive YCSB load (A: 50 % PUT, Zipfian 0.99,
// ZippyDB object sizes) on a fresh local 3-node cluster, throughput in 2 ms buckets, node 0 (a
// primary of a third of the shards) SIGKILLed 100 ms into the recorded window. Marks, from the
// configuration manager's log (monotonic ms, the same CLOCK_MONOTONIC this process reads):
//   detected   the manager suspects the node (its connection dropped)
//   committed  the new configuration is committed (after the node's lease certainly expired)
//   promoted   every new primary finished phase 2 (index caught up, versions raised)
//   served     a GET of every shard succeeded again (probed from this process, which also runs the
//              load's 32 loops)
//   served (probe process)  the same, probed from a process of its own that does nothing else
//              (./failover/probe-process.ts): the cluster's time without the load generator's
// and from the surviving nodes' logs: when the last of them took the prepare up and the commit (the
// round's delivery to their main threads), and the slowest prepare's and promotion's own work.
// Repeated for --kills (default 20, --quick 3) fresh clusters; p50/p99 of each mark after the kill.
//
//   npm run bench -- failover [--quick] [--kills=N] [--lease-ms=100]   (default: the default lease)
// Writes bench/results/failover.json (per-kill marks, summary and the timelines) and failover.svg
// (p50/p99 per phase), plus failover-timeline.svg (the Figure 14 plot).
import { fork } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { RowanClient } from '../client/client.js';
import { monotonicClock } from '../config/base/clock.js';
import { defaultTimings } from '../config/timings.js';
import { launchCluster, randomBasePort, stopCluster } from '../test/fixtures/cluster.js';
import { allShardsServed, logRecords, nodePids, probeKeys } from '../test/fixtures/failover-cluster.js';
import type { ProbeMessage } from './failover/probe-process.js';
import { gitState, load, machine, progress, recordParams, resultsDir, type Row } from './report.js';
import { timelineOf, type Run } from './failover/timeline.js';
import { valueOf, workloads } from './ycsb/driver.js';
import { sizeDists, valueSizeSampler } from './ycsb/sizes.js';
import { ZipfianChooser, keyOf, mulberry32 } from './ycsb/zipfian.js';

const BUCKET_MS = 2;
const KILL_AT_MS = 100;
const AFTER_MS = 700;
const KEYS = 2000;
const CONCURRENCY = 32;
const SHARDS = 12;

function flag(name: string, dflt: number): number {
  const a = process.argv.find((x) => x.startsWith(`--${name}=`));
  return a ? Number(a.split('=')[1]) : dflt;
}

/** The manager's failover events after `since` (monotonic ms): first `at` of each. */
function managerEvents(dir: string, since: number): Record<string, number> {
  const out: Record<string, number> = {};
  for (const r of logRecords(join(dir, 'manager.log'))) {
    if (typeof r.event !== 'string' || typeof r.at !== 'number') continue;
    if (r.at >= since && out[r.event] === undefined) out[r.event] = r.at;
  }
  return out;
}

/** The surviving nodes' side of the failover to `term` (monotonic ms, from their logs): when the
 *  last of them took the prepare up (stoppedAt) and how long its prepare took (the gather's scan);
 *  when the last promoting node started the commit and how long its promotion took. */
function nodeEvents(dir: string, nodes: number[], term: number): Record<string, number> {
  const out: Record<string, number> = {};
  const latest = (k: string, v: unknown) => typeof v === 'number' && (out[k] === undefined || v > out[k]!) && (out[k] = v);
  for (const n of nodes) {
    for (const r of logRecords(join(dir, `node-${n}.log`))) {
      if (r.term !== term || typeof r.msg !== 'string') continue;
      if (r.msg.startsWith('prepared term')) (latest('prepareTaken', r.stoppedAt), latest('prepareWorkMs', r.ms));
      if (r.msg.startsWith('promoted ')) (latest('commitTaken', r.startedAt), latest('promoteWorkMs', r.ms));
    }
  }
  return out;
}

/** Per kill, the failover's parts in order (ms; NaN: a mark missing). */
function phasesOf(m: Record<string, number>): Record<string, number> {
  const d = (a: string, b: string) => (m[b] ?? NaN) - (a === 'kill' ? 0 : (m[a] ?? NaN));
  return {
    'detect (kill->detected)': d('kill', 'detected'),
    'plan+store (detected->stored)': d('detected', 'stored'),
    'prepare delivery (stored->last node took it)': d('stored', 'prepareTaken'),
    'prepare work (slowest node: block, gather scan)': m['prepareWork'] ?? NaN,
    'lease wait (prepared->committed)': d('prepared', 'committed'),
    'commit delivery (committed->last promoter took it)': d('committed', 'commitTaken'),
    'promote work (slowest promoter)': m['promoteWork'] ?? NaN,
    'serve (promoted->served)': d('promoted', 'served'),
    'serve, probe in its own process (promoted->served)': d('promoted', 'servedProbeProcess'),
  };
}

async function oneKill(k: number, leaseMs: number): Promise<{ run: Run; row: Row }> {
  const { mkdtempSync, rmSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const dir = mkdtempSync(join(tmpdir(), 'rowan-failover-bench-'));
  const cluster = launchCluster(dir, randomBasePort(), ['--shards', String(SHARDS), '--lease-ms', String(leaseMs), '--pool-mib', '64', '--no-restart']);
  // Closed however this kill ends: a kill that fails (a false failover) must not leave the load loops
  // and the clients running, or the benchmark process never exits.
  let c: RowanClient | null = null;
  let probe: RowanClient | null = null;
  let own: Awaited<ReturnType<typeof probeProcess>> | null = null;
  let stop = false;
  let loops: Promise<void>[] = [];
  try {
    await cluster.ready;
    const file = join(dir, 'cluster.json');
    const pid = nodePids(cluster.output()).get(0)!;
    c = await RowanClient.connect({ cluster: file, retries: 8, timeoutMs: 3000 });
    probe = await RowanClient.connect({ cluster: file, retries: 8, timeoutMs: 3000 });
    own = await probeProcess(file);
    const client = c;
    const size = valueSizeSampler(sizeDists.zippydb, mulberry32(k + 1));
    for (let b = 0; b < KEYS; b += 256) await Promise.all(Array.from({ length: Math.min(256, KEYS - b) }, (_, j) => client.put(keyOf(b + j), valueOf(size(), b + j))));
    const keys = new ZipfianChooser(KEYS, 0.99, mulberry32(100 + k));
    const rand = mulberry32(200 + k);
    const w = workloads.a;
    const buckets = new Array<number>(Math.ceil((KILL_AT_MS + AFTER_MS) / BUCKET_MS)).fill(0);
    let errors = 0;
    // Warm up 200 ms unrecorded, then record from t0; SIGKILL at t0 + KILL_AT_MS.
    const tWarm = monotonicClock.now();
    const t0 = tWarm + 200;
    const loop = async () => {
      for (let i = 0; !stop && i < 1_000_000; i++) {
        const id = keys.next();
        try {
          if (rand() < w.putFraction) await client.put(keyOf(id), valueOf(size(), i));
          else await client.get(keyOf(id));
          const at = monotonicClock.now() - t0;
          if (at >= 0 && at < buckets.length * BUCKET_MS) buckets[Math.floor(at / BUCKET_MS)]!++;
        } catch {
          errors++;
        }
      }
    };
    loops = Array.from({ length: CONCURRENCY }, loop);
    while (monotonicClock.now() < t0 + KILL_AT_MS) await sleep(1);
    const tKill = monotonicClock.now();
    process.kill(pid, 'SIGKILL');
    own!.go();
    await allShardsServed(probe, probeKeys(SHARDS), 20_000);
    const served = monotonicClock.now() - tKill;
    const servedByOwn = await own!.served;
    while (monotonicClock.now() < t0 + KILL_AT_MS + AFTER_MS) await sleep(5);
    stop = true;
    await Promise.all(loops);
    // The manager's log is flushed as it goes; give its last line a moment to land (bounded).
    let ev = managerEvents(dir, tKill - 50);
    for (let i = 0; i < 100 && ev['promoted'] === undefined; i++) {
      await sleep(20);
      ev = managerEvents(dir, tKill - 50);
    }
    const marks: Record<string, number> = { served };
    if (servedByOwn !== null) marks['servedProbeProcess'] = servedByOwn - tKill;
    for (const p of ['detected', 'stored', 'prepared', 'committed', 'promoted']) if (ev[p] !== undefined) marks[p] = ev[p]! - tKill;
    const term = logRecords(join(dir, 'manager.log')).find((r) => r.event === 'detected' && typeof r.at === 'number' && r.at >= tKill - 50)?.term;
    const nodeEv = typeof term === 'number' ? nodeEvents(dir, [1, 2], term) : {};
    for (const p of ['prepareTaken', 'commitTaken']) if (nodeEv[p] !== undefined) marks[p] = nodeEv[p]! - tKill;
    for (const p of ['prepareWork', 'promoteWork']) if (nodeEv[`${p}Ms`] !== undefined) marks[p] = nodeEv[`${p}Ms`]!;
    const row: Row = { kill: k, leaseMs, errors, ...Object.fromEntries(Object.entries(marks).map(([n, v]) => [`${n}Ms`, +v.toFixed(2)])) };
    return { run: { buckets, marks }, row };
  } finally {
    stop = true;
    await Promise.allSettled(loops);
    await Promise.allSettled([c?.close(), probe?.close()]);
    own?.stop();
    await stopCluster(cluster.child);
    if (process.env['ROWAN_BENCH_KEEP']) console.log(`kept ${dir}`);
    else rmSync(dir, { recursive: true, force: true });
  }
}

/** The probe in a process of its own (./failover/probe-process.ts), connected: go() starts it at the
 *  kill; `served` is when it saw every shard again (monotonic ms), null if it failed. */
async function probeProcess(file: string): Promise<{ go(): void; served: Promise<number | null>; stop(): void }> {
  const child = fork(new URL('./failover/probe-process.js', import.meta.url).pathname, [file, String(SHARDS)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const first = new Promise<ProbeMessage>((resolve) => {
    child.once('message', (m) => resolve(m as ProbeMessage));
    child.once('exit', (code) => resolve({ t: 'failed', why: `exited (${code}) before it was ready` }));
  });
  const ready = await first;
  if (ready.t !== 'ready') throw new Error(`failover bench: the probe process did not start: ${ready.t === 'failed' ? ready.why : ready.t}`);
  const served = new Promise<number | null>((resolve) => {
    child.once('message', (m: ProbeMessage) => resolve(m.t === 'served' ? m.at : (console.error(`failover bench: the probe process: ${m.t === 'failed' ? m.why : m.t}`), null)));
    child.once('exit', () => resolve(null));
  });
  return { go: () => child.send({ t: 'go' }), served, stop: () => void (child.exitCode === null && child.kill()) };
}

function pct(xs: number[], p: number): number {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor(p * s.length))]! : NaN;
}

export async function run(): Promise<Row[]> {
  const quick = process.argv.includes('--quick');
  const kills = flag('kills', quick ? 3 : 20);
  const leaseMs = flag('lease-ms', defaultTimings.leaseMs);
  recordParams({ quick, kills, leaseMs, bucketMs: BUCKET_MS, killAtMs: KILL_AT_MS, afterMs: AFTER_MS, keys: KEYS, concurrency: CONCURRENCY, shards: SHARDS, workload: 'YCSB A, Zipfian 0.99, ZippyDB sizes', nodes: 3 });
  const runs: Run[] = [];
  const perKill: Row[] = [];
  for (let k = 0; k < kills; k++) {
    progress(`failover: kill ${k + 1}/${kills}`, k, kills);
    try {
      const r = await oneKill(k, leaseMs);
      runs.push(r.run);
      perKill.push(r.row);
    } catch (err) {
      // A live node fenced by a late renewal (a false failover) leaves too few nodes to measure.
      perKill.push({ kill: k, leaseMs, failed: String((err as Error).message).slice(0, 120) });
      console.error(`failover bench: kill ${k} not measured: ${(err as Error).message}`);
    }
  }
  const summary: Row[] = [];
  for (const p of ['detected', 'stored', 'prepared', 'committed', 'promoted', 'served', 'servedProbeProcess']) {
    const xs = runs.map((r) => r.marks[p] ?? NaN);
    summary.push({ phase: p, afterKillP50Ms: +pct(xs, 0.5).toFixed(1), afterKillP99Ms: +pct(xs, 0.99).toFixed(1), kills: xs.filter(Number.isFinite).length });
  }
  // Phase lengths, in order: detection, the prepare round, the lease wait, the commit round, serving.
  const phases = runs.map((r) => phasesOf(r.marks));
  for (const name of Object.keys(phasesOf({}))) {
    const xs = phases.map((p) => p[name]!);
    summary.push({ phase: name, afterKillP50Ms: +pct(xs, 0.5).toFixed(1), afterKillP99Ms: +pct(xs, 0.99).toFixed(1), kills: xs.filter(Number.isFinite).length });
  }
  writeFileSync(join(resultsDir, 'failover-timeline.svg'), timelineOf({ bucketMs: BUCKET_MS, killAtMs: KILL_AT_MS, leaseMs, runs }));
  // The per-kill detail, with what produced it (failover.json's `run` record says the same).
  writeFileSync(join(resultsDir, 'failover-runs.json'), JSON.stringify({ git: gitState(), machine: machine(), loadAvgEnd: load(), bucketMs: BUCKET_MS, killAtMs: KILL_AT_MS, leaseMs, perKill, runs }, null, 1) + '\n');
  console.log(`per kill:\n${perKill.map((r) => JSON.stringify(r)).join('\n')}\ntimeline: ${join(resultsDir, 'failover-timeline.svg')}`);
  return summary;
}
