// The clients both systems are driven with: redis-benchmark (its CSV: rps and latency percentiles) and
// an ioredis driver (concurrent clients each with one request outstanding, for a fixed time; SET, GET,
// SET + WAIT 2 as two round trips, the way an application asks Redis for replica durability).
import { execFile } from 'node:child_process';
import { Cluster, Redis } from 'ioredis';
import { LatencyHistogram } from '../hist.js';

export interface Measured {
  opsPerSec: number;
  p50ms: number;
  p99ms: number;
  errors: number;
}

export function redisBenchmark(args: string[], timeoutMs = 600_000): Promise<Record<string, Measured>> {
  return new Promise((resolve, reject) => {
    execFile('redis-benchmark', [...args, '--csv'], { timeout: timeoutMs, maxBuffer: 16 << 20, encoding: 'utf8' }, (e, out, err) => {
      if (e) return reject(new Error(`redis-benchmark ${args.join(' ')}: ${e.message}\n${err}`));
      const res: Record<string, Measured> = {};
      for (const line of out.trim().split('\n').slice(1)) {
        const f = line.split(',').map((x) => x.replace(/"/g, ''));
        // "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
        res[f[0]!] = { opsPerSec: Number(f[1]), p50ms: Number(f[4]), p99ms: Number(f[6]), errors: 0 };
      }
      resolve(res);
    });
  });
}

export type IoOp = 'SET' | 'GET' | 'SET+WAIT 2';

export async function ioredisDriver(o: { port: number; password?: string | undefined; cluster: boolean; op: IoOp; clients: number; ms: number; keys: number; valueBytes: number }): Promise<Measured> {
  const value = 'x'.repeat(o.valueBytes);
  const conns = o.cluster
    ? [new Cluster([{ host: '127.0.0.1', port: o.port }], o.password ? { redisOptions: { password: o.password } } : {})]
    : Array.from({ length: Math.min(o.clients, 50) }, () => new Redis({ port: o.port, lazyConnect: false, ...(o.password ? { password: o.password } : {}) }));
  await Promise.all(conns.map((c) => c.ping()));
  const lat = LatencyHistogram.create();
  let errors = 0;
  const end = performance.now() + o.ms;
  let seed = 12345;
  const key = () => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return `key:${seed % o.keys}`;
  };
  const worker = async (i: number) => {
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
  const t0 = performance.now();
  await Promise.all(Array.from({ length: o.clients }, (_, i) => worker(i)));
  const secs = (performance.now() - t0) / 1000;
  for (const c of conns) c.disconnect();
  const q = (p: number) => (lat.percentileUs(p) ?? NaN) / 1000;
  return { opsPerSec: lat.count / secs, p50ms: q(50), p99ms: q(99), errors };
}
