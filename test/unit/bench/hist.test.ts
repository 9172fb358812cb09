// Benchmark latency histograms (bench/hist.ts): percentiles within HDR's 3 significant digits of the
// exact ones, and histograms recorded on other threads merge (encoded, decoded, added) into exactly
// the histogram of all their samples -- what the rowan bench's sender threads rely on.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { Worker } from 'node:worker_threads';
import { LatencyHistogram } from '../../../bench/hist.js';

const histUrl = new URL('../../../bench/hist.js', import.meta.url).href;

/** The exact p-th percentile (nearest rank) of `xs`. */
function exact(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.max(0, Math.ceil((p / 100) * s.length) - 1)]!;
}

function samples(seed: number, n: number): number[] {
  let x = seed;
  return Array.from({ length: n }, () => {
    x = (x * 1103515245 + 12345) & 0x7fffffff;
    // Spread over 1 µs .. ~100 ms, log-uniform: the range benchmark latencies span.
    return 10 ** ((x / 0x7fffffff) * 5);
  });
}

function close(actual: number | null, expected: number, what: string): void {
  assert.ok(actual !== null, `${what}: no value`);
  assert.ok(Math.abs(actual - expected) <= expected * 0.002 + 0.001, `${what}: ${actual} vs exact ${expected}`);
}

test('percentiles are within 3 significant digits of the exact ones', () => {
  const xs = samples(7, 20_000);
  const h = LatencyHistogram.create();
  for (const x of xs) h.recordUs(x);
  assert.equal(h.count, xs.length);
  for (const p of [50, 90, 99, 99.9]) close(h.percentileUs(p), exact(xs, p), `p${p}`);
  close(h.summary().maxUs, Math.max(...xs), 'max');
});

test('an empty histogram has no percentiles, and refuses nonsense values', () => {
  const h = LatencyHistogram.create();
  assert.equal(h.percentileUs(50), null);
  assert.equal(h.summary().p99Us, null);
  assert.throws(() => h.recordUs(-1), RangeError);
  assert.throws(() => h.recordUs(Number.NaN), RangeError);
});

test('histograms recorded on worker threads merge into the histogram of all their samples', async () => {
  const seeds = [11, 12, 13];
  const code = `
    const { parentPort, workerData } = require('node:worker_threads');
    import(workerData.url).then(({ LatencyHistogram }) => {
      const h = LatencyHistogram.create();
      let x = workerData.seed;
      for (let i = 0; i < 5000; i++) { x = (x * 1103515245 + 12345) & 0x7fffffff; h.recordUs(10 ** ((x / 0x7fffffff) * 5)); }
      parentPort.postMessage(h.encode());
    });`;
  const encoded = await Promise.all(
    seeds.map(
      (seed) =>
        new Promise<string>((resolve, reject) => {
          const w = new Worker(code, { eval: true, workerData: { url: histUrl, seed } });
          w.once('message', (m: string) => {
            resolve(m);
            void w.terminate();
          });
          w.once('error', reject);
        }),
    ),
  );
  const merged = LatencyHistogram.merge(encoded.map((e) => LatencyHistogram.decode(e)));
  const all = seeds.flatMap((s) => samples(s, 5000));
  const local = LatencyHistogram.create();
  for (const x of all) local.recordUs(x);
  assert.equal(merged.count, all.length);
  for (const p of [50, 99, 99.9]) {
    assert.equal(merged.percentileUs(p), local.percentileUs(p), `p${p}: merged equals one histogram of every sample`);
    close(merged.percentileUs(p), exact(all, p), `merged p${p}`);
  }
  // A merge of one part is that part; decode(encode(h)) is h.
  const one = LatencyHistogram.decode(encoded[0]!);
  assert.deepEqual(LatencyHistogram.merge([one]).summary(), one.summary());
});

test('a histogram encoded in a child process decodes to the same percentiles here', () => {
  const code = `import(process.argv[1]).then(({ LatencyHistogram }) => {
    const h = LatencyHistogram.create();
    for (let i = 1; i <= 10000; i++) h.recordUs(i / 10);
    process.stdout.write(JSON.stringify({ hdr: h.encode(), p99: h.percentileUs(99) }));
  });`;
  const r = spawnSync(process.execPath, ['-e', code, histUrl], { encoding: 'utf8', timeout: 30_000 });
  assert.equal(r.status, 0, r.stderr);
  const out = JSON.parse(r.stdout) as { hdr: string; p99: number };
  const h = LatencyHistogram.decode(out.hdr);
  assert.equal(h.count, 10000);
  assert.equal(h.percentileUs(99), out.p99);
  close(h.percentileUs(50), 500, 'p50 of 0.1 .. 1000 µs');
});
