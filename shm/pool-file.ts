// The pool file on disk, before and without a mapping: crash-safe creation, and validation that only
// reads. Split from pool.ts so that the file-format checks (each with its stable error code) sit apart
// from the mapped, concurrent segment allocator.
//
// Validation reads through a plain descriptor (pread), never through a mapping, and checks in an order
// where each step may trust what the previous one established: the length before reading, the magic
// before the CRC, the CRC before any field, the fields before the length they imply (POOL_TRUNCATED is
// decided before anything is mapped), and finally every meta word. Nothing is written on any path.

import { closeSync, fstatSync, fsyncSync, linkSync, lstatSync, openSync, readSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { basename, dirname, join } from 'node:path';
import { ErrorCodes, RowanError } from '../config/base/errors.js';
import { posixFallocate } from '../native/libc.js';
import {
  POOL_FORMAT_VERSION,
  POOL_MAGIC,
  SB_CRC,
  SB_SEQ_COUNTER,
  SB_SUPERBLOCK_BYTES,
  SEGMENT_BYTES_MAX,
  SEGMENT_BYTES_MIN,
  SEGMENT_COUNT_MAX,
  SEQ_MAX,
  SUPERBLOCK_BYTES,
  META_WORD_BYTES,
  decodeMetaHalves,
  decodeSuperblock,
  encodeSuperblock,
  poolGeometry,
  superblockCrc,
  type PoolGeometry,
  type Superblock,
} from './pool-layout.js';

export interface ValidatedPool {
  superblock: Superblock;
  /** Highest seq found in the meta table (0 for a pool that never allocated). */
  maxSeq: number;
}

function fail(code: (typeof ErrorCodes)[keyof typeof ErrorCodes], message: string, details?: Record<string, unknown>): never {
  throw new RowanError(code, message, details);
}

export function isPow2(n: number): boolean {
  return Number.isInteger(n) && n > 0 && (n & (n - 1)) === 0;
}

/** Open the pool file read-write (the mapping needs it) without writing; errno -> stable codes. */
export function openPoolFd(path: string): number {
  try {
    return openSync(path, 'r+');
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (e.code === 'ENOENT') fail(ErrorCodes.POOL_NOT_FOUND, `no pool file at ${path}`);
    if (e.code === 'EISDIR') fail(ErrorCodes.POOL_NOT_A_POOL, `${path} is a directory, not a pool file`);
    fail(ErrorCodes.DATA_DIR, `cannot open pool file ${path} read-write: ${e.code ?? e.message}`, { errno: e.errno });
  }
}

/** pread until `length` bytes or end of file; returns what was read. */
function readAt(fd: number, length: number, position: number): Buffer {
  const buf = Buffer.alloc(length);
  let got = 0;
  while (got < length) {
    const n = readSync(fd, buf, got, length - got, position + got);
    if (n === 0) break;
    got += n;
  }
  return buf.subarray(0, got);
}

// ---- validation -------------------------------------------------------------------------------------

function checkMagic(head: Buffer, path: string): void {
  const n = Math.min(head.length, POOL_MAGIC.length);
  if (!head.subarray(0, n).equals(POOL_MAGIC.subarray(0, n)))
    fail(ErrorCodes.POOL_NOT_A_POOL, `${path} is not a rowan pool (no 'ROWAN-PM' magic at byte 0)`);
  // A prefix of the magic and nothing else: a pool cut short, not a foreign file.
  if (head.length < SUPERBLOCK_BYTES)
    fail(ErrorCodes.POOL_TRUNCATED, `${path} is ${head.length} bytes, shorter than the ${SUPERBLOCK_BYTES}-byte superblock`, {
      fileBytes: head.length,
    });
}

/** A superblock whose CRC matched but whose geometry is not the one layout we write: still corrupt. */
function checkGeometry(sb: Superblock, head: Buffer, path: string): void {
  const bad = (what: string): never =>
    fail(ErrorCodes.POOL_SUPERBLOCK_CORRUPT, `${path}: superblock ${what}`);
  if (head.readUInt32LE(SB_SUPERBLOCK_BYTES) !== SUPERBLOCK_BYTES) bad('size field is wrong');
  if (!isPow2(sb.segmentBytes) || sb.segmentBytes < SEGMENT_BYTES_MIN || sb.segmentBytes > SEGMENT_BYTES_MAX)
    bad(`segment size ${sb.segmentBytes} is invalid`);
  if (sb.segmentCount < 1 || sb.segmentCount > SEGMENT_COUNT_MAX) bad(`segment count ${sb.segmentCount} is invalid`);
  const g = poolGeometry(sb.segmentBytes, sb.segmentCount);
  for (const k of ['metaOffset', 'metaBytes', 'dataOffset', 'poolBytes'] as const)
    if (sb[k] !== g[k]) bad(`${k} ${sb[k]} does not match its geometry (${g[k]})`);
}

/** The mutable line and the reserved rest of the superblock page (outside the CRC). */
function checkSuperblockTail(head: Buffer, path: string): void {
  const counter = head.readBigUInt64LE(SB_SEQ_COUNTER);
  if (counter > BigInt(SEQ_MAX))
    fail(ErrorCodes.POOL_SUPERBLOCK_CORRUPT, `${path}: allocation counter ${counter} is beyond the 32-bit seq range`);
  for (let i = SB_SEQ_COUNTER + 8; i < SUPERBLOCK_BYTES; i++) {
    if (head[i] !== 0)
      fail(ErrorCodes.POOL_SUPERBLOCK_CORRUPT, `${path}: reserved superblock byte ${i} is not zero`, { offset: i });
  }
}

function validateSuperblock(fd: number, path: string): Superblock {
  const st = fstatSync(fd);
  if (!st.isFile()) fail(ErrorCodes.POOL_NOT_A_POOL, `${path} is not a regular file`);
  if (st.size === 0) fail(ErrorCodes.POOL_EMPTY_FILE, `${path} is empty (0 bytes): not a pool, or its creation never finished`);
  const head = readAt(fd, Math.min(st.size, SUPERBLOCK_BYTES), 0);
  checkMagic(head, path);
  const stored = head.readUInt32LE(SB_CRC);
  const computed = superblockCrc(head);
  if (stored !== computed)
    fail(ErrorCodes.POOL_SUPERBLOCK_CORRUPT, `${path}: superblock CRC32C mismatch (stored ${hex(stored)}, computed ${hex(computed)})`);
  const sb = decodeSuperblock(head);
  if (sb.version !== POOL_FORMAT_VERSION)
    fail(ErrorCodes.POOL_VERSION, `${path}: pool format version ${sb.version}, this build reads version ${POOL_FORMAT_VERSION}`, {
      version: sb.version,
    });
  checkGeometry(sb, head, path);
  checkSuperblockTail(head, path);
  if (st.size < sb.poolBytes)
    fail(ErrorCodes.POOL_TRUNCATED, `${path} is ${st.size} bytes but its superblock says ${sb.poolBytes}`, {
      fileBytes: st.size,
      poolBytes: sb.poolBytes,
    });
  return sb;
}

/** Every meta word must verify; the padding after the last one must be zero. Returns the max seq. */
function validateMetaTable(fd: number, sb: Superblock, path: string): number {
  const table = readAt(fd, sb.metaBytes, sb.metaOffset);
  let maxSeq = 0;
  for (let i = 0; i < sb.segmentCount; i++) {
    const at = i * META_WORD_BYTES;
    const d = decodeMetaHalves(table.readUInt32LE(at), table.readUInt32LE(at + 4));
    if (!d.ok)
      fail(ErrorCodes.POOL_META_CORRUPT, `${path}: meta word of segment ${i} is corrupt (${d.reason})`, { segment: i });
    maxSeq = Math.max(maxSeq, d.fields.seq);
  }
  for (let at = sb.segmentCount * META_WORD_BYTES; at < table.length; at++) {
    if (table[at] !== 0)
      fail(ErrorCodes.POOL_META_CORRUPT, `${path}: meta table padding byte ${at} (after the last segment) is not zero`, {
        offset: sb.metaOffset + at,
      });
  }
  return maxSeq;
}

/** Check the whole file format through `fd`, reading only. Throws a RowanError with a stable code. */
export function validatePoolFile(fd: number, path: string): ValidatedPool {
  const superblock = validateSuperblock(fd, path);
  return { superblock, maxSeq: validateMetaTable(fd, superblock, path) };
}

function hex(n: number): string {
  return `0x${n.toString(16).padStart(8, '0')}`;
}

// ---- creation ---------------------------------------------------------------------------------------

function exists(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

function writeAll(fd: number, buf: Buffer, position: number): void {
  let done = 0;
  while (done < buf.length) done += writeSync(fd, buf, done, buf.length - done, position + done);
}

/** Make a rename or link in `dir` durable. */
function fsyncDir(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** Build the complete file under a temporary name: blocks allocated, superblock written, fsynced. */
function writeTempPool(tmp: string, g: PoolGeometry, page: Buffer): void {
  let fd: number;
  try {
    fd = openSync(tmp, 'wx', 0o600);
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    fail(ErrorCodes.DATA_DIR, `cannot create ${tmp}: ${e.code ?? e.message}`, { errno: e.errno });
  }
  try {
    try {
      posixFallocate(fd, 0, g.poolBytes);
    } catch (err) {
      fail(ErrorCodes.DATA_DIR, `cannot allocate ${g.poolBytes} bytes for ${tmp}: ${(err as Error).message}`);
    }
    writeAll(fd, page, 0);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * Move the finished file to `path` only if nothing is there. link(2) fails with EEXIST atomically, so
 * two creators racing for one path cannot both succeed. Filesystems without hard links fall back to
 * a check-then-rename, which has a window between the two.
 */
function publishTempPool(tmp: string, path: string): void {
  try {
    linkSync(tmp, path);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') fail(ErrorCodes.POOL_EXISTS, `${path} already exists; not overwriting it`);
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP') throw err;
    if (exists(path)) fail(ErrorCodes.POOL_EXISTS, `${path} already exists; not overwriting it`);
    renameSync(tmp, path);
    return;
  }
  unlinkSync(tmp);
}

/**
 * Create a pool file at `path`, crash-safely: the whole file is written and fsynced under a temporary
 * name in the same directory, then linked into place and the directory fsynced. A crash leaves either
 * no pool or a complete one at `path` (plus perhaps a stray temporary file). The meta table is left
 * all zero: every segment Free and never used.
 */
export function createPoolFile(path: string, g: PoolGeometry, poolId: string, createdAtMs: number): void {
  if (exists(path)) fail(ErrorCodes.POOL_EXISTS, `${path} already exists; not overwriting it`);
  const dir = dirname(path);
  const tmp = join(dir, `.${basename(path)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
  const page = encodeSuperblock({ ...g, version: POOL_FORMAT_VERSION, poolId, createdAtMs });
  try {
    writeTempPool(tmp, g, page);
    publishTempPool(tmp, path);
  } finally {
    if (exists(tmp)) unlinkSync(tmp);
  }
  fsyncDir(dir);
}

