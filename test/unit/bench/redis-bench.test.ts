// The Redis comparison's measuring parts (bench/redis/): redis-benchmark's output read right (p99.9 from
// its percentile distribution), server CPU from /proc/PID/stat (a command name with parentheses, every
// thread counted, no figure when a server was replaced), the launcher's pids, rows of the two systems
// paired for the ratios, and its figures (the sweep's two panels on axes of their own).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Worker } from 'node:worker_threads';
import { parseRedisBenchmark } from '../../../bench/redis/drivers.js';
import { addRatios, idleRow } from '../../../bench/redis/rows.js';
import { between, cpuSecondsOf, mark, statTicks } from '../../../bench/redis/server-cpu.js';
import { announcedPids } from '../../../bench/ycsb/cluster.js';
import { figures } from '../../../bench/plot/figures.js';
import type { Row } from '../../../bench/report.js';

// Redis 7.0.15's redis-benchmark -t set -n 20000 -c 50 -d 91 -r 100000 --precision 3, progress lines
// (\r) included, the cumulative distribution shortened.
const SAMPLE = [
  ' SET: rps=0.0 (overall: 0.0) avg_msec=-nan (overall: -nan)\r SET: rps=49916.3 (overall: 49718.3) avg_msec=0.551 (overall: 0.551)\r====== SET ======',
  '  20000 requests completed in 0.38 seconds',
  '  50 parallel clients',
  '  91 bytes payload',
  '  keep alive: 1',
  '',
  'Latency by percentile distribution:',
  '0.000% <= 0.151 milliseconds (cumulative count 1)',
  '50.000% <= 0.471 milliseconds (cumulative count 10737)',
  '99.219% <= 1.695 milliseconds (cumulative count 19845)',
  '99.609% <= 2.527 milliseconds (cumulative count 19922)',
  '99.805% <= 3.487 milliseconds (cumulative count 19961)',
  '99.902% <= 3.927 milliseconds (cumulative count 19981)',
  '99.951% <= 4.151 milliseconds (cumulative count 19991)',
  '100.000% <= 4.367 milliseconds (cumulative count 20000)',
  '',
  'Cumulative distribution of latencies:',
  '99.750% <= 3.103 milliseconds (cumulative count 19950)',
  '99.945% <= 4.103 milliseconds (cumulative count 19989)',
  '100.000% <= 5.103 milliseconds (cumulative count 20000)',
  '',
  'Summary:',
  '  throughput summary: 52770.45 requests per second',
  '  latency summary (msec):',
  '          avg       min       p50       p95       p99       max',
  '        0.536     0.144     0.471     1.015     1.591     4.367',
  '',
].join('\n');

test('redis-benchmark output: requests, throughput, p50/p99 from its summary, p99.9 the first value at >= 99.9 % of requests', () => {
  const r = parseRedisBenchmark(SAMPLE);
  assert.deepEqual(Object.keys(r), ['SET']);
  // 99.9 % of 20000 = 19980: 3.487 ms covers 19961 (too few), 3.927 ms covers 19981.
  assert.deepEqual(r.SET, { requests: 20000, rps: 52770.45, p50ms: 0.471, p99ms: 1.591, p999ms: 3.927 });
  // --cluster: requests answered with an error and sent again count as completed, not in the histogram;
  // the percentiles are of the histogram's requests.
  const resent = parseRedisBenchmark(SAMPLE.replace('20000 requests completed', '20100 requests completed'));
  assert.equal(resent.SET!.requests, 20100);
  assert.equal(resent.SET!.p999ms, 3.927);
  assert.throws(() => parseRedisBenchmark('====== GET ======\n  0 requests completed in 0.00 seconds\n'), /cannot read the GET section/);
});

test('/proc/PID/stat: utime + stime counted after the command name, whatever it holds', () => {
  // Fields 14 and 15 (utime 1234, stime 567) after a name with spaces and parentheses.
  const line = '4242 (node (x) y) S 1 4242 4242 0 -1 4194560 100 0 0 0 1234 567 0 0 20 0 11 0 100 0 0';
  assert.equal(statTicks(line), 1801);
  assert.throws(() => statTicks('garbage'), /not a \/proc\/PID\/stat line/);
});

test('server CPU: every thread of a process counts; a pid gone or replaced gives no figure', async () => {
  const before = cpuSecondsOf([process.pid])!;
  // A worker thread spins until it has run 300 ms of CPU by its own count (the machine may be busy):
  // the process's figure includes it.
  const spin = `const { readFileSync } = require('node:fs');
    const ran = () => Number(readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ')[0]) / 1e6;
    const t = Date.now();
    while (ran() < 300 && Date.now() - t < 30000);`;
  const w = new Worker(spin, { eval: true });
  await new Promise((r) => w.once('exit', r));
  assert.ok(cpuSecondsOf([process.pid])! - before >= 0.28, 'the worker thread\'s CPU is in the process\'s stat');
  assert.equal(cpuSecondsOf([process.pid, 2 ** 22 + 1]), null, 'a pid that does not exist');
  let pids = [process.pid];
  const a = mark(() => pids);
  pids = [process.pid, process.pid];
  assert.equal(between(a, mark(() => pids)).cpuSec, null, 'the server set changed between the marks');
  pids = [process.pid];
  const d = between(a, mark(() => pids));
  assert.ok(d.cpuSec !== null && d.cpuSec >= 0 && d.wallSec >= 0);
});

