// What a benchmark stream replicates: a real log entry (PUT) of exactly the write size, so the b-log
// holds what a worker would put there (its first 64 bits are non-zero, as the receiver's consumed-
// segment detection needs).
import { defaultLimits } from '../../config/limits.js';
import { encodeEntry, entrySize, EntryType } from '../../shm/log.js';

/** A PUT entry of exactly `bytes` bytes for stream `id` (shard = id, key = id). */
export function entryOfSize(id: number, bytes: number): Uint8Array {
  const key = new Uint8Array(8);
  new DataView(key.buffer).setUint32(0, id, true);
  for (let v = Math.max(0, bytes - 64); v <= bytes; v++) {
    const e = { type: EntryType.Put, shard: id & 0xffff, version: 1, key, value: new Uint8Array(v).fill(0x5a) };
    if (entrySize(e, defaultLimits) === bytes) {
      const buf = new Uint8Array(bytes);
      encodeEntry(e, buf, 0, defaultLimits);
      return buf;
    }
  }
  throw new Error(`no PUT entry encodes to exactly ${bytes} B`);
}
