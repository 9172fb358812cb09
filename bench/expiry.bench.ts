// `npm run bench -- expiry [--quick] [--keys=N]`: issue 27's expiry measurement. On a local 3-node
// cluster (replication 3, one worker per node), closed-loop GET/SET streams on long-lived keys run
// (1) alone -- the run without expiry -- and (2) while N keys written with one deadline expire: every
// worker's expiry sweep replicates a DEL per key, the tombstone sweeps and clean actors reclaim the
// space. Measured: the other requests' p50/p99/p99.9 in each phase (p99 with expiry / p99 without; the
// issue asks for at most 2), how long after the deadline the pools are back to the usage of phase 1
// (segments not Free, index items, live bytes over all nodes), and a per-second timeline.
// The keys are written before their deadline (chosen from the rate the long-lived keys were written
// at, so the writes end before it even on a loaded machine; the row says by how much); phase 2 is timed
// from the deadline, so the writes themselves are not in it.
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { Redis } from 'ioredis';
import type { ClusterConfig } from '../config/cluster.js';
import { keySlot, shardOfSlot } from '../config/slots.js';
import { Load, type Phase } from './expiry/load.js';
import { poolUsage, type PoolUsage } from './expiry/pool.js';
import { cpuSecondsOf } from './redis/server-cpu.js';
import { recordParams, type Row } from './report.js';
import { startCluster, type RunningCluster } from './ycsb/cluster.js';

const quick = process.argv.includes('--quick');

function flag(name: string, dflt: number): number {
  const a = process.argv.find((x) => x.startsWith(`--${name}=`));
  return a ? Number(a.split('=')[1]) : dflt;
}

const KEYS = flag('keys', quick ? 100_000 : 1_000_000);
const LIVE_KEYS = 10_000;
const VALUE_BYTES = 32;
const STREAMS = 16;
const BATCH = 1000;
/** Pipelined batches in flight per node while writing. */
const BATCHES_IN_FLIGHT = 4;
const WRITE_ATTEMPTS = 20;
const BASELINE_MS = quick ? 8_000 : 15_000;
/** Phase 2 ends when the pools are back to baseline, or after this long from the deadline. */
const RECLAIM_MAX_MS = flag('duration', quick ? 180_000 : 600_000);
/** Back to baseline: index items within this share of the expiring keys' items, segments within this. */
const ITEMS_SLACK = 0.01;
const SEGMENTS_SLACK = 1.1;
/** The first seconds after the deadline, when the sweeps delete (their p99 is reported apart). */
const FIRST_S = 15;
/** 256 KiB as in redis-expiry-reclaim.test.ts: a tombstone is dropped only once no other segment holds
 *  its key, so reclaiming waits for the segments the keys were written into to fill and be cleaned;
 *  with 1 MiB segments 20,000 expired keys were not reclaimed in 180 s under this load. */
const SEGMENT_KIB = flag('segment-kib', 256);
/** Per node (each holds every key): a PUT with its deadline (128 B), its DEL (64 B), room to clean in. */
const POOL_MIB = Math.max(256, Math.ceil((KEYS * 512) / 2 ** 20));

interface Ctx {
  cluster: RunningCluster;
  config: ClusterConfig;
  password: string;
  /** A plain client per node on its single-endpoint port: each node is sent the keys it is primary of. */
  nodes: Redis[];
}

