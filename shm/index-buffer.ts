// A shard index's buffer (./index.ts): made for a table's options, or checked when another thread
// attaches it. The layout is ./index-layout.ts.
import { ErrorCodes, RowanError } from '../config/base/errors.js';
import { defaultLimits } from '../config/limits.js';
import * as L from './index-layout.js';

export interface ShardIndexOptions {
  /** Primary buckets (the hash modulus). */
  buckets: number;
  /** Overflow buckets available for chaining. */
  overflowBuckets: number;
  /** 64-bit slots per bucket including the link slot; default `indexBucketItems` (8 = one cache line). */
  bucketItems?: number;
  /** Overflow buckets the table may grow to (default: overflowBuckets, a fixed table). */
  overflowBucketsMax?: number;
}

export interface ShardIndexStats {
  buckets: number;
  overflowBuckets: number;
  /** What the overflow area may grow to. */
  overflowBucketsMax: number;
  overflowUsed: number;
  /** Items a bucket holds (slots minus the link slot). */
  itemsPerBucket: number;
  items: number;
  /** items / item slots in primary buckets. */
  loadFactor: number;
  /** Longest chain, in buckets (1 = no overflow). */
  maxChain: number;
  bytes: number;
}

/** A new table's buffer, its header published (growable up to the overflow maximum). */
export function createIndexBuffer(opts: ShardIndexOptions): SharedArrayBuffer {
  const slots = opts.bucketItems ?? defaultLimits.indexBucketItems;
  const { buckets, overflowBuckets } = opts;
  const overflowMax = opts.overflowBucketsMax ?? overflowBuckets;
  const bad = (m: string): never => {
    throw new RowanError(ErrorCodes.BAD_ARGUMENT, `ShardIndex.create: ${m}`, { ...opts });
  };
  if (!Number.isInteger(buckets) || buckets < 1) bad('buckets must be a positive integer');
  if (!Number.isInteger(overflowBuckets) || overflowBuckets < 0) bad('overflowBuckets must be >= 0');
  if (!Number.isInteger(slots) || slots < 2) bad('bucketItems must be >= 2 (items + link slot)');
  if (!Number.isInteger(overflowMax) || overflowMax < overflowBuckets) bad('overflowBucketsMax must be >= overflowBuckets');
  if ((buckets + overflowMax) * slots >= 2 ** 30) bad('table too large for int32 slot indexes');
  const bytes = L.indexBytes(buckets, overflowBuckets, slots);
  const maxBytes = L.indexBytes(buckets, overflowMax, slots);
  const sab = maxBytes > bytes ? new SharedArrayBuffer(bytes, { maxByteLength: maxBytes }) : new SharedArrayBuffer(bytes);
  const h = new Int32Array(sab, 0, L.HEADER_I32);
  h[L.H_BUCKET_COUNT] = buckets;
  h[L.H_OVERFLOW_CAPACITY] = overflowBuckets;
  h[L.H_OVERFLOW_MAX] = overflowMax;
  h[L.H_BUCKET_SLOTS] = slots;
  h[L.H_LAYOUT_VERSION] = L.INDEX_LAYOUT_VERSION;
  // Publishes a fully initialised header: an attacher that reads MAGIC sees the fields above.
  Atomics.store(h, L.H_MAGIC, L.INDEX_MAGIC);
  return sab;
}

/** `sab` if it is a table's buffer another thread made (BAD_ARGUMENT otherwise). */
export function checkIndexBuffer(sab: SharedArrayBuffer): SharedArrayBuffer {
  const bad = (m: string): never => {
    throw new RowanError(ErrorCodes.BAD_ARGUMENT, `ShardIndex.attach: ${m}`);
  };
  if (!(sab instanceof SharedArrayBuffer) || sab.byteLength < L.HEADER_BYTES) bad('not an index buffer');
  const h = new Int32Array(sab, 0, L.HEADER_I32);
  // Pairs with the MAGIC store in createIndexBuffer(): seeing the magic means the header fields are visible.
  if (Atomics.load(h, L.H_MAGIC) !== L.INDEX_MAGIC) bad('bad magic');
  if (h[L.H_LAYOUT_VERSION] !== L.INDEX_LAYOUT_VERSION) bad(`layout version ${h[L.H_LAYOUT_VERSION]}`);
  const min = L.indexBytes(h[L.H_BUCKET_COUNT]!, h[L.H_OVERFLOW_CAPACITY]!, h[L.H_BUCKET_SLOTS]!);
  const max = L.indexBytes(h[L.H_BUCKET_COUNT]!, h[L.H_OVERFLOW_MAX]!, h[L.H_BUCKET_SLOTS]!);
  if (sab.byteLength < min || sab.byteLength > max) bad(`size ${sab.byteLength} outside [${min}, ${max}]`);
  return sab;
}

/**
 * Options for a table expected to hold `items` keys at about `loadFactor` of the primary slots, that
 * may grow to hold `itemsMax` keys (default: `items`, plus the overflow the planned load leaves).
 */
export function indexOptionsFor(items: number, loadFactor: number, bucketItems: number, itemsMax: number): ShardIndexOptions {
  const buckets = Math.max(1, Math.ceil(items / ((bucketItems - 1) * loadFactor)));
  const overflowBuckets = Math.max(16, Math.ceil(buckets / 4));
  // Every key past the primary slots needs at most one overflow slot: itemsMax / items-per-bucket.
  const overflowBucketsMax = Math.max(overflowBuckets, Math.ceil(itemsMax / (bucketItems - 1)));
  return { buckets, overflowBuckets, bucketItems, overflowBucketsMax };
}
