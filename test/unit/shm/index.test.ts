// shm/index.ts single-threaded: chaining, INDEX_FULL, tag collisions resolved by the key, version
// conditions, remove/relocate, attach, and a model-based property test against a Map.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { ShardIndex, type EntryReader } from '../../../shm/index.js';
import { hash64, type KeyHash } from '../../../shm/hash.js';
import { ErrorCodes, RowanError } from '../../../config/base/errors.js';
import { INDEX_MAGIC } from '../../../shm/index-layout.js';

const enc = new TextEncoder();

/** A fake log: address -> (key, version). Addresses are 64-byte aligned pool offsets, never 0. */
class FakeLog implements EntryReader {
  private readonly entries = new Map<number, { key: Uint8Array; version: number }>();
  private next = 64;
  append(key: Uint8Array, version: number, addr = this.next): number {
    this.next = Math.max(this.next, addr) + 64;
    this.entries.set(addr, { key, version });
    return addr;
  }
  keyEquals(addr: number, key: Uint8Array): boolean {
    const e = this.entries.get(addr);
    assert.ok(e, `index resolved unknown address ${addr}`);
    return e.key.length === key.length && e.key.every((b, i) => b === key[i]);
  }
  versionAt(addr: number): number {
    const e = this.entries.get(addr);
    assert.ok(e, `index resolved unknown address ${addr}`);
    return e.version;
  }
}

const all = (ix: ShardIndex): number[] => {
  const out: number[] = [];
  ix.forEach((a) => out.push(a));
  return out.sort((a, b) => a - b);
};

test('insert, get, update with a newer version, stale older and equal versions', () => {
  const ix = ShardIndex.create({ buckets: 16, overflowBuckets: 4 });
  const log = new FakeLog();
  const k = enc.encode('alpha');
  const h = hash64(k);
  assert.equal(ix.get(k, h, log), 0);
  const a1 = log.append(k, 5);
  assert.equal(ix.upsert(k, h, a1, 5, log), 'inserted');
  assert.equal(ix.get(k, h, log), a1);
  const a2 = log.append(k, 7);
  assert.equal(ix.upsert(k, h, a2, 7, log), 'updated');
  const a3 = log.append(k, 6);
  assert.equal(ix.upsert(k, h, a3, 6, log), 'stale');
  const a4 = log.append(k, 7);
  assert.equal(ix.upsert(k, h, a4, 7, log), 'stale', 'an equal version never replaces');
  assert.equal(ix.get(k, h, log), a2);
  assert.equal(ix.get(enc.encode('beta'), hash64(enc.encode('beta')), log), 0);
  assert.equal(ix.stats().items, 1);
  assert.deepEqual(all(ix), [a2]);
});

test('addresses use all 48 bits and tags all 16', () => {
  const ix = ShardIndex.create({ buckets: 1, overflowBuckets: 0 });
  const log = new FakeLog();
  const k = enc.encode('wide');
  const h = { hi: 0xffffffff, lo: 0xffffffff };
  const big = 2 ** 48 - 64;
  log.append(k, 1, big);
  assert.equal(ix.upsert(k, h, big, 1, log), 'inserted');
  assert.equal(ix.get(k, h, log), big);
  assert.deepEqual(all(ix), [big]);
  assert.throws(() => ix.upsert(k, h, 2 ** 48, 2, log), /invariant/);
  assert.throws(() => ix.upsert(k, h, 0, 2, log), /invariant/);
});

test('tag collisions with different keys are told apart by keyEquals', () => {
  const ix = ShardIndex.create({ buckets: 1, overflowBuckets: 2 });
  const log = new FakeLog();
  const same: KeyHash = { hi: 0x1234abcd, lo: 7 }; // every key: same bucket, same tag
  const keys = ['k0', 'k1', 'k2', 'k3'].map((s) => enc.encode(s));
  const addrs = keys.map((k, i) => log.append(k, i + 1));
  keys.forEach((k, i) => assert.equal(ix.upsert(k, same, addrs[i]!, i + 1, log), 'inserted'));
  keys.forEach((k, i) => assert.equal(ix.get(k, same, log), addrs[i]));
  assert.equal(ix.get(enc.encode('k9'), same, log), 0);
  // Updating one colliding key leaves the others alone.
  const n = log.append(keys[2]!, 10);
  assert.equal(ix.upsert(keys[2]!, same, n, 10, log), 'updated');
  keys.forEach((k, i) => assert.equal(ix.get(k, same, log), i === 2 ? n : addrs[i]));
});

