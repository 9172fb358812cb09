// The hash slots a connection's write commands named (WAIT counts the replicas of their shards): one bit
// per slot, 2 KiB per connection, allocated at its first write. A Set of slot numbers grew to all
// 16,384 slots on a connection writing random keys -- 320 KiB of heap per connection (measured), a few
// hundred MB for a thousand clients -- and its hash insert was the largest built-in of the
// single-endpoint port's worker under redis-benchmark SETs (2 % of its samples).
import { SLOT_COUNT } from '../../config/slots.js';

export class SlotBits implements Iterable<number> {
  private bits: Uint8Array | null = null;
  /** Distinct slots added. */
  size = 0;

  add(slot: number): void {
    const b = (this.bits ??= new Uint8Array(SLOT_COUNT / 8));
    const i = slot >>> 3;
    const m = 1 << (slot & 7);
    if ((b[i]! & m) !== 0) return;
    b[i] = b[i]! | m;
    this.size++;
  }

  *[Symbol.iterator](): Iterator<number> {
    const b = this.bits;
    if (b === null) return;
    for (let i = 0; i < b.length; i++) {
      if (b[i] === 0) continue;
      for (let k = 0; k < 8; k++) if ((b[i]! & (1 << k)) !== 0) yield i * 8 + k;
    }
  }
}
