// The log entry codec: round trips, size boundaries around the MTU, padding, rejection of every bit
// flip, scans that stop at zeroed or torn bytes, and reassembly of scattered blocks (§4.2.2, Figure 7).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { defaultLimits, type Limits } from '../../../config/limits.js';
import { ErrorCodes } from '../../../config/base/errors.js';
import { BlockAssembler } from '../../../shm/log-assembler.js';
import {
  EntryType, encodeBlocks, encodeEntry, encodedSize, entrySize, keyEqualsAt, readBlock,
  expiresAtOf, readEntryAt, scanBlocks, scanEntries, singleBlockEntry, versionAt, type EntryInput, type LogEntry,
} from '../../../shm/log.js';
import { JS_CRC_MAX_BYTES, blockChecksum, checksumNatively, crc32cJs, setChecksumSeed } from '../../../shm/log-checksum.js';
import { crc32c } from '@node-rs/crc32';
import { FLAG_TXN, FLAGS_OFF, HEADER_BYTES, RESERVED_OFF, VERSION_MAX, txnCount, txnIndex, txnWord } from '../../../shm/log-layout.js';

const L = defaultLimits;
/** Small MTU so multi-block entries are cheap to make in bulk. */
const SMALL: Limits = { ...defaultLimits, segmentBytes: 64 * 1024, mtuBytes: 256, keyBytesMax: 600, valueBytesMax: 4096 };

function bytes(n: number, seed = 1): Uint8Array {
  const b = new Uint8Array(n);
  for (let i = 0; i < n; i++) b[i] = (i * 31 + seed * 7 + (i >> 8)) & 0xff;
  return b;
}

function put(keyLen: number, valueLen: number, version = 7, shard = 3): EntryInput {
  return { type: EntryType.Put, shard, version, key: bytes(keyLen, version), value: bytes(valueLen, version + 1) };
}

/** Encode entries back to back from offset 0; returns the buffer and each entry's offset. */
function writeAll(entries: EntryInput[], limits: Limits, cap?: number): { buf: Uint8Array; offsets: number[]; end: number } {
  const total = entries.reduce((s, e) => s + entrySize(e, limits), 0);
  const buf = new Uint8Array(cap ?? total + 256);
  const offsets: number[] = [];
  let off = 0;
  for (const e of entries) {
    offsets.push(off);
    off += encodeEntry(e, buf, off, limits);
  }
  return { buf, offsets, end: off };
}

/** How many entries a scan must return after bytes [cut, ...) were zeroed: those wholly before the cut,
 *  plus the one straddling it if everything it had past the cut was zero anyway (padding, zero fields). */
function survivors(buf: Uint8Array, offsets: number[], sizes: number[], cut: number): number {
  let n = 0;
  for (let i = 0; i < offsets.length; i++) {
    const end = offsets[i]! + sizes[i]!;
    if (end <= cut || buf.subarray(Math.max(cut, offsets[i]!), end).every((x) => x === 0)) n++;
    else break;
  }
  return n;
}

function assertSame(got: LogEntry | null, want: EntryInput): void {
  assert.ok(got, 'entry should read back');
  assert.equal(got.type, want.type);
  assert.equal(got.shard, want.shard);
  assert.equal(got.version, want.version);
  assert.deepEqual(Buffer.from(got.key), Buffer.from(want.key ?? new Uint8Array(0)));
  assert.deepEqual(Buffer.from(got.value), Buffer.from(want.value ?? new Uint8Array(0)));
  assert.equal(got.expiresAt, want.expiresAt ?? 0);
}

function expectCode(fn: () => unknown, code: string): void {
  assert.throws(fn, (err: unknown) => (err as { code?: string }).code === code);
}

