// Every size and time limit in one place (CONVENTIONS 8), qualifiers last. Defaults are the paper's
// parameters (ROWAN §4.3, §4.4, §4.6, §5.3, §6.1). `checkLimits` asserts the relations between them
// at load, so a bad combination fails at start with ROWAN_ERR_BAD_CONFIG instead of deep in the data path.
import { ACTORS_PER_ROLE_MAX } from './base/ids.js';
import { ErrorCodes, RowanError } from './base/errors.js';

export interface Limits {
  /** PM segment size (§4.2, §5.3): 4 MiB. */
  segmentBytes: number;
  /** Log entries are 64-byte aligned and padded (§5.3); also the MP-SRQ stride (§3.2.2). */
  entryAlignBytes: number;
  /** Larger entries are split into blocks of at most this many bytes, each with its own header (§4.2.2). */
  mtuBytes: number;
  keyBytesMax: number;
  valueBytesMax: number;
  /** Items per index bucket: 8 x 64-bit = one 64-byte cache line. */
  indexBucketItems: number;
  /** Keys one shard's index is sized for at start, and the most it may grow to (shm/index.ts). */
  indexKeysPerShard: number;
  indexKeysPerShardMax: number;
  /** Overflow buckets a primary keeps free in a shard's index: below this headroom it refuses PUTs of
   *  new keys (INDEX_FULL, before anything is persisted), so inserts already in flight and the backups'
   *  digests -- whose indexes hold the same keys -- always find room. */
  indexHeadroomBuckets: number;
  /** A multi-block entry a backup received only part of over REPLICATE (RPC-KV) is dropped after this
   *  (its primary died or gave up mid-entry: it was never acknowledged), and at most this many are held. */
  partialEntryMs: number;
  partialEntriesMax: number;
  /** Actors (threads) of one role in one node. */
  actorsPerRoleMax: number;
  /** Capacity bounds of one actor-to-actor ring (shm/ring.ts), in Int32 words. */
  ringWordsMin: number;
  ringWordsMax: number;
}

export const defaultLimits: Readonly<Limits> = Object.freeze({
  segmentBytes: 4 * 1024 * 1024,
  entryAlignBytes: 64,
  mtuBytes: 4096,
  keyBytesMax: 1024,
  valueBytesMax: 1024 * 1024,
  indexBucketItems: 8,
  indexKeysPerShard: 1 << 16,
  indexKeysPerShardMax: 1 << 22,
  indexHeadroomBuckets: 256,
  partialEntryMs: 10_000,
  partialEntriesMax: 256,
  actorsPerRoleMax: ACTORS_PER_ROLE_MAX,
  ringWordsMin: 64,
  ringWordsMax: 1 << 24,
});

function isPow2(n: number): boolean {
  return Number.isInteger(n) && n > 0 && (n & (n - 1)) === 0;
}

export function checkLimits(l: Limits): Limits {
  const bad = (msg: string): never => {
    throw new RowanError(ErrorCodes.BAD_CONFIG, `limits: ${msg}`);
  };
  if (l.entryAlignBytes !== 64) bad('entryAlignBytes must be 64 (the MP-SRQ stride and PCIe word)');
  if (!isPow2(l.segmentBytes) || l.segmentBytes < 64 * 1024) bad('segmentBytes must be a power of two >= 64 KiB');
  if (!isPow2(l.mtuBytes) || l.mtuBytes < 256 || l.mtuBytes > l.segmentBytes)
    bad('mtuBytes must be a power of two in [256, segmentBytes]');
  if (l.keyBytesMax < 1 || l.keyBytesMax > 0xffff) bad('keyBytesMax must be in [1, 65535] (16-bit length field)');
  if (l.valueBytesMax < 0 || l.valueBytesMax > l.segmentBytes / 2)
    bad('valueBytesMax must be at most half a segment, so any entry fits in one segment');
  if (l.indexBucketItems < 2) bad('indexBucketItems must be >= 2');
  if (!Number.isInteger(l.indexKeysPerShard) || l.indexKeysPerShard < 1 || l.indexKeysPerShardMax < l.indexKeysPerShard)
    bad('index keys per shard must satisfy 1 <= indexKeysPerShard <= indexKeysPerShardMax');
  if (l.indexKeysPerShardMax / (l.indexBucketItems - 1) < 2 * l.indexHeadroomBuckets)
    bad('indexKeysPerShardMax must leave room for twice indexHeadroomBuckets overflow buckets');
  if (l.actorsPerRoleMax < 1) bad('actorsPerRoleMax must be >= 1');
  if (l.ringWordsMin < 2 || l.ringWordsMax < l.ringWordsMin || l.ringWordsMax > 2 ** 30)
    bad('ring words must satisfy 2 <= ringWordsMin <= ringWordsMax <= 2^30 (u32 ring pointers)');
  return l;
}
