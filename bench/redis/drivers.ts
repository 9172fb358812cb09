// The clients both systems are driven with: redis-benchmark (one test per run, its human output with
// --precision 3: requests completed, throughput, p50/p99 and the latency-by-percentile distribution for
// p99.9) and an ioredis driver (concurrent request streams, each with one request outstanding, for a
// fixed time, over some number of independent client objects; SET, GET, and SET + WAIT 2 as two round
// trips, the way an application asks Redis for replica durability). Each run reads the servers' CPU
// (./server-cpu.ts) right before and right after the requests, so the CPU per operation is over
// exactly the requests the run counted.
import { execFile } from 'node:child_process';
import { Cluster, Redis } from 'ioredis';
import { LatencyHistogram } from '../hist.js';
import { between, mark, type ServerPids } from './server-cpu.js';

export interface Measured {
  /** Requests the run completed: the divisor of the server CPU per operation. */
  ops: number;
  opsPerSec: number;
  p50ms: number;
  p99ms: number;
  p999ms: number;
  /** Requests that failed (ioredis); null where the client does not count them (redis-benchmark). */
  errors: number | null;
  /** Server CPU seconds over the run (every server process), null if a reading failed; wall seconds. */
  serverCpuSec: number | null;
  wallSec: number;
}

/** One test's figures from redis-benchmark's output (Redis 7: "====== SET ======" sections). */
export interface BenchmarkSection {
  requests: number;
  rps: number;
  p50ms: number;
  p99ms: number;
  /**
   * The smallest latency its printed distributions show at or above 99.9 % of the timed requests: an
   * upper bound of p99.9 (redis-benchmark prints percentiles at halving steps, 99.902 %, and 0.1 ms
   * buckets). Its histogram stops at 3 s: 3000.319 means "3 s or more".
   */
  p999ms: number;
}

/**
 * redis-benchmark's human output (not --csv, which has no p99.9), progress lines (\r) and all: per test,
 * "N requests completed in S seconds", the "Latency by percentile distribution" and "Cumulative
 * distribution" lines ("99.902% <= 3.927 milliseconds (cumulative count 19981)"), "throughput summary:
 * X requests per second" and the latency summary (avg min p50 p95 p99 max).
 */
