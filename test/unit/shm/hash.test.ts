// shm/hash.ts: fixed vectors (the hash routes keys to shards, so it must never drift), rough
// distribution of every bit group the system uses, and avalanche.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { hash64, hash64Into, hashToBigInt, type KeyHash } from '../../../shm/hash.js';

const enc = new TextEncoder();
const hex = (h: KeyHash): string => `${h.hi.toString(16).padStart(8, '0')}:${h.lo.toString(16).padStart(8, '0')}`;

test('fixed test vectors (a change here re-routes every key: a format change)', () => {
  const vectors: Array<[string, string]> = [
    ['', 'b7a9f9bc:82df8838'],
    ['a', '495f3776:4baf7814'],
    ['ab', '3aa1f1e5:0639732e'],
    ['abc', '441c436c:e0531033'],
    ['abcd', 'e8eb74e5:53601662'],
    ['hello world', '5824baf4:08e9b47b'],
    ['user:0000000001', '0b4fe087:37a988af'],
    ['The quick brown fox jumps over the lazy dog', '72343251:55701863'],
  ];
  for (const [s, want] of vectors) assert.equal(hex(hash64(enc.encode(s))), want, JSON.stringify(s));
  assert.equal(hex(hash64(Uint8Array.from({ length: 256 }, (_, i) => i))), '1a8127ef:1627a874');
});

test('halves are uint32, hash64Into reuses its output, views hash like copies', () => {
  const out = { hi: -1, lo: -1 };
  const key = enc.encode('xxuser:42yy');
  const view = key.subarray(2, 9);
  assert.equal(hash64Into(view, out), out);
  assert.deepEqual(out, hash64(enc.encode('user:42')));
  for (const v of [out.hi, out.lo]) assert.ok(Number.isInteger(v) && v >= 0 && v < 2 ** 32);
  assert.equal(hashToBigInt({ hi: 1, lo: 2 }), (1n << 32n) | 2n);
  assert.equal(hashToBigInt({ hi: 0xffffffff, lo: 0xffffffff }), 2n ** 64n - 1n);
});

/** Pearson chi-square of `counts` against a uniform expectation. */
function chiSquare(counts: Uint32Array, n: number): number {
  const e = n / counts.length;
  let x = 0;
  for (const c of counts) x += ((c - e) * (c - e)) / e;
  return x;
}

test('distribution: bucket (lo), tag (hi low bits), shard range (hi top bits), joint hi/lo', () => {
  const cells = 1024; // df = 1023: mean 1023, sd ~45; accept +-7 sd
  const n = 200_000;
  const groups = { bucket: new Uint32Array(cells), tag: new Uint32Array(cells), range: new Uint32Array(cells), joint: new Uint32Array(cells) };
  const h = { hi: 0, lo: 0 };
  for (let i = 0; i < n; i++) {
    hash64Into(enc.encode(`user:${String(i).padStart(10, '0')}`), h);
    groups.bucket[h.lo % cells]!++;
    groups.tag[(h.hi & 0xffff) % cells]!++;
    groups.range[h.hi >>> 22]!++;
    groups.joint[((h.hi & 31) << 5) | (h.lo & 31)]!++;
  }
  for (const [name, counts] of Object.entries(groups)) {
    const x = chiSquare(counts, n);
    assert.ok(x > 1023 - 7 * 45 && x < 1023 + 7 * 45, `${name}: chi-square ${x.toFixed(1)} over ${cells} cells`);
  }
  // Near-identical short binary keys (counters) must spread too.
  const small = new Uint32Array(cells);
  const k = new Uint8Array(8);
  for (let i = 0; i < n; i++) {
    k[0] = i & 0xff; k[1] = (i >>> 8) & 0xff; k[2] = i >>> 16;
    small[hash64Into(k, h).lo % cells]!++;
  }
  const x = chiSquare(small, n);
  assert.ok(x > 1023 - 7 * 45 && x < 1023 + 7 * 45, `binary counters: chi-square ${x.toFixed(1)}`);
});

test('avalanche: flipping one input bit flips about half of the 64 output bits', () => {
  const popcount = (v: number): number => {
    let c = 0;
    for (let x = v >>> 0; x !== 0; x &= x - 1) c++;
    return c;
  };
  let total = 0;
  let trials = 0;
  for (let seed = 0; seed < 64; seed++) {
    const key = Uint8Array.from({ length: 13 }, (_, i) => (seed * 31 + i * 7) & 0xff);
    const base = hash64(key);
    for (let bit = 0; bit < key.length * 8; bit++) {
      key[bit >> 3]! ^= 1 << (bit & 7);
      const h = hash64(key);
      key[bit >> 3]! ^= 1 << (bit & 7);
      const d = popcount(h.hi ^ base.hi) + popcount(h.lo ^ base.lo);
      assert.ok(d >= 8, `only ${d} output bits changed`);
      total += d;
      trials++;
    }
  }
  const mean = total / trials;
  assert.ok(Math.abs(mean - 32) < 1, `mean flipped bits ${mean}`);
});
