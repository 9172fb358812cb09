// bench/gc and bench/ycsb/gc-pressure: the GC benchmark's fixture leaves exactly the chosen live share in
// the segments it fills and its verification catches a key that does not read its newest value; the
// YCSB GC-pressure table computes its throughput ratios against the baseline pool's median.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Cleaner } from '../../../actors/clean/gc.js';
import { defaultLimits } from '../../../config/limits.js';
import { createGcFixture, overwritten, verifyGcFixture } from '../../../bench/gc/fixture.js';
import { gcDelta, medianOf, withGcRatios, type GcTotals } from '../../../bench/ycsb/gc-pressure.js';

test('overwritten() picks exactly floor(n * share) of the first n keys, evenly', () => {
  for (const share of [0, 0.25, 0.3, 0.5, 1]) {
    let n = 0;
    for (let i = 0; i < 1000; i++) {
      if (overwritten(i, share)) n++;
      assert.equal(n, Math.floor((i + 1) * share), `share ${share} after ${i + 1} keys`);
    }
  }
});

test('gc fixture: filled segments hold the live share; cleaned, every key reads its newest value', async () => {
  const f = createGcFixture({ poolSegments: 24, segmentBytes: 64 * 1024, segments: 8, valueBytes: 64, liveShare: 0.5 });
  try {
    const c = new Cleaner({ pool: f.pool, shared: f.shared, limits: defaultLimits, id: 0, count: 1, liveThresholdPercent: 75 });
    const picks = c.candidates();
    assert.deepEqual(picks.map((p) => p.segment).sort((a, b) => a - b), [...f.filled].sort((a, b) => a - b));
    for (const p of picks) assert.ok(Math.abs(p.live / f.pool.segmentBytes - 0.5) < 0.02, `segment ${p.segment}: ${p.live} live bytes`);
    while (c.pass() > 0);
    assert.equal(c.stats.segments, 8);
    assert.ok(c.stats.copiedEntries > 0);
    verifyGcFixture(f, f.filled);
    // The check can fail: a key whose newest version is not what the index leads to.
    f.expected[3]! += 1;
    assert.throws(() => verifyGcFixture(f, f.filled), /key 3 reads version/);
  } finally {
    f.close();
  }
});

test('withGcRatios divides by the baseline pool\'s median ops/s of the same workload', () => {
  const rows = [
    { pool: 'big', workload: 'A', opsPerSec: 100 },
    { pool: 'big', workload: 'A', opsPerSec: 10 }, // a starved round: the median ignores it
    { pool: 'big', workload: 'A', opsPerSec: 120 },
    { pool: 'small', workload: 'A', opsPerSec: 90 },
    { pool: 'small', workload: 'Load A', opsPerSec: 50 },
    { pool: 'big', workload: 'Load A', opsPerSec: 0 },
  ];
  assert.equal(medianOf(rows, 'big', 'A', 'opsPerSec'), 100);
  assert.equal(medianOf(rows, 'nope', 'A', 'opsPerSec'), null);
  const out = withGcRatios(rows, 'big');
  assert.deepEqual(out.map((r) => r.ratio), [1, 0.1, 1.2, 0.9, null, null]);
});

test('gcDelta subtracts cumulative counters and keeps the headroom reading', () => {
  const t = (segs: number, free: number): GcTotals => ({ segmentsReclaimed: segs, reclaimedBytes: segs * 262_144, copiedBytes: segs * 1000, busyMs: segs, pmFullRefusals: 0, minFreeSegments: free, down: 0 });
  assert.deepEqual(gcDelta(t(10, 30), t(50, 7)), { gcSegments: 40, gcMB: 10.5, gcCopiedMB: 0, gcBusyMs: 40, pmFull: 0, freeSegsAfter: 7 });
  assert.equal(gcDelta(t(0, 0), { ...t(0, 0), minFreeSegments: Infinity }).freeSegsAfter, null);
});
