// INCRBYFLOAT's long double arithmetic (actors/worker/resp/long-double.ts) against replies recorded from
// redis-server 7.0.15 on x86-64 (`SET k a` then `INCRBYFLOAT k b`), including the cases where doubles
// would differ (10.5 + 0.1, 0.1 + 0.2, 1e400) and strtold's accepted and refused forms.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { addLongDouble, formatLongDouble, isFinite, parseLongDouble } from '../../../../../actors/worker/resp/long-double.js';

function incrbyfloat(a: string, b: string): string {
  const x = parseLongDouble(a);
  const y = parseLongDouble(b);
  if (x === null || y === null) return 'ERR value is not a valid float';
  const r = addLongDouble(x, y);
  return r === null || !isFinite(r) ? 'ERR increment would produce NaN or Infinity' : formatLongDouble(r);
}

const REDIS_7_0_15: [string, string, string][] = [
  ['10.50', '0.1', '10.6'],
  ['10.6', '-5', '5.6'],
  ['5.0e3', '2.0e2', '5200'],
  ['0.1', '0.2', '0.3'],
  ['0', '123456789.123456789', '123456789.12345678899873747'],
  ['0', '1.5e-7', '0.00000015'],
  ['0', '0.1e-20', '0'],
  ['10', '1e30', '1000000000000000000024696061952'],
  ['0', '1e400', '1' + '0'.repeat(19) + '281880683947586514586453433629052038625910693539685534008629862039363994848324160522094053927317616200295822777259255734023828976593340661017797447434546173917862448116674971723778943824391593338047470675026246684401359237513603830343735485505244955964979021825038280091068414947402456898653040951017512658092615827588920183472511643316591362664138176309734806343732497430221946880'],
  ['0', '0x10', '16'],
  ['16', '+1', '17'],
  ['17', '.5', '17.5'],
  ['17.5', '5.', '22.5'],
  ['1.0', '1', '2'],
  ['0', 'inf', 'ERR increment would produce NaN or Infinity'],
  ['0', 'nan', 'ERR value is not a valid float'],
  ['0', '1e-5000', 'ERR value is not a valid float'],
  ['0', '1e5000', 'ERR value is not a valid float'],
  ['0', ' 1', 'ERR value is not a valid float'],
  ['0', '1 ', 'ERR value is not a valid float'],
  ['abc', '1', 'ERR value is not a valid float'],
];

test('INCRBYFLOAT answers what redis-server 7 answers on x86-64', () => {
  for (const [a, b, want] of REDIS_7_0_15) assert.equal(incrbyfloat(a, b), want, `${a} + ${b}`);
});

test('"-0" prints as 0, and the largest long double overflows when doubled', () => {
  assert.equal(incrbyfloat('-0', '-0'), '0');
  assert.equal(incrbyfloat('0', '-1e-30'), '0');
  assert.equal(incrbyfloat('1e4932', '1e4932'), 'ERR increment would produce NaN or Infinity');
  assert.equal(parseLongDouble('.'), null);
  assert.equal(parseLongDouble('1e'), null);
  assert.equal(parseLongDouble('0x'), null);
  assert.equal(parseLongDouble('x'.repeat(5120)), null);
});
