// Packed copy batches (actors/shared/copy-packed.ts, issue 28): a walk v3 answer carries a shard's full
// entries back to back as its log stores them, plus the keys at or below `above` listed by version. The
// batch round-trips (every entry, its deadline, multi-block entries, listed keys), a walk split into
// batches visits every key once, the entries land in a log with one persist per segment and index
// version-conditionally, and a short, torn or foreign batch is refused whole with a clear error.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ErrorCodes } from '../../../../config/base/errors.js';
import { defaultLimits } from '../../../../config/limits.js';
import type { PersistentRegion } from '../../../../config/base/region.js';
import { COPY_DONE, decodeBatch, decodeCopyRequest, encodeCopyRequest, readBatch } from '../../../../actors/shared/copy-batch.js';
import { decodePackedBatch, PACKED_HEAD, packedOfV2, readPackedBatch, type PackedBatch } from '../../../../actors/shared/copy-packed.js';
import { EntryType, encodeEntry, readEntryAt } from '../../../../shm/log.js';
import { ShardIndex } from '../../../../shm/index.js';
import { hash64Into } from '../../../../shm/hash.js';
import { PoolEntryReader } from '../../../../shm/entry-reader.js';
import { TLog, type TLogPool } from '../../../../shm/tlog.js';
import { OwnerRole, SegmentState, type MetaState } from '../../../../shm/pool.js';

const L = defaultLimits;
const SHARD = 2;

/** A primary's pool bytes and index holding `n` keys (every third with a deadline, key 7 a 10 KB value
 *  spanning blocks, key 5 a DEL), versions 1..n. */
function primary(n: number): { bytes: Uint8Array; index: ShardIndex } {
  const bytes = new Uint8Array(4 * 1024 * 1024);
  const region = { bytes, persist() {}, flush() {}, drain() {} } as unknown as PersistentRegion;
  const index = ShardIndex.create(ShardIndex.optionsFor(n));
  const reader = new PoolEntryReader(region, L);
  let off = 64; // address 0 means "no item"
  for (let i = 0; i < n; i++) {
    const key = Buffer.from(`key-${i}`);
    const value = i === 7 ? Buffer.alloc(10_000, 7) : Buffer.from(`value-${i}`);
    const type = i === 5 ? EntryType.Del : EntryType.Put;
    const at = off;
    off += encodeEntry({ type, shard: SHARD, version: i + 1, key, value: type === EntryType.Del ? undefined : value, expiresAt: type === EntryType.Put && i % 3 === 0 ? 1_900_000_000_000 + i : 0 }, bytes, at, L);
    index.upsert(key, hash64Into(key, { hi: 0, lo: 0 }), at, i + 1, reader);
  }
  return { bytes, index };
}

function walk(p: { bytes: Uint8Array; index: ShardIndex }, bytesMax: number, above = 0): PackedBatch[] {
  const out: PackedBatch[] = [];
  for (let cursor = 0; cursor !== COPY_DONE; ) {
    const u = readPackedBatch(p.index, p.bytes, SHARD, { shard: SHARD, cursor, bytesMax, above, packed: true }, L, 1 << 20, 1234);
    const b = decodePackedBatch(u, SHARD, L);
    out.push(b);
    cursor = b.next;
  }
  return out;
}

/** A fake pool of 64 KiB segments for a t-log (persists counted). */
function fakePool(segments: number): TLogPool & { persists: number } {
  const segBytes = 64 * 1024;
  const bytes = new Uint8Array(segBytes * (segments + 1));
  const meta = Array.from({ length: segments }, () => ({ state: SegmentState.Free as MetaState, role: OwnerRole.Digest, ownerId: 0, seq: 0 }));
  const pool = {
    persists: 0,
    region: { bytes, persist: () => void pool.persists++, flush() {}, drain() {} } as unknown as PersistentRegion,
    segmentBytes: segBytes,
    segmentOffset: (i: number) => segBytes * (i + 1),
    meta: (i: number) => meta[i]!,
    allocate: () => {
      const i = meta.findIndex((m) => m.state === SegmentState.Free);
      meta[i]!.state = SegmentState.Using;
      return i;
    },
    transition: (i: number, _from: SegmentState, to: SegmentState) => void (meta[i]!.state = to),
    segments: () => meta.map((_, i) => i).filter((i) => meta[i]!.state !== SegmentState.Free),
  };
  return pool;
}