describe('log entry round trips', () => {
  it('PUT, DEL and COMMITVER read back with their fields', () => {
    const es: EntryInput[] = [
      put(8, 100, 1, 0),
      { type: EntryType.Del, shard: 65535, version: 2, key: bytes(5) },
      { type: EntryType.CommitVer, shard: 9, version: VERSION_MAX },
      put(1, 0, 2 ** 40 + 5, 12),
    ];
    const { buf, offsets, end } = writeAll(es, L);
    es.forEach((e, i) => assertSame(readEntryAt(buf, offsets[i]!, L), e));
    const scanned = [...scanEntries(buf, 0, buf.length, L)];
    assert.equal(scanned.length, es.length);
    scanned.forEach((s, i) => {
      assertSame(s, es[i]!);
      assert.equal(s.offset, offsets[i]);
    });
    assert.equal(scanned.at(-1)!.offset + scanned.at(-1)!.bytes, end);
  });

  it('the first 64 bits of every block are non-zero (the control actor relies on it, §4.3)', () => {
    for (const e of [put(0, 0), { type: EntryType.CommitVer, shard: 0, version: 0 } as EntryInput, put(0, 9000)]) {
      for (const block of encodeBlocks(e, L)) assert.notEqual(Buffer.from(block.subarray(0, 8)).readBigUInt64LE(), 0n);
    }
  });

  it('sizes are 64-byte multiples and padding is zero even over stale bytes', () => {
    for (const [k, v] of [[0, 0], [1, 31], [1, 32], [10, 22], [16, 16], [100, 1000], [3, 20000]] as const) {
      const e = put(k, v);
      const size = entrySize(e, L);
      assert.equal(size % 64, 0);
      assert.equal(size, encodedSize(k, v, L));
      const buf = new Uint8Array(size + 64).fill(0xee);
      assert.equal(encodeEntry(e, buf, 64, L), size);
      if (size <= L.mtuBytes) assert.ok(buf.subarray(64 + HEADER_BYTES + k + v, 64 + size).every((x) => x === 0));
      assertSame(readEntryAt(buf, 64, L), e);
    }
  });
});

describe('checksum', () => {
  it('the JS and native paths compute CRC32C over the block with the checksum field zeroed', () => {
    const b = bytes(5000, 3);
    for (const size of [64, 128, JS_CRC_MAX_BYTES - 64, JS_CRC_MAX_BYTES, JS_CRC_MAX_BYTES + 64, 1024, 4096]) {
      const zeroed = b.slice(64, 64 + size);
      zeroed.fill(0, 4, 8);
      const want = crc32c(zeroed) >>> 0;
      assert.equal(blockChecksum(b, 64, size), want, `size ${size}`);
      assert.equal(crc32cJs(zeroed, 0, size), want);
    }
    assert.equal(crc32cJs(new TextEncoder().encode('123456789'), 0, 9), 0xe3069283); // the CRC-32C check value
  });

  it("a thread that checksums natively (a node's main thread) gets the same checksums at every size, keyed or not", () => {
    const b = bytes(5000, 7);
    const sizes = [64, 128, 192, JS_CRC_MAX_BYTES, JS_CRC_MAX_BYTES + 64, 4096];
    const all = () => [0, 0xdeadbeef].flatMap((seed) => (setChecksumSeed(seed), sizes.flatMap((size) => [0, 64, 132].map((off) => blockChecksum(b, off, size)))));
    const js = all();
    checksumNatively(); // for the rest of this file's thread: the values must not change
    try {
      assert.deepEqual(all(), js);
    } finally {
      setChecksumSeed(0);
    }
  });
});

describe('index probes', () => {
  it('keyEqualsAt and versionAt read keys (also block-spanning ones) and versions in place', () => {
    const long = put(SMALL.keyBytesMax, 50, 2 ** 47 + 3);
    const es = [put(16, 40, 12), long, { type: EntryType.CommitVer, shard: 1, version: 9 } as EntryInput];
    const { buf, offsets } = writeAll(es, SMALL);
    assert.ok(keyEqualsAt(buf, offsets[0]!, es[0]!.key!, SMALL));
    assert.ok(keyEqualsAt(buf, offsets[1]!, long.key!, SMALL));
    const other = long.key!.slice();
    other[other.length - 1]! ^= 1;
    assert.ok(!keyEqualsAt(buf, offsets[1]!, other, SMALL));
    assert.ok(!keyEqualsAt(buf, offsets[0]!, long.key!, SMALL));
    assert.ok(!keyEqualsAt(buf, offsets[2]!, new Uint8Array(0), SMALL), 'a COMMITVER has no key');
    assert.deepEqual(offsets.map((o) => versionAt(buf, o)), [12, 2 ** 47 + 3, 9]);
  });
});

