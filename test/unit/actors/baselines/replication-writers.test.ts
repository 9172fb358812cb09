// actors/baselines/replication-writers.ts over the shm fabric: every mode lands each write exactly where it says
// (read back through the connection), rwrite keeps one log per stream, share one log per node with
// contiguous addresses (across two connections standing in for two sender threads), and batch sends
// at 256 B and on its timeout and resolves a write only once its whole batch is persistent.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { Worker } from 'node:worker_threads';
import { ShmConnection } from '../../../../runtime/fabric/shm.js';
import {
  REPLICATION_MODES,
  SharedLog,
  openReplicationStream,
  type ReplicationMode,
  type ReplicationStream,
} from '../../../../actors/baselines/replication-writers.js';
import type { RemoteRegion, RowanConnection, SenderStats } from '../../../../runtime/fabric/fabric.js';
import { ManualClock } from '../../../../config/base/clock.js';
import { OwnerRole } from '../../../../shm/pool.js';
import { TestReceiver } from '../../../fixtures/rowan-receiver.js';

const receivers: TestReceiver[] = [];
after(() => receivers.forEach((r) => r.close()));

function receiver(segmentBytes = 64 * 1024, segmentCount = 64): TestReceiver {
  const rx = new TestReceiver({ segmentBytes, segmentCount, preallocate: 4, batch: 2 });
  receivers.push(rx);
  return rx;
}

/** A 64 B-multiple write whose every byte names (stream, i); the first byte is never zero. */
function payload(stream: number, i: number, len: number): Uint8Array {
  const b = new Uint8Array(len);
  for (let k = 0; k < len; k++) b[k] = (stream * 31 + i * 7 + k) % 251 + 1;
  b[1] = stream;
  b[2] = i & 0xff;
  b[3] = i >> 8;
  return b;
}

async function writeAll(s: ReplicationStream, stream: number, n: number, len: number): Promise<Array<{ at: number; b: Uint8Array }>> {
  const out: Array<{ at: number; b: Uint8Array }> = [];
  for (let i = 0; i < n; i++) {
    const b = payload(stream, i, len);
    out.push({ at: await s.write(b), b });
  }
  return out;
}

async function assertLanded(conn: RowanConnection, landed: Array<{ at: number; b: Uint8Array }>): Promise<void> {
  for (const { at, b } of landed) assert.deepEqual(await conn.read(at, b.length), b, `write landed at ${at} reads back`);
}

/** Delegates to a real connection, but holds every writeAt until release() (to watch batch acks). */
class GatedConnection implements RowanConnection {
  readonly kind = 'shm' as const;
  readonly writesAt: Array<{ offset: number; length: number }> = [];
  private gates: Array<() => void> = [];
  constructor(private readonly inner: RowanConnection) {}
  write(bytes: Uint8Array): Promise<number> {
    return this.inner.write(bytes);
  }
  async writeAt(offset: number, bytes: Uint8Array): Promise<void> {
    this.writesAt.push({ offset, length: bytes.length });
    await new Promise<void>((r) => this.gates.push(r));
    await this.inner.writeAt(offset, bytes);
  }
  release(): void {
    const g = this.gates;
    this.gates = [];
    g.forEach((r) => r());
  }
  read(offset: number, length: number): Promise<Uint8Array> {
    return this.inner.read(offset, length);
  }
  allocateRegion(ownerId: number): Promise<RemoteRegion> {
    return this.inner.allocateRegion(ownerId);
  }
  stats(): SenderStats {
    return this.inner.stats();
  }
  close(): Promise<void> {
    return this.inner.close();
  }
}

const settled = async <T>(p: Promise<T>): Promise<boolean> => {
  let done = false;
  p.then(() => (done = true), () => (done = true));
  await new Promise((r) => setImmediate(r));
  return done;
};