/** Write keys `name(i)` for i < n with `args` after the key, each to its primary; keys/s. */
async function writeAll(x: Ctx, n: number, name: (i: number) => string, args: (string | number)[]): Promise<number> {
  const t0 = performance.now();
  const queues: string[][] = x.nodes.map(() => []);
  for (let i = 0; i < n; i++) {
    const k = name(i);
    queues[x.config.shards[shardOfSlot(keySlot(Buffer.from(k)), x.config.shardCount)]!.primary]!.push(k);
  }
  const worker = async (node: number, lane: number) => {
    const q = queues[node]!;
    for (let at = lane * BATCH; at < q.length; at += BATCH * BATCHES_IN_FLIGHT) {
      // A batch refused while the cluster reconfigures (TRYAGAIN; the node forwards a key it no longer
      // owns) is sent again: SET with PXAT is idempotent.
      for (let attempt = 1; ; attempt++) {
        const p = x.nodes[node]!.pipeline();
        for (const k of q.slice(at, at + BATCH)) p.call('SET', k, ...args);
        const err = (await p.exec())!.find(([e]) => e)?.[0];
        if (!err) break;
        if (attempt >= WRITE_ATTEMPTS) throw err;
        await sleep(200);
      }
    }
  };
  await Promise.all(x.nodes.flatMap((_, node) => Array.from({ length: BATCHES_IN_FLIGHT }, (_, lane) => worker(node, lane))));
  return n / ((performance.now() - t0) / 1000);
}

function phaseRow(name: string, p: Phase, keys: number, cpu: CpuSpan): Row {
  const q = (x: number) => Math.round(((p.lat.percentileUs(x) ?? NaN) / 1000) * 100) / 100;
  const sec = (p.endMs - p.startMs) / 1000;
  const cpuSec = cpu.end !== null && cpu.start !== null ? cpu.end - cpu.start : null;
  return {
    phase: name, keys, seconds: Math.round(sec * 10) / 10, opsPerSec: Math.round(p.lat.count / sec), p50ms: q(50), p99ms: q(99), p999ms: q(99.9), errors: p.errors,
    // The nodes' CPU (every thread, /proc/PID/stat utime + stime) over the phase, in cores, and the
    // machine's 1-minute load average at its end: the other requests' latency on a shared machine
    // depends on both.
    nodeCores: cpuSec === null ? null : Math.round((cpuSec / sec) * 100) / 100, load1: Math.round(loadavg()[0]! * 10) / 10,
  };
}

/** The node processes' CPU seconds at a phase's start and end (null: a node was gone). */
interface CpuSpan {
  start: number | null;
  end: number | null;
}

const nodeCpu = (x: Ctx) => cpuSecondsOf(x.cluster.pids().nodes);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms)));

/** Phase 1: the load alone for BASELINE_MS; the pool usage sampled each second (the most segments seen). */
async function baseline(x: Ctx, load: Load): Promise<{ row: Row; base: PoolUsage }> {
  load.begin();
  const cpu: CpuSpan = { start: nodeCpu(x), end: null };
  const base = await poolUsage(x.cluster.file);
  for (const end = Date.now() + BASELINE_MS; Date.now() < end; ) {
    await sleep(1000);
    const u = await poolUsage(x.cluster.file);
    base.usedSegments = Math.max(base.usedSegments, u.usedSegments);
    base.indexItems = Math.max(base.indexItems, u.indexItems);
    base.liveMB = Math.max(base.liveMB, u.liveMB);
  }
  cpu.end = nodeCpu(x);
  const row = phaseRow('no expiry', load.end(), 0, cpu);
  return { row: { ...row, usedSegments: base.usedSegments, indexItems: base.indexItems, liveMB: round1(base.liveMB) }, base };
}

const round1 = (v: number) => Math.round(v * 10) / 10;

/** Keys the nodes' expiry sweeps deleted so far (INFO stats expired_keys, summed over the nodes). */
async function expiredKeys(x: Ctx): Promise<number> {
  let n = 0;
  for (const c of x.nodes) n += Number(/expired_keys:(\d+)/.exec(await c.info('stats'))?.[1] ?? 0);
  return n;
}

/** Back to baseline: index items those of the long-lived keys on every replica (or phase 1's, if more:
 *  a backup indexes what its b-log holds once the segment is done, so phase 1 may count fewer). */
