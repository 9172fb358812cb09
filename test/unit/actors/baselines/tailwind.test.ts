// actors/baselines/tailwind.ts over the shm fabric, then the backup's side (actors/node/tailwind-recovery.ts
// and the cold start, actors/node/recovery.ts): two workers' logs written concurrently across several
// small buffers; each buffer is opened with its log's id and closed with its length and last checksum;
// the recovery scan finds every acknowledged record. Then a primary "crashes" mid-WRITE (the record
// lands without its checksum, or with half its body): the cold start indexes every acknowledged write
// of it and not the torn one, and an older value of the torn key stays.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../../../../config/base/clock.js';
import { planCluster } from '../../../../config/cluster.js';
import { defaultLimits as L } from '../../../../config/limits.js';
import { ShmConnection } from '../../../../runtime/fabric/shm.js';
import type { RowanConnection } from '../../../../runtime/fabric/fabric.js';
import { openReplicationStream } from '../../../../actors/baselines/replication-writers.js';
import { attachKvShared, createKvShared } from '../../../../actors/shared/node-shared.js';
import { rebuildIndexes } from '../../../../actors/node/recovery.js';
import { gatherForPrepare } from '../../../../actors/shared/gather-scatter.js';
import { newTailwindScanReport, segmentBlocks, tailwindBuffers } from '../../../../actors/node/tailwind-recovery.js';
import { PoolEntryReader } from '../../../../shm/entry-reader.js';
import { hash64Into } from '../../../../shm/hash.js';
import { EntryType, encodeBlocks, readEntryAt } from '../../../../shm/log.js';
import { readHead } from '../../../../shm/tailwind-log.js';
import { TestReceiver } from '../../../fixtures/rowan-receiver.js';

const receivers: TestReceiver[] = [];
after(() => receivers.forEach((r) => r.close()));

function receiver(): TestReceiver {
  const rx = new TestReceiver({ segmentBytes: 32 * 1024, segmentCount: 96, preallocate: 2, batch: 1 });
  receivers.push(rx);
  return rx;
}

const SHARDS = 4;
const put = (worker: number, i: number, value = `w${worker}-v${i}`) =>
  Buffer.concat(encodeBlocks({ type: EntryType.Put, shard: i % SHARDS, version: worker * 100_000 + i + 1, key: Buffer.from(`w${worker}-k${i}`), value: Buffer.from(i % 11 === 10 ? value.padEnd(L.mtuBytes + 100, '.') : value) }, L));

/** Lets `n` WRITEs through, then lands only `keep` bytes of the next one and never acknowledges it
 *  (the primary died mid-WRITE; RDMA writes land in increasing address order). */
class CrashingConnection implements RowanConnection {
  readonly kind = 'shm' as const;
  constructor(private readonly inner: RowanConnection, private n: number, private readonly keep: (len: number) => number) {}
  write(bytes: Uint8Array): Promise<number> { return this.inner.write(bytes); }
  read(o: number, l: number): Promise<Uint8Array> { return this.inner.read(o, l); }
  allocateRegion(owner: number) { return this.inner.allocateRegion(owner); }
  stats() { return this.inner.stats(); }
  close(): Promise<void> { return this.inner.close(); }
  async writeAt(offset: number, bytes: Uint8Array): Promise<void> {
    if (this.n-- > 0) return this.inner.writeAt(offset, bytes);
    await this.inner.writeAt(offset, bytes.subarray(0, this.keep(bytes.length)));
    return new Promise<void>(() => {}); // never acknowledged
  }
}

test('tailwind: buffers opened and closed per log, every acknowledged record found by the recovery scan', async () => {
  const rx = receiver();
  const conn = ShmConnection.connect(rx.dataDir);
  const streams = [1, 2].map((worker) => openReplicationStream('tailwind', conn, { ownerId: 5, worker }));
  const N = 300;
  await Promise.all(streams.map((s, w) => Promise.all(Array.from({ length: N }, (_, i) => s.write(put(w + 1, i))))));
  for (const s of streams) await s.close();
  const segs = tailwindBuffers(rx.pool);
  assert.ok(segs.length >= 6, `several buffers per log (${segs.length})`);
  const seqs = new Map<number, number[]>();
  const r = newTailwindScanReport();
  const found = new Map<number, number[]>();
  for (const seg of segs) {
    const head = readHead(rx.pool.region.bytes, rx.pool.segmentOffset(seg))!;
    assert.equal(head.node, 5);
    assert.ok(head.closed !== null, `buffer ${head.worker}.${head.seq} closed`);
    seqs.set(head.worker, [...(seqs.get(head.worker) ?? []), head.seq]);
    for (const b of segmentBlocks(rx.pool, seg, L, r)) if (b.seq === 0) found.set(head.worker, [...(found.get(head.worker) ?? []), b.version]);
  }
  assert.equal(r.corrupt, 0, 'every closed buffer ends at its recorded length and checksum');
  assert.equal(r.torn, 0);
  assert.equal(r.records, 2 * N);
  for (const w of [1, 2]) {
    assert.deepEqual(seqs.get(w)!.sort((a, b) => a - b), Array.from({ length: seqs.get(w)!.length }, (_, i) => i), `log ${w}: buffers 0..n`);
    assert.deepEqual(found.get(w)!.sort((a, b) => a - b), Array.from({ length: N }, (_, i) => w * 100_000 + i + 1), `log ${w}: every record`);
  }
  await conn.close();
});