describe('size boundaries around the MTU', () => {
  const P = L.mtuBytes - HEADER_BYTES;
  it('an entry of exactly one MTU is one block; one byte more makes two', () => {
    assert.equal(encodedSize(10, P - 10, L), L.mtuBytes);
    assert.equal(encodeBlocks(put(10, P - 10), L).length, 1);
    assert.equal(encodedSize(10, P - 9, L), L.mtuBytes + 64);
    const blocks = encodeBlocks(put(10, P - 9), L);
    assert.deepEqual(blocks.map((b) => b.length), [L.mtuBytes, 64]);
    const { buf, offsets } = writeAll([put(10, P - 10), put(10, P - 9), put(2, 3)], L);
    const got = [...scanEntries(buf, 0, buf.length, L)];
    assert.deepEqual(got.map((g) => g.offset), offsets);
    assertSame(got[1]!, put(10, P - 9));
  });

  it('empty value, maximum key, and a key split across blocks round-trip', () => {
    const cases = [put(0, 0), put(L.keyBytesMax, 0), put(L.keyBytesMax, 3 * P + 17)];
    const { buf } = writeAll(cases, L);
    const got = [...scanEntries(buf, 0, buf.length, L)];
    assert.equal(got.length, 3);
    cases.forEach((c, i) => assertSame(got[i]!, c));
    const split = put(SMALL.keyBytesMax, 1000);
    assert.ok(SMALL.keyBytesMax > SMALL.mtuBytes); // the key alone spans blocks
    assertSame(readEntryAt(writeAll([split], SMALL).buf, 0, SMALL), split);
  });

  it('a maximum-size value is split into the expected blocks', () => {
    const e = put(16, L.valueBytesMax);
    const blocks = encodeBlocks(e, L);
    assert.equal(blocks.length, Math.ceil((16 + L.valueBytesMax) / P));
    blocks.forEach((b, seq) => {
      const blk = readBlock(b, 0, b.length, L);
      assert.ok(blk);
      assert.equal(blk.seq, seq);
      assert.equal(blk.cnt, blocks.length);
    });
    assertSame(readEntryAt(writeAll([e], L).buf, 0, L), e);
  });
});

describe('validation before anything is written', () => {
  it('rejects oversize keys and values and malformed entries with stable codes', () => {
    const buf = new Uint8Array(1 << 20);
    expectCode(() => encodeEntry(put(L.keyBytesMax + 1, 0), buf, 0, L), ErrorCodes.KEY_TOO_LARGE);
    expectCode(() => encodeEntry(put(1, L.valueBytesMax + 1), buf, 0, L), ErrorCodes.VALUE_TOO_LARGE);
    expectCode(() => encodeEntry({ ...put(1, 1), version: 2 ** 48 }, buf, 0, L), ErrorCodes.BAD_ARGUMENT);
    expectCode(() => encodeEntry({ ...put(1, 1), version: -1 }, buf, 0, L), ErrorCodes.BAD_ARGUMENT);
    expectCode(() => encodeEntry({ ...put(1, 1), shard: 65536 }, buf, 0, L), ErrorCodes.BAD_ARGUMENT);
    expectCode(() => encodeEntry({ ...put(1, 1), type: 0 as EntryType }, buf, 0, L), ErrorCodes.BAD_ARGUMENT);
    expectCode(() => encodeEntry({ ...put(1, 1), type: EntryType.Del }, buf, 0, L), ErrorCodes.BAD_ARGUMENT);
    expectCode(() => encodeEntry({ type: EntryType.CommitVer, shard: 1, version: 1, key: bytes(1) }, buf, 0, L),
      ErrorCodes.BAD_ARGUMENT);
    expectCode(() => encodeEntry(put(1, 1), buf, 32, L), ErrorCodes.BAD_ARGUMENT);
    expectCode(() => encodeEntry(put(1, 100), buf, buf.length - 64, L), ErrorCodes.BAD_ARGUMENT);
    const tight: Limits = { ...SMALL, valueBytesMax: 1 << 20 };
    expectCode(() => encodedSize(0, 70_000, tight), ErrorCodes.ENTRY_TOO_LARGE);
    assert.ok(buf.every((x) => x === 0), 'a rejected entry writes nothing');
  });
});

