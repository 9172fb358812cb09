// Corrupt pool files for real and open them: every kind of damage is reported with its stable code, the
// process survives, and a failed open leaves the file byte-for-byte as it was (SHA-256 before/after).
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import {
  closeSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  readSync,
  rmSync,
  truncateSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crc32c } from '@node-rs/crc32';
import { OwnerRole, Pool, SegmentState } from '../../shm/pool.js';
import {
  META_OFFSET,
  POOL_FORMAT_VERSION,
  POOL_MAGIC,
  SB_CRC,
  SB_MAGIC_BYTES,
  SB_SEQ_COUNTER,
  SB_VERSION,
  SUPERBLOCK_BYTES,
} from '../../shm/pool-layout.js';
import { ErrorCodes, RowanError } from '../../config/base/errors.js';

const dir = mkdtempSync(join(tmpdir(), 'rowan-pool-fault-'));
after(() => rmSync(dir, { recursive: true, force: true }));

// Small segments keep each case cheap (two SHA-256 of the whole file per open attempt).
const SEG = 4096;
const SEGMENTS = 8;
/** A pool with history: never-used, Using, Used and Committed segments and a freed one. */
let pristine: Buffer;
let poolBytes: number;
let dataOffset: number;

before(() => {
  const p = Pool.create(join(dir, 'base.pm'), { segmentCount: SEGMENTS, segmentBytes: SEG });
  for (let k = 0; k < 5; k++) p.allocate(OwnerRole.Worker, k);
  p.transition(1, SegmentState.Using, SegmentState.Used);
  p.transition(2, SegmentState.Using, SegmentState.Committed);
  p.transition(3, SegmentState.Using, SegmentState.Committed);
  p.free(3);
  poolBytes = p.poolBytes;
  dataOffset = p.dataOffset;
  p.close();
  pristine = readFileSync(join(dir, 'base.pm'));
});

const sha256 = (b: Buffer): string => createHash('sha256').update(b).digest('hex');
const sha = (path: string): string => sha256(readFileSync(path));

/** Open `path`, expect `code`, and check the file was not modified by the attempt. */
function expectRefused(path: string, code: string, why: string): RowanError {
  const before = sha(path);
  let caught: unknown;
  try {
    Pool.open(path).close();
  } catch (err) {
    caught = err;
  }
  assert.ok(caught instanceof RowanError, `${why}: expected ${code}, got ${caught === undefined ? 'a successful open' : String(caught)}`);
  assert.equal(caught.code, code, `${why}: ${caught.message}`);
  assert.equal(sha(path), before, `${why}: the failed open modified the file`);
  return caught;
}

let n = 0;
function withBytes(bytes: Buffer): string {
  const p = join(dir, `case-${n++}.pm`);
  writeFileSync(p, bytes);
  return p;
}

function flipped(bit: number): Buffer {
  const b = Buffer.from(pristine);
  b[bit >> 3]! ^= 1 << (bit & 7);
  return b;
}

/** Flip one bit of the file in place (pwrite of one byte): cheaper than rewriting it per case. */
function flipInPlace(path: string, bit: number): void {
  const fd = openSync(path, 'r+');
  const byte = Buffer.alloc(1);
  readSync(fd, byte, 0, 1, bit >> 3);
  byte[0]! ^= 1 << (bit & 7);
  writeSync(fd, byte, 0, 1, bit >> 3);
  closeSync(fd);
}

/** Each bit in `bits`, flipped alone in one copy of the pristine pool, must be refused with `code`. */
function eachFlipRefused(bits: Iterable<number>, code: string, check?: (err: RowanError, bit: number) => void): void {
  const path = withBytes(pristine);
  for (const bit of bits) {
    flipInPlace(path, bit);
    const err = expectRefused(path, code, `bit ${bit} (byte ${bit >> 3})`);
    check?.(err, bit);
    flipInPlace(path, bit);
  }
  assert.equal(sha(path), sha256(pristine), 'flips were undone');
}

function* range(start: number, end: number, step = 1): Generator<number> {
  for (let i = start; i < end; i += step) yield i;
}

test('the untouched pool opens (the baseline is valid)', () => {
  const p = Pool.open(withBytes(pristine));
  assert.deepEqual(p.counts(), { free: 4, using: 2, used: 1, committed: 1, claiming: 0 });
  p.close();
});

test('every single-bit flip in the CRC-covered superblock header is SUPERBLOCK_CORRUPT', () => {
  eachFlipRefused(range(SB_MAGIC_BYTES * 8, (SB_CRC + 4) * 8), ErrorCodes.POOL_SUPERBLOCK_CORRUPT);
});