test('every mode lands each write where its ack says', async () => {
  const rx = receiver();
  for (const mode of REPLICATION_MODES as ReplicationMode[]) {
    const conn = ShmConnection.connect(rx.dataDir);
    const sharedLog = SharedLog.create({ nodeId: 1 });
    for (const len of [64, 128, 192]) {
      const streams = [0, 1, 2].map((id) => openReplicationStream(mode, conn, { ownerId: 10 + id, sharedLog }));
      const landed = (await Promise.all(streams.map((s, id) => writeAll(s, id, 40, len)))).flat();
      await assertLanded(conn, landed);
      const ats = landed.map((l) => l.at).sort((a, b) => a - b);
      for (let i = 1; i < ats.length; i++) assert.ok(ats[i]! >= ats[i - 1]! + len, `${mode}: writes at ${ats[i - 1]} and ${ats[i]} overlap`);
      for (const s of streams) {
        assert.equal(s.stats().writes, 40, `${mode} stream counts its acked writes`);
        await s.close();
      }
    }
    await conn.close();
  }
});

test('rwrite: one log per stream, each appended sequentially in regions it owns', async () => {
  const rx = receiver(4096, 128);
  const conn = ShmConnection.connect(rx.dataDir);
  const retired: RemoteRegion[] = [];
  const streams = [0, 1, 2].map((id) => openReplicationStream('rwrite', conn, { ownerId: 20 + id, onRegionRetired: (r) => retired.push(r) }));
  assert.equal(new Set(streams.map((s) => s.logId)).size, 3);
  // Interleave the streams write by write: each log still grows by exactly one write at a time.
  const per: number[][] = [[], [], []];
  for (let i = 0; i < 100; i++) {
    for (let id = 0; id < 3; id++) per[id]!.push(await streams[id]!.write(payload(id, i, 128)));
  }
  const segsOf = per.map((ats) => new Set(ats.map((a) => rx.pool.segmentOf(a))));
  for (let id = 0; id < 3; id++) {
    const ats = per[id]!;
    for (let i = 1; i < ats.length; i++) {
      const sameSeg = rx.pool.segmentOf(ats[i]!) === rx.pool.segmentOf(ats[i - 1]!);
      if (sameSeg) assert.equal(ats[i], ats[i - 1]! + 128, `stream ${id} appends at its own tail`);
      else assert.equal(ats[i], rx.pool.segmentOffset(rx.pool.segmentOf(ats[i]!)), 'a new region starts at its beginning');
    }
    // 100 x 128 B over 4 KiB regions: 4 regions, all owned by this stream.
    assert.equal(segsOf[id]!.size, 4);
    for (const seg of segsOf[id]!) assert.deepEqual([rx.pool.meta(seg).role, rx.pool.meta(seg).ownerId], [OwnerRole.Remote, 20 + id]);
    for (let other = 0; other < id; other++) for (const seg of segsOf[id]!) assert.ok(!segsOf[other]!.has(seg), 'logs never share a region');
  }
  assert.equal(retired.length, 9, 'each stream retired the 3 regions it left');
  for (const s of streams) await s.close();
  assert.equal(retired.length, 12, 'close retires the current region');
});

test('share: one log per node, contiguous addresses across threads, regions retired as the ring moves on', async () => {
  const rx = receiver(4096, 128);
  const node = SharedLog.create({ nodeId: 7, slotCap: 4 });
  // Two connections with their own attachment of the node's buffer stand in for two sender threads.
  const conns = [ShmConnection.connect(rx.dataDir), ShmConnection.connect(rx.dataDir)];
  const logs = [SharedLog.attach(node.buffer), SharedLog.attach(node.buffer)];
  const retired: RemoteRegion[] = [];
  const streams = [0, 1, 2, 3].map((id) =>
    openReplicationStream('share', conns[id % 2]!, { ownerId: 7, sharedLog: logs[id % 2]!, onRegionRetired: (r) => retired.push(r) }),
  );
  assert.deepEqual(new Set(streams.map((s) => s.logId)), new Set(['node:7']));
  const landed = (await Promise.all(streams.map((s, id) => writeAll(s, id, 50, 128)))).flat();
  await assertLanded(conns[0]!, landed);
  // 200 x 128 B = 25 KiB over 4 KiB regions; 128 divides 4096, so no write straddles and the log is
  // dense: inside each region the writes tile it exactly, and regions follow in allocation order.
  const bySeg = new Map<number, number[]>();
  for (const { at } of landed) {
    const seg = rx.pool.segmentOf(at);
    bySeg.set(seg, [...(bySeg.get(seg) ?? []), at - rx.pool.segmentOffset(seg)]);
  }
  const segs = [...bySeg.keys()].sort((a, b) => rx.pool.meta(a).seq - rx.pool.meta(b).seq);
  assert.equal(segs.length, 7);
  segs.forEach((seg, k) => {
    const offs = bySeg.get(seg)!.sort((a, b) => a - b);
    const want = k < 6 ? 32 : 200 - 6 * 32;
    assert.deepEqual(offs, Array.from({ length: want }, (_, i) => i * 128), `region ${k} is filled contiguously`);
    assert.equal(rx.pool.meta(seg).ownerId, 7);
  });
  // Prefetch may have allocated region 7 too; with 4 slots, regions up to (allocated - 4) are retired.
  assert.ok(retired.length >= 3, `regions fall out of the 4-slot ring: ${retired.length} retired`);
  assert.deepEqual(retired.slice(0, 3).map((r) => r.segment), segs.slice(0, 3));
  for (const c of conns) await c.close();
});

