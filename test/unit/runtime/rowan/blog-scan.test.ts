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