test('a flipped bit in the magic makes it a foreign file (POOL_NOT_A_POOL)', () => {
  eachFlipRefused(range(0, SB_MAGIC_BYTES * 8, 5), ErrorCodes.POOL_NOT_A_POOL);
});

test('a set bit in the reserved part of the superblock page is SUPERBLOCK_CORRUPT', () => {
  const bytes = [SB_SEQ_COUNTER + 8, 300, 1000, SUPERBLOCK_BYTES - 1];
  eachFlipRefused(bytes.map((b) => b * 8 + 3), ErrorCodes.POOL_SUPERBLOCK_CORRUPT);
});

test('a seq counter beyond 32 bits is SUPERBLOCK_CORRUPT', () => {
  expectRefused(withBytes(flipped(SB_SEQ_COUNTER * 8 + 40)), ErrorCodes.POOL_SUPERBLOCK_CORRUPT, 'counter bit 40');
});

test('every single-bit flip of a meta word is POOL_META_CORRUPT naming the segment', () => {
  // 0 Using, 1 Used, 2 Committed, 3 Free after use, 4 Using, 7 never used (all-zero word).
  for (const seg of [0, 1, 2, 3, 7]) {
    eachFlipRefused(range((META_OFFSET + seg * 8) * 8, (META_OFFSET + seg * 8 + 8) * 8), ErrorCodes.POOL_META_CORRUPT, (err) => {
      assert.match(err.message, new RegExp(`segment ${seg}\\b`));
      assert.equal(err.details?.['segment'], seg);
    });
  }
});

test('garbage in the meta table padding is POOL_META_CORRUPT', () => {
  expectRefused(withBytes(flipped((META_OFFSET + SEGMENTS * 8 + 17) * 8)), ErrorCodes.POOL_META_CORRUPT, 'padding');
});

test('truncated files of many lengths are POOL_TRUNCATED, checked before mapping', () => {
  const lengths = [1, 4, 7, 8, 12, 100, SB_CRC, SUPERBLOCK_BYTES - 1, SUPERBLOCK_BYTES, SUPERBLOCK_BYTES + 1, META_OFFSET + 4096,
    dataOffset, dataOffset + 1, poolBytes - SEG, poolBytes - 4096, poolBytes - 1];
  for (const len of lengths) {
    const path = withBytes(pristine);
    truncateSync(path, len);
    expectRefused(path, ErrorCodes.POOL_TRUNCATED, `length ${len}`);
  }
});

test('a zero-length file is POOL_EMPTY_FILE', () => {
  expectRefused(withBytes(Buffer.alloc(0)), ErrorCodes.POOL_EMPTY_FILE, 'empty');
});

test('foreign files are POOL_NOT_A_POOL', () => {
  expectRefused(withBytes(randomBytes(1 << 20)), ErrorCodes.POOL_NOT_A_POOL, 'random bytes');
  expectRefused(withBytes(Buffer.from('key=value\n'.repeat(1000))), ErrorCodes.POOL_NOT_A_POOL, 'text file');
  expectRefused(withBytes(Buffer.from('hi\n')), ErrorCodes.POOL_NOT_A_POOL, 'short text file');
  expectRefused(withBytes(Buffer.alloc(poolBytes)), ErrorCodes.POOL_NOT_A_POOL, 'all zeros');
  const d = join(dir, 'a-directory.pm');
  mkdirSync(d);
  assert.throws(() => Pool.open(d), { code: ErrorCodes.POOL_NOT_A_POOL });
});

test('a well-formed superblock of another format version is POOL_VERSION', () => {
  const b = Buffer.from(pristine);
  b.writeUInt32LE(POOL_FORMAT_VERSION + 1, SB_VERSION);
  b.writeUInt32LE(crc32c(b.subarray(0, SB_CRC)), SB_CRC);
  const err = expectRefused(withBytes(b), ErrorCodes.POOL_VERSION, 'version + 1');
  assert.match(err.message, /version 2/);
});

test('the magic followed by garbage is SUPERBLOCK_CORRUPT, not a crash', () => {
  const b = randomBytes(poolBytes);
  POOL_MAGIC.copy(b, 0);
  expectRefused(withBytes(b), ErrorCodes.POOL_SUPERBLOCK_CORRUPT, 'magic + random');
});

test('a missing file is POOL_NOT_FOUND', () => {
  assert.throws(() => Pool.open(join(dir, 'never-created.pm')), { code: ErrorCodes.POOL_NOT_FOUND });
});

test('a file longer than its pool (trailing bytes) still opens, and the extra bytes are not mapped', () => {
  const p = Pool.open(withBytes(Buffer.concat([pristine, Buffer.alloc(8192, 7)])));
  assert.equal(p.region.bytes.length, poolBytes);
  p.close();
});
