// Shard copies the migration actor made (actors/migration/copy.ts), for the node's main thread, which
// tells the configuration manager (`caughtUp`, actors/node/copy-reports.ts) over its lease connection.
// One slot per shard in a SharedArrayBuffer, written by the migration actor only:
//
//   Int32 [STATE, SEQ] per shard            STATE: NONE | COPYING | CAUGHT_UP; SEQ: odd while written
//   Float64 [TERM, FROM, ENTRIES, BYTES, MS, ABSORBED, FIRST_MS] per shard
//
// The fields of a CAUGHT_UP slot are read under the sequence word (a seqlock): a reader that sees SEQ
// odd or changed across its read tries again later.
export const CopyState = { NONE: 0, COPYING: 1, CAUGHT_UP: 2 } as const;

const I = { STATE: 0, SEQ: 1, WORDS: 2 } as const;
const F = { TERM: 0, FROM: 1, ENTRIES: 2, BYTES: 3, MS: 4, ABSORBED: 5, FIRST_MS: 6, WORDS: 7 } as const;

export interface CopyReport {
  term: number;
  from: number;
  entries: number;
  bytes: number;
  ms: number;
  absorbed: number;
  firstMs?: number;
}

export class CopyReports {
  private readonly i32: Int32Array;
  private readonly f64: Float64Array;

  private constructor(readonly buffer: SharedArrayBuffer, readonly shards: number) {
    this.i32 = new Int32Array(buffer, 0, shards * I.WORDS);
    this.f64 = new Float64Array(buffer, align8(shards * I.WORDS * 4), shards * F.WORDS);
  }

  static create(shards: number): CopyReports {
    return new CopyReports(new SharedArrayBuffer(align8(shards * I.WORDS * 4) + shards * F.WORDS * 8), shards);
  }

  static attach(buffer: SharedArrayBuffer, shards: number): CopyReports {
    return new CopyReports(buffer, shards);
  }

  state(shard: number): number {
    return Atomics.load(this.i32, shard * I.WORDS + I.STATE); // the writer's last store
  }

  /** Writer: `shard` is being copied (any earlier report of it is void). */
  copying(shard: number): void {
    Atomics.store(this.i32, shard * I.WORDS + I.STATE, CopyState.COPYING); // readers skip the slot from here
  }

  /** Writer: the copy of `shard` is done; `r` says from where, at which term and how much. */
  caughtUp(shard: number, r: CopyReport): void {
    const at = shard * I.WORDS;
    Atomics.add(this.i32, at + I.SEQ, 1); // odd: fields being written
    const f = shard * F.WORDS;
    this.f64[f + F.TERM] = r.term;
    this.f64[f + F.FROM] = r.from;
    this.f64[f + F.ENTRIES] = r.entries;
    this.f64[f + F.BYTES] = r.bytes;
    this.f64[f + F.MS] = r.ms;
    this.f64[f + F.ABSORBED] = r.absorbed;
    this.f64[f + F.FIRST_MS] = r.firstMs ?? -1;
    Atomics.store(this.i32, at + I.STATE, CopyState.CAUGHT_UP);
    Atomics.add(this.i32, at + I.SEQ, 1); // even again: publishes the fields written above
  }

  /** Writer: nothing to report for `shard` (its copy ended: the node no longer catches up on it). */
  clear(shard: number): void {
    Atomics.store(this.i32, shard * I.WORDS + I.STATE, CopyState.NONE);
  }

  /** Reader: the report of a caught-up `shard`, or null (none, being written, or copying). */
  read(shard: number): CopyReport | null {
    const at = shard * I.WORDS;
    const seq = Atomics.load(this.i32, at + I.SEQ); // pairs with the writer's second add
    if (seq % 2 !== 0 || Atomics.load(this.i32, at + I.STATE) !== CopyState.CAUGHT_UP) return null;
    const f = shard * F.WORDS;
    const first = this.f64[f + F.FIRST_MS]!;
    const r: CopyReport = { term: this.f64[f + F.TERM]!, from: this.f64[f + F.FROM]!, entries: this.f64[f + F.ENTRIES]!, bytes: this.f64[f + F.BYTES]!, ms: this.f64[f + F.MS]!, absorbed: this.f64[f + F.ABSORBED]!, ...(first >= 0 ? { firstMs: first } : {}) };
    return Atomics.load(this.i32, at + I.SEQ) === seq ? r : null; // rewritten meanwhile: not this time
  }
}

function align8(n: number): number {
  return (n + 7) & ~7;
}