test('a growable table takes 50x its initial overflow and finds every key; INDEX_FULL only at its maximum', () => {
  const ix = ShardIndex.create({ buckets: 4, overflowBuckets: 2, bucketItems: 4, overflowBucketsMax: 400 });
  const log = new FakeLog();
  const before = ix.buffer.byteLength;
  const keys: Uint8Array[] = [];
  for (let i = 0; i < 600; i++) {
    const k = new TextEncoder().encode(`grow-${i}`);
    keys.push(k);
    ix.upsert(k, hash64(k), log.append(k, 1), 1, log);
  }
  assert.ok(ix.buffer.byteLength > before, 'the buffer grew');
  assert.ok(ix.stats().overflowBuckets >= 100, `grew to ${ix.stats().overflowBuckets} overflow buckets`);
  for (const k of keys) assert.notEqual(ix.get(k, hash64(k), log), 0, 'every key is found after growth');
  // An attacher (another thread would do the same) sees the grown table.
  const other = ShardIndex.attach(ix.buffer);
  for (const k of keys) assert.notEqual(other.get(k, hash64(k), log), 0);
  // Past the maximum: INDEX_FULL, and the table still answers.
  let err: unknown;
  for (let i = 0; i < 2000 && !err; i++) {
    const k = new TextEncoder().encode(`over-${i}`);
    try {
      ix.upsert(k, hash64(k), log.append(k, 1), 1, log);
    } catch (e) {
      err = e;
    }
  }
  assert.ok(err instanceof RowanError && err.code === ErrorCodes.INDEX_FULL, String(err));
  assert.equal(ix.freeOverflowBuckets(), 0);
  for (const k of keys) assert.notEqual(ix.get(k, hash64(k), log), 0);
});

test('full buckets chain into overflow buckets; INDEX_FULL when none is left', () => {
  const ix = ShardIndex.create({ buckets: 2, overflowBuckets: 3, bucketItems: 4 }); // 3 items per bucket
  const log = new FakeLog();
  const h = (i: number): KeyHash => ({ hi: i, lo: 0 }); // all in bucket 0
  const key = (i: number): Uint8Array => enc.encode(`key-${i}`);
  // bucket 0 + 3 overflow buckets = 12 item slots for this chain
  for (let i = 0; i < 12; i++) assert.equal(ix.upsert(key(i), h(i), log.append(key(i), 1), 1, log), 'inserted');
  const s = ix.stats();
  assert.equal(s.items, 12);
  assert.equal(s.overflowUsed, 3);
  assert.equal(s.maxChain, 4);
  for (let i = 0; i < 12; i++) assert.notEqual(ix.get(key(i), h(i), log), 0);
  const err = (() => {
    try {
      ix.upsert(key(12), h(12), log.append(key(12), 1), 1, log);
    } catch (e) {
      return e;
    }
    return undefined;
  })();
  assert.ok(err instanceof RowanError && err.code === ErrorCodes.INDEX_FULL, String(err));
  // Updates of present keys and inserts into other chains still work; the lock was released.
  assert.equal(ix.upsert(key(5), h(5), log.append(key(5), 2), 2, log), 'updated');
  assert.equal(ix.upsert(key(99), { hi: 0, lo: 1 }, log.append(key(99), 1), 1, log), 'inserted');
  // A hole left by remove is reused without a new bucket.
  const a3 = ix.get(key(3), h(3), log);
  assert.equal(ix.remove(key(3), h(3), a3), true);
  assert.equal(ix.upsert(key(12), h(12), log.append(key(12), 1), 1, log), 'inserted');
  assert.equal(ix.stats().items, 13);
});

test('remove CASes exactly the expected item; relocate keeps the key under a new address', () => {
  const ix = ShardIndex.create({ buckets: 4, overflowBuckets: 1 });
  const log = new FakeLog();
  const k = enc.encode('gc-me');
  const h = hash64(k);
  const a1 = log.append(k, 1);
  ix.upsert(k, h, a1, 1, log);
  const moved = log.append(k, 1);
  assert.equal(ix.relocate(k, h, a1 + 64 * 100, moved), false, 'wrong expected address');
  assert.equal(ix.relocate(k, h, a1, moved), true);
  assert.equal(ix.get(k, h, log), moved);
  assert.equal(ix.remove(k, h, a1), false, 'the old address is gone');
  assert.equal(ix.remove(k, { hi: h.hi ^ 1, lo: h.lo }, moved), false, 'a different tag is a different item');
  assert.equal(ix.remove(k, h, moved), true);
  assert.equal(ix.remove(k, h, moved), false);
  assert.equal(ix.get(k, h, log), 0);
  assert.equal(ix.stats().items, 0);
  assert.equal(ix.upsert(k, h, log.append(k, 2), 2, log), 'inserted');
});

