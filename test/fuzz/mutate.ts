// A seeded mutational input generator (AFL-style havoc, no coverage feedback): each input is a valid seed
// from the target's corpus with 1-8 random edits -- bit flips, interesting bytes and 32-bit lengths,
// inserted/deleted/duplicated runs, truncation, a splice with another seed -- or, one time in eight,
// plain random bytes. Deterministic for a seed, so a failing input can be replayed by its number.

/** xorshift32: small, fast, deterministic. */
export class Rng {
  private s: number;
  constructor(seed: number) {
    this.s = seed >>> 0 || 0x9e3779b9;
  }
  u32(): number {
    let x = this.s;
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    this.s = x >>> 0;
    return this.s;
  }
  below(n: number): number {
    return n <= 0 ? 0 : this.u32() % n;
  }
}

const INTERESTING8 = [0, 1, 0x7f, 0x80, 0xff, 0x2a, 0x0d, 0x0a, 0x24, 0x2a, 0x3a];
const INTERESTING32 = [0, 1, 0x7fffffff, 0x80000000, 0xffffffff, 64, 4096, 0x100000, 0x400000, 0x40000000];

export function mutate(rng: Rng, corpus: readonly Uint8Array[]): Uint8Array {
  if (rng.below(8) === 0) {
    const out = new Uint8Array(rng.below(512));
    for (let i = 0; i < out.length; i++) out[i] = rng.below(256);
    return out;
  }
  let b: Uint8Array = Uint8Array.from(corpus[rng.below(corpus.length)]!);
  const edits = 1 + rng.below(8);
  for (let e = 0; e < edits; e++) {
    const at = rng.below(Math.max(1, b.length));
    switch (rng.below(8)) {
      case 0: // bit flip
        if (b.length) b[at]! ^= 1 << rng.below(8);
        break;
      case 1: // interesting byte
        if (b.length) b[at] = INTERESTING8[rng.below(INTERESTING8.length)]!;
        break;
      case 2: // interesting 32-bit little-endian value (lengths, counts)
        if (b.length >= at + 4) new DataView(b.buffer, b.byteOffset).setUint32(at, INTERESTING32[rng.below(INTERESTING32.length)]!, true);
        break;
      case 3: { // delete a run
        const n = 1 + rng.below(Math.min(64, Math.max(1, b.length - at)));
        b = concat(b.subarray(0, at), b.subarray(at + n));
        break;
      }
      case 4: { // insert random bytes
        const ins = Uint8Array.from({ length: 1 + rng.below(32) }, () => rng.below(256));
        b = concat(b.subarray(0, at), ins, b.subarray(at));
        break;
      }
      case 5: { // duplicate a run
        const n = 1 + rng.below(Math.min(128, Math.max(1, b.length - at)));
        b = concat(b.subarray(0, at + n), b.subarray(at, at + n), b.subarray(at + n));
        break;
      }
      case 6: // truncate
        b = b.subarray(0, at);
        break;
      default: { // splice with another seed
        const other = corpus[rng.below(corpus.length)]!;
        const from = rng.below(Math.max(1, other.length));
        b = concat(b.subarray(0, at), other.subarray(from));
      }
    }
  }
  return b;
}

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((a, p) => a + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** Cut `b` into 1..8 chunks at random places (a stream arrives in arbitrary pieces). */
export function chunks(rng: Rng, b: Uint8Array): Uint8Array[] {
  const cuts = new Set<number>();
  const n = rng.below(8);
  for (let i = 0; i < n; i++) cuts.add(rng.below(b.length + 1));
  const at = [0, ...[...cuts].sort((x, y) => x - y), b.length];
  const out: Uint8Array[] = [];
  for (let i = 1; i < at.length; i++) if (at[i]! > at[i - 1]!) out.push(b.subarray(at[i - 1], at[i]));
  return out;
}
