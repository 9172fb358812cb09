// bench/rowan/measure.ts: per-thread traces merge into time order, a capped trace cuts the merge
// where it stopped, and the concurrent-only merge drops stretches in which a thread wrote nothing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CONCURRENT_BIN_MS, mergeByTime } from '../../../bench/rowan/measure.js';
import type { TraceArrays } from '../../../bench/rowan/protocol.js';

function trace(times: number[], base: number, capped = false): TraceArrays {
  return {
    addrs: Float64Array.from(times, (_, i) => base + i * 64),
    lens: Uint32Array.from(times, () => 64),
    times: Float64Array.from(times),
    capped,
  };
}

test('traces merge by time', () => {
  const m = mergeByTime([trace([1, 3, 5], 0), trace([2, 4, 6], 1000)]);
  assert.deepEqual([...m.addrs], [0, 1000, 64, 1064, 128, 1128]);
});

test('a capped trace ends the merge where it stopped', () => {
  const m = mergeByTime([trace([1, 2, 3], 0, true), trace([1.5, 2.5, 3.5, 4.5], 1000)]);
  assert.deepEqual([...m.addrs], [0, 1000, 64, 1064, 128]);
});

test('concurrent-only keeps just the bins in which every thread wrote', () => {
  const b = CONCURRENT_BIN_MS;
  // Thread A writes in bins 0..3, thread B only in bins 0 and 3 (off its CPU in between).
  const a = trace([0.1 * b, 1.1 * b, 2.1 * b, 3.1 * b], 0);
  const bb = trace([0.2 * b, 3.2 * b], 1000);
  assert.deepEqual([...mergeByTime([a, bb], true).addrs], [0, 1000, 192, 1064]);
  assert.equal(mergeByTime([a, bb]).addrs.length, 6);
  assert.equal(mergeByTime([a], true).addrs.length, 4, 'one thread alone is always concurrent with itself');
});
