// The expiry sweep's cost and its deletes (issue 27; idle cost, issue 26): with no key holding a
// deadline it walks the indexes once and then stays dormant (no walk per tick) until a deadline is
// written or the configuration changes; keys past their deadline are handed to deleteExpired under
// their lock; a sweep that saw only future deadlines sleeps until the earliest one.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { defaultLimits } from '../../../../config/limits.js';
import type { PersistentRegion } from '../../../../config/base/region.js';
import { ExpirySweep } from '../../../../actors/worker/resp/expiry-sweep.js';
import { KeyLocks } from '../../../../actors/worker/resp/context.js';
import type { KvShared } from '../../../../actors/shared/node-shared.js';
import type { KvWorker } from '../../../../actors/worker/kv.js';
import { EntryType, encodeEntry } from '../../../../shm/log.js';
import { ShardIndex } from '../../../../shm/index.js';
import { hash64Into } from '../../../../shm/hash.js';
import { PoolEntryReader } from '../../../../shm/entry-reader.js';

const L = defaultLimits;

function setup() {
  const bytes = new Uint8Array(64 * 1024);
  const region = { bytes } as unknown as PersistentRegion;
  const index = ShardIndex.create(ShardIndex.optionsFor(1024));
  let walks = 0;
  const walk = index.forEachInBuckets.bind(index);
  index.forEachInBuckets = (from, count, cb) => {
    walks++;
    return walk(from, count, cb);
  };
  const shared = { nodeId: 0, indexes: [index], gc: null, expiryWrites: new Int32Array(new SharedArrayBuffer(4)) } as unknown as KvShared;
  const clock = { now: 1_000_000 };
  const deleted: string[] = [];
  const batches: number[] = [];
  /** While set, deleteExpired waits for `release()` (batches still replicating). */
  let hold: Promise<void> | null = null;
  let release = () => {};
  let inFlight = 0;
  let inFlightMax = 0;
  const worker = {
    term: () => 1,
    config: () => ({ shards: [{ id: 0, primary: 0, backups: [] }] }),
    wallNow: () => clock.now,
    deleteExpired: async (keys: Uint8Array[], _term: number, claimed?: () => void) => {
      inFlightMax = Math.max(inFlightMax, ++inFlight);
      claimed?.(); // versions claimed: the sweep lets the keys' locks go while the batch replicates
      if (hold) await hold;
      inFlight--;
      batches.push(keys.length);
      for (const k of keys) deleted.push(Buffer.from(k).toString());
      return keys.length;
    },
  } as unknown as KvWorker;
  const locks = new KeyLocks();
  const sweep = new ExpirySweep({ worker, locks, shared, region, limits: L, workerId: 0, workers: 1 });
  let off = 64;
  const put = (key: string, version: number, expiresAt: number) => {
    const at = off;
    off += encodeEntry({ type: EntryType.Put, shard: 0, version, key: Buffer.from(key), value: Buffer.from('v'), expiresAt }, bytes, at, L);
    index.upsert(Buffer.from(key), hash64Into(Buffer.from(key), { hi: 0, lo: 0 }), at, version, new PoolEntryReader(region, L));
  };
  const settle = async () => {
    for (let i = 0; i < 10; i++) await new Promise((r) => setImmediate(r));
  };
  const holdDeletes = () => (hold = new Promise<void>((r) => (release = () => ((hold = null), r()))));
  return { sweep, locks, shared, clock, deleted, batches, put, settle, walks: () => walks, holdDeletes, release: () => release(), inFlightMax: () => inFlightMax };
}

