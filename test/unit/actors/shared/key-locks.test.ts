// The node's shared key locks (actors/shared/key-locks.ts, taken through a RESP worker's KeyLocks) across real worker threads: read, yield,
// write increments of shared counters lose nothing when every thread takes the same table, two-key
// requests in opposite orders do not deadlock, and (the control) threads with tables of their own do
// lose updates, so the test can fail.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Worker } from 'node:worker_threads';
import { SharedKeyLocks, createKeyLocks } from '../../../../actors/shared/key-locks.js';
import type { KeyLocksThreadData } from '../../../fixtures/key-locks-thread.js';

const THREAD = new URL('../../../fixtures/key-locks-thread.js', import.meta.url);

async function race(shared: boolean): Promise<{ counters: number[]; done: number }> {
  const locks = createKeyLocks();
  const keys = ['a', 'b', 'c', '{x}1', '{x}2'];
  const counters = new SharedArrayBuffer(4 * keys.length);
  const rounds = 200;
  const start = new SharedArrayBuffer(4);
  const runs = [0, 1, 2].map(() => {
    const data: KeyLocksThreadData = { locks, counters, keys, rounds, shared, start, threads: 3 };
    const w = new Worker(THREAD, { workerData: data });
    return new Promise<number>((resolve, reject) => {
      let done: number | null = null;
      w.once('message', (n: number) => (done = n));
      w.once('error', reject);
      w.once('exit', (code) => (done === null ? reject(new Error(`key-locks thread exited (${code}) before reporting`)) : resolve(done)));
    });
  });
  const done = (await Promise.all(runs)).reduce((a, b) => a + b, 0);
  return { counters: [...new Int32Array(counters)], done };
}

test('three threads incrementing the same keys under the shared locks: every increment is in the counters', async () => {
  const r = await race(true);
  assert.equal(r.done, 3 * 200 * 5);
  assert.deepEqual(r.counters, [600, 600, 600, 600, 600]);
});

test('control: threads with lock tables of their own lose increments (the race the locks close)', async () => {
  const r = await race(false);
  assert.equal(r.done, 3 * 200 * 5);
  assert.ok(r.counters.some((n) => n < 600), `some increment lost: ${r.counters.join(' ')}`);
});

test('stripes of several keys are distinct and ascending, the same in every thread', () => {
  const a = new SharedKeyLocks();
  const s = a.stripesOf([Buffer.from('k1'), Buffer.from('k2'), Buffer.from('k1')]);
  assert.deepEqual(s, [...new Set(s)].sort((x, y) => x - y));
  assert.ok(s.length === 1 || s.length === 2);
  assert.deepEqual(new SharedKeyLocks().stripesOf([Buffer.from('k2'), Buffer.from('k1')]), s);
});