describe('corruption is rejected', () => {
  it('every single-bit flip in a block is rejected', () => {
    for (const e of [put(7, 90), { type: EntryType.CommitVer, shard: 4, version: 99 } as EntryInput]) {
      const [block] = encodeBlocks(e, L);
      const b = block!;
      assert.ok(readBlock(b, 0, b.length, L));
      for (let bit = 0; bit < b.length * 8; bit++) {
        b[bit >> 3]! ^= 1 << (bit & 7);
        assert.equal(readBlock(b, 0, b.length, L), null, `flip of bit ${bit} accepted`);
        assert.equal(readEntryAt(b, 0, L), null);
        b[bit >> 3]! ^= 1 << (bit & 7);
      }
    }
  });

  it('a bit flip in a later block of a multi-block entry rejects the entry and ends the scan', () => {
    const es = [put(5, 600), put(5, 700), put(5, 10)];
    const { buf, offsets } = writeAll(es, SMALL);
    buf[offsets[1]! + SMALL.mtuBytes + 40]! ^= 0x10; // second block of entry 1
    assert.equal(readEntryAt(buf, offsets[1]!, SMALL), null);
    assert.equal([...scanEntries(buf, 0, buf.length, SMALL)].length, 1);
  });

  it('a zeroed header stops the scan', () => {
    const { buf, offsets } = writeAll([put(3, 3), put(3, 3), put(3, 3)], L);
    buf.fill(0, offsets[1]!, offsets[1]! + 8);
    assert.equal([...scanEntries(buf, 0, buf.length, L)].length, 1);
    assert.equal([...scanBlocks(buf, 0, buf.length, L)].length, 1);
  });

  it('a block running past `end` is not read', () => {
    const { buf, end } = writeAll([put(3, 300)], L);
    assert.equal(readBlock(buf, 0, end - 64, L), null);
    assert.ok(readBlock(buf, 0, end, L));
  });

  it('torn entries stop the scan at every cut point', () => {
    const es = [put(4, 100), put(4, 900), put(4, 20), put(9, 500), put(1, 1)];
    const { buf, offsets, end } = writeAll(es, SMALL);
    const sizes = es.map((e) => entrySize(e, SMALL));
    let strictPrefixes = 0;
    for (let cut = 0; cut <= end; cut += 8) {
      const torn = buf.slice();
      torn.fill(0, cut);
      const got = [...scanEntries(torn, 0, torn.length, SMALL)];
      const want = survivors(buf, offsets, sizes, cut);
      assert.equal(got.length, want, `cut at ${cut}`);
      got.forEach((g, i) => assertSame(g, es[i]!));
      if (want < es.length) strictPrefixes++;
    }
    assert.ok(strictPrefixes > end / 16, 'most cuts must actually lose entries');
  });
});

describe('scattered blocks (Figure 7)', () => {
  it('BlockAssembler rebuilds entries from interleaved, reordered and repeated blocks', () => {
    const a = put(20, 700, 64, 1);
    const b = put(3, 450, 65, 1);
    const c = put(3, 10, 66, 2);
    const ba = encodeBlocks(a, SMALL);
    const bb = encodeBlocks(b, SMALL);
    const bc = encodeBlocks(c, SMALL);
    assert.ok(ba.length >= 4 && bb.length >= 2 && bc.length === 1);
    const order = [ba[2]!, bb[1]!, ba[0]!, bc[0]!, bb[1]!, ba[1]!, bb[0]!, ...bb.slice(2), ...ba.slice(3)];
    const log = new Uint8Array(order.reduce((s, x) => s + x.length, 0) + 64);
    let off = 0;
    for (const blk of order) {
      log.set(blk, off);
      off += blk.length;
    }
    const asm = new BlockAssembler(SMALL);
    const done: LogEntry[] = [];
    for (const blk of scanBlocks(log, 0, log.length, SMALL)) {
      const e = asm.add(blk);
      if (e) done.push(e);
    }
    assert.deepEqual(done.map((d) => d.version), [66, 65, 64]);
    assertSame(done[0]!, c);
    assertSame(done[1]!, b);
    assertSame(done[2]!, a);
    assert.equal(asm.pending, 0);
    assert.equal(asm.duplicates, 1);
    // scanEntries expects contiguous blocks and stops at the first out-of-place one.
    assert.equal([...scanEntries(log, 0, log.length, SMALL)].length, 0);
  });

  it('BlockAssembler drops entries whose other blocks never come: by age and beyond a count', () => {
    const asm = new BlockAssembler(SMALL);
    // The first block of 5 multi-block entries, at t = 0, 10, 20, 30, 40 ms; their other blocks never come.
    for (let i = 0; i < 5; i++) assert.equal(asm.add(readBlock(encodeBlocks(put(3, 700, 100 + i, 1), SMALL)[0]!, 0, 4096, SMALL)!, i * 10), null);
    assert.equal(asm.pending, 5);
    assert.equal(asm.expire(45, 100, 10), 0, 'none is old, and 5 is within the count');
    assert.equal(asm.expire(115, 100, 10), 2, 'the two born at 0 and 10 ms are over 100 ms old');
    assert.equal(asm.expire(115, 100, 1), 2, 'beyond a count of 1, the oldest go first');
    assert.equal(asm.pending, 1);
    // The one left still completes when its remaining blocks come.
    const last = encodeBlocks(put(3, 700, 104, 1), SMALL);
    let done = null;
    for (const blk of last.slice(1)) done = asm.add(readBlock(blk, 0, 4096, SMALL)!, 130);
    assert.equal(done?.version, 104);
    assert.equal(asm.pending, 0);
  });

  it('a block that disagrees with its pending entry is dropped', () => {
    const asm = new BlockAssembler(SMALL);
    const [first] = encodeBlocks(put(3, 600, 5, 1), SMALL);
    const other = encodeBlocks(put(3, 900, 5, 1), SMALL)[1]!;
    assert.equal(asm.add(readBlock(first!, 0, first!.length, SMALL)!), null);
    assert.equal(asm.add(readBlock(other, 0, other.length, SMALL)!), null);
    assert.equal(asm.conflicts, 1);
    assert.equal(asm.pending, 1);
  });
});