describe('packed copy batches', () => {
  it('walk v3 requests round-trip, and an unknown flag is refused', () => {
    const r = { shard: 3, cursor: 7, bytesMax: 1000, above: 2 ** 40 + 5, end: 99, packed: true };
    assert.deepEqual(decodeCopyRequest(encodeCopyRequest(r)), r);
    const bad = Buffer.from(encodeCopyRequest(r));
    bad.writeUInt32LE(2, 20);
    assert.throws(() => decodeCopyRequest(bad), /flags 2/);
  });

  it('carry every entry once as the primary stores it, split over batches of whole buckets', () => {
    const p = primary(300);
    const batches = walk(p, 4096);
    assert.ok(batches.length > 3, `${batches.length} batches`);
    const seen = new Map<string, number>();
    for (const b of batches) {
      assert.equal(b.counter, 1234);
      assert.ok(b.bytes <= 4096 + 10_240 + PACKED_HEAD, `a batch of ${b.bytes} B`); // bytesMax, or one bucket over it
      for (let i = 0; i < b.count; i++) {
        const e = readEntryAt(b.packed, b.offs[i]!, L)!;
        assert.equal(e.bytes, b.offs[i + 1]! - b.offs[i]!);
        assert.equal(e.version, b.versions[i]);
        const k = Buffer.from(e.key).toString();
        assert.ok(!seen.has(k), `${k} twice`);
        seen.set(k, e.version);
        const n = Number(k.slice(4));
        assert.equal(e.type, n === 5 ? EntryType.Del : EntryType.Put);
        assert.equal(e.expiresAt, n !== 5 && n % 3 === 0 ? 1_900_000_000_000 + n : 0);
        assert.equal(e.value.length, n === 7 ? 10_000 : n === 5 ? 0 : `value-${n}`.length);
        assert.equal(Buffer.from(b.packed.subarray(b.offs[i]! + b.keyAt[i]!, b.offs[i]! + b.keyAt[i]! + b.keyLens[i]!)).toString(), k);
      }
    }
    assert.equal(seen.size, 300);
  });

  it('list the keys at or below `above` by version, and send the others in full', () => {
    const batches = walk(primary(100), 1 << 20, 60);
    assert.equal(batches.length, 1);
    const [b] = batches;
    assert.equal(b!.count, 40);
    assert.ok([...b!.versions].every((v) => v > 60));
    assert.equal(b!.listed.length, 60);
    assert.ok(b!.listed.every((e) => e.v <= 60 && e.value.length === 0 && Buffer.from(e.key).toString() === `key-${e.v - 1}`));
  });

  it('a v2 walk batch (a primary of an older build) taken as a packed one: the same entries, verified alike', () => {
    const p = primary(100);
    const [want] = walk(p, 1 << 20, 60);
    const u = readBatch(p.index, p.bytes, SHARD, { shard: SHARD, cursor: 0, bytesMax: 1 << 20, above: 60, end: COPY_DONE }, L, 1 << 20, 1234);
    const got = packedOfV2(decodeBatch(u, SHARD, true), SHARD, L);
    assert.deepEqual([got.next, got.counter, got.count], [want!.next, want!.counter, want!.count]);
    assert.deepEqual(Buffer.from(got.packed), Buffer.from(want!.packed));
    assert.deepEqual([...got.versions, ...got.keyAt, ...got.keyLens, ...got.offs], [...want!.versions, ...want!.keyAt, ...want!.keyLens, ...want!.offs]);
    assert.deepEqual(got.listed.map((e) => e.v), want!.listed.map((e) => e.v));
    const corrupt = decodeBatch(u, SHARD, true);
    const r = new Uint8Array(corrupt.raws[3]!);
    r[r.length - 8]! ^= 0xff; // a byte of its last block flipped
    corrupt.raws[3] = r;
    assert.throws(() => packedOfV2(corrupt, SHARD, L), (e: Error & { code?: string }) => e.code === ErrorCodes.BAD_FRAME && /entry 3 of 40 .* does not verify/.test(e.message));
  });

  it('land in a log with one persist per segment, each entry where its address says', () => {
    const [b] = walk(primary(1500), 1 << 20);
    const pool = fakePool(8);
    const log = new TLog(pool, 0, L, OwnerRole.Digest);
    const addrs = log.appendPacked(b!.packed, b!.offs, 0, b!.count);
    const segs = new Set(addrs.map((a) => Math.floor(a / pool.segmentBytes)));
    assert.ok(segs.size >= 2, `${segs.size} segments`);
    assert.equal(pool.persists, segs.size);
    for (let i = 0; i < b!.count; i++) assert.equal(readEntryAt(pool.region.bytes, addrs[i]!, L)!.version, b!.versions[i]);
  });

  it('refuse a short, torn, corrupt or foreign batch whole, saying why', () => {
    const p = primary(50);
    const u = Buffer.from(readPackedBatch(p.index, p.bytes, SHARD, { shard: SHARD, cursor: 0, bytesMax: 1 << 20, above: 10, packed: true }, L, 1 << 20, 1));
    assert.doesNotThrow(() => decodePackedBatch(u, SHARD, L));
    const refused = (b: Uint8Array, why: RegExp) => assert.throws(() => decodePackedBatch(b, SHARD, L), (err: Error & { code?: string }) => err.code === ErrorCodes.BAD_FRAME && why.test(err.message));
    refused(u.subarray(0, 10), /shorter than its 24 B head/);
    refused(u.subarray(0, PACKED_HEAD + 1000), /torn: its head announces \d+ B of entries, 1000 B arrived/);
    refused(u.subarray(0, u.length - 3), /truncated|after its last entry/); // the listed tail cut
    const more = Buffer.from(u);
    more.writeUInt32LE(more.readUInt32LE(4) + 1, 4); // one entry more announced than the section holds
    refused(more, /torn: \d+ entries announced/);
    const flipped = Buffer.from(u);
    flipped[PACKED_HEAD + 40] ^= 1; // a payload byte of the first entry: its checksum fails
    refused(flipped, /entry 0 of \d+ \(at 0 of \d+ B\) does not verify: torn or corrupt/);
    // The same bytes pass for their shard (above), not for another one.
    assert.throws(() => decodePackedBatch(u, SHARD + 1, L), /is of shard 2, .* in a batch of shard 3/);
    const odd = Buffer.from(u);
    odd.writeUInt32LE(odd.readUInt32LE(18) - 64, 18); // the section ends inside an entry
    refused(odd, /torn: 40 entries announced, 39 in its \d+ B/);
  });
});
