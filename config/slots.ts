// Redis Cluster key slots (DESIGN §7): a key's shard is a function of its hash slot, so cluster-aware
// Redis clients (ioredis Cluster, redis-cli -c, redis-benchmark --cluster) route by CLUSTER SLOTS.
//
//   slot  = CRC16-XMODEM(tag) mod 16384, where tag is the part between the first '{' and the next '}'
//           when that part is non-empty (a "hash tag"), else the whole key (Redis cluster spec);
//   shard = floor(slot * shardCount / 16384): shard s owns the contiguous slot range
//           [ceil(s * 16384 / shardCount), ceil((s + 1) * 16384 / shardCount)) -- §4.1's contiguous
//           ranges, now of the slot space instead of the 64-bit hash space.
// The 64-bit key hash (shm/hash.ts) still picks the index bucket and tag inside a shard.
// Changing anything here re-routes keys: that is a cluster/pool format change (CLUSTER_FORMAT).

export const SLOT_COUNT = 16384;

const CRC16_TABLE = (() => {
  const t = new Uint16Array(256);
  for (let i = 0; i < 256; i++) {
    let c = i << 8;
    for (let k = 0; k < 8; k++) c = c & 0x8000 ? ((c << 1) ^ 0x1021) & 0xffff : (c << 1) & 0xffff;
    t[i] = c;
  }
  return t;
})();

/** CRC16-XMODEM (poly 0x1021, init 0) of bytes [from, to), as Redis Cluster computes it. */
export function crc16(b: Uint8Array, from = 0, to = b.length): number {
  let crc = 0;
  for (let i = from; i < to; i++) crc = ((crc << 8) & 0xffff) ^ CRC16_TABLE[((crc >>> 8) ^ b[i]!) & 0xff]!;
  return crc;
}

const OPEN = 0x7b; // '{'
const CLOSE = 0x7d; // '}'

/** The Redis Cluster hash slot of a key, hash tags honoured. */
export function keySlot(key: Uint8Array): number {
  const n = key.length;
  let s = 0;
  while (s < n && key[s] !== OPEN) s++;
  if (s < n) {
    let e = s + 1;
    while (e < n && key[e] !== CLOSE) e++;
    if (e < n && e > s + 1) return crc16(key, s + 1, e) & (SLOT_COUNT - 1);
  }
  return crc16(key, 0, n) & (SLOT_COUNT - 1);
}

/** The shard owning a slot. */
export function shardOfSlot(slot: number, shardCount: number): number {
  return Math.floor((slot * shardCount) / SLOT_COUNT);
}

/** The shard of a key: its slot's shard. */
export function shardOfKey(key: Uint8Array, shardCount: number): number {
  return shardOfSlot(keySlot(key), shardCount);
}

/** First and last slot (inclusive) of shard s. */
export function slotRangeOfShard(s: number, shardCount: number): { first: number; last: number } {
  return { first: Math.ceil((s * SLOT_COUNT) / shardCount), last: Math.ceil(((s + 1) * SLOT_COUNT) / shardCount) - 1 };
}
