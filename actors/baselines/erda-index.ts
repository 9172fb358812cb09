// The writer's side of Erda's hash table (Erda §3.2.3, §4.1): one table per writer stream, in index
// regions it allocated at the receiver (layout: erda-layout.ts), updated only with one-sided writes.
//
// The stream is the only writer of its table, so it keeps a mirror of what it wrote (which slot each
// key owns and its current entry) and never reads the table back; in the paper the server CPU updates
// the entry on the client's request and returns the log address -- here the writer owns its log's tail
// too (RegionLog), so both steps are the writer's, and the receiver's CPU does nothing.
import { hash64 } from '../../shm/hash.js';
import type { RowanConnection } from '../../runtime/fabric/fabric.js';
import {
  EMPTY_ENTRY, NEXT_OFF, PROBES, SLOT_BYTES, encodeEntry, indexHeader, nextEntry, nextField, slotCount, slotOffset, tagOf,
  type ErdaEntry,
} from './erda-layout.js';

interface IndexRegion {
  offset: number;
  slots: number;
  taken: Uint8Array;
}

/** A key's slot: where it is, its tag, the entry last written there (EMPTY_ENTRY before the first). */
export interface ErdaSlot {
  at: number;
  tag: bigint;
  entry: ErdaEntry;
  /** Nothing written to the slot yet: the first update writes the tag with the entry. */
  fresh: boolean;
}

export class ErdaIndexWriter {
  private readonly regions: IndexRegion[] = [];
  private readonly keys = new Map<bigint, ErdaSlot>();
  private growing: Promise<void> | null = null;
  /** Index regions allocated (for stats). */
  get regionCount(): number {
    return this.regions.length;
  }

  constructor(
    private readonly conn: RowanConnection,
    private readonly ownerId: number,
  ) {}

  /** Pool offset of the first index region (readers start there); allocates it on first use. */
  async first(): Promise<number> {
    if (this.regions.length === 0) await this.grow();
    return this.regions[0]!.offset;
  }

  /** The slot of `key`, claimed on first use (a new index region when every probe is taken). */
  async place(key: Uint8Array): Promise<ErdaSlot> {
    const h = hash64(key);
    const tag = tagOf(h.hi, h.lo);
    for (;;) {
      const known = this.keys.get(tag);
      if (known) return known;
      const at = this.claim(tag);
      if (at >= 0) {
        const s: ErdaSlot = { at, tag, entry: EMPTY_ENTRY, fresh: true };
        this.keys.set(tag, s);
        return s;
      }
      await this.grow();
    }
  }

  /**
   * Point `slot` at the object at pool offset `objectAt` (the 8-byte atomic write: new tag flipped,
   * the previous newest kept as the old version). The mirror changes now, so a later write of the same
   * key, issued before this one's write lands, still builds on it.
   */
  publish(slot: ErdaSlot, objectAt: number): Promise<void> {
    slot.entry = nextEntry(slot.entry, objectAt);
    const entry = encodeEntry(slot.entry);
    if (!slot.fresh) return this.conn.writeAt(slot.at + 8, entry);
    slot.fresh = false;
    // First use: tag and entry in one 16-byte write, so no reader sees the tag without an entry.
    const both = new Uint8Array(SLOT_BYTES);
    new DataView(both.buffer).setBigUint64(0, slot.tag, true);
    both.set(entry, 8);
    return this.conn.writeAt(slot.at, both);
  }

  /** A free slot for `tag` among its probes in some region (marked taken), or -1. */
  private claim(tag: bigint): number {
    for (const r of this.regions) {
      const start = Number(tag % BigInt(r.slots));
      for (let i = 0; i < PROBES; i++) {
        const s = (start + i) % r.slots;
        if (r.taken[s]) continue;
        r.taken[s] = 1;
        return slotOffset(r.offset, s);
      }
    }
    return -1;
  }

  /** One allocation at a time: a region, its header, then the previous region's link to it. */
  private grow(): Promise<void> {
    this.growing ??= (async () => {
      const region = await this.conn.allocateRegion(this.ownerId);
      const slots = slotCount(region.length);
      await this.conn.writeAt(region.offset, indexHeader(slots));
      const last = this.regions[this.regions.length - 1];
      if (last) await this.conn.writeAt(last.offset + NEXT_OFF, nextField(region.offset));
      this.regions.push({ offset: region.offset, slots, taken: new Uint8Array(slots) });
    })().finally(() => (this.growing = null));
    return this.growing;
  }
}
