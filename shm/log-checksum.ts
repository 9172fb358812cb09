// The block checksum (§4.2.2): CRC32C over the whole block — header with its checksum field zeroed, the
// payload, and the zero padding up to the next 64-byte line ("the checksum covers the whole log entry").
//
// Readers must not write into the log to zero the field (the bytes may be a shared mapping another
// actor is scanning), so the 4 bytes before the field and 4 zero bytes standing in for it always go
// through a table-driven CRC in JS. For the rest of the block the cost is dominated by something else
// depending on size: a call into the native CRC32C (@node-rs/crc32, hardware CRC) costs a few hundred
// ns however short the input, while slice-by-8 in JS costs a few ns per byte. Small blocks — the common
// 64–256 B entries — are therefore checksummed entirely in JS, and larger ones continue natively from
// the JS state. Both paths compute the same function (test/unit/shm/log.test.ts checks them against
// each other around the threshold).
//
// Keyed (docs/security.md): the CRC register starts from 0xffffffff XOR the cluster's checksum
// seed (ClusterConfig.checksumSeed, a random u32 `rowan cluster` writes; config/cluster.ts). A b-log
// scan resynchronises stride by stride after a torn block (runtime/rowan/blog-scan.ts), so a value
// whose bytes hold a well-formed block at a 64 B boundary would surface as a block of its own if the
// block around it were torn; a client that does not know the seed cannot give such an inner block a
// checksum that verifies (a chance of 2^-32 per torn write). Seed 0 is exactly the unkeyed CRC32C of
// every pool written before seeds existed: those pools, and clusters whose configuration carries no
// seed, stay readable as they are (the on-PM format is unchanged; only the checksum's key is new).
// The seed is per thread state (setChecksumSeed): every thread that encodes or verifies blocks of a
// ROWAN-KV node sets it from the configuration before its first block (actors/shared/node-shared.ts kvOf, the
// node's main thread at cold start, the cold-start helper threads).
import { endianness } from 'node:os';
import { crc32c } from './crc32c.js';
import { CHECKSUM_OFF } from './log-layout.js';

const CASTAGNOLI_REFLECTED = 0x82f63b78;
/** Blocks up to this many bytes are checksummed in JS; larger ones go native after the header prefix.
 *  Measured crossover on the development machine: ~250 B. */
export const JS_CRC_MAX_BYTES = 256;

/** Slice-by-8 tables: TABLES[k*256 + b] is the CRC of byte b followed by k zero bytes. */
const TABLES = (() => {
  const t = new Uint32Array(8 * 256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ CASTAGNOLI_REFLECTED : c >>> 1;
    t[n] = c >>> 0;
  }
  for (let n = 0; n < 256; n++) {
    for (let k = 1; k < 8; k++) {
      const c = t[(k - 1) * 256 + n]!;
      t[k * 256 + n] = (t[c & 0xff]! ^ (c >>> 8)) >>> 0;
    }
  }
  return t;
})();

/** Continue the raw (non-inverted) CRC register `c` over bytes[from, to). */
function update(c: number, b: Uint8Array, from: number, to: number): number {
  const t = TABLES;
  let i = from;
  for (; i + 8 <= to; i += 8) {
    const x = (b[i]! | (b[i + 1]! << 8) | (b[i + 2]! << 16) | (b[i + 3]! << 24)) ^ c;
    c = t[1792 + (x & 0xff)]! ^ t[1536 + ((x >>> 8) & 0xff)]! ^ t[1280 + ((x >>> 16) & 0xff)]! ^ t[1024 + (x >>> 24)]!
      ^ t[768 + b[i + 4]!]! ^ t[512 + b[i + 5]!]! ^ t[256 + b[i + 6]!]! ^ t[b[i + 7]!]!;
  }
  for (; i < to; i++) c = t[(c ^ b[i]!) & 0xff]! ^ (c >>> 8);
  return c;
}

/** The same as update() reading two 32-bit words per step instead of eight bytes; `from` must be a
 *  multiple of 4 and `words` a little-endian Uint32Array over the same bytes. */
