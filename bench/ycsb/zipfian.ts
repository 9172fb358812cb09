// Key choosers for the YCSB workloads (ROWAN §6.1; DESIGN §8): Zipfian with YCSB's default constant
// 0.99 (exact, see ZipfianChooser) and uniform. Both draw from a seeded PRNG so runs repeat.
//
// Rank 0 is the hottest item. Ranks are used as key ids directly: ROWAN-KV hashes every key to its
// shard (§4.1), so hot ranks land on pseudo-random shards just as YCSB's scrambled variant spreads them.

/** mulberry32: a small, fast, seeded PRNG returning [0, 1). */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface KeyChooser {
  readonly items: number;
  /** The next key id in [0, items). */
  next(): number;
}

/**
 * P(rank k) = (1 / (k+1)^theta) / zeta(items, theta) over [0, items), drawn exactly by inverting the
 * cumulative distribution (a binary search over a precomputed table of `items` doubles). YCSB's own
 * generator uses Gray et al.'s closed-form approximation, which is exact for ranks 0 and 1 but
 * over-weights the next ranks (rank 2 by ~18 % at 0.99); the exact table avoids that at a cost of
 * 8 bytes per key and O(log items) per draw, negligible next to a request.
 */
export class ZipfianChooser implements KeyChooser {
  private readonly cdf: Float64Array;

  constructor(
    readonly items: number,
    readonly theta = 0.99,
    private readonly rand: () => number = mulberry32(1),
  ) {
    if (!Number.isInteger(items) || items < 2) throw new Error(`zipfian: items must be an integer >= 2, got ${items}`);
    if (!(theta > 0)) throw new Error(`zipfian: theta must be positive, got ${theta}`);
    this.cdf = new Float64Array(items);
    let s = 0;
    for (let k = 0; k < items; k++) this.cdf[k] = s += 1 / Math.pow(k + 1, theta);
    for (let k = 0; k < items; k++) this.cdf[k]! /= s;
  }

  next(): number {
    const u = this.rand();
    // The first k with cdf[k] > u.
    let lo = 0;
    let hi = this.items - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.cdf[mid]! > u) hi = mid;
      else lo = mid + 1;
    }
    return lo;
  }
}

export class UniformChooser implements KeyChooser {
  constructor(
    readonly items: number,
    private readonly rand: () => number = mulberry32(1),
  ) {}

  next(): number {
    return Math.floor(this.rand() * this.items);
  }
}

/** Fixed-width key of id: 16 bytes ("user" + 12 digits), so the key part of every object is 16 B. */
export const KEY_BYTES = 16;
export function keyOf(id: number): string {
  return `user${String(id).padStart(12, '0')}`;
}