test("the launcher's ready lines give each node's latest pid and the manager's", () => {
  const out = [
    'configuration manager ready on 127.0.0.1:26350 (pid 100), lease 200 ms',
    'node 1 ready (pid 102): clients on 127.0.0.1:26010',
    'node 0 ready (pid 101): clients on 127.0.0.1:26000',
    'node 2 ready (pid 103): clients on 127.0.0.1:26020',
    'serving.',
    'node 0 ready (pid 201): clients on 127.0.0.1:26000',
  ].join('\n');
  assert.deepEqual(announcedPids(out, 99), { nodes: [201, 102, 103], managers: [100], launcher: 99 });
});

const row = (system: string, client: string, clients: number, test: string, opsPerSec: number, cpuUsPerOp: number): Row =>
  ({ system, client, clients, inFlight: clients, test, opsPerSec, cpuUsPerOp, p50ms: 1, p99ms: 2, p999ms: 3, serverCores: 1 });

function sampleRows(): Row[] {
  const rows: Row[] = [idleRow('rowan', 2.5, 5), idleRow('redis everysec', 0.03, 5)];
  for (const c of [10, 50, 200, 500])
    for (const test of ['SET', 'GET']) {
      rows.push(row('rowan', 'redis-benchmark', c, test, 5_000, 400));
      rows.push(row('rowan', 'redis-benchmark --cluster', c, test, 10_000, 200));
      rows.push(row('redis everysec', 'redis-benchmark', c, test, 50_000, 20));
    }
  rows.push(row('rowan', 'ioredis Cluster', 1, 'SET', 8_000, 150));
  rows.push(row('redis everysec', 'ioredis', 1, 'SET', 40_000, 30));
  rows.push(row('redis everysec', 'ioredis', 50, 'SET+WAIT 2', 20_000, 75));
  return rows;
}

test('ratios pair a cluster-aware client on rowan with the plain one on Redis everysec, same connections and test', () => {
  const rows = sampleRows();
  addRatios(rows);
  const find = (client: string, clients: number, test: string) => rows.find((r) => r.system === 'rowan' && r.client === client && r.clients === clients && r.test === test)!;
  const cl = find('redis-benchmark --cluster', 200, 'SET');
  assert.equal(cl.vsRedis, 0.2);
  assert.equal(cl.cpuVsRedis, 10);
  assert.equal(cl.vsRedisSetWait2, 0.5, 'SET against Redis SET + WAIT 2');
  assert.equal(cl.cpuVsSetWait2, 2.67);
  const io = find('ioredis Cluster', 1, 'SET');
  assert.equal(io.vsRedis, 0.2);
  assert.equal(io.cpuVsRedis, 5);
  assert.equal(find('redis-benchmark', 10, 'GET').vsRedisSetWait2, null, 'a GET has no SET + WAIT 2 ratio');
  assert.equal(rows.find((r) => r.system === 'rowan' && r.test === 'idle')!.vsRedis, undefined, 'idle rows have no ratio');
});

test('redis figures: bars of ops/s and CPU per op, and the connections sweep with throughput and CPU on axes of their own', () => {
  const figs = figures.redis!(sampleRows());
  assert.deepEqual(figs.map((f) => f.file), ['redis.svg', 'redis-cpu.svg', 'redis-sweep.svg']);
  const sweep = figs[2]!.svg;
  const t = [...sweep.matchAll(/<text[^>]*>([^<]*)<\/text>/g)].map((m) => m[1]!);
  assert.ok(t.includes('operations per second (log scale)') && t.includes('server CPU µs per operation (log scale)'), t.join('|'));
  for (const s of ['rowan, single port, SET', 'rowan, cluster client, GET', 'redis everysec, SET']) assert.equal(t.filter((x) => x === s).length, 1, `legend ${s}`);
  for (const c of ['10', '50', '200', '500']) assert.ok(t.includes(c), `connections tick ${c}`);
  assert.ok(t.some((x) => x.includes('rowan 0.5, redis everysec 0.006')), 'idle cores in the notes');
  // Each system keeps one colour; GET is the dashed line of it.
  const line = (name: string) => new RegExp(`stroke="([^"]+)" stroke-width="2"( stroke-dasharray="[^"]+")? points="[^"]*"><title>${name}</title>`).exec(sweep);
  assert.equal(line('rowan, single port, SET')![1], line('rowan, single port, GET')![1]);
  assert.equal(line('rowan, single port, SET')![2], undefined);
  assert.ok(line('rowan, single port, GET')![2]);
  // The CPU panel's axis spans its own values (20..400 µs: ticks 20, 100), the throughput's 5k..50k.
  const ticks = [...sweep.matchAll(/class="tick">([^<]*)</g)].map((m) => m[1]!);
  for (const v of ['20', '100', '5,000', '20k']) assert.ok(ticks.includes(v), `tick ${v} in ${ticks.join(' ')}`);
  assert.ok(figs[1]!.svg.includes('redis-benchmark -c 50, SET, rowan, single port: 400'), 'a CPU bar');
});