test('attach sees the same table; bad buffers and shapes are refused', () => {
  const ix = ShardIndex.create({ buckets: 8, overflowBuckets: 2 });
  const log = new FakeLog();
  const k = enc.encode('shared');
  const a = log.append(k, 1);
  ix.upsert(k, hash64(k), a, 1, log);
  const other = ShardIndex.attach(ix.buffer);
  assert.equal(other.get(k, hash64(k), log), a);
  assert.equal(other.stats().items, 1);
  const code = (f: () => unknown): string | undefined => {
    try {
      f();
    } catch (e) {
      return (e as RowanError).code;
    }
    return undefined;
  };
  assert.equal(code(() => ShardIndex.attach(new SharedArrayBuffer(64))), ErrorCodes.BAD_ARGUMENT);
  const truncated = new SharedArrayBuffer(128);
  new Int32Array(truncated)[0] = INDEX_MAGIC;
  assert.equal(code(() => ShardIndex.attach(truncated)), ErrorCodes.BAD_ARGUMENT);
  assert.equal(code(() => ShardIndex.create({ buckets: 0, overflowBuckets: 1 })), ErrorCodes.BAD_ARGUMENT);
  assert.equal(code(() => ShardIndex.create({ buckets: 1, overflowBuckets: 1, bucketItems: 1 })), ErrorCodes.BAD_ARGUMENT);
  const o = ShardIndex.optionsFor(1_000_000);
  assert.ok(o.buckets * 7 * 0.6 >= 1_000_000 && o.overflowBuckets > 0);
});

test('property: behaves like a Map of key -> (address, max version)', () => {
  type Op =
    | { t: 'upsert'; k: number; v: number }
    | { t: 'get'; k: number }
    | { t: 'remove'; k: number; wrong: boolean };
  const nKeys = 24;
  const op: fc.Arbitrary<Op> = fc.oneof(
    fc.record({ t: fc.constant('upsert' as const), k: fc.nat(nKeys - 1), v: fc.integer({ min: 1, max: 40 }) }),
    fc.record({ t: fc.constant('get' as const), k: fc.nat(nKeys - 1) }),
    fc.record({ t: fc.constant('remove' as const), k: fc.nat(nKeys - 1), wrong: fc.boolean() }),
  );
  fc.assert(
    fc.property(fc.array(op, { maxLength: 200 }), fc.integer({ min: 1, max: 5 }), (ops, tagBits) => {
      // Few buckets, tiny buckets and few tag values: chains and tag collisions on every run.
      const ix = ShardIndex.create({ buckets: 3, overflowBuckets: nKeys, bucketItems: 3 });
      const log = new FakeLog();
      const keys = Array.from({ length: nKeys }, (_, i) => enc.encode(`k${i}`));
      const hashes = keys.map((_, i) => ({ hi: i & ((1 << tagBits) - 1), lo: (i * 7) % 5 }));
      const model = new Map<number, { addr: number; v: number }>();
      for (const o of ops) {
        const key = keys[o.k]!;
        const h = hashes[o.k]!;
        const m = model.get(o.k);
        if (o.t === 'upsert') {
          const addr = log.append(key, o.v);
          const want = !m ? 'inserted' : o.v > m.v ? 'updated' : 'stale';
          assert.equal(ix.upsert(key, h, addr, o.v, log), want);
          if (want !== 'stale') model.set(o.k, { addr, v: o.v });
        } else if (o.t === 'get') {
          assert.equal(ix.get(key, h, log), m?.addr ?? 0);
        } else {
          // Removal is by item (tag | address): an address no entry has is the "wrong" one. (Passing
          // another key's address is a caller bug the index cannot see; it has no reader here.)
          const target = m ? (o.wrong ? m.addr + 1 : m.addr) : 1;
          const want = !!m && !o.wrong;
          assert.equal(ix.remove(key, h, target), want);
          if (want) model.delete(o.k);
        }
      }
      assert.deepEqual(all(ix), [...model.values()].map((e) => e.addr).sort((a, b) => a - b));
      assert.equal(ix.stats().items, model.size);
      for (const [k, e] of model) assert.equal(ix.get(keys[k]!, hashes[k]!, log), e.addr);
    }),
    { numRuns: 300 },
  );
});
