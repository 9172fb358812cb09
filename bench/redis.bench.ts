// `npm run bench -- redis [--quick]`: rowan's Redis front end side by side with real Redis 7, driven by
// the same clients in one run (issue 15). Redis: a primary + 2 replicas on loopback, AOF on, once with
// appendfsync everysec and once with always. rowan: a local 3-node cluster (replication 3; a SET is
// acknowledged once persistent on all three). Clients: redis-benchmark -t set,get -c 50 -d 91
// -r 1000000 (pipeline 1 and 16; rowan also through --cluster), and an ioredis driver with 50 clients
// (SET, GET; Redis also SET + WAIT 2, the guarantee closest to rowan's acknowledgement).
// Needs redis-server and redis-tools (apt-get install redis-server redis-tools); installs nothing.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { ClusterConfig } from '../config/cluster.js';
import { ioredisDriver, redisBenchmark, type IoOp, type Measured } from './redis/drivers.js';
import { haveRedis, startRedis } from './redis/servers.js';
import { recordParams, type Row } from './report.js';
import { startCluster } from './ycsb/cluster.js';

const quick = process.argv.includes('--quick');
const N = quick ? 20_000 : 100_000;
const IO_MS = quick ? 3_000 : 10_000;
const RB = ['-t', 'set,get', '-c', '50', '-d', '91', '-r', '1000000', '-n', String(N)];

interface Target {
  system: string;
  /** redis-benchmark/ioredis endpoints: single port, and cluster port (rowan only). */
  port: number;
  clusterPort?: number;
  /** rowan: the client password (DIR/client-password, its Redis requirepass); real Redis here has none. */
  password?: string;
}

async function drive(t: Target, rows: Row[]): Promise<void> {
  const add = (client: string, test: string, m: Measured) => {
    rows.push({ system: t.system, client, test, opsPerSec: Math.round(m.opsPerSec), p50ms: m.p50ms, p99ms: m.p99ms, errors: m.errors });
    process.stderr.write(`  ${t.system} ${client} ${test}: ${Math.round(m.opsPerSec)} ops/s p50 ${m.p50ms.toFixed(3)} p99 ${m.p99ms.toFixed(3)} ms\n`);
  };
  const variants: [string, string[]][] = [
    ['redis-benchmark', ['-p', String(t.port)]],
    ['redis-benchmark -P 16', ['-p', String(t.port), '-P', '16']],
  ];
  if (t.clusterPort) {
    variants.push(['redis-benchmark --cluster', ['-p', String(t.clusterPort), '--cluster']]);
    variants.push(['redis-benchmark --cluster -P 16', ['-p', String(t.clusterPort), '--cluster', '-P', '16']]);
  }
  for (const [client, args] of variants) {
    const r = await redisBenchmark([...RB, ...(t.password ? ['-a', t.password] : []), ...args]);
    for (const test of ['SET', 'GET']) if (r[test]) add(client, test, r[test]!);
  }
  const ops: IoOp[] = t.clusterPort ? ['SET', 'GET'] : ['SET', 'SET+WAIT 2', 'GET'];
  for (const op of ops) add('ioredis', op, await ioredisDriver({ port: t.port, password: t.password, cluster: false, op, clients: 50, ms: IO_MS, keys: 1_000_000, valueBytes: 91 }));
  if (t.clusterPort) {
    for (const op of ['SET', 'GET'] as IoOp[]) add('ioredis Cluster', op, await ioredisDriver({ port: t.clusterPort, password: t.password, cluster: true, op, clients: 50, ms: IO_MS, keys: 1_000_000, valueBytes: 91 }));
  }
}

/** rowan / Redis (everysec) for the same client and test; SET rows also against Redis SET + WAIT 2. */
function ratios(rows: Row[]): void {
  const redis = (client: string, test: string) => rows.find((r) => r.system === 'redis everysec' && r.client === client && r.test === test);
  for (const r of rows) {
    if (r.system !== 'rowan') continue;
    const base = String(r.client).replace(' --cluster', '').replace('ioredis Cluster', 'ioredis');
    const same = redis(base, String(r.test));
    r.vsRedis = same ? Number((Number(r.opsPerSec) / Number(same.opsPerSec)).toFixed(2)) : null;
    const wait = r.test === 'SET' ? redis('ioredis', 'SET+WAIT 2') : undefined;
    r.vsRedisSetWait2 = wait ? Number((Number(r.opsPerSec) / Number(wait.opsPerSec)).toFixed(2)) : null;
  }
}

export async function run(): Promise<Row[]> {
  if (!haveRedis()) throw new Error('bench redis: redis-server/redis-benchmark not found; apt-get install redis-server redis-tools');
  recordParams({ quick, redisBenchmarkArgs: RB.join(' '), pipelines: [1, 16], ioredisMs: IO_MS, ioredisClients: 50, rowanPoolMib: quick ? 96 : 192, rowanSegmentKib: 1024, rowanNodes: 3, redis: 'primary + 2 replicas, AOF everysec / always' });
  const rows: Row[] = [];
  const rowan = await startCluster({ mode: 'rowan', passMode: true, poolMib: quick ? 96 : 192, segmentKib: 1024, workers: 1 });
  try {
    const c = JSON.parse(readFileSync(rowan.file, 'utf8')) as ClusterConfig;
    const n0 = c.nodes[0]!;
    const password = readFileSync(join(dirname(rowan.file), 'client-password'), 'utf8').trim();
    await drive({ system: 'rowan', port: n0.resp!.ports[0]!, clusterPort: n0.resp!.clusterPorts[0]!, password }, rows);
  } finally {
    await rowan.stop();
  }
  // Redis on ports past the rowan cluster's (base + 760), still below the ephemeral range.
  for (const fsync of ['everysec', 'always'] as const) {
    const r = await startRedis(rowan.basePort + 800, fsync);
    try {
      await drive({ system: `redis ${fsync}`, port: r.primaryPort }, rows);
    } finally {
      await r.stop();
    }
  }
  ratios(rows);
  return rows;
}
