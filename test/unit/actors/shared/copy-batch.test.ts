// Re-replication's copy batches carry a key's expiry deadline (issue 27): a new backup that copies a
// shard's index gets every PUT with the deadline its entry holds, and a batch whose deadline is not
// a plausible one is refused as a bad frame.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { defaultLimits } from '../../../../config/limits.js';
import type { PersistentRegion } from '../../../../config/base/region.js';
import { COPY_BATCH_BYTES, decodeBatch, readBatch } from '../../../../actors/shared/copy-batch.js';
import { EntryType, encodeEntry } from '../../../../shm/log.js';
import { ShardIndex } from '../../../../shm/index.js';
import { hash64Into } from '../../../../shm/hash.js';
import { PoolEntryReader } from '../../../../shm/entry-reader.js';

const L = defaultLimits;

describe('copy batches', () => {
  it('carry each PUT\'s deadline, and none for keys without one', () => {
    const bytes = new Uint8Array(64 * 1024);
    const region = { bytes, persist() {}, flush() {}, drain() {} } as unknown as PersistentRegion;
    const index = ShardIndex.create(ShardIndex.optionsFor(64));
    const reader = new PoolEntryReader(region, L);
    const want = new Map<string, number>();
    let off = 64; // address 0 means "no item"
    for (let i = 0; i < 20; i++) {
      const key = Buffer.from(`k${i}`);
      const expiresAt = i % 2 === 0 ? 1_900_000_000_000 + i : 0;
      const at = off;
      off += encodeEntry({ type: EntryType.Put, shard: 1, version: i + 1, key, value: Buffer.from(`v${i}`), expiresAt }, bytes, at, L);
      index.upsert(key, hash64Into(key, { hi: 0, lo: 0 }), at, i + 1, reader);
      want.set(`k${i}`, expiresAt);
    }
    const batch = decodeBatch(readBatch(index, bytes, 1, { shard: 1, cursor: 0, bytesMax: COPY_BATCH_BYTES }, L, 1 << 20), 1);
    assert.equal(batch.entries.length, 20);
    for (const e of batch.entries) {
      const k = Buffer.from(e.key).toString();
      assert.equal(e.exp ?? 0, want.get(k), k);
      assert.equal(Buffer.from(e.value).toString(), `v${k.slice(1)}`);
    }
  });

  it('refuse a deadline on a DEL or a deadline past 2^53', () => {
    const head = Buffer.alloc(8);
    head.writeUInt32LE(0xffffffff, 0);
    head.writeUInt32LE(1, 4);
    const entry = (type: number, exp: bigint) => {
      const h = Buffer.alloc(13 + 8);
      h.writeUInt8(type | 0x20, 0); // EXPIRES
      h.writeUInt32LE(1, 3);
      h.writeUInt16LE(1, 7);
      h.writeBigUInt64LE(exp, 13);
      return Buffer.concat([head, h, Buffer.from('k')]);
    };
    assert.equal(decodeBatch(entry(EntryType.Put, 5n), 0).entries[0]!.exp, 5);
    assert.throws(() => decodeBatch(entry(EntryType.Del, 5n), 0), /deadline/);
    assert.throws(() => decodeBatch(entry(EntryType.Put, 2n ** 60n), 0), /deadline/);
  });
});