describe('property: append then scan', () => {
  const entryArb = fc.record({
    type: fc.constantFrom(EntryType.Put, EntryType.Put, EntryType.Del, EntryType.CommitVer),
    shard: fc.integer({ min: 0, max: 0xffff }),
    version: fc.integer({ min: 0, max: VERSION_MAX }),
    keyLen: fc.integer({ min: 0, max: SMALL.keyBytesMax }),
    valueLen: fc.oneof(fc.integer({ min: 0, max: 300 }), fc.integer({ min: 0, max: SMALL.valueBytesMax })),
    seed: fc.integer({ min: 0, max: 255 }),
    expiresAt: fc.constantFrom(0, 1, 1_700_000_000_123, 2 ** 53 - 1),
  }).map(({ type, shard, version, keyLen, valueLen, seed, expiresAt }): EntryInput => {
    if (type === EntryType.CommitVer) return { type, shard, version };
    if (type === EntryType.Del) return { type, shard, version, key: bytes(keyLen, seed) };
    // A deadline must lie in block 0 with the key (SMALL's blocks hold 224 payload bytes).
    const exp = keyLen + 8 <= SMALL.mtuBytes - HEADER_BYTES ? expiresAt : 0;
    return { type, shard, version, key: bytes(keyLen, seed), value: bytes(valueLen, seed + 1), ...(exp ? { expiresAt: exp } : {}) };
  });

  it('returns exactly the appended sequence, and any truncation yields a prefix', () => {
    fc.assert(
      fc.property(fc.array(entryArb, { maxLength: 12 }), fc.double({ min: 0, max: 1, noNaN: true }), (es, cutAt) => {
        const { buf, offsets, end } = writeAll(es, SMALL);
        const got = [...scanEntries(buf, 0, buf.length, SMALL)];
        assert.equal(got.length, es.length);
        got.forEach((g, i) => {
          assertSame(g, es[i]!);
          assert.equal(g.offset, offsets[i]);
        });
        const cut = Math.floor(cutAt * end);
        const original = buf.slice();
        buf.fill(0, cut);
        const prefix = [...scanEntries(buf, 0, buf.length, SMALL)];
        const sizes = es.map((e) => entrySize(e, SMALL));
        const want = survivors(original, offsets, sizes, cut);
        assert.equal(prefix.length, want);
        prefix.forEach((g, i) => assertSame(g, es[i]!));
      }),
      { numRuns: 150 },
    );
  });
});

