// The b-log scan resynchronises stride by stride after a torn block (runtime/rowan/blog-scan.ts), so it
// looks inside the torn block's payload. Regression test for issue 12's "a PUT whose value embeds a valid
// block at a 64 B boundary exposes it when the outer block is torn": with the checksum keyed by the
// cluster's seed (shm/log-checksum.ts) the embedded block no longer verifies.
import { test, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { defaultLimits } from '../../../../config/limits.js';
import { scanBlogBlocks, newBlogScanStats } from '../../../../runtime/rowan/blog-scan.js';
import { setChecksumSeed } from '../../../../shm/log-checksum.js';
import { craftedInnerBlock, tornCarrier } from '../../../fixtures/smuggled-block.js';
import { EntryType, encodeBlocks, readBlock } from '../../../../shm/log.js';

const L = defaultLimits;
const SEED = 0x5eed1234;
const enc = (s: string) => new TextEncoder().encode(s);

afterEach(() => setChecksumSeed(0));

/** The segment's first bytes: a PUT carrying a smuggled block, its first stride torn. */
function segmentWithTornCarrier(): Uint8Array {
  const seg = new Uint8Array(4096);
  seg.set(tornCarrier(1, craftedInnerBlock(1, 99, 'victim', 'smuggled')), 0);
  return seg;
}

test('unkeyed (seed 0, the checksum before seeds): the scan accepts a block smuggled in a torn value -- the hazard', () => {
  setChecksumSeed(0);
  const blocks = [...scanBlogBlocks(segmentWithTornCarrier(), 0, 4096, L)];
  assert.deepEqual(blocks.map((b) => [b.shard, b.version, new TextDecoder().decode(b.payload.subarray(b.keyLen))]), [[1, 99, 'smuggled']]);
});

test('keyed with the cluster seed: the smuggled block does not verify and the scan accepts nothing from the torn write', () => {
  setChecksumSeed(SEED);
  const stats = newBlogScanStats();
  const blocks = [...scanBlogBlocks(segmentWithTornCarrier(), 0, 4096, L, stats)];
  assert.deepEqual(blocks, []);
  assert.ok(stats.invalidStrides > 0, 'the carrier\'s strides were stepped over as invalid');
});

test('a keyed block verifies under its seed only', () => {
  setChecksumSeed(SEED);
  const [b] = encodeBlocks({ type: EntryType.Put, shard: 3, version: 7, key: enc('k'), value: enc('v') }, L);
  assert.ok(readBlock(b!, 0, b!.length, L) !== null);
  for (const other of [0, SEED ^ 1, 0xffffffff]) {
    setChecksumSeed(other);
    assert.equal(readBlock(b!, 0, b!.length, L), null, `seed ${other}`);
  }
  // Large blocks go through the native CRC after the JS prefix: keyed the same way.
  setChecksumSeed(SEED);
  const big = encodeBlocks({ type: EntryType.Put, shard: 3, version: 8, key: enc('k'), value: new Uint8Array(3000).fill(9) }, L);
  for (const x of big) assert.ok(readBlock(x, 0, x.length, L) !== null);
  setChecksumSeed(0);
  for (const x of big) assert.equal(readBlock(x, 0, x.length, L), null);
});

for (const [what, bytes, at] of [
  // Offsets: inside the first chunk, just past a chunk boundary, mid-chunk after a long run, and the
  // last stride (a run of whole chunks stops short of the end, strides take over).
  ['4 KiB chunks', 64 * 1024 + 192, [64, 4096 + 64, 9 * 4096 + 17 * 64, 64 * 1024 + 192 - 64 * 2]],
  // 64 KiB spans first: a block just past a whole span, one after two spans and some chunks, one in
  // the last chunk before a tail shorter than a span.
  ['64 KiB spans', 256 * 1024 + 192, [64, 64 * 1024 + 64 + 64, 3 * 64 * 1024 + 5 * 4096 + 17 * 64, 256 * 1024 + 192 - 64 * 2]],
] as const) test(`unwritten space skipped in ${what}: blocks after long zero runs, at any stride offset and right before the end, are all found`, () => {
  setChecksumSeed(SEED);
  const seg = new Uint8Array(bytes); // not a multiple of the 4 KiB chunk: a tail of strides
  at.forEach((off, i) => {
    const [b] = encodeBlocks({ type: EntryType.Put, shard: 1, version: i + 1, key: enc(`k${i}`), value: enc('v') }, L);
    assert.equal(b!.length, 64); // one stride each (the count below relies on it)
    seg.set(b!, off);
  });
  const stats = newBlogScanStats();
  const found = [...scanBlogBlocks(seg, 0, seg.length, L, stats)].map((b) => b.version);
  assert.deepEqual(found, [1, 2, 3, 4]);
  // Every stride was either a block's or counted zero, as a stride-by-stride scan counts them.
  const blockStrides = at.length; // each block here fits one stride
  assert.equal(stats.zeroStrides + blockStrides + stats.invalidStrides, seg.length / 64);
});
