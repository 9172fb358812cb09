// bench/ycsb: the Zipfian key chooser's rank-frequency follows 1/k^0.99, and the object-size
// distributions average the paper's sizes (ZippyDB 90.8 B, UP2X 57.25 B, UDB 153.8 B).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lowPieceProbability, objectSizeSampler, sizeDists } from '../../../bench/ycsb/sizes.js';
import { mulberry32, UniformChooser, ZipfianChooser } from '../../../bench/ycsb/zipfian.js';

test('zipfian 0.99: rank-frequency roughly follows 1/k^0.99', () => {
  const items = 1000;
  const draws = 400_000;
  const z = new ZipfianChooser(items, 0.99, mulberry32(42));
  const count = new Float64Array(items);
  for (let i = 0; i < draws; i++) {
    const k = z.next();
    assert.ok(k >= 0 && k < items && Number.isInteger(k));
    count[k]!++;
  }
  let zetan = 0;
  for (let k = 1; k <= items; k++) zetan += 1 / k ** 0.99;
  // The head ranks, one by one, within 5 % of the expected frequency.
  for (const rank of [1, 2, 3, 5, 10]) {
    const expected = draws / (rank ** 0.99 * zetan);
    const got = count[rank - 1]!;
    assert.ok(Math.abs(got - expected) / expected < 0.05, `rank ${rank}: ${got} draws, expected ~${expected.toFixed(0)}`);
  }
  // The slope of log(freq) vs log(rank) over buckets of ranks 1..500 is close to -0.99.
  const xs: number[] = [];
  const ys: number[] = [];
  for (let lo = 1; lo <= 256; lo *= 2) {
    let c = 0;
    for (let k = lo; k < lo * 2; k++) {
      c += count[k - 1]!;
    }
    xs.push(Math.log(lo));
    ys.push(Math.log(c / lo));
  }
  const mx = xs.reduce((a, b) => a + b) / xs.length;
  const my = ys.reduce((a, b) => a + b) / ys.length;
  const slope = xs.reduce((a, x, i) => a + (x - mx) * (ys[i]! - my), 0) / xs.reduce((a, x) => a + (x - mx) ** 2, 0);
  assert.ok(slope < -0.85 && slope > -1.15, `log-log slope ${slope.toFixed(3)}`);
});

test('uniform chooser stays in range and is flat', () => {
  const u = new UniformChooser(10, mulberry32(3));
  const c = new Array<number>(10).fill(0);
  for (let i = 0; i < 100_000; i++) c[u.next()]!++;
  for (const x of c) assert.ok(Math.abs(x - 10_000) < 600, `bucket ${x}`);
});

test('object-size distributions average the paper sizes', () => {
  for (const d of Object.values(sizeDists)) {
    const p = lowPieceProbability(d);
    const exact = p * ((d.lo + d.mid) / 2) + (1 - p) * ((d.mid + d.hi) / 2);
    assert.ok(Math.abs(exact - d.mean) < 1e-9, `${d.name}: exact mean ${exact}`);
    const s = objectSizeSampler(d, mulberry32(9));
    let sum = 0;
    const n = 200_000;
    for (let i = 0; i < n; i++) {
      const x = s();
      assert.ok(x >= d.lo && x <= d.hi && Number.isInteger(x));
      sum += x;
    }
    assert.ok(Math.abs(sum / n - d.mean) / d.mean < 0.01, `${d.name}: sampled mean ${(sum / n).toFixed(2)}, want ${d.mean}`);
  }
});