describe('transaction entries (FLAG_TXN, reserved = count | index << 16)', () => {
  it('round-trips the transaction word through single- and multi-block entries and the assembler', () => {
    for (const e of [put(5, 10), put(300, 900)]) {
      const word = txnWord(3, 2);
      const blocks = encodeBlocks({ ...e, txn: word }, SMALL);
      const buf = new Uint8Array(blocks.reduce((n, b) => n + b.length, 0));
      let at = 0;
      for (const b of blocks) (buf.set(b, at), (at += b.length));
      const back = readEntryAt(buf, 0, SMALL)!;
      assert.equal(back.txn, word);
      assert.equal(txnCount(back.txn), 3);
      assert.equal(txnIndex(back.txn), 2);
      const asm = new BlockAssembler(SMALL);
      let whole = null;
      for (const b of scanBlocks(buf, 0, buf.length, SMALL)) whole = asm.add(b) ?? whole;
      assert.equal(whole!.txn, word);
      // An entry of no transaction reads back with 0.
      const plain = new Uint8Array(entrySize(e, SMALL));
      encodeEntry(e, plain, 0, SMALL);
      assert.equal(readEntryAt(plain, 0, SMALL)!.txn, 0);
    }
  });

  it('rejects a reserved word without the flag, the flag with count 0 or index >= count, and the flag on COMMITVER', () => {
    const forge = (e: EntryInput, flags: number, reserved: number): Uint8Array => {
      const b = encodeBlocks(e, L)[0]!.slice();
      b[FLAGS_OFF] = flags;
      new DataView(b.buffer).setUint32(RESERVED_OFF, reserved, true);
      new DataView(b.buffer).setUint32(4, 0, true);
      new DataView(b.buffer).setUint32(4, blockChecksum(b, 0, b.length), true); // checksum over the forged header
      return b;
    };
    assert.notEqual(readEntryAt(forge(put(4, 4), FLAG_TXN, txnWord(2, 1)), 0, L), null, 'a well-formed forgery reads');
    assert.equal(readEntryAt(forge(put(4, 4), 0, txnWord(2, 1)), 0, L), null);
    assert.equal(readEntryAt(forge(put(4, 4), FLAG_TXN, txnWord(0, 0)), 0, L), null);
    assert.equal(readEntryAt(forge(put(4, 4), FLAG_TXN, txnWord(2, 2)), 0, L), null);
    assert.equal(readEntryAt(forge({ type: EntryType.CommitVer, shard: 1, version: 9 }, FLAG_TXN, txnWord(1, 0)), 0, L), null);
  });
});

describe('expiry deadlines in entries (flag 0x02)', () => {
  it('a PUT with a deadline reads back key, value and deadline, single and multi-block, through blocks too', () => {
    for (const valueLen of [0, 10, 3 * 256]) {
      const e: EntryInput = { ...put(20, valueLen, 9, 1), expiresAt: 1_800_000_000_456 };
      const { buf, end } = writeAll([e], SMALL);
      assert.equal(end, encodedSize(20, valueLen, SMALL, true));
      assert.equal(buf[1], 0x02, 'flag bit 0x02 set in the header');
      assertSame(readEntryAt(buf, 0, SMALL), e);
      assert.equal(expiresAtOf(buf, 0), 1_800_000_000_456);
      assert.ok(keyEqualsAt(buf, 0, e.key!, SMALL), 'key probes ignore the deadline');
      const asm = new BlockAssembler(SMALL);
      let whole = null;
      for (const b of encodeBlocks(e, SMALL)) whole = asm.add(readBlock(b, 0, b.length, SMALL)!) ?? whole;
      assertSame(whole, e);
      if (valueLen === 10) assert.deepEqual(Buffer.from(singleBlockEntry(readBlock(buf, 0, end, SMALL)!).value), Buffer.from(e.value!));
    }
  });

  it('refuses a deadline on a DEL, a bad deadline, and a key too long to share block 0 with it', () => {
    expectCode(() => entrySize({ type: EntryType.Del, shard: 0, version: 1, key: bytes(3), expiresAt: 5 }, L), ErrorCodes.BAD_ARGUMENT);
    expectCode(() => entrySize({ ...put(3, 3), expiresAt: 1.5 }, L), ErrorCodes.BAD_ARGUMENT);
    expectCode(() => entrySize({ ...put(220, 3), expiresAt: 5 }, SMALL), ErrorCodes.BAD_ARGUMENT);
  });

  it('a flag bit 0x02 on a DEL block does not read (checksum recomputed, so only the shape check can refuse it)', () => {
    const { buf } = writeAll([{ type: EntryType.Del, shard: 0, version: 1, key: bytes(3) }], L);
    buf[1] = 0x02;
    buf.fill(0, 4, 8);
    new DataView(buf.buffer).setUint32(4, blockChecksum(buf, 0, 64), true);
    assert.equal(readEntryAt(buf, 0, L), null);
  });
});
