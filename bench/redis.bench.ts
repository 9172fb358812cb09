// `npm run bench -- redis [--quick]`: rowan's Redis front end side by side with real Redis 7, driven by
// the same clients in one run (issues 15 and 26). Redis: a primary + 2 replicas on loopback, AOF on,
// once with appendfsync everysec and once with always. rowan: a local 3-node cluster (replication 3; a
// SET is acknowledged once persistent on all three). For each system:
//   - idle: the servers' cores with the cluster up and no client (CPU seconds / wall seconds);
//   - redis-benchmark SET and GET (-d 91, -r 1000000) at 10, 50, 200 and 500 connections (rowan: one
//     node's port, and every node's through --cluster), and at 50 connections with -P 16;
//   - ioredis, 50 request streams over 1, 10 or 50 independent client objects (rowan: Cluster objects on
//     the cluster port, and 50 plain ones on one node's port; Redis: plain ones, and SET + WAIT 2, the
//     guarantee closest to rowan's acknowledgement).
// Every run reads the server processes' CPU from /proc (bench/redis/server-cpu.ts) right before and
// after its requests: CPU µs per operation. redis-benchmark counts requests, not time (and prints
// nothing when interrupted), so each run is sized from the rate of a short probe run just before it
// (not reported), to last about TARGET_SEC: the CPU figure then spans hundreds of clock ticks even
// where Redis does 500 k ops/s, and rowan's slower points do not take minutes.
// rowan runs with a 2000 ms lease (--lease-ms=ms; the launcher's default is 200): on this shared 2-core
// machine, under load, nodes starved past 200 ms were evicted and restarted mid-run, and the rows
// measured failovers (redis-benchmark aborting on ROWAN_ERR_LEASE_EXPIRED, ioredis stalled).
// Needs redis-server and redis-tools (apt-get install redis-server redis-tools); installs nothing.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { ClusterConfig } from '../config/cluster.js';
import { ioredisDriver, redisBenchmark, type IoOp, type Measured } from './redis/drivers.js';
import { addRatios, failedRow, idleRow, measuredRow, SET_WAIT } from './redis/rows.js';
import { cpuSecondsOf, idleCores, type ServerPids } from './redis/server-cpu.js';
import { haveRedis, startRedis } from './redis/servers.js';
import { recordParams, type Row } from './report.js';
import { startCluster } from './ycsb/cluster.js';

const quick = process.argv.includes('--quick');
const CONNECTIONS = [10, 50, 200, 500];
const PIPELINE = 16;
const PIPELINED_CONNECTIONS = 50;
/** Seconds a redis-benchmark run is sized to last. */
const TARGET_SEC = quick ? 2 : 6;
/** The probe before each run lasts about this share of TARGET_SEC at the last rate seen. */
const PROBE_SHARE = 1 / 8;
/** Requests of the first probe of a client and test, before any rate is known. */
const PROBE_REQUESTS = quick ? 5_000 : 10_000;
const PROBE_MIN = 2_000;
const REQUESTS_MIN = 5_000;
const REQUESTS_MAX = 5_000_000;
/** A redis-benchmark run still going after this is killed (a failed attempt): one that hangs on a stalled server. */
const RUN_TIMEOUT_MS = 60_000 + 10 * TARGET_SEC * 1000;
/** ioredis clients not connected (and ready-checked) after this fail the run; requests still unanswered this long after the run count as errors. */
const IO_SETUP_MS = 60_000;
const IO_TAIL_MS = 5_000;
const IO_MS = quick ? 3_000 : 8_000;
const IO_STREAMS = 50;
const IO_INSTANCES = [1, 10, 50];
const IDLE_MS = quick ? 5_000 : 10_000;
const KEYS = 1_000_000;
const VALUE_BYTES = 91;
/** Each node holds every key (replication 3): redis-benchmark's -r 1000000 keyspace stored as 192 B entries
 *  (91 B values) is up to 192 MB live per pool once the runs have touched most keys, and GC needs free
 *  segments beside it. The 96 MiB pools --quick had ran out (ROWAN_ERR_PM_FULL) on a quiet machine, where
 *  the SET rows write more: every later SET row then measured only errors; 192 MiB left GC no room. */
const POOL_MIB = 512;
const leaseArg = process.argv.find((a) => a.startsWith('--lease-ms='));
const LEASE_MS = leaseArg ? Number(leaseArg.split('=')[1]) : 2000;

