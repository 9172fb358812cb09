// Scanning a b-log segment. Unlike a t-log (one appender, so its end is the first block that does not
// read), a b-log segment can hold a hole: a slot reserved by a write that was slower than the retry
// bound and is still landing (or whose sender died mid-copy). The writer re-issues such a write into a
// later buffer (§4.3), and writes reserved after the hole were acknowledged, so the scan must not stop
// there: it steps over any stride that does not hold a verified block, one 64 B stride at a time, and
// accepts only blocks whose checksum verifies. A torn or partial write is never accepted.
//
// Resynchronising means the scan may look at strides inside a torn block's payload: a value that embeds
// a well-formed block at a 64 B boundary would surface there. Block checksums are keyed with the
// cluster's seed (shm/log-checksum.ts), which clients never see, so such an inner block does not verify
// (but for a 2^-32 chance) and is stepped over like any other invalid stride. A cluster without a seed
// (made before seeds existed) keeps the unkeyed checksum and this hazard.
import type { Limits } from '../../config/limits.js';
import { readBlock, type Block } from '../../shm/log.js';

export interface BlogScanStats {
  blocks: number;
  /** All-zero strides stepped over (unwritten space: holes and the segment's unused tail). */
  zeroStrides: number;
  /** Non-zero strides that held no verified block (writes in flight, torn writes). */
  invalidStrides: number;
}

export function newBlogScanStats(): BlogScanStats {
  return { blocks: 0, zeroStrides: 0, invalidStrides: 0 };
}

function zeroStride(bytes: Uint8Array, off: number, stride: number): boolean {
  for (let i = 0; i < stride; i++) if (bytes[off + i] !== 0) return false;
  return true;
}

/** Unwritten space is skipped this many bytes at a time by a native compare against zeros (a posted
 *  b-log buffer is mostly unwritten: a failover's scans read every Using one, 64 of 256 KiB in the
 *  failover benchmark, and stepping through them 64 B at a time in JavaScript took 60-220 ms). */
const ZERO_RUN_BYTES = 4096;
/** ... and first this many at a time: a compare call costs more than comparing 4 KiB, most of all in
 *  the cold (unoptimised) code of a failover's scans on the node's main thread: 16 MiB of empty
 *  buffers took 8-12 ms in 4 KiB calls and ~2 ms in 64 KiB ones, each in a fresh process. A multiple
 *  of ZERO_RUN_BYTES. */
const ZERO_SPAN_BYTES = 64 * 1024;
const ZEROS = Buffer.alloc(ZERO_SPAN_BYTES);

function zeroBytes(bytes: Uint8Array, off: number, n: number): boolean {
  return ZEROS.compare(bytes, off, off + n, 0, n) === 0;
}

/** From stride-aligned `off`, the end of the all-zero run of whole ZERO_SPAN_BYTES, then whole
 *  ZERO_RUN_BYTES chunks, then the whole strides left before `end` if they are all zero (`off` when
 *  the next chunk holds a non-zero byte). The last step is one compare where a stride-by-stride loop
 *  would run: a buffer's tail after its last chunk is up to 63 strides, and the failover's scans on the
 *  node's main thread, whose JavaScript is not optimised, spent ~10 ms in them over 64 buffers.
 *  Allocates nothing. */
function zeroRunEnd(bytes: Uint8Array, off: number, end: number, stride: number): number {
  while (off + ZERO_SPAN_BYTES <= end && zeroBytes(bytes, off, ZERO_SPAN_BYTES)) off += ZERO_SPAN_BYTES;
  while (off + ZERO_RUN_BYTES <= end && zeroBytes(bytes, off, ZERO_RUN_BYTES)) off += ZERO_RUN_BYTES;
  const rest = end - off - ((end - off) % stride);
  if (rest > 0 && rest < ZERO_RUN_BYTES && zeroBytes(bytes, off, rest)) off += rest;
  return off;
}

/** Every verified block in [start, end), skipping strides that hold none. */
export function* scanBlogBlocks(
  bytes: Uint8Array,
  start: number,
  end: number,
  limits: Limits,
  stats: BlogScanStats = newBlogScanStats(),
): Generator<Block> {
  const stride = limits.entryAlignBytes;
  let off = start;
  while (off + stride <= end) {
    // Unwritten space (the segment's tail, a hole) is the common case: a zero stride holds no block
    // (type 0 is no entry type), so it is stepped over without decoding.
    if (zeroStride(bytes, off, stride)) {
      // A zero stride starts a run of unwritten space, often to the segment's end: skip whole chunks
      // of it natively (ZERO_RUN_BYTES is a multiple of every stride: powers of two up to it).
      const next = stride <= ZERO_RUN_BYTES && ZERO_RUN_BYTES % stride === 0 ? zeroRunEnd(bytes, off + stride, end, stride) : off + stride;
      stats.zeroStrides += next === off + stride ? 1 : 1 + (next - off - stride) / stride;
      off = next;
      continue;
    }
    const b = readBlock(bytes, off, end, limits);
    if (b !== null) {
      stats.blocks++;
      yield b;
      off += b.size;
      continue;
    }
    stats.invalidStrides++;
    off += stride;
  }
}
