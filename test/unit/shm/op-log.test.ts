// AsymNVM's op-log records (shm/op-log.ts): a record reads back with its blocks; any byte changed in it,
// or its tail missing, makes it torn; a scan stops at the first absent, torn or out-of-sequence record;
// and the checksum is keyed with the cluster's seed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { defaultLimits } from '../../../config/limits.js';
import { encodeBlocks, EntryType, readBlock } from '../../../shm/log.js';
import { setChecksumSeed } from '../../../shm/log-checksum.js';
import { encodeOpRecord, OP_LOG_HEADER_BYTES, opRecordSize, readOpRecord, scanOpLog } from '../../../shm/op-log.js';

const enc = new TextEncoder();
const put = (k: string, v: number, len = 20) => encodeBlocks({ type: EntryType.Put, shard: 1, version: v, key: enc.encode(k), value: new Uint8Array(len).fill(v & 0xff) }, defaultLimits);

test('a record holds its blocks back to back and reads back whole', () => {
  const blocks = [...put('a', 1), ...put('b', 2, 9000)];
  assert.ok(blocks.length > 2, 'a multi-block entry is in it');
  const r = encodeOpRecord(blocks, 7);
  assert.equal(r.length, opRecordSize(blocks));
  assert.equal(r.length % 64, 0);
  const got = readOpRecord(r, 0, r.length);
  assert.ok(got.ok);
  assert.deepEqual([got.record.seq, got.record.blocks, got.record.payloadStart, got.record.size], [7, blocks.length, OP_LOG_HEADER_BYTES, r.length]);
  let at = got.record.payloadStart;
  for (const b of blocks) {
    const read = readBlock(r, at, got.record.payloadEnd, defaultLimits);
    assert.ok(read, `block at ${at} reads`);
    assert.deepEqual(r.subarray(at, at + read.size), b);
    at += read.size;
  }
});

test('any changed byte or a missing tail makes a record torn; zeros are the end', () => {
  const r = encodeOpRecord(put('k', 3), 1);
  for (let i = 0; i < r.length; i += 5) {
    const bad = r.slice();
    bad[i] ^= 0x10;
    assert.deepEqual(readOpRecord(bad, 0, bad.length), { ok: false, why: 'torn' }, `byte ${i} flipped`);
  }
  const cut = r.slice();
  cut.fill(0, OP_LOG_HEADER_BYTES + 8); // the block's payload never landed
  assert.deepEqual(readOpRecord(cut, 0, cut.length), { ok: false, why: 'torn' });
  assert.deepEqual(readOpRecord(new Uint8Array(256), 0, 256), { ok: false, why: 'end' });
  assert.deepEqual(readOpRecord(r, 0, r.length - 64), { ok: false, why: 'torn' }, 'a record running past the region');
});

test('a scan stops at the first absent, torn or out-of-sequence record', () => {
  const recs = [1, 2, 3, 4].map((s) => encodeOpRecord(put(`k${s}`, s), s));
  const size = recs.reduce((n, r) => n + r.length, 0);
  const region = new Uint8Array(size + 256);
  let at = 0;
  const offs: number[] = [];
  for (const r of recs) {
    offs.push(at);
    region.set(r, at);
    at += r.length;
  }
  const all = scanOpLog(region, 0, region.length);
  assert.deepEqual([all.records.map((r) => r.seq), all.stop, all.at], [[1, 2, 3, 4], 'end', size]);
  const torn = region.slice();
  torn[offs[2]! + OP_LOG_HEADER_BYTES + 10]! ^= 1;
  const t = scanOpLog(torn, 0, torn.length);
  assert.deepEqual([t.records.map((r) => r.seq), t.stop, t.at], [[1, 2], 'torn', offs[2]]);
  const skipped = region.slice();
  skipped.set(encodeOpRecord(put('k3', 3), 9), offs[2]!); // a record from elsewhere in the sequence
  assert.deepEqual(scanOpLog(skipped, 0, skipped.length).stop, 'sequence');
});

test('the record checksum is keyed with the cluster seed', () => {
  try {
    setChecksumSeed(0x1234);
    const r = encodeOpRecord(put('k', 1), 1);
    assert.ok(readOpRecord(r, 0, r.length).ok);
    setChecksumSeed(0x4321);
    assert.deepEqual(readOpRecord(r, 0, r.length), { ok: false, why: 'torn' });
  } finally {
    setChecksumSeed(0);
  }
});