interface Target {
  system: string;
  /** One node's (Redis: the primary's) port, and rowan's cluster port. */
  port: number;
  clusterPort?: number;
  /** rowan: the client password (DIR/client-password, its Redis requirepass); real Redis here has none. */
  password?: string;
  /** Every server process, whose CPU is read (as of now: rowan's launcher restarts a node that exits). */
  pids: ServerPids;
}

/**
 * Attempts of one redis-benchmark run: it exits at the first error reply, and on this shared machine a
 * starved rowan node can miss its 200 ms lease, failing a write in flight (ROWAN_ERR_OUTCOME_UNKNOWN).
 * The row says how many attempts failed and why (retries, note).
 */
const ATTEMPTS = 3;

/** The error reply a failed redis-benchmark run ended with, or the last line it printed. */
function whyFailed(err: unknown): string {
  const msg = (err as Error).message;
  const last = msg.split('\n').map((l) => l.trim()).filter(Boolean).at(-1) ?? msg;
  return (/Error from server: (.*)/.exec(msg)?.[1] ?? last).slice(0, 200);
}

/** A redis-benchmark run tried until it completes (ATTEMPTS at most), and why those that did not failed. */
async function attempts(run: () => Promise<Measured>, label: string): Promise<{ m: Measured | null; why: string[] }> {
  const why: string[] = [];
  for (let i = 0; i < ATTEMPTS; i++) {
    try {
      return { m: await run(), why };
    } catch (err) {
      why.push(whyFailed(err));
      process.stderr.write(`  ${label}: redis-benchmark failed (${why.at(-1)})${i + 1 < ATTEMPTS ? '; again in 1 s' : ''}\n`);
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
  return { m: null, why };
}

async function drive(t: Target, rows: Row[]): Promise<void> {
  const add = (row: Row) => {
    rows.push(row);
    const cpu = row.cpuUsPerOp ?? '-';
    process.stderr.write(`  ${t.system} ${row.client} c=${row.clients} ${row.test}: ${row.opsPerSec ?? '-'} ops/s p50 ${row.p50ms ?? '-'} p99 ${row.p99ms ?? '-'} p999 ${row.p999ms ?? '-'} ms, ${cpu} server CPU µs/op, ${row.serverCores ?? '-'} cores\n`);
  };
  if (cpuSecondsOf(t.pids()) === null) throw new Error(`bench redis: cannot read /proc/PID/stat of ${t.system}'s servers (pids ${t.pids().join(' ')})`);
  const idle = await idleCores(t.pids, IDLE_MS);
  add(idleRow(t.system, idle.cpuSec, idle.wallSec));

  // redis-benchmark: a probe sized from the last rate of this client and test sizes the run after it.
  const rates = new Map<string, number>();
  const auth = t.password ? ['-a', t.password] : [];
  const bench = async (client: string, ports: string[], pipeline: number, c: number, test: string) => {
    const label = `${t.system} ${client} c=${c} ${test}`;
    const run = (n: number) => () =>
      redisBenchmark(['-t', test.toLowerCase(), '-c', String(c), '-d', String(VALUE_BYTES), '-r', String(KEYS), '-n', String(n), '-P', String(pipeline), ...auth, ...ports], test, t.pids, RUN_TIMEOUT_MS);
    const last = rates.get(client + test);
    const probe = await attempts(run(last === undefined ? PROBE_REQUESTS : Math.max(PROBE_MIN, Math.round(last * TARGET_SEC * PROBE_SHARE))), `${label} (probe)`);
    const rate = probe.m?.opsPerSec ?? last ?? PROBE_REQUESTS;
    const { m, why } = await attempts(run(Math.min(REQUESTS_MAX, Math.max(REQUESTS_MIN, Math.round(rate * TARGET_SEC)))), label);
    if (m) rates.set(client + test, m.opsPerSec);
    const row = m ? measuredRow(t.system, client, c, c * pipeline, test, m) : failedRow(t.system, client, c, c * pipeline, test);
    add({ ...row, retries: why.length, ...(why.length ? { note: why[0]! } : {}) });
  };
  const ports: [string, string[]][] = [['redis-benchmark', ['-p', String(t.port)]]];
  if (t.clusterPort) ports.push(['redis-benchmark --cluster', ['-p', String(t.clusterPort), '--cluster']]);
  for (const [client, p] of ports) for (const test of ['SET', 'GET']) for (const c of CONNECTIONS) await bench(client, p, 1, c, test);
  for (const [client, p] of ports) for (const test of ['SET', 'GET']) await bench(`${client} -P ${PIPELINE}`, p, PIPELINE, PIPELINED_CONNECTIONS, test);

  // ioredis: 50 request streams over independent client objects.
  const io = async (client: string, port: number, cluster: boolean, instances: number, op: IoOp) => {
    try {
      const m = await ioredisDriver({ port, password: t.password, cluster, instances, streams: IO_STREAMS, op, ms: IO_MS, setupMs: IO_SETUP_MS, tailMs: IO_TAIL_MS, keys: KEYS, valueBytes: VALUE_BYTES, serverPids: t.pids });
      add(measuredRow(t.system, client, instances, IO_STREAMS, op, m));
    } catch (err) {
      // The clients did not get going (a PING unanswered): no figures.
      add({ ...failedRow(t.system, client, instances, IO_STREAMS, op), note: (err as Error).message.slice(0, 200) });
    }
  };
  if (t.clusterPort) {
    for (const op of ['SET', 'GET'] as IoOp[]) await io('ioredis', t.port, false, IO_STREAMS, op);
    for (const n of IO_INSTANCES) for (const op of ['SET', 'GET'] as IoOp[]) await io('ioredis Cluster', t.clusterPort, true, n, op);
  } else {
    for (const n of IO_INSTANCES) for (const op of ['SET', 'GET'] as IoOp[]) await io('ioredis', t.port, false, n, op);
    await io(SET_WAIT.client, t.port, false, SET_WAIT.clients, SET_WAIT.test as IoOp);
  }
}

export async function run(): Promise<Row[]> {
  if (!haveRedis()) throw new Error('bench redis: redis-server/redis-benchmark not found; apt-get install redis-server redis-tools');
  recordParams({
    quick, connections: CONNECTIONS, pipelined: `-P ${PIPELINE} at ${PIPELINED_CONNECTIONS} connections`, redisBenchmarkArgs: `-d ${VALUE_BYTES} -r ${KEYS} --precision 3, one test per run`,
    targetSecPerRun: TARGET_SEC, probe: `${PROBE_SHARE} of the target at the last rate (first: ${PROBE_REQUESTS} requests)`, rowanLeaseMs: LEASE_MS, ioredisMs: IO_MS, ioredisStreams: IO_STREAMS, ioredisInstances: IO_INSTANCES, idleMs: IDLE_MS,
    serverCpu: '/proc/PID/stat utime+stime; rowan: 3 node processes + the manager; Redis: the 3 redis-server processes',
    rowanPoolMib: POOL_MIB, rowanSegmentKib: 1024, rowanNodes: 3, redis: 'primary + 2 replicas, AOF everysec / always',
  });
  const rows: Row[] = [];
  const rowan = await startCluster({ mode: 'rowan', passMode: true, poolMib: POOL_MIB, segmentKib: 1024, workers: 1, leaseMs: LEASE_MS });
  try {
    const { nodes, managers } = rowan.pids();
    if (nodes.length !== 3 || managers.length !== 1) throw new Error(`bench redis: expected 3 node pids and 1 manager pid from rowan cluster, got ${nodes.length} and ${managers.length}`);
    const c = JSON.parse(readFileSync(rowan.file, 'utf8')) as ClusterConfig;
    const n0 = c.nodes[0]!;
    const password = readFileSync(join(dirname(rowan.file), 'client-password'), 'utf8').trim();
    await drive({ system: 'rowan', port: n0.resp!.ports[0]!, clusterPort: n0.resp!.clusterPorts[0]!, password, pids: () => [...rowan.pids().nodes, ...rowan.pids().managers] }, rows);
  } finally {
    await rowan.stop();
  }
  // Redis on ports past the rowan cluster's (base + 760), still below the ephemeral range.
  for (const fsync of ['everysec', 'always'] as const) {
    const r = await startRedis(rowan.basePort + 800, fsync);
    try {
      await drive({ system: `redis ${fsync}`, port: r.primaryPort, pids: () => r.pids }, rows);
    } finally {
      await r.stop();
    }
  }
  addRatios(rows);
  return rows;
}
