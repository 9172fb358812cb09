// A backup that kept its pool through a restart reconciles with its primary (actors/migration/reconcile.ts)
// instead of copying everything: on real pool files, a primary P and a rejoining backup R whose kept
// index is behind (writes while it was away), ahead (a write P never had) and holds keys P no longer
// has (a DEL whose tombstone P dropped). The walk (readBatch with `above`), the KEYS reads (readKeys)
// and the sweep leave R answering exactly what P answers -- and so does a cold start of R's pool.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monotonicClock } from '../../../../config/base/clock.js';
import { PROMOTION_ACTOR_ID } from '../../../../config/base/ids.js';
import { planCluster, type ClusterConfig } from '../../../../config/cluster.js';
import { defaultLimits } from '../../../../config/limits.js';
import { Reconcile } from '../../../../actors/migration/reconcile.js';
import { absorbRaw, rawEntryOf, verifyRaw } from '../../../../actors/migration/absorb.js';
import { rebuildIndexes } from '../../../../actors/node/recovery.js';
import { COPY_DONE, decodeBatch, encodeCopyRequest, decodeCopyRequest, readBatch, readKeys } from '../../../../actors/shared/copy-batch.js';
import { absorbEntries, RenewalYielder, type RawEntry } from '../../../../actors/shared/gather-scatter.js';
import { attachKvShared, createKvShared, nextVersion, type KvShared } from '../../../../actors/shared/node-shared.js';
import { PoolEntryReader } from '../../../../shm/entry-reader.js';
import { hash64Into } from '../../../../shm/hash.js';
import { EntryType, readEntryAt } from '../../../../shm/log.js';
import { OwnerRole, Pool } from '../../../../shm/pool.js';
import { TLog } from '../../../../shm/tlog.js';

const limits = defaultLimits;
const shard = 0;

interface Node {
  pool: Pool;
  shared: KvShared;
  log: TLog;
}

function open(path: string, cluster: ClusterConfig, id: number, create: boolean): Node {
  const pool = create ? Pool.create(path, { segmentCount: 16, segmentBytes: 64 * 1024, mode: 'pagecache' }) : Pool.open(path, { mode: 'pagecache' });
  const shared = attachKvShared(createKvShared(cluster, id, 1024, pool), pool.region);
  return { pool, shared, log: TLog.recover(pool, PROMOTION_ACTOR_ID, limits, OwnerRole.Digest) };
}

const put = (v: number, key: string, value: string): RawEntry => ({ s: shard, v, t: EntryType.Put, key: Buffer.from(key), value: Buffer.from(value) });
const del = (v: number, key: string): RawEntry => ({ s: shard, v, t: EntryType.Del, key: Buffer.from(key), value: new Uint8Array(0) });

function get(n: Node, key: string): string | null {
  const reader = new PoolEntryReader(n.pool.region, limits);
  const k = Buffer.from(key);
  const addr = n.shared.indexes[shard]!.get(k, hash64Into(k, { hi: 0, lo: 0 }), reader);
  if (addr === 0) return null;
  const e = readEntryAt(n.pool.region.bytes, addr, limits)!;
  return e.type === EntryType.Del ? null : Buffer.from(e.value).toString();
}

test('copy requests: walk v1 and v2 and KEYS round-trip', () => {
  assert.deepEqual(decodeCopyRequest(encodeCopyRequest({ shard: 3, cursor: 7, bytesMax: 1000 })), { shard: 3, cursor: 7, bytesMax: 1000 });
  assert.deepEqual(decodeCopyRequest(encodeCopyRequest({ shard: 3, cursor: 7, bytesMax: 1000, above: 2 ** 40 + 5, end: 99 })), { shard: 3, cursor: 7, bytesMax: 1000, above: 2 ** 40 + 5, end: 99 });
  const k = decodeCopyRequest(encodeCopyRequest({ shard: 1, cursor: 0, bytesMax: 10, keys: [Buffer.from('a'), Buffer.from('bc')] }));
  assert.deepEqual(k.keys!.map((x) => Buffer.from(x).toString()), ['a', 'bc']);
});

