// The client library's argument checks: what JavaScript callers can pass by mistake gets a RowanError
// with a stable code, never a TypeError or RangeError from deep inside, and an empty key is KEY_EMPTY.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkSizes, toBytes } from '../../../client/routing.js';
import { ErrorCodes, RowanError } from '../../../config/base/errors.js';
import { defaultLimits } from '../../../config/limits.js';

const code = (f: () => unknown): string | undefined => {
  try {
    f();
  } catch (e) {
    return e instanceof RowanError ? e.code : `not a RowanError: ${String(e)}`;
  }
  return undefined;
};

test('keys and values must be strings or Uint8Arrays (BAD_ARGUMENT otherwise)', () => {
  for (const bad of [42, undefined, null, {}, [1, 2], true]) {
    assert.equal(code(() => toBytes(bad as never)), ErrorCodes.BAD_ARGUMENT, `key ${String(bad)}`);
    assert.equal(code(() => toBytes(bad as never, 'value')), ErrorCodes.BAD_ARGUMENT, `value ${String(bad)}`);
  }
  assert.deepEqual([...toBytes('hé')], [0x68, 0xc3, 0xa9]);
  const u = new Uint8Array([1, 2]);
  assert.equal(toBytes(u), u);
});

test('an empty key is KEY_EMPTY, an oversized one KEY_TOO_LARGE, an oversized value VALUE_TOO_LARGE', () => {
  const limits = { keyBytesMax: defaultLimits.keyBytesMax, valueBytesMax: defaultLimits.valueBytesMax };
  assert.equal(code(() => checkSizes(new Uint8Array(0), null, limits)), ErrorCodes.KEY_EMPTY);
  assert.equal(code(() => checkSizes(new Uint8Array(limits.keyBytesMax + 1), null, limits)), ErrorCodes.KEY_TOO_LARGE);
  assert.equal(code(() => checkSizes(new Uint8Array(1), new Uint8Array(limits.valueBytesMax + 1), limits)), ErrorCodes.VALUE_TOO_LARGE);
  assert.equal(code(() => checkSizes(new Uint8Array(1), new Uint8Array(0), limits)), undefined, 'an empty value is fine');
});