for (const [what, keep] of [
  ['its checksum missing', (len: number) => len - 64],
  ['half its body', (len: number) => Math.floor((len - 64) / 2)],
] as const) {
  test(`tailwind cold start: a primary dies mid-WRITE (${what}): every acknowledged write is indexed, the torn record is not`, async () => {
    const rx = receiver();
    const acked = 40;
    // 1 head WRITE, then `acked` records, then the torn one (an overwrite of key 3 with a new value).
    const conn = new CrashingConnection(ShmConnection.connect(rx.dataDir), 1 + acked, keep);
    const s = openReplicationStream('tailwind', conn, { ownerId: 6, worker: 1 });
    for (let i = 0; i < acked; i++) await s.write(put(1, i));
    void s.write(Buffer.concat(encodeBlocks({ type: EntryType.Put, shard: 3 % SHARDS, version: 100_000 + 500, key: Buffer.from('w1-k3'), value: Buffer.from('torn') }, L)));
    await new Promise((r) => setImmediate(r));

    const c = planCluster({
      nodes: [0, 1].map((id) => ({ id, host: '127.0.0.1', dataDir: `/nonexistent/n${id}`, workerPorts: [7000 + id], fabric: { kind: 'shm' as const, host: '127.0.0.1', port: 0 } })),
      shardCount: SHARDS,
      replicationFactor: 2,
    });
    const shared = attachKvShared(createKvShared(c, 0, 1024), rx.pool.region);
    const rep = rebuildIndexes(rx.pool, shared, L, new ManualClock(0));
    assert.equal(rep.tailwind.buffers, 1);
    assert.equal(rep.tailwind.open, 1, 'the dead primary never closed it');
    assert.equal(rep.tailwind.records, acked);
    assert.equal(rep.tailwind.torn, 1);
    if (what === 'its checksum missing') assert.equal(rep.tailwind.droppedBlocks, 1, 'the record without its checksum');
    const reader = new PoolEntryReader(rx.pool.region, L);
    const value = (k: string, shard: number) => {
      const key = Buffer.from(k);
      const at = shared.indexes[shard]!.get(key, hash64Into(key, { hi: 0, lo: 0 }), reader);
      return at === 0 ? null : Buffer.from(readEntryAt(rx.pool.region.bytes, at, L)!.value).toString();
    };
    for (let i = 0; i < acked; i++) assert.equal(value(`w1-k${i}`, i % SHARDS)?.slice(0, `w1-v${i}`.length), `w1-v${i}`, `acknowledged write ${i}`);
    assert.equal(value('w1-k3', 3), 'w1-v3', 'the torn overwrite is not applied: the acknowledged value stays');
  });
}

test('tailwind gather (a failover\'s prepare): the records of a buffer the primary never closed are listed, a closed buffer\'s are not', async () => {
  const rx = receiver();
  const conn = ShmConnection.connect(rx.dataDir);
  const s = openReplicationStream('tailwind', conn, { ownerId: 7, worker: 1 });
  for (let i = 0; i < 30; i++) await s.write(put(1, i));
  const c = planCluster({
    nodes: [0, 1].map((id) => ({ id, host: '127.0.0.1', dataDir: `/nonexistent/n${id}`, workerPorts: [7000 + id], fabric: { kind: 'shm' as const, host: '127.0.0.1', port: 0 } })),
    shardCount: SHARDS,
    replicationFactor: 2,
  });
  const shared = attachKvShared(createKvShared(c, 0, 1024), rx.pool.region);
  const open = await gatherForPrepare(rx.pool, shared, [0, 1, 2, 3], L);
  assert.deepEqual(open.entries.map((e) => e.v).sort((a, b) => a - b), Array.from({ length: 30 }, (_, i) => 100_000 + i + 1));
  assert.equal(open.versions[3], 100_000 + 28, 'the highest version of shard 3 held');
  await s.close();
  const closed = await gatherForPrepare(rx.pool, shared, [0, 1, 2, 3], L);
  assert.equal(closed.entries.length, 0, 'a closed buffer holds only acknowledged records: on every replica');
  await conn.close();
});
