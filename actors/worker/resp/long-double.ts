// INCRBYFLOAT's arithmetic exactly as Redis 7 does it on x86-64: C `long double` (x87 80-bit extended:
// a 64-bit significand, exponents -16382..16383, subnormals down to 2^-16445), parsed like strtold
// with Redis's string2ld checks, added with one rounding (to nearest, ties to even), and printed with
// "%.17Lf" then trailing zeros trimmed (ld2string LD_STR_HUMAN). JavaScript's doubles would answer
// "10.59999999999999964" where Redis answers "10.6", so values are exact BigInt rationals, rounded to
// the 80-bit format after each step. Numbers are m * 2^e with |m| < 2^64 (BigInt m, small int e).
export type LongDouble = { neg: boolean; m: bigint; e: number } | { neg: boolean; inf: true };

/** Redis's MAX_LONG_DOUBLE_CHARS: longer strings are not a valid float. */
export const LONG_DOUBLE_CHARS_MAX = 5 * 1024;
const SIG_BITS = 64;
const EXP_MAX = 16383;
/** The exponent of a subnormal's least significant bit. */
const E_MIN = -16382 - (SIG_BITS - 1);
const TWO64 = 1n << 64n;

function bitLength(x: bigint): number {
  return x === 0n ? 0 : x.toString(2).length;
}

/** p/q (both > 0) rounded to the 80-bit format; null when it overflows (strtold: ERANGE, HUGE_VAL). */
function roundRational(neg: boolean, p: bigint, q: bigint): LongDouble | null {
  let k = bitLength(p) - bitLength(q); // floor(log2(p/q)) is k or k - 1
  if (k >= 0 ? p < q << BigInt(k) : p << BigInt(-k) < q) k--;
  const e = Math.max(k - (SIG_BITS - 1), E_MIN);
  const num = e >= 0 ? p : p << BigInt(-e);
  const den = e >= 0 ? q << BigInt(e) : q;
  let m = num / den;
  const twice = 2n * (num - m * den);
  if (twice > den || (twice === den && (m & 1n) === 1n)) m++;
  if (m === TWO64) return fits(neg, 1n << 63n, e + 1);
  return fits(neg, m, e);
}

function fits(neg: boolean, m: bigint, e: number): LongDouble | null {
  return e + SIG_BITS - 1 > EXP_MAX ? null : { neg, m, e };
}

const DECIMAL = /^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/;
const HEX = /^([+-]?)0[xX]([0-9a-fA-F]*)(?:\.([0-9a-fA-F]*))?(?:[pP]([+-]?\d+))?$/;

/** string2ld: the whole string must be a float strtold reads, with no leading space, not NaN, and not
 *  out of range (an overflow, or a non-zero value that underflows to 0). null = not a valid float. */
export function parseLongDouble(s: string): LongDouble | null {
  if (s.length === 0 || s.length >= LONG_DOUBLE_CHARS_MAX) return null;
  const inf = /^([+-]?)(inf|infinity)$/i.exec(s);
  if (inf) return { neg: inf[1] === '-', inf: true };
  const hex = HEX.exec(s);
  if (hex) return fromParts(hex[1] === '-', hex[2]!, hex[3] ?? '', hex[4], 16);
  const dec = DECIMAL.exec(s);
  return dec ? fromParts(dec[1] === '-', dec[2]!, dec[3] ?? '', dec[4], 10) : null;
}

function fromParts(neg: boolean, int: string, frac: string, exp: string | undefined, radix: 10 | 16): LongDouble | null {
  if (int.length + frac.length === 0) return null;
  const digits = BigInt((radix === 16 ? '0x' : '') + (int + frac || '0'));
  if (digits === 0n) return { neg, m: 0n, e: 0 };
  // Decimal: digits * 10^(x - frac); hex: digits * 2^(x - 4 * frac).
  const x = exp === undefined ? 0 : Number(exp);
  const scale = x - (radix === 16 ? 4 : 1) * frac.length;
  // About log10 of the value, to refuse far out-of-range exponents before building huge BigInts (the
  // exact check is roundRational's): beyond 1.19e4932 overflows, below 3.6e-4951 underflows to 0.
  const magnitude = radix === 16 ? (bitLength(digits) + scale) * Math.LOG10E * Math.LN2 : digits.toString().length + scale;
  if (magnitude > 5000 || magnitude < -5000) return null;
  const base = radix === 16 ? 2n : 10n;
  const r = scale >= 0 ? roundRational(neg, digits * base ** BigInt(scale), 1n) : roundRational(neg, digits, base ** BigInt(-scale));
  return r !== null && 'm' in r && r.m === 0n ? null : r;
}

export function isFinite(x: LongDouble): x is { neg: boolean; m: bigint; e: number } {
  return 'm' in x;
}

/** a + b in long double; null for NaN or an infinite result (INCRBYFLOAT refuses both). */
export function addLongDouble(a: LongDouble, b: LongDouble): LongDouble | null {
  if (!isFinite(a) || !isFinite(b)) return null;
  const e = Math.min(a.e, b.e);
  const sa = (a.neg ? -a.m : a.m) << BigInt(a.e - e);
  const sb = (b.neg ? -b.m : b.m) << BigInt(b.e - e);
  const sum = sa + sb;
  if (sum === 0n) return { neg: false, m: 0n, e: 0 };
  const mag = sum < 0n ? -sum : sum;
  return e >= 0 ? roundRational(sum < 0n, mag << BigInt(e), 1n) : roundRational(sum < 0n, mag, 1n << BigInt(-e));
}

/** "%.17Lf" (rounded to nearest, ties to even, as glibc prints) with trailing zeros and a trailing '.'
 *  removed, and "-0" printed as "0". */
export function formatLongDouble(x: { neg: boolean; m: bigint; e: number }): string {
  const scaled = x.m * 10n ** 17n;
  let n: bigint;
  if (x.e >= 0) n = scaled << BigInt(x.e);
  else {
    const den = 1n << BigInt(-x.e);
    n = scaled / den;
    const twice = 2n * (scaled - n * den);
    if (twice > den || (twice === den && (n & 1n) === 1n)) n++;
  }
  const digits = n.toString().padStart(18, '0');
  let out = `${digits.slice(0, -17)}.${digits.slice(-17)}`.replace(/0+$/, '').replace(/\.$/, '');
  if (x.neg && out !== '0') out = `-${out}`;
  return out;
}