function updateWords(c: number, words: Uint32Array, b: Uint8Array, from: number, to: number): number {
  const t = TABLES;
  let i = from;
  for (; i + 8 <= to; i += 8) {
    const lo = words[i >>> 2]! ^ c;
    const hi = words[(i >>> 2) + 1]!;
    c = t[1792 + (lo & 0xff)]! ^ t[1536 + ((lo >>> 8) & 0xff)]! ^ t[1280 + ((lo >>> 16) & 0xff)]! ^ t[1024 + (lo >>> 24)]!
      ^ t[768 + (hi & 0xff)]! ^ t[512 + ((hi >>> 8) & 0xff)]! ^ t[256 + ((hi >>> 16) & 0xff)]! ^ t[hi >>> 24]!;
  }
  return update(c, b, i, to);
}

// A word view of the last byte array checksummed, keyed on identity like the codec's DataView. Only on
// little-endian hosts (the log format is little-endian) and for 4-byte-aligned arrays.
const LITTLE_ENDIAN = endianness() === 'LE';
let wordsOf: Uint8Array | null = null;
let words: Uint32Array | null = null;

function wordView(bytes: Uint8Array): Uint32Array | null {
  if (bytes !== wordsOf) {
    wordsOf = bytes;
    words = LITTLE_ENDIAN && (bytes.byteOffset & 3) === 0
      ? new Uint32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength >>> 2)
      : null;
  }
  return words;
}

const AFTER_CHECKSUM = CHECKSUM_OFF + 4;

/** This thread's JS_CRC_MAX_BYTES (checksumNatively sets it to 0). */
let jsCrcMaxBytes = JS_CRC_MAX_BYTES;

/**
 * Checksum every block of this thread natively after its header prefix, whatever its size: for a
 * thread that verifies blocks only now and then -- a node's main thread, which scans the b-log only at a
 * failover (the prepare's gather, the promotion's catch-up). V8 never optimises its JavaScript there,
 * and the table-driven CRC in baseline code costs several times the native call: 2,500 blocks of 160 B
 * took ~6 ms in JavaScript and 1.2-4 ms natively in a fresh process; in the failover benchmark a
 * survivor's gather went from 21.7 to 16.5 ms of CPU (median) and a promotion's scan from 25.5 to
 * 19.9 ms of wall time (docs/failover.md). The crossover above was measured with optimised code, as
 * the actors that verify blocks all the time run it.
 */
export function checksumNatively(): void {
  jsCrcMaxBytes = 0;
}

/** The CRC register every block checksum starts from: 0xffffffff XOR the seed. */
let register0 = 0xffffffff;
let seed = 0;

/** Key this thread's block checksums with a cluster's seed (a u32; 0 = the unkeyed CRC32C). */
export function setChecksumSeed(s: number): void {
  if (!Number.isInteger(s) || s < 0 || s > 0xffffffff) throw new RangeError(`checksum seed must be a u32, got ${s}`);
  seed = s;
  register0 = (0xffffffff ^ s) >>> 0;
}

/** The seed this thread's checksums are keyed with. */
export function checksumSeed(): number {
  return seed;
}

/** Checksum of the `size`-byte block at `off` (padding included). Ignores the stored checksum. */
export function blockChecksum(bytes: Uint8Array, off: number, size: number): number {
  let c = update(register0, bytes, off, off + CHECKSUM_OFF);
  for (let i = 0; i < 4; i++) c = TABLES[c & 0xff]! ^ (c >>> 8); // the zeroed checksum field
  if (size <= jsCrcMaxBytes) {
    const w = (off & 3) === 0 ? wordView(bytes) : null;
    c = w === null ? update(c, bytes, off + AFTER_CHECKSUM, off + size) : updateWords(c, w, bytes, off + AFTER_CHECKSUM, off + size);
    return ~c >>> 0;
  }
  // @node-rs/crc32 takes and returns finished CRCs (register inverted), so invert across the seam.
  return crc32c(bytes.subarray(off + AFTER_CHECKSUM, off + size), ~c >>> 0) >>> 0;
}

/** Plain CRC32C of bytes[from, to) in JS, for tests that cross-check the two paths. */
export function crc32cJs(bytes: Uint8Array, from: number, to: number): number {
  return ~update(0xffffffff, bytes, from, to) >>> 0;
}
