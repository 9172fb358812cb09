// Erda's read path (Erda §3.3, §4.2, Figure 8), all one-sided READs through a RowanConnection (the
// soft NIC over tcp, the mapped pool over shm): read the key's index entry, read the newest object it
// names and verify its checksum and key; if the object is torn (a writer died between publishing the
// entry and finishing the object) or not written yet, read the previous version the same entry names.
//
// Over tcp the NIC lets a peer READ only the regions granted to its node, so a reader connects with
// the writing node's id (the NIC's rule, actors/nic/nic-verbs.ts).
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import type { Limits } from '../../config/limits.js';
import { hash64 } from '../../shm/hash.js';
import { EntryType, readBlock } from '../../shm/log.js';
import { EXPIRES_BYTES, FLAG_EXPIRES, HEADER_BYTES, PAYLOAD_LEN_OFF, blockPayloadMax, blockSize } from '../../shm/log-layout.js';
import type { RowanConnection } from '../../runtime/fabric/fabric.js';
import { ERDA_MAGIC, NEXT_OFF, PROBES, SLOT_BYTES, SLOTS_OFF, decodeEntry, slotOffset, tagOf } from './erda-layout.js';

export interface ErdaValue {
  /** null: the newest readable version is a DEL. */
  value: Uint8Array | null;
  version: number;
  /** The newest object failed its checksum (or key) and this is the previous one. */
  fellBack: boolean;
}

/** What one object read found: the object, or why not. */
type ObjectRead = { ok: true; value: Uint8Array | null; version: number } | { ok: false };

export interface ErdaReaderStats {
  gets: number;
  fallbacks: number;
  /** Objects whose checksum or key did not verify. */
  badObjects: number;
}

export class ErdaReader {
  private readonly s: ErdaReaderStats = { gets: 0, fallbacks: 0, badObjects: 0 };

  constructor(
    private readonly conn: RowanConnection,
    /** Pool offset of the stream's first index region (ErdaIndexWriter.first). */
    private readonly firstIndex: number,
    private readonly limits: Limits,
  ) {}

  /** The key's value as of its newest intact object; null when the index has no intact version. */
  async get(key: Uint8Array): Promise<ErdaValue | null> {
    this.s.gets++;
    const h = hash64(key);
    const tag = tagOf(h.hi, h.lo);
    for (let region = this.firstIndex; region !== 0; ) {
      const head = new DataView((await this.conn.read(region, SLOTS_OFF + 4)).buffer);
      if (head.getBigUint64(0, true) !== ERDA_MAGIC) throw new RowanError(ErrorCodes.BAD_ARGUMENT, `erda: no index region at pool offset ${region}`);
      const slots = head.getUint32(SLOTS_OFF, true);
      const start = Number(tag % BigInt(slots));
      for (let i = 0; i < PROBES; i++) {
        const slot = await this.conn.read(slotOffset(region, (start + i) % slots), SLOT_BYTES);
        const t = new DataView(slot.buffer, slot.byteOffset).getBigUint64(0, true);
        if (t === 0n) return null; // the writer claims the first free probe: the key was never placed further on
        // A 64-bit tag names the key (the objects' keys are compared too, as a check).
        if (t === tag) return this.fromEntry(slot, key);
      }
      region = Number(head.getBigUint64(NEXT_OFF, true));
    }
    return null;
  }

  stats(): ErdaReaderStats {
    return { ...this.s };
  }

  /** The newest intact version the slot's entry names; null if neither is intact (the key's first
   *  write torn, or two in a row). */
  private async fromEntry(slot: Uint8Array, key: Uint8Array): Promise<ErdaValue | null> {
    const e = decodeEntry(slot, 8);
    const newest = e.newest === 0 ? { ok: false as const } : await this.object(e.newest, key);
    if (newest.ok) return { value: newest.value, version: newest.version, fellBack: false };
    const prev = e.previous === 0 ? { ok: false as const } : await this.object(e.previous, key);
    if (!prev.ok) return null;
    this.s.fallbacks++;
    return { value: prev.value, version: prev.version, fellBack: true };
  }

  /** Read and verify the object at `at`: header first (its size), then the whole block. */
  private async object(at: number, key: Uint8Array): Promise<ObjectRead> {
    const head = await this.conn.read(at, HEADER_BYTES);
    const payloadLen = new DataView(head.buffer, head.byteOffset).getUint32(PAYLOAD_LEN_OFF, true);
    const size = blockSize(Math.min(payloadLen, blockPayloadMax(this.limits)), this.limits);
    const bytes = await this.readWithin(at, size);
    const b = bytes === null ? null : readBlock(bytes, 0, size, this.limits);
    if (b === null || b.seq !== 0 || b.keyLen !== key.length || !sameBytes(b.payload.subarray(0, key.length), key)) {
      this.s.badObjects++;
      return { ok: false };
    }
    if (b.cnt > 1) throw new RowanError(ErrorCodes.ENTRY_TOO_LARGE, `erda: the object at ${at} spans ${b.cnt} blocks; the reader reads one-block objects`);
    if (b.type === EntryType.Del) return { ok: true, value: null, version: b.version };
    const from = key.length + ((b.flags & FLAG_EXPIRES) !== 0 ? EXPIRES_BYTES : 0);
    return { ok: true, value: b.payload.slice(from, from + b.valueLen), version: b.version };
  }

  /** A READ whose length came from a header that may be torn: past the granted region it is no object. */
  private async readWithin(at: number, size: number): Promise<Uint8Array | null> {
    try {
      return await this.conn.read(at, size);
    } catch (err) {
      if (err instanceof RowanError && (err.code === ErrorCodes.NOT_GRANTED || err.code === ErrorCodes.BAD_ARGUMENT)) return null;
      throw err;
    }
  }
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