test('share: two real sender threads take contiguous addresses of one log', async () => {
  const rx = receiver(64 * 1024, 64);
  const node = SharedLog.create({ nodeId: 9 });
  const script = new URL('../../../fixtures/share-writer.js', import.meta.url);
  const run = (ids: number[]) =>
    new Promise<number[]>((resolve, reject) => {
      const w = new Worker(script, { workerData: { dataDir: rx.dataDir, log: node.buffer, ids, writes: 400, len: 128 } });
      w.once('message', (m: { ok: boolean; ats?: number[]; message?: string }) => (m.ok ? resolve(m.ats!) : reject(new Error(m.message))));
      w.once('error', reject);
    });
  const [a, b] = await Promise.all([run([0, 1]), run([2, 3])]);
  const all = [...a!, ...b!];
  assert.equal(new Set(all).size, 1600, 'no two writes share an address');
  // 1600 x 128 B = 200 KiB over 64 KiB regions: every region but the last is tiled exactly.
  const bySeg = new Map<number, number[]>();
  for (const at of all) {
    const seg = rx.pool.segmentOf(at);
    bySeg.set(seg, [...(bySeg.get(seg) ?? []), at - rx.pool.segmentOffset(seg)]);
  }
  const counts = [...bySeg.keys()].map((seg) => {
    const offs = bySeg.get(seg)!.sort((x, y) => x - y);
    offs.forEach((o, i) => assert.equal(o, i * 128, `region of segment ${seg} has no hole`));
    return offs.length;
  });
  // Three full regions and the last one's 64 writes. Not in allocation order: the thread that claims
  // an address in a later region may map its segment before the other maps the one it claimed in an
  // earlier region (seen under load: [512, 512, 64, 512] by allocation seq).
  assert.deepEqual(counts.sort((x, y) => y - x), [512, 512, 512, 64]);
  // Both threads wrote into the same regions (the log is shared, not split per thread).
  const segsOf = (ats: number[]) => new Set(ats.map((x) => rx.pool.segmentOf(x)));
  assert.ok([...segsOf(a!)].some((s) => segsOf(b!).has(s)));
});

test('share: a write that would straddle a region boundary leaves a hole and lands in the next region', async () => {
  const rx = receiver(4096, 64);
  const conn = ShmConnection.connect(rx.dataDir);
  const s = openReplicationStream('share', conn, { ownerId: 3, sharedLog: SharedLog.create({ nodeId: 3 }) });
  const landed = await writeAll(s, 0, 30, 192);
  await assertLanded(conn, landed);
  // 4096 / 192 = 21 writes fit; the 22nd would straddle, so it lands at the start of region 1.
  const seg0 = rx.pool.segmentOf(landed[0]!.at);
  for (let i = 0; i < 21; i++) assert.equal(landed[i]!.at, rx.pool.segmentOffset(seg0) + i * 192);
  const seg1 = rx.pool.segmentOf(landed[21]!.at);
  assert.notEqual(seg1, seg0);
  // Its abandoned span covered [4032, 4224) of the log: 128 B of hole at the start of region 1.
  assert.equal(landed[21]!.at, rx.pool.segmentOffset(seg1) + 4224 - 4096);
  await conn.close();
});