describe('expiry sweep', () => {
  it('with no deadline anywhere: one pass, then dormant (no index walk per tick) until a deadline is written', async () => {
    const t = setup();
    t.put('plain', 1, 0);
    for (let i = 0; i < 5 && t.sweep.tick(); i++);
    const after = t.walks();
    assert.ok(after > 0, 'the first pass walks the index');
    for (let i = 0; i < 100; i++) assert.equal(t.sweep.tick(), false);
    assert.equal(t.walks(), after, 'dormant: no walk');
    t.put('soon', 2, t.clock.now + 5000);
    Atomics.add(t.shared.expiryWrites!, 0, 1); // what primary.ts does after indexing a PUT with a deadline
    for (let i = 0; i < 5 && t.sweep.tick(); i++);
    assert.ok(t.walks() > after, 'woken by the write');
  });

  it('deletes keys past their deadline, sleeps until the earliest future deadline, then deletes that one', async () => {
    const t = setup();
    t.put('old', 1, t.clock.now - 1);
    t.put('later', 2, t.clock.now + 3000);
    t.put('plain', 3, 0);
    for (let i = 0; i < 5 && t.sweep.tick(); i++) await t.settle();
    await t.settle();
    assert.deepEqual(t.deleted, ['old']);
    const walks = t.walks();
    for (let i = 0; i < 50; i++) t.sweep.tick();
    assert.equal(t.walks(), walks, 'asleep until the earliest deadline');
    t.clock.now += 3000;
    for (let i = 0; i < 5 && t.sweep.tick(); i++) await t.settle();
    await t.settle();
    assert.ok(t.deleted.includes('later'), `deleted ${t.deleted.join(',')}`);
  });

  it('a mass expiry is deleted in bounded batches, one batch per tick, not all keys of an index slice at once', async () => {
    const t = setup();
    const n = 300;
    for (let i = 0; i < n; i++) t.put(`k${i}`, i + 1, t.clock.now - 1);
    for (let i = 0; i < 10 && t.deleted.length === 0; i++) {
      t.sweep.tick(); // the shard's walk first, then its deletes
      await t.settle();
    }
    assert.ok(t.deleted.length > 0 && t.deleted.length <= 64, `the first tick that deleted deleted ${t.deleted.length} keys (at most 64)`);
    for (let i = 0; i < 50 && t.deleted.length < n; i++) {
      t.sweep.tick();
      await t.settle();
    }
    assert.equal(new Set(t.deleted).size, n, 'every expired key deleted once');
    assert.ok(t.batches.every((b) => b <= 64), `batches ${t.batches.join(',')}`);
    assert.ok(t.batches.length >= Math.ceil(n / 64), `${t.batches.length} batches`);
  });

  it('deletes in log order (by entry address), so GC frees whole segments instead of copying expired entries', async () => {
    const t = setup();
    const keys = Array.from({ length: 200 }, (_, i) => `k${i}`);
    keys.forEach((k, i) => t.put(k, i + 1, t.clock.now - 1)); // written in this order: ascending addresses
    for (let i = 0; i < 60 && t.deleted.length < keys.length; i++) {
      t.sweep.tick();
      await t.settle();
    }
    assert.deepEqual(t.deleted, keys);
  });

  it('keeps several batches replicating at once (at most 4), starting at most one a tick, their keys unlocked meanwhile', async () => {
    const t = setup();
    const n = 64 * 6;
    for (let i = 0; i < n; i++) t.put(`k${i}`, i + 1, t.clock.now - 1);
    t.holdDeletes();
    let ticks = 0;
    for (; ticks < 20 && t.inFlightMax() < 4; ticks++) {
      t.sweep.tick();
      await t.settle();
    }
    assert.equal(t.inFlightMax(), 4, 'four batches replicating while none finished');
    for (let i = 0; i < 10; i++) {
      t.sweep.tick();
      await t.settle();
    }
    assert.equal(t.inFlightMax(), 4, 'never a fifth');
    assert.equal(t.deleted.length, 0);
    // The keys' locks went with the version claims: a write of a key whose DEL is replicating runs now.
    let ran = false;
    void t.locks.run(Buffer.from('k0'), async () => (ran = true));
    await t.settle();
    assert.equal(ran, true, 'a write of k0 got its lock while k0\'s DEL replicated');
    t.release();
    for (let i = 0; i < 30 && t.deleted.length < n; i++) {
      t.sweep.tick();
      await t.settle();
    }
    assert.equal(new Set(t.deleted).size, n, 'every expired key deleted once');
  });
});
