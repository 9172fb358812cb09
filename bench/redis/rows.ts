// The rows of the Redis comparison (bench/redis.bench.ts) and how rows of the two systems are paired:
// the same client (rowan's cluster-aware clients -- redis-benchmark --cluster, ioredis Cluster -- pair
// with the plain client on Redis, which has one primary), the same number of connections or client
// objects, the same test. The ratios and the plots (bench/plot/figures.ts) both pair rows this way.
import type { Row } from '../report.js';
import type { Measured } from './drivers.js';

/** The Redis run the ratios divide by: appendfsync everysec, Redis's usual setting. */
export const BASELINE = 'redis everysec';

/** The test a rowan SET is also compared with: a SET acknowledged by both replicas, like rowan's. */
export const SET_WAIT = { client: 'ioredis', clients: 50, test: 'SET+WAIT 2' };

export const IDLE = 'idle';

const round = (v: number, digits: number) => Number(v.toFixed(digits));

/**
 * One run's row. clients: redis-benchmark's -c, or the number of independent ioredis objects; inFlight:
 * requests outstanding at once (-c x -P, or the ioredis request streams).
 */
export function measuredRow(system: string, client: string, clients: number, inFlight: number, test: string, m: Measured): Row {
  return {
    system,
    client,
    clients,
    inFlight,
    test,
    ops: m.ops,
    seconds: round(m.wallSec, 2),
    opsPerSec: Math.round(m.opsPerSec),
    p50ms: round(m.p50ms, 3),
    p99ms: round(m.p99ms, 3),
    p999ms: round(m.p999ms, 3),
    cpuUsPerOp: m.serverCpuSec === null || m.ops === 0 ? null : round((m.serverCpuSec * 1e6) / m.ops, 1),
    serverCores: m.serverCpuSec === null ? null : round(m.serverCpuSec / m.wallSec, 2),
    errors: m.errors,
  };
}

/** A run that failed every attempt: no figures. */
export function failedRow(system: string, client: string, clients: number, inFlight: number, test: string): Row {
  return { system, client, clients, inFlight, test, ops: null, opsPerSec: null };
}

/** The servers with no client: cores used over `wallSec`. */
export function idleRow(system: string, cpuSec: number | null, wallSec: number): Row {
  return { system, client: '(none)', clients: 0, inFlight: 0, test: IDLE, ops: 0, seconds: round(wallSec, 2), opsPerSec: null, serverCores: cpuSec === null ? null : round(cpuSec / wallSec, 3) };
}

/** A cluster-aware client's plain counterpart: what it is compared with on Redis. */
export function baseClient(client: string): string {
  return client.replace(' --cluster', '').replace('ioredis Cluster', 'ioredis');
}

/** rowan's rows are split by how the client reached it (one node's port, or every node's cluster port). */
export function systemSeries(r: Row): string {
  if (r.system !== 'rowan') return String(r.system);
  return String(r.client).includes('--cluster') || String(r.client).includes('Cluster') ? 'rowan, cluster client' : 'rowan, single port';
}

export const SERIES = ['rowan, single port', 'rowan, cluster client', BASELINE, 'redis always'];

const ratio = (a: Row[string] | undefined, b: Row[string] | undefined) =>
  typeof a === 'number' && typeof b === 'number' && b > 0 ? round(a / b, 2) : null;

/**
 * Each rowan row against Redis everysec's row for the same client, connections and test (vsRedis: ops/s,
 * cpuVsRedis: server CPU per op); each rowan SET also against Redis's SET + WAIT 2 (50 connections).
 */
export function addRatios(rows: Row[]): void {
  const redis = (client: string, clients: Row[string], test: string) =>
    rows.find((r) => r.system === BASELINE && r.client === client && r.clients === clients && r.test === test);
  const wait = redis(SET_WAIT.client, SET_WAIT.clients, SET_WAIT.test);
  for (const r of rows) {
    if (r.system !== 'rowan' || r.test === IDLE) continue;
    const same = redis(baseClient(String(r.client)), r.clients, String(r.test));
    r.vsRedis = ratio(r.opsPerSec, same?.opsPerSec);
    r.cpuVsRedis = ratio(r.cpuUsPerOp, same?.cpuUsPerOp);
    r.vsRedisSetWait2 = r.test === 'SET' ? ratio(r.opsPerSec, wait?.opsPerSec) : null;
    r.cpuVsSetWait2 = r.test === 'SET' ? ratio(r.cpuUsPerOp, wait?.cpuUsPerOp) : null;
  }
}
