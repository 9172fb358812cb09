// Redis's 64-bit integer arguments (string2ll) and their error, shared by the counter, string-edit and
// expiry commands.
import { err } from '../../../runtime/resp/reply.js';

const INT64 = /^(0|-?[1-9][0-9]{0,18})$/;
export const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
export const NOT_INTEGER = err('ERR value is not an integer or out of range');

/** Redis's string2ll: a signed 64-bit decimal, no sign '+', no leading zeros or spaces, no "-0". */
export function parseInt64(b: Uint8Array): bigint | null {
  if (b.length === 0 || b.length > 20) return null;
  const s = Buffer.from(b.buffer, b.byteOffset, b.length).toString('latin1');
  if (!INT64.test(s)) return null;
  const n = BigInt(s);
  return n < INT64_MIN || n > INT64_MAX ? null : n;
}

export function inInt64(n: bigint): boolean {
  return n >= INT64_MIN && n <= INT64_MAX;
}
