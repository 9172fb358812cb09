import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EMPTY_ENTRY, decodeEntry, encodeEntry, nextEntry } from '../../../../actors/baselines/erda-layout.js';
import { objectKey } from '../../../../actors/baselines/erda.js';
import { defaultLimits } from '../../../../config/limits.js';
import { encodeBlocks, EntryType } from '../../../../shm/log.js';

test('an Erda index entry flips its new tag and keeps the newest offset as the old version', () => {
  const a = nextEntry(EMPTY_ENTRY, 64 * 10);
  assert.deepEqual(a, { newest: 640, previous: 0, newTag: 1 });
  const b = nextEntry(a, 64 * 11);
  assert.deepEqual(b, { newest: 704, previous: 640, newTag: 0 });
  for (const e of [a, b, nextEntry(b, 64 * (2 ** 31 - 1))]) assert.deepEqual(decodeEntry(encodeEntry(e)), e);
  // Only the half that held the older offset changes: B first (tag 1 -> A new), then A.
  const [ea, eb] = [encodeEntry(a), encodeEntry(b)];
  assert.deepEqual(eb.subarray(0, 4).slice(0), new Uint8Array([(10 << 1) & 0xff, 0, 0, 0]), 'A keeps 10 and the tag is 0');
  assert.notDeepEqual(ea.subarray(4), eb.subarray(4), 'B took the new offset');
  assert.throws(() => encodeEntry(nextEntry(b, 100)), { code: 'ROWAN_ERR_BAD_ARGUMENT' }, 'offsets are 64-byte units');
});

test('objectKey: block 0 of a PUT or DEL names its key; CommitVer and later blocks name none', () => {
  const key = new TextEncoder().encode('k1');
  const put = encodeBlocks({ type: EntryType.Put, shard: 1, version: 1, key, value: new Uint8Array(10) }, defaultLimits)[0]!;
  assert.deepEqual(objectKey(put), key);
  assert.deepEqual(objectKey(encodeBlocks({ type: EntryType.Del, shard: 1, version: 2, key }, defaultLimits)[0]!), key);
  assert.equal(objectKey(encodeBlocks({ type: EntryType.CommitVer, shard: 1, version: 3 }, defaultLimits)[0]!), null);
  const big = encodeBlocks({ type: EntryType.Put, shard: 1, version: 4, key, value: new Uint8Array(6000) }, defaultLimits);
  assert.equal(big.length, 2);
  assert.deepEqual(objectKey(big[0]!), key);
  assert.equal(objectKey(big[1]!), null);
});
