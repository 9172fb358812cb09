// Reassembly of multi-block entries whose blocks are not adjacent (Figure 7). In the b-log the
// receiver-side NIC places each MTU-sized block of an entry in the next free stride of the shared
// receive queue, so blocks of one entry interleave with other senders' blocks. ⟨shard, version⟩ names
// the entry and every block says where its payload goes (seq), so blocks can arrive in any order.
//
// Senders re-issue writes that take too long (§4.3), so the same block may appear twice: a repeat of a
// block still pending is ignored; a full repeat of a finished entry completes again and is yielded
// again (the index's version-conditional update makes that harmless).
import type { Limits } from '../config/limits.js';
import { blockPayloadMax, EXPIRES_BYTES, FLAG_EXPIRES, type EntryType } from './log-layout.js';
import { singleBlockEntry, type Block, type LogEntry } from './log.js';

/** An entry rebuilt from blocks. `offset` is where block 0 lies; `blockOffsets[seq]` where each lies. */
export interface AssembledEntry extends LogEntry {
  blockOffsets: number[];
}

interface Pending {
  type: EntryType;
  keyLen: number;
  valueLen: number;
  cnt: number;
  flags: number;
  payload: Uint8Array;
  blockOffsets: number[];
  received: number;
  bytes: number;
  /** When its first block came (the caller's clock; 0 when the caller keeps no time). */
  bornAt: number;
}

export class BlockAssembler {
  private readonly perBlock: number;
  private readonly open = new Map<string, Pending>();
  /** Blocks ignored because their seq had already arrived for a pending entry. */
  duplicates = 0;
  /** Blocks that named a pending entry but disagreed with it on type, lengths or cnt (checksums held,
   *  so this is a writer bug or two writers reusing a version); they are dropped, never merged. */
  conflicts = 0;

  constructor(limits: Limits) {
    this.perBlock = blockPayloadMax(limits);
  }

  /** Entries still waiting for blocks. */
  get pending(): number {
    return this.open.size;
  }

  /** Offsets of every block received for entries still pending. */
  pendingOffsets(): number[] {
    const out: number[] = [];
    for (const p of this.open.values()) for (const o of p.blockOffsets) if (o !== -1) out.push(o);
    return out;
  }

  /** Forget the pending entries of `shard` at or below `version` (a CommitVer covers them: their
   *  writes finished at the primary, and what is missing of them is not coming); returns how many. */
  dropCovered(shard: number, version: number): number {
    let n = 0;
    for (const id of this.open.keys()) {
      const at = id.indexOf(':');
      if (Number(id.slice(0, at)) === shard && Number(id.slice(at + 1)) <= version) {
        this.open.delete(id);
        n++;
      }
    }
    return n;
  }

  /** Forget the pending entries of the shards `gone` names (their other blocks are not coming here);
   *  returns how many. */
  dropShards(gone: (shard: number) => boolean): number {
    let n = 0;
    for (const id of this.open.keys()) {
      if (gone(Number(id.slice(0, id.indexOf(':'))))) {
        this.open.delete(id);
        n++;
      }
    }
    return n;
  }

  /** Forget every pending entry, e.g. after the segments holding their blocks were given up. */
  clear(): void {
    this.open.clear();
  }

  /**
   * Drop pending entries whose first block came more than `maxAgeMs` before `now`, and the oldest
   * beyond `maxPending`: an entry whose other blocks never come (its sender died mid-entry) must not
   * hold memory forever. Returns how many were dropped.
   */
  expire(now: number, maxAgeMs: number, maxPending: number): number {
    let dropped = 0;
    for (const [id, p] of this.open) {
      if (now - p.bornAt <= maxAgeMs && this.open.size <= maxPending) break; // insertion order: the rest are younger
      this.open.delete(id);
      dropped++;
    }
    return dropped;
  }

  /** Take one verified block; returns the entry once all of its blocks have arrived, else null. The
   *  block's payload is copied, so the log bytes may be reused after add() returns. */
  add(block: Block, now = 0): AssembledEntry | null {
    if (block.cnt === 1) {
      return { offset: block.offset, type: block.type, shard: block.shard, version: block.version, bytes: block.size, txn: block.txn, ...singleBlockEntry(block), blockOffsets: [block.offset] };
    }
    const x = (block.flags & FLAG_EXPIRES) !== 0 ? EXPIRES_BYTES : 0;
    const id = `${block.shard}:${block.version}`;
    let p = this.open.get(id);
    if (p === undefined) {
      p = {
        type: block.type, keyLen: block.keyLen, valueLen: block.valueLen, cnt: block.cnt, flags: block.flags,
        payload: new Uint8Array(block.keyLen + x + block.valueLen), blockOffsets: new Array<number>(block.cnt).fill(-1),
        received: 0, bytes: 0, bornAt: now,
      };
      this.open.set(id, p);
    } else if (p.type !== block.type || p.keyLen !== block.keyLen || p.valueLen !== block.valueLen || p.cnt !== block.cnt || p.flags !== block.flags) {
      this.conflicts++;
      return null;
    }
    if (p.blockOffsets[block.seq] !== -1) {
      this.duplicates++;
      return null;
    }
    p.payload.set(block.payload, block.seq * this.perBlock);
    p.blockOffsets[block.seq] = block.offset;
    p.received++;
    p.bytes += block.size;
    if (p.received < p.cnt) return null;
    this.open.delete(id);
    const d = x > 0 ? new DataView(p.payload.buffer, p.keyLen, EXPIRES_BYTES) : null;
    return {
      offset: p.blockOffsets[0]!, type: p.type, shard: block.shard, version: block.version, bytes: p.bytes, txn: block.txn,
      key: p.payload.subarray(0, p.keyLen), value: p.payload.subarray(p.keyLen + x), blockOffsets: p.blockOffsets,
      expiresAt: d ? d.getUint32(0, true) + d.getUint32(4, true) * 2 ** 32 : 0,
    };
  }
}