test('a backup that kept its pool reconciles with its primary: behind, ahead and dropped tombstones end as the primary has them, across a cold start', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-keep-'));
  try {
    const cluster = planCluster({
      nodes: [0, 1, 2].map((id) => ({ id, host: '127.0.0.1', dataDir: join(dir, `n${id}`), workerPorts: [7000 + id], fabric: { kind: 'shm' as const, host: '127.0.0.1', port: 0 } })),
      shardCount: 3,
      replicationFactor: 3,
    });
    const p = open(join(dir, 'p.pm'), cluster, 0, true);
    let r = open(join(dir, 'r.pm'), cluster, 1, true);
    // Before R died both held same@1, gone@2 and fresh@3, and deleted@4 (a DEL) over nothing.
    const before = [put(1, 'same', 's1'), put(2, 'gone', 'g2'), put(3, 'fresh', 'f3'), del(4, 'deleted'), put(5, 'ahead', 'a5')];
    absorbEntries(p.pool, p.shared, p.log, before, limits);
    absorbEntries(r.pool, r.shared, r.log, before, limits);
    // R also holds ahead@8, a write P never had (the old primary died with it in flight).
    absorbEntries(r.pool, r.shared, r.log, [put(8, 'ahead', 'a8-never-acknowledged')], limits);
    // While R was away: P wrote behind@7 (at or below R's highest version, 8, yet R lacks it),
    // overwrote fresh at 20, and deleted gone and dropped the tombstone (its index lost the key).
    absorbEntries(p.pool, p.shared, p.log, [put(7, 'behind', 'b7'), put(20, 'fresh', 'f20')], limits);
    const reader = new PoolEntryReader(p.pool.region, limits);
    const gone = Buffer.from('gone');
    const h = hash64Into(gone, { hi: 0, lo: 0 });
    assert.ok(p.shared.indexes[shard]!.remove(gone, h, p.shared.indexes[shard]!.get(gone, h, reader)));
    const above = Number(Atomics.load(r.shared.versions, shard));
    assert.equal(above, 8);

    // The walk: P's counter claims C first (copy-source claimUnused).
    const C = nextVersion(p.shared.versions, shard);
    const rec = new Reconcile(r.pool, r.shared, () => r.log, limits, shard);
    rec.counter = C;
    let cursor = 0;
    while (cursor !== COPY_DONE) {
      const raw = readBatch(p.shared.indexes[shard]!, p.pool.region.bytes, shard, { shard, cursor, bytesMax: 4096, above, end: COPY_DONE }, limits, 1 << 20, C);
      const b = decodeBatch(raw, shard, true);
      assert.equal(b.counter, C);
      assert.equal(b.entries.length, 0, 'v2 batches carry full entries as stored bytes');
      const es = verifyRaw(b.raws, shard, limits);
      absorbRaw(r.pool, r.shared, r.log, b.raws, es, limits);
      rec.noteBatch(es.map((e) => e.version), b.listed);
      cursor = b.next;
    }
    for (const keys of rec.fetchGroups()) {
      const b = decodeBatch(readKeys(p.shared.indexes[shard]!, p.pool.region.bytes, shard, keys, reader, limits, 1 << 20, C), shard, true);
      rec.fix(keys, verifyRaw(b.raws, shard, limits).map(rawEntryOf));
    }
    await rec.sweep(new RenewalYielder(monotonicClock));
    const want = (n: Node) => ['same', 'gone', 'fresh', 'ahead', 'deleted', 'behind'].map((k) => [k, get(n, k)]);
    assert.deepEqual(want(r), want(p));
    assert.deepEqual(Object.fromEntries(want(r)), { same: 's1', gone: null, fresh: 'f20', ahead: 'a5', deleted: null, behind: 'b7' });
    assert.ok(rec.stats.restamped >= 1 && rec.stats.dropped >= 1, JSON.stringify(rec.stats));

    // A cold start of R's pool answers the same (the restamped entry and the DEL outrank what is on PM).
    r.pool.close();
    r = open(join(dir, 'r.pm'), cluster, 1, false);
    rebuildIndexes(r.pool, r.shared, limits, monotonicClock);
    assert.deepEqual(want(r), want(p));
    r.pool.close();
    p.pool.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a copied entry that does not verify is refused before anything is written', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-keep-raw-'));
  try {
    const cluster = planCluster({
      nodes: [0, 1, 2].map((id) => ({ id, host: '127.0.0.1', dataDir: join(dir, `n${id}`), workerPorts: [7000 + id], fabric: { kind: 'shm' as const, host: '127.0.0.1', port: 0 } })),
      shardCount: 3,
      replicationFactor: 3,
    });
    const p = open(join(dir, 'p.pm'), cluster, 0, true);
    absorbEntries(p.pool, p.shared, p.log, [put(1, 'a', 'x'.repeat(300)), put(2, 'b', 'y')], limits);
    const raw = readBatch(p.shared.indexes[shard]!, p.pool.region.bytes, shard, { shard, cursor: 0, bytesMax: 1 << 20, above: 0 }, limits, 1 << 20, 3);
    const b = decodeBatch(raw, shard, true);
    assert.equal(b.raws.length, 2);
    assert.equal(verifyRaw(b.raws, shard, limits).length, 2);
    b.raws[0]![b.raws[0]!.length >> 1] ^= 1; // a bit flipped on the way
    assert.throws(() => verifyRaw(b.raws, shard, limits), /does not verify/);
    assert.throws(() => verifyRaw(decodeBatch(raw, shard, true).raws.slice(1), shard + 1, limits), /in a batch of shard 1/);
    p.pool.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a KEYS batch answers as many keys as its frame holds and says where it stopped', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-keep-keys-'));
  try {
    const cluster = planCluster({
      nodes: [0, 1, 2].map((id) => ({ id, host: '127.0.0.1', dataDir: join(dir, `n${id}`), workerPorts: [7000 + id], fabric: { kind: 'shm' as const, host: '127.0.0.1', port: 0 } })),
      shardCount: 3,
      replicationFactor: 3,
    });
    const p = open(join(dir, 'p.pm'), cluster, 0, true);
    const big = (i: number) => put(i + 1, `big-${i}`, String(i).repeat(20_000));
    absorbEntries(p.pool, p.shared, p.log, [0, 1, 2].map(big), limits);
    const keys = [Buffer.from('big-0'), Buffer.from('absent'), Buffer.from('big-1'), Buffer.from('big-2')];
    const reader = new PoolEntryReader(p.pool.region, limits);
    const b = decodeBatch(readKeys(p.shared.indexes[shard]!, p.pool.region.bytes, shard, keys, reader, limits, 50_000, 9), shard, true);
    assert.equal(b.next, 3, 'big-0 and big-1 fit, big-2 does not');
    assert.deepEqual(verifyRaw(b.raws, shard, limits).map((e) => Buffer.from(e.key).toString()), ['big-0', 'big-1']);
    const rest = decodeBatch(readKeys(p.shared.indexes[shard]!, p.pool.region.bytes, shard, keys.slice(3), reader, limits, 50_000, 9), shard, true);
    assert.equal(rest.next, COPY_DONE);
    assert.equal(rest.raws.length, 1);
    p.pool.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('an entry read again by name keeps its expiry deadline', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-keep-exp-'));
  try {
    const cluster = planCluster({
      nodes: [0, 1, 2].map((id) => ({ id, host: '127.0.0.1', dataDir: join(dir, `n${id}`), workerPorts: [7000 + id], fabric: { kind: 'shm' as const, host: '127.0.0.1', port: 0 } })),
      shardCount: 3,
      replicationFactor: 3,
    });
    const p = open(join(dir, 'p.pm'), cluster, 0, true);
    const deadline = 1_900_000_000_000;
    absorbEntries(p.pool, p.shared, p.log, [{ ...put(1, 'ttl', 'v'), exp: deadline }], limits);
    const reader = new PoolEntryReader(p.pool.region, limits);
    const b = decodeBatch(readKeys(p.shared.indexes[shard]!, p.pool.region.bytes, shard, [Buffer.from('ttl')], reader, limits, 1 << 20, 2), shard, true);
    const [e] = verifyRaw(b.raws, shard, limits).map(rawEntryOf);
    assert.equal(e!.exp, deadline);
    assert.equal({ ...e!, v: 5 }.exp, deadline, 'a restamp keeps it too');
    p.pool.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