function reclaimed(u: PoolUsage, base: PoolUsage, replicas: number): boolean {
  const items = Math.max(base.indexItems, LIVE_KEYS * replicas);
  return u.indexItems <= items + ITEMS_SLACK * KEYS * replicas && u.usedSegments <= Math.ceil(base.usedSegments * SEGMENTS_SLACK);
}

/** Phase 2: from the deadline until the pools are back to the baseline (or RECLAIM_MAX_MS). */
async function expiring(x: Ctx, load: Load, base: PoolUsage, deadline: number, written: PoolUsage): Promise<Row[]> {
  await sleep(deadline - Date.now());
  load.begin();
  const cpu: CpuSpan = { start: nodeCpu(x), end: null };
  load.perSecondFrom(deadline);
  const samples: Row[] = [];
  let peak = written.usedSegments;
  let u = written;
  let doneAt: number | null = null;
  while (Date.now() - deadline < RECLAIM_MAX_MS) {
    await sleep(1000);
    u = await poolUsage(x.cluster.file);
    peak = Math.max(peak, u.usedSegments);
    samples.push({
      phase: 'sample', second: Math.round((Date.now() - deadline) / 100) / 10, usedSegments: u.usedSegments, indexItems: u.indexItems, liveMB: round1(u.liveMB),
      expired: await expiredKeys(x), tombstonesDropped: u.tombstonesDropped, cleanedSegments: u.cleanedSegments, cleanBusyS: round1(u.cleanBusyS),
    });
    if (reclaimed(u, base, x.config.replicationFactor)) {
      doneAt = Date.now();
      break;
    }
  }
  cpu.end = nodeCpu(x);
  const row = phaseRow('expiring', load.end(), KEYS, cpu);
  const perSecond = new Map(load.timeline().map((t) => [t.second, t]));
  for (const s of samples) {
    const t = perSecond.get(Math.floor(Number(s.second)) - 1); // the second that ended at the sample
    if (t) Object.assign(s, { p99ms: Math.round(t.p99ms * 100) / 100, requests: t.requests });
  }
  const first = load.p99Between(0, FIRST_S);
  const summary: Row = {
    ...row, p99msFirst15s: first === null ? null : Math.round(first * 100) / 100, usedSegments: u.usedSegments, usedSegmentsPeak: peak, indexItems: u.indexItems, indexItemsPeak: written.indexItems, liveMB: round1(u.liveMB),
    reclaimed: doneAt !== null, reclaimedAfterS: doneAt === null ? null : round1((doneAt - deadline) / 1000),
  };
  return [summary, ...samples];
}