test('batch: 4 x 64 B go out as one 256 B write, acked only once that write is persistent', async () => {
  const rx = receiver();
  const gated = new GatedConnection(ShmConnection.connect(rx.dataDir));
  const s = openReplicationStream('batch', gated, { ownerId: 5, batchTimeoutUs: 1e6 });
  const bs = [0, 1, 2, 3].map((i) => payload(5, i, 64));
  const ps = bs.slice(0, 3).map((b) => s.write(b));
  await new Promise((r) => setImmediate(r));
  assert.equal(gated.writesAt.length, 0, '192 B is below the batch size: nothing sent yet');
  ps.push(s.write(bs[3]!));
  // The region is allocated asynchronously before the batch's one write goes out.
  while (gated.writesAt.length === 0) await new Promise((r) => setImmediate(r));
  assert.equal(gated.writesAt.length, 1);
  assert.equal(gated.writesAt[0]!.length, 256);
  assert.equal(await settled(ps[0]!), false, 'not acked while the batch write is in flight');
  gated.release();
  const ats = await Promise.all(ps);
  assert.deepEqual(ats, [0, 1, 2, 3].map((i) => gated.writesAt[0]!.offset + i * 64));
  await assertLanded(gated, ats.map((at, i) => ({ at, b: bs[i]! })));
  assert.deepEqual([s.stats().batches, s.stats().sizeFlushes, s.stats().writes], [1, 1, 4]);
  const closing = s.close();
  gated.release();
  await closing;
  await gated.close();
});

test('batch: a lone write goes out when the timeout expires, and acks after it is persistent', async () => {
  const rx = receiver();
  const gated = new GatedConnection(ShmConnection.connect(rx.dataDir));
  const s = openReplicationStream('batch', gated, { ownerId: 6 });
  const b = payload(6, 0, 64);
  const t0 = performance.now();
  const p = s.write(b);
  while (gated.writesAt.length === 0) await new Promise((r) => setImmediate(r));
  const sentAfterMs = performance.now() - t0;
  assert.ok(sentAfterMs >= 0.005, `sent after the 5 µs timeout, not before (${(sentAfterMs * 1000).toFixed(1)} µs)`);
  assert.equal(gated.writesAt[0]!.length, 64);
  assert.equal(await settled(p), false, 'not acked while its write is in flight');
  gated.release();
  const at = await p;
  assert.equal(at, gated.writesAt[0]!.offset);
  assert.deepEqual(await gated.read(at, 64), b);
  assert.deepEqual([s.stats().batches, s.stats().deadlineFlushes], [1, 1]);
  await s.close();
  await gated.close();
});

test('batch: a write arriving after the deadline sends the expired batch first and opens a new one', async () => {
  const rx = receiver();
  const gated = new GatedConnection(ShmConnection.connect(rx.dataDir));
  const clock = new ManualClock(1000);
  const s = openReplicationStream('batch', gated, { ownerId: 8, clock });
  const pa = s.write(payload(8, 0, 64)); // batch opens at t = 1000 ms
  clock.advance(0.004); // 4 µs: still open
  const pb = s.write(payload(8, 1, 64));
  clock.advance(0.002); // 6 µs after opening: expired
  const pc = s.write(payload(8, 2, 128));
  while (gated.writesAt.length === 0) await new Promise((r) => setImmediate(r));
  assert.equal(gated.writesAt[0]!.length, 128, 'the expired batch held the first two writes only');
  gated.release();
  clock.advance(1); // let the setImmediate check send the third write's batch
  while (gated.writesAt.length < 2) await new Promise((r) => setImmediate(r));
  assert.equal(gated.writesAt[1]!.length, 128);
  gated.release();
  const [a, b2, c] = await Promise.all([pa, pb, pc]);
  assert.equal(b2, a + 64);
  assert.equal(c, gated.writesAt[1]!.offset);
  assert.deepEqual([s.stats().batches, s.stats().deadlineFlushes], [2, 2]);
  await s.close();
  await gated.close();
});
