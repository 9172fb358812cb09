// Object-size distributions for the YCSB workloads (ROWAN §6.1): the paper draws object sizes from
// three Facebook workloads (Cao et al., FAST '20) and gives only their averages: ZippyDB 90.8 B,
// UP2X 57.25 B, UDB 153.8 B. The traces themselves are not public, so each distribution here is a
// stand-in with exactly that mean and a right tail: a two-piece uniform mixture over integer object
// sizes, [lo, mid] with probability p and [mid, hi] otherwise, p = (mu2 - mean) / (mu2 - mu1) where
// mu1, mu2 are the pieces' means. Object = key (16 B, bench/ycsb/zipfian.ts KEY_BYTES) + value, so a
// value is the drawn object size minus 16 B. What matters for the paper's argument is that log
// entries are small (well under a 256 B XPLine) and vary in size; both hold.
import { KEY_BYTES } from './zipfian.js';

export interface SizeDist {
  name: string;
  /** The paper's average object size, bytes. */
  mean: number;
  lo: number;
  mid: number;
  hi: number;
}

export const sizeDists: Record<'zippydb' | 'up2x' | 'udb', SizeDist> = {
  zippydb: { name: 'ZippyDB', mean: 90.8, lo: 32, mid: 80, hi: 256 },
  up2x: { name: 'UP2X', mean: 57.25, lo: 24, mid: 48, hi: 160 },
  udb: { name: 'UDB', mean: 153.8, lo: 48, mid: 128, hi: 512 },
};

/** Probability of the low piece. */
export function lowPieceProbability(d: SizeDist): number {
  const mu1 = (d.lo + d.mid) / 2;
  const mu2 = (d.mid + d.hi) / 2;
  const p = (mu2 - d.mean) / (mu2 - mu1);
  if (!(p > 0 && p < 1)) throw new Error(`size distribution ${d.name}: mean ${d.mean} is not between the pieces`);
  return p;
}

/** A sampler of object sizes (key + value), bytes. */
export function objectSizeSampler(d: SizeDist, rand: () => number): () => number {
  const p = lowPieceProbability(d);
  // Uniform integers over [a, b] inclusive have mean (a+b)/2.
  const uni = (a: number, b: number) => a + Math.floor(rand() * (b - a + 1));
  return () => (rand() < p ? uni(d.lo, d.mid) : uni(d.mid, d.hi));
}

/** A sampler of value sizes: object size minus the fixed key size (never below 1 byte). */
export function valueSizeSampler(d: SizeDist, rand: () => number): () => number {
  const obj = objectSizeSampler(d, rand);
  return () => Math.max(1, obj() - KEY_BYTES);
}
