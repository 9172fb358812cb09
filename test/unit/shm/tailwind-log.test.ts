// shm/tailwind-log.ts: Tailwind's recovery scan (its Algorithm 1) over a backup buffer laid down the
// way the writer lays it (head, then each entry followed by the running checksum). Every record with a
// matching checksum is found; each of Figure 5's torn cases (checksum partly written, body partly
// written, header partly written) and a bit flip in an earlier header stop the scan before the torn
// record; a closed buffer's recorded length and checksum are checked.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { defaultLimits as L } from '../../../config/limits.js';
import { EntryType, encodeBlocks } from '../../../shm/log.js';
import { PAYLOAD_LEN_OFF } from '../../../shm/log-layout.js';
import {
  TW_CHECKSUM_BYTES, TW_HEAD_BYTES, chainEntry, chainStart, closedMatches, encodeHead, newTwScanStats, putChecksumBlock,
  readHead, scanTailwindBuffer, storedChecksum, type TwScanStats,
} from '../../../shm/tailwind-log.js';

const BUF = 64 * 1024;
const BASE = 4096; // the buffer does not start at 0 of the pool

function entry(i: number, big = false): Uint8Array {
  const value = big ? `v${i}-`.padEnd(3 * L.mtuBytes, 'x') : `value-${i}`;
  const blocks = encodeBlocks({ type: EntryType.Put, shard: i % 4, version: i + 1, key: Buffer.from(`k${i}`), value: Buffer.from(value) }, L);
  return Buffer.concat(blocks);
}

interface Laid {
  pool: Uint8Array;
  /** Offset of each record's first byte, and of each checksum block. */
  records: number[];
  checksums: number[];
  end: number;
  last: number;
}

/** A buffer at BASE holding `n` records as the writer lays them (every 5th one multi-block). */
function lay(n: number): Laid {
  const pool = new Uint8Array(BASE + BUF);
  pool.set(encodeHead({ node: 3, worker: 1, seq: 0 }), BASE);
  let at = BASE + TW_HEAD_BYTES;
  let running = chainStart();
  const records: number[] = [];
  const checksums: number[] = [];
  for (let i = 0; i < n; i++) {
    const e = entry(i, i % 5 === 4);
    const rec = new Uint8Array(e.length + TW_CHECKSUM_BYTES);
    rec.set(e);
    running = chainEntry(running, e, L);
    putChecksumBlock(rec, e.length, running);
    pool.set(rec, at);
    records.push(at);
    checksums.push(at + e.length);
    at += rec.length;
  }
  return { pool, records, checksums, end: at, last: storedChecksum(running) };
}

function scan(l: Laid): { versions: number[]; st: TwScanStats } {
  const st = newTwScanStats();
  const versions: number[] = [];
  for (const b of scanTailwindBuffer(l.pool, BASE, BASE + BUF, L, st)) if (b.seq === 0) versions.push(b.version);
  return { versions, st };
}

const upTo = (n: number) => Array.from({ length: n }, (_, i) => i + 1);

test('tailwind scan: every record of an intact buffer, in order, up to the zero that ends it', () => {
  const l = lay(20);
  const { versions, st } = scan(l);
  assert.deepEqual(versions, upTo(20));
  assert.equal(st.records, 20);
  assert.equal(st.stop, 'end');
  assert.equal(st.validEnd, l.end);
  assert.equal(st.checksum, l.last);
  assert.equal(st.dropped, 0);
});

test('tailwind scan: a checksum written only in part (its last bytes still zero) drops its record and stops', () => {
  const l = lay(10);
  l.pool.fill(0, l.checksums[9]! + 6, l.checksums[9]! + TW_CHECKSUM_BYTES); // half the value and the magic
  const { versions, st } = scan(l);
  assert.deepEqual(versions, upTo(9));
  assert.equal(st.stop, 'checksum');
  assert.equal(st.validEnd, l.records[9]);
  assert.ok(st.dropped >= 1);
});

test('tailwind scan: a record whose body is written only in part is not yielded, nor anything after it', () => {
  const l = lay(10);
  // Record 4 is multi-block: its third block's payload cut off, and nothing after it written.
  l.pool.fill(0, l.records[4]! + 2 * L.mtuBytes + 40, BASE + BUF);
  const { versions, st } = scan(l);
  assert.deepEqual(versions, upTo(4));
  assert.equal(st.stop, 'torn');
  assert.equal(st.validEnd, l.records[4]);
});

test('tailwind scan: a record whose header is written only in part (length bits still zero) is not yielded', () => {
  const l = lay(6);
  l.pool.fill(0, l.records[5]! + PAYLOAD_LEN_OFF + 1, BASE + BUF);
  const { versions, st } = scan(l);
  assert.deepEqual(versions, upTo(5));
  assert.notEqual(st.stop, 'end');
  assert.equal(st.validEnd, l.records[5]);
});

test('tailwind scan: a bit flipped in an earlier header makes the next checksum mismatch', () => {
  const l = lay(8);
  const { versions: before } = scan(l);
  assert.deepEqual(before, upTo(8));
  // Flip a bit of record 3's header and give the block a checksum that verifies again: only the
  // chain can tell (the paper's header checksum, §3.1).
  const r3 = l.records[3]!;
  l.pool[r3 + 2]! ^= 0x01; // the shard field
  const blocks = encodeBlocks({ type: EntryType.Put, shard: (3 % 4) ^ 1, version: 4, key: Buffer.from('k3'), value: Buffer.from('value-3') }, L);
  l.pool.set(blocks[0]!, r3);
  const { versions, st } = scan(l);
  assert.deepEqual(versions, upTo(3));
  assert.equal(st.stop, 'checksum');
});

test('tailwind scan: a closed head names the log and is checked against where the scan ends', () => {
  const l = lay(5);
  const closed = { bytes: l.end - BASE - TW_HEAD_BYTES, checksum: l.last };
  l.pool.set(encodeHead({ node: 3, worker: 1, seq: 7 }, closed), BASE);
  const head = readHead(l.pool, BASE)!;
  assert.deepEqual(head, { node: 3, worker: 1, seq: 7, closed });
  assert.ok(closedMatches(head, BASE, scan(l).st));
  l.pool.fill(0, l.checksums[4]!, l.checksums[4]! + 4); // the last checksum's type byte lost
  assert.ok(!closedMatches(head, BASE, scan(l).st), 'a closed buffer that ends early is corrupt');
  assert.equal(readHead(new Uint8Array(128), 0), null, 'a zero segment is no buffer');
});

test('tailwind: a chain that computes to 0 is stored as 1, so a zero-filled checksum never matches', () => {
  assert.equal(storedChecksum(0), 1);
  assert.equal(storedChecksum(5), 5);
  const e = entry(1);
  assert.equal(new DataView(e.buffer, e.byteOffset).getUint32(PAYLOAD_LEN_OFF, true) > 0, true);
});
