// The key hash of rowan: 64 bits, returned as two uint32 numbers {hi, lo} so the hot path never builds a
// BigInt. The 64-bit value is hi * 2^32 + lo.
//
// What the bits decide (and why they must never change between processes or versions):
//   - shard routing: a shard owns a contiguous range of the 64-bit hash space (§4.1), so the range is
//     decided mostly by `hi`;
//   - the index bucket: `(lo & 0x7fffffff) % bucketCount` (shm/index.ts), independent of the shard's `hi` range;
//   - the 16-bit index tag: `hi & 0xffff`, the low bits of `hi`, which a shard range of more than 2^16
//     hi-values spans uniformly.
// Changing a seed, a constant or the mixing order re-routes every key: that is a format change.
//
// Choice: one pass over the key in 4-byte little-endian words feeding two 32-bit lanes that use
// different round functions, so the lanes are not copies of each other:
//   lane A = the MurmurHash3 x86_32 block round (c1, c2, rotl 15/13, *5 + 0xe6546b64);
//   lane B = the xxHash32 accumulator round (acc + k*PRIME2, rotl 13, *PRIME1).
// The tail (1..3 bytes) is folded into both lanes, the length into both, then the lanes are
// cross-added and each finished with the Murmur3 fmix32 avalanche, then cross-added again — the same
// finalisation MurmurHash3 x86_128 uses to make its 32-bit lanes depend on each other. Everything is
// Math.imul / shifts on int32, which V8 compiles to plain integer instructions. It is not a
// cryptographic hash and does not resist chosen-key flooding; keys come from clients of a trusted
// deployment (the same trade-off as the paper's CityHash-style hashing).

/** A 64-bit key hash as two unsigned 32-bit halves. */
export interface KeyHash {
  hi: number;
  lo: number;
}

/** Seeds of the two lanes. Part of the on-wire/on-disk format (shard routing): never change. */
export const HASH_SEED_A = 0x9747b28c;
export const HASH_SEED_B = 0x2d358dcc;

const C1 = 0xcc9e2d51; // murmur3 block constants
const C2 = 0x1b873593;
const PRIME1 = 0x9e3779b1; // xxh32 primes
const PRIME2 = 0x85ebca77;
const PRIME3 = 0xc2b2ae3d;

function rotl(x: number, r: number): number {
  return (x << r) | (x >>> (32 - r));
}

function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h;
}

/** Hash `key` into `out` (no allocation); returns `out`. */
export function hash64Into(key: Uint8Array, out: KeyHash): KeyHash {
  const len = key.length;
  const blocksEnd = len & ~3;
  let a = HASH_SEED_A | 0;
  let b = HASH_SEED_B | 0;
  for (let i = 0; i < blocksEnd; i += 4) {
    const k = key[i]! | (key[i + 1]! << 8) | (key[i + 2]! << 16) | (key[i + 3]! << 24);
    let k1 = Math.imul(k, C1);
    k1 = Math.imul(rotl(k1, 15), C2);
    a ^= k1;
    a = (Math.imul(rotl(a, 13), 5) + 0xe6546b64) | 0;
    b = Math.imul(rotl((b + Math.imul(k, PRIME2)) | 0, 13), PRIME1);
  }
  const rest = len & 3;
  if (rest !== 0) {
    let k = 0;
    if (rest === 3) k ^= key[blocksEnd + 2]! << 16;
    if (rest >= 2) k ^= key[blocksEnd + 1]! << 8;
    k ^= key[blocksEnd]!;
    a ^= Math.imul(rotl(Math.imul(k, C1), 15), C2);
    b = Math.imul(rotl((b + Math.imul(k, PRIME3)) | 0, 17), PRIME1);
  }
  a ^= len;
  b ^= len;
  a = (a + b) | 0;
  b = (b + a) | 0;
  a = fmix32(a);
  b = fmix32(b);
  a = (a + b) | 0;
  b = (b + a) | 0;
  out.hi = a >>> 0;
  out.lo = b >>> 0;
  return out;
}

/** Convenience form that allocates the result; use `hash64Into` on hot paths. */
export function hash64(key: Uint8Array): KeyHash {
  return hash64Into(key, { hi: 0, lo: 0 });
}

/** The hash as one unsigned 64-bit BigInt (routing tables, printing, tests; not for hot paths). */
export function hashToBigInt(h: KeyHash): bigint {
  return (BigInt(h.hi >>> 0) << 32n) | BigInt(h.lo >>> 0);
}
