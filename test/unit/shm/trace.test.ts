import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryRegion } from '../../../config/base/region.js';
import { PersistTrace, tracedRegion } from '../../../shm/trace.js';
import { modelDlwa } from '../../../runtime/optane/xpbuffer.js';

test('a traced region records every persist and flush, in order, and forwards them', () => {
  const inner = new MemoryRegion(1 << 20);
  const trace = new PersistTrace(2); // small, so growth is exercised
  const r = tracedRegion(inner, trace);
  r.persist(0, 64);
  r.flush(64, 128);
  r.drain();
  r.persist(4096, 256);
  assert.equal(trace.count, 3);
  assert.equal(inner.persistCalls, 2);
  const s = trace.snapshot();
  assert.deepEqual([...s.addrs], [0, 64, 4096]);
  assert.deepEqual([...s.lens], [64, 128, 256]);
  assert.ok(s.times[0]! <= s.times[1]! && s.times[1]! <= s.times[2]!);
  assert.equal(trace.bytes(), 448);
  assert.equal(r.bytes, inner.bytes);
});

test('a sequential log appended through a traced region models to DLWA 1.0', () => {
  const trace = new PersistTrace();
  const r = tracedRegion(new MemoryRegion(1 << 22), trace);
  for (let off = 0; off < 1 << 20; off += 64) r.persist(off, 64);
  const s = trace.snapshot();
  assert.ok(modelDlwa(s.addrs, s.lens).dlwa <= 1.001);
});
