// Pins the XPBuffer model's calibration against ROWAN Figure 2 (see runtime/optane/xpbuffer.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { modelDlwa, XPBufferModel } from '../../../runtime/optane/xpbuffer.js';
import { streamTrace } from '../../../bench/dlwa/streams.js';

function dlwa(streams: number, writeBytes: number, layout: 'separate' | 'merged', seed = 7): number {
  const t = streamTrace({ streams, writeBytes, writesPerStream: Math.ceil(200_000 / streams), layout, seed });
  return modelDlwa(t.addrs, t.lens).dlwa;
}

test('one sequential stream combines fully: DLWA 1.0', () => {
  assert.ok(dlwa(1, 64, 'separate') <= 1.001);
});

test('separate 64 B streams: DLWA <= 1.05 up to 72 streams', () => {
  for (const s of [1, 8, 36, 72]) {
    const d = dlwa(s, 64, 'separate');
    assert.ok(d <= 1.05, `${s} streams: DLWA ${d}`);
  }
});

test('separate 64 B streams: DLWA >= 1.5 at 144 streams (paper: 2.48)', () => {
  const d = dlwa(144, 64, 'separate');
  assert.ok(d >= 1.5, `DLWA ${d}`);
  assert.ok(d <= 4, `DLWA ${d} exceeds the 4x ceiling of fully thrashed 64 B writes`);
});

test('separate 128 B streams amplify at 144 streams, less than 64 B ones', () => {
  const d128 = dlwa(144, 128, 'separate');
  assert.ok(d128 > 1.1 && d128 < dlwa(144, 64, 'separate'), `DLWA ${d128}`);
});

test('the same 144 streams merged into one log (Rowan) stay <= 1.05', () => {
  for (const wb of [64, 128]) {
    const d = dlwa(144, wb, 'merged');
    assert.ok(d <= 1.05, `${wb} B: DLWA ${d}`);
  }
});

test('a lone partial line costs a whole XPLine (read-modify-write)', () => {
  const m = new XPBufferModel();
  m.write(0, 64);
  const r = m.finish();
  assert.equal(r.requestBytes, 64);
  assert.equal(r.mediaBytes, 256);
  assert.equal(r.partialEvictions, 1);
});

test('a persist spanning lines counts every cache line it covers', () => {
  const m = new XPBufferModel();
  m.write(32, 64); // straddles two cache lines of one XPLine
  const r = m.finish();
  assert.equal(r.requestBytes, 128);
});