async function measure(x: Ctx): Promise<Row[]> {
  await writeAll(x, LIVE_KEYS, (i) => `live:${i}`, ['v'.repeat(VALUE_BYTES)]);
  // Written again, timed: the rate of a warm cluster (the first writes of a fresh one are several times slower).
  const liveRate = await writeAll(x, LIVE_KEYS, (i) => `live:${i}`, ['v'.repeat(VALUE_BYTES)]);
  const load = await Load.start({ ports: x.config.nodes.map((n) => n.resp!.clusterPorts[0]!), password: x.password, streams: STREAMS, liveKeys: LIVE_KEYS, valueBytes: VALUE_BYTES });
  try {
    const { row: noExpiry, base } = await baseline(x, load);
    process.stderr.write(`  no expiry: p99 ${noExpiry.p99ms} ms, ${noExpiry.opsPerSec} ops/s, nodes ${noExpiry.nodeCores} cores, load ${noExpiry.load1}; pools: ${base.usedSegments} segments, ${base.indexItems} index items\n`);
    // The deadline: twice the time the long-lived keys' rate says the writes take (they compete with the load now), 15 s at least.
    const deadline = Math.round(Date.now() + Math.max(15_000, (2 * KEYS * 1000) / liveRate + 5_000));
    const t0 = Date.now();
    const rate = await writeAll(x, KEYS, (i) => `exp:${i}`, ['x'.repeat(VALUE_BYTES), 'PXAT', deadline]);
    const margin = round1((deadline - Date.now()) / 1000);
    const written = await poolUsage(x.cluster.file);
    process.stderr.write(`  ${KEYS} keys written in ${round1((Date.now() - t0) / 1000)} s (${Math.round(rate)}/s), ${margin} s before their deadline; pools: ${written.usedSegments} segments, ${written.indexItems} index items\n`);
    const [exp, ...samples] = await expiring(x, load, base, deadline, written);
    const vs = (p99: unknown) => (typeof p99 === 'number' ? Math.round((p99 / Number(noExpiry.p99ms)) * 100) / 100 : null);
    exp!.p99VsNoExpiry = vs(exp!.p99ms);
    exp!.first15sVsNoExpiry = vs(exp!.p99msFirst15s);
    Object.assign(exp!, { writeSec: round1((Date.now() - t0) / 1000 - Number(exp!.seconds)), writeKeysPerSec: Math.round(rate), deadlineMarginS: margin });
    process.stderr.write(`  expiring: p99 ${exp!.p99ms} ms (${exp!.p99VsNoExpiry}x; first ${FIRST_S} s: ${exp!.p99msFirst15s} ms, ${exp!.first15sVsNoExpiry}x), reclaimed ${exp!.reclaimed ? `after ${exp!.reclaimedAfterS} s` : 'NOT within the bound'}; ${exp!.opsPerSec} ops/s, nodes ${exp!.nodeCores} cores, load ${exp!.load1}\n`);
    // The load alone once more: on a shared machine other work changes over a run of minutes, so the
    // expiring phase is also compared with what came after it.
    const { row: after } = await baseline(x, load);
    after.phase = 'no expiry, after';
    exp!.p99VsAfter = typeof exp!.p99ms === 'number' ? Math.round((exp!.p99ms / Number(after.p99ms)) * 100) / 100 : null;
    process.stderr.write(`  no expiry, after: p99 ${after.p99ms} ms, ${after.opsPerSec} ops/s, nodes ${after.nodeCores} cores, load ${after.load1} (expiring p99 ${exp!.p99VsAfter}x this)\n`);
    return [noExpiry, exp!, after, ...samples];
  } finally {
    await load.stop();
  }
}

export async function run(): Promise<Row[]> {
  recordParams({
    quick, keys: KEYS, liveKeys: LIVE_KEYS, valueBytes: VALUE_BYTES, loadStreams: `${STREAMS} closed-loop streams, GET/SET half each, ioredis Cluster`, baselineMs: BASELINE_MS,
    reclaimMaxMs: RECLAIM_MAX_MS, backToBaseline: `index items within ${ITEMS_SLACK * 100} % of the expiring keys' items of phase 1's, segments not Free within ${SEGMENTS_SLACK}x`,
    nodes: 3, replication: 3, workersPerNode: 1, autoReshard: false, leaseMs: 2000, poolMib: POOL_MIB, segmentKib: SEGMENT_KIB, writes: `pipelines of ${BATCH}, ${BATCHES_IN_FLIGHT} per node, each node its own keys`,
  });
  const cluster = await startCluster({ mode: 'rowan', passMode: true, poolMib: POOL_MIB, segmentKib: SEGMENT_KIB, workers: 1, leaseMs: 2000, extraArgs: ['--no-auto-reshard'] });
  const nodes: Redis[] = [];
  try {
    const config = JSON.parse(readFileSync(cluster.file, 'utf8')) as ClusterConfig;
    const password = readFileSync(join(dirname(cluster.file), 'client-password'), 'utf8').trim();
    for (const n of config.nodes) nodes.push(new Redis({ port: n.resp!.ports[0]!, password }));
    return await measure({ cluster, config, password, nodes });
  } finally {
    for (const n of nodes) n.disconnect();
    await cluster.stop();
  }
}
