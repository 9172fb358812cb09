// The search's memo: the (set of linearized operations, register state) pairs already explored
// (Lowe's improvement to Wing & Gong). It is where a long search spends its time and memory, so it
// is kept in typed arrays rather than one object and one bitset per pair.
//
// Operations are numbered in invoke order, so a set of linearized operations is nearly a prefix:
// every operation below a frontier F (the first one not linearized), then a few more up to the last
// linearized one, M. A pair is stored as F, the state and the bitset's words from F's word to M's --
// a window as wide as the concurrency, not as long as the history -- all appended to one arena.
//
//   entry e:  hash[e] state[e] front[e] offset[e] length[e] chain[e]
//   arena:    ... | words of e (length[e] of them, from word front[e] >>> 5) | ...
//   buckets:  hash & mask -> first entry, then chain[] -> next entry, -1 ends

const NONE = -1;

/** The smallest tables (entries; the arena holds four words per entry): they double as they fill. */
const ENTRIES_MIN = 1 << 6;
const ENTRIES_START_MAX = 1 << 12;

export class VisitedSet {
  private arena: Uint32Array<ArrayBuffer>;
  private used = 0;
  private hash: Int32Array<ArrayBuffer>;
  private state: Int32Array<ArrayBuffer>;
  private front: Int32Array<ArrayBuffer>;
  private offset: Int32Array<ArrayBuffer>;
  private length: Int32Array<ArrayBuffer>;
  private chain: Int32Array<ArrayBuffer>;
  private buckets: Int32Array<ArrayBuffer>;
  private count = 0;

  /**
   * `expected`: about how many pairs the search will store (a search visits at least one per
   * operation). The tables start near it and double as they fill: a checker run over many short
   * per-key histories (the simulator checks a few dozen keys a dozen times per seed) must not pay
   * for the largest tables every time.
   */
  constructor(expected = ENTRIES_START_MAX) {
    let cap = ENTRIES_MIN;
    while (cap < expected && cap < ENTRIES_START_MAX) cap *= 2;
    this.arena = new Uint32Array(cap * 4);
    this.hash = new Int32Array(cap);
    this.state = new Int32Array(cap);
    this.front = new Int32Array(cap);
    this.offset = new Int32Array(cap);
    this.length = new Int32Array(cap);
    this.chain = new Int32Array(cap);
    this.buckets = new Int32Array(cap).fill(NONE);
  }

  /** Pairs stored so far. */
  get size(): number {
    return this.count;
  }

  /**
   * Adds the set given by `bits` (all ranks below `front` are set, none above `last`) with `state`;
   * false if that pair is already here. `hash` must be a hash of the set and the state together.
   */
  add(hash: number, bits: Uint32Array, front: number, last: number, state: number): boolean {
    const from = front >>> 5;
    const words = last >= front ? (last >>> 5) - from + 1 : 0;
    for (let e = this.buckets[hash & (this.buckets.length - 1)] as number; e !== NONE; e = this.chain[e] as number) {
      if (this.hash[e] === hash && this.state[e] === state && this.front[e] === front && this.length[e] === words && this.sameWords(e, bits, from)) {
        return false;
      }
    }
    if (this.count === this.chain.length) this.growEntries();
    if (this.used + words > this.arena.length) this.growArena(words);
    const e = this.count++;
    this.hash[e] = hash;
    this.state[e] = state;
    this.front[e] = front;
    this.offset[e] = this.used;
    this.length[e] = words;
    this.arena.set(bits.subarray(from, from + words), this.used);
    this.used += words;
    this.link(e);
    return true;
  }

  private sameWords(e: number, bits: Uint32Array, from: number): boolean {
    const at = this.offset[e] as number;
    const n = this.length[e] as number;
    for (let w = 0; w < n; w++) if (this.arena[at + w] !== bits[from + w]) return false;
    return true;
  }

  private link(e: number): void {
    const b = (this.hash[e] as number) & (this.buckets.length - 1);
    this.chain[e] = this.buckets[b] as number;
    this.buckets[b] = e;
  }

  /** Doubles the entry arrays and the bucket table together, keeping the load factor at most one. */
  private growEntries(): void {
    const cap = this.chain.length * 2;
    const grow = (a: Int32Array<ArrayBuffer>): Int32Array<ArrayBuffer> => {
      const b = new Int32Array(cap);
      b.set(a);
      return b;
    };
    this.hash = grow(this.hash);
    this.state = grow(this.state);
    this.front = grow(this.front);
    this.offset = grow(this.offset);
    this.length = grow(this.length);
    this.chain = grow(this.chain);
    this.buckets = new Int32Array(cap).fill(NONE);
    for (let e = 0; e < this.count; e++) this.link(e);
  }

  private growArena(need: number): void {
    const a = new Uint32Array(Math.max(this.arena.length * 2, this.used + need));
    a.set(this.arena.subarray(0, this.used));
    this.arena = a;
  }
}
