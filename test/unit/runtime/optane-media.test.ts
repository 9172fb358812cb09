// The Optane media model in the runtime (pm.media optane, runtime/optane/): DLWA of known patterns,
// media time that follows the media bytes, one state shared by every opener of a pool, and a pool whose
// persists feed it. Modelled quantities only: no wall-clock assertions.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OptaneMedia } from '../../../runtime/optane/media.js';
import { residentLines } from '../../../runtime/optane/xpbuffer.js';
import { attachPoolMedia, createPoolMedia, readPoolMedia, removePoolMedia, withPoolMedia } from '../../../runtime/optane/media-file.js';
import { streamTrace } from '../../../bench/dlwa/streams.js';
import { OwnerRole, Pool } from '../../../shm/pool.js';

/** A fast model: charge() never makes a test wait long. */
const fast = { dimmWriteMBps: 1e6, dimmReadMBps: 3e6 };

test('sequential 256 B-aligned persists: DLWA 1.0, no read-modify-writes', () => {
  const m = OptaneMedia.fresh({}, fast);
  for (let i = 0; i < 10_000; i++) m.charge(i * 256, 256);
  const s = m.snapshot();
  assert.equal(s.requestBytes, 10_000 * 256);
  assert.equal(s.dlwa, 1);
  assert.equal(s.partialEvictions, 0);
});

test('144 streams of random-phase 64 B writes in separate logs: DLWA > 1.5; merged into one log: ~1.0', () => {
  for (const [layout, check] of [['separate', (d: number) => d > 1.5], ['merged', (d: number) => d <= 1.01]] as const) {
    const t = streamTrace({ streams: 144, writeBytes: 64, writesPerStream: 700, layout, seed: 3 });
    const m = OptaneMedia.fresh({}, fast);
    for (let i = 0; i < t.addrs.length; i++) m.charge(t.addrs[i]!, t.lens[i]!);
    m.model.drain();
    const d = m.snapshot().dlwa;
    assert.ok(check(d), `${layout}: DLWA ${d}`);
  }
});

test('media time is media bytes over the bandwidth, plus a line read per read-modify-write', () => {
  const writeMBps = 1000;
  const readMBps = 3000;
  const seq = OptaneMedia.fresh({}, { dimmWriteMBps: writeMBps, dimmReadMBps: readMBps, queueNs: 1e12 });
  for (let i = 0; i < 4000; i++) seq.charge(i * 64, 64);
  const a = seq.snapshot();
  assert.ok(Math.abs(a.mediaMs - (a.mediaBytes / (writeMBps * 1e6)) * 1e3) < 1e-9, `sequential: ${a.mediaMs} ms for ${a.mediaBytes} B`);
  const t = streamTrace({ streams: 144, writeBytes: 64, writesPerStream: 30, layout: 'separate', seed: 5 });
  const rnd = OptaneMedia.fresh({}, { dimmWriteMBps: writeMBps, dimmReadMBps: readMBps, queueNs: 1e12 });
  for (let i = 0; i < t.addrs.length; i++) rnd.charge(t.addrs[i]!, t.lens[i]!);
  const b = rnd.snapshot();
  // Lines still in the XPBuffers count in mediaBytes (they will be written) but owe no time yet.
  const written = b.mediaBytes - residentLines(rnd.state, rnd.model.p) * 256;
  const want = (written / (writeMBps * 1e6) + (b.partialEvictions * 256) / (readMBps * 1e6)) * 1e3;
  assert.ok(b.partialEvictions > 0);
  assert.ok(Math.abs(b.mediaMs - want) < 1e-9, `random: ${b.mediaMs} ms, want ${want}`);
  // Same request bytes, more media bytes: proportionally more media time per request byte.
  assert.ok(b.mediaMs / b.requestBytes > (a.mediaMs / a.requestBytes) * (b.dlwa / a.dlwa) * 0.99);
  assert.equal(a.waitMs, 0, 'a backlog within queueNs makes nobody wait');
});

test('a backlog beyond queueNs makes the persist that touches the DIMM wait, and counts the wait', () => {
  // 10 µs a line; queueNs 128 at 2 GB/s (one line there) scales to one line here: 10 µs.
  const m = OptaneMedia.fresh({ dimms: 1 }, { dimmWriteMBps: 25.6, dimmReadMBps: 76.8, queueNs: 128 });
  const t = 1e9; // a fixed clock: no wall time in the assertions
  assert.equal(m.charge(0, 256, t), 0, 'one line of media time is within the queue of one line');
  assert.equal(m.charge(256, 256, t), t + 10_000, 'a second line owes 20 µs: wait until 10 µs are left');
  assert.ok(Math.abs(m.snapshot().waitMs - 0.01) < 1e-9, `waited ${m.snapshot().waitMs} ms`);
  m.charge(4096, 64, t);
  assert.ok(Math.abs(m.snapshot().mediaMs - 0.02) < 1e-9, 'a partial line waits in the XPBuffer: no media time yet');
});

test('a disabled model charges nothing and counts nothing', () => {
  const m = OptaneMedia.fresh({}, fast);
  m.setEnabled(false);
  assert.equal(m.charge(0, 64), 0);
  assert.equal(m.snapshot().requestBytes, 0);
});

test("a pool's model is one state for every opener; a pool opened with withPoolMedia feeds it", () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-optane-'));
  try {
    const poolPath = join(dir, 'pool.pm');
    assert.equal(attachPoolMedia(poolPath), null, 'no model until the node makes one');
    const made = createPoolMedia(poolPath, { dimms: 2, dimmWriteMBps: 1e6 });
    const a = attachPoolMedia(poolPath)!;
    // Two openers write the two halves of each XPLine: the one buffer combines them (DLWA 1).
    for (let i = 0; i < 100; i++) {
      made.media.charge(i * 256, 128);
      a.media.charge(i * 256 + 128, 128);
    }
    assert.equal(a.media.model.p.dimms, 2, 'parameters come from the state');
    assert.equal(readPoolMedia(poolPath)!.dlwa, 1);
    assert.equal(readPoolMedia(poolPath)!.requestBytes, 100 * 256);
    const pool = Pool.create(poolPath, { segmentCount: 4, segmentBytes: 64 * 1024, wrapRegion: withPoolMedia });
    const before = readPoolMedia(poolPath)!.requestBytes;
    const seg = pool.allocate(OwnerRole.Worker, 1);
    pool.region.persist(pool.segmentOffset(seg), 64);
    assert.ok(readPoolMedia(poolPath)!.requestBytes >= before + 64, 'the pool\'s persists reach the model');
    pool.close();
    a.close();
    made.close();
    removePoolMedia(poolPath);
    assert.equal(readPoolMedia(poolPath), null);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a whole-segment persist (zeroing) is counted apart, outside DLWA, and charged no media time', () => {
  const m = OptaneMedia.fresh({}, { dimmWriteMBps: 0.01, dimmReadMBps: 0.03 }); // 25.6 ms a line: any charge would show
  assert.equal(m.charge(1 << 20, 256 * 1024), 0);
  const s = m.snapshot();
  assert.equal(s.requestBytes, 0);
  assert.equal(s.mediaBytes, 0);
  assert.equal(s.bulkBytes, 256 * 1024);
  assert.equal(s.mediaMs, 0);
});