export function parseRedisBenchmark(out: string): Record<string, BenchmarkSection> {
  const text = out.replace(/\r/g, '\n');
  const res: Record<string, BenchmarkSection> = {};
  const heads = [...text.matchAll(/====== (.+?) ======/g)];
  heads.forEach((h, i) => {
    const body = text.slice(h.index! + h[0].length, heads[i + 1]?.index ?? text.length);
    const requests = Number(/(\d+) requests completed in/.exec(body)?.[1]);
    const rps = Number(/throughput summary: ([\d.]+) requests per second/.exec(body)?.[1]);
    const summary = /avg\s+min\s+p50\s+p95\s+p99\s+max\s*\n\s*([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)/.exec(body);
    // Percentiles of the requests its histogram holds (with --cluster, fewer than "completed" when some
    // were answered with an error and sent again).
    const dist = [...body.matchAll(/^\s*[\d.]+% <= ([\d.]+) milliseconds \(cumulative count (\d+)\)/gm)].map((m) => [Number(m[1]), Number(m[2])] as const);
    const need = Math.ceil(Math.max(0, ...dist.map(([, n]) => n)) * 0.999);
    const at999 = dist.filter(([, n]) => n >= need).map(([ms]) => ms);
    if (!(requests > 0) || !(rps > 0) || !summary || at999.length === 0) throw new Error(`redis-benchmark: cannot read the ${h[1]} section:\n${body.slice(-800)}`);
    res[h[1]!] = { requests, rps, p50ms: Number(summary[3]), p99ms: Number(summary[5]), p999ms: Math.min(...at999) };
  });
  return res;
}

/** One redis-benchmark run of one test (`args` has -t TEST), the servers' CPU read around it; killed after timeoutMs. */
export async function redisBenchmark(args: string[], test: string, serverPids: ServerPids, timeoutMs: number): Promise<Measured> {
  const before = mark(serverPids);
  const out = await new Promise<string>((resolve, reject) => {
    execFile('redis-benchmark', [...args, '--precision', '3'], { timeout: timeoutMs, maxBuffer: 64 << 20, encoding: 'utf8' }, (e, stdout, stderr) =>
      e ? reject(new Error(`redis-benchmark ${args.join(' ')}: ${e.message}\n${stderr}`)) : resolve(stdout),
    );
  });
  const cpu = between(before, mark(serverPids));
  const s = parseRedisBenchmark(out)[test];
  if (!s) throw new Error(`redis-benchmark ${args.join(' ')}: no ${test} section in its output`);
  return { ops: s.requests, opsPerSec: s.rps, p50ms: s.p50ms, p99ms: s.p99ms, p999ms: s.p999ms, errors: null, serverCpuSec: cpu.cpuSec, wallSec: cpu.wallSec };
}

export type IoOp = 'SET' | 'GET' | 'SET+WAIT 2';

export interface IoRun {
  port: number;
  password?: string | undefined;
  /** Cluster objects (the cluster port) or plain Redis objects (one connection each). */
  cluster: boolean;
  /** Independent client objects; the request streams are dealt out over them round robin. */
  instances: number;
  /** Request streams, each with one request outstanding. */
  streams: number;
  op: IoOp;
  ms: number;
  /** How long the clients may take to connect and answer a PING (ioredis's ready check included). */
  setupMs: number;
  /**
   * How long past `ms` the run waits for the requests still outstanding; those not answered by then count
   * as errors, so a stalled server cannot hold the run.
   */
  tailMs: number;
  keys: number;
  valueBytes: number;
  serverPids: ServerPids;
}

export async function ioredisDriver(o: IoRun): Promise<Measured> {
  const opts = o.password ? { password: o.password } : {};
  const conns = Array.from({ length: o.instances }, () =>
    o.cluster ? new Cluster([{ host: '127.0.0.1', port: o.port }], { redisOptions: opts }) : new Redis({ port: o.port, lazyConnect: false, ...opts }),
  );
  // Connection errors surface as failed commands (counted); the event would only print them.
  for (const c of conns) c.on('error', () => {});
  try {
    if (!(await within(Promise.all(conns.map((c) => c.ping())), o.setupMs))) throw new Error(`the ${o.instances} client object(s) were not ready within ${o.setupMs} ms`);
    return await timed(o, conns);
  } finally {
    for (const c of conns) c.disconnect();
  }
}

/** Whether `p` settles within `ms` (it is not cancelled; a rejection is thrown). */
async function within(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((r) => (timer = setTimeout(() => r(false), ms)));
  try {
    return await Promise.race([p.then(() => true as const), late]);
  } finally {
    clearTimeout(timer);
  }
}

/** The timed part of ioredisDriver: the request streams until o.ms have passed, the servers' CPU read around them. */
async function timed(o: IoRun, conns: (Redis | Cluster)[]): Promise<Measured> {
  const value = 'x'.repeat(o.valueBytes);
  const lat = LatencyHistogram.create();
  let errors = 0;
  let seed = 12345;
  const key = () => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return `key:${seed % o.keys}`;
  };
  const before = mark(o.serverPids);
  const end = before.atMs + o.ms;
  const stream = async (i: number) => {
    const c = conns[i % conns.length]!;
    while (performance.now() < end) {
      const t0 = performance.now();
      try {
        if (o.op === 'GET') await c.get(key());
        else {
          await c.set(key(), value);
          if (o.op === 'SET+WAIT 2') await (c as Redis).call('WAIT', '2', '0');
        }
        lat.recordUs((performance.now() - t0) * 1000);
      } catch {
        errors++;
      }
    }
  };
  let finished = 0;
  const streams = Array.from({ length: o.streams }, (_, i) => stream(i).then(() => void finished++));
  await within(Promise.all(streams), o.ms + o.tailMs);
  const cpu = between(before, mark(o.serverPids));
  errors += o.streams - finished; // a request still outstanding: unanswered
  const q = (p: number) => (lat.percentileUs(p) ?? NaN) / 1000;
  return { ops: lat.count, opsPerSec: lat.count / cpu.wallSec, p50ms: q(50), p99ms: q(99), p999ms: q(99.9), errors, serverCpuSec: cpu.cpuSec, wallSec: cpu.wallSec };
}
