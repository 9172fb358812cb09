// Multi-key writes' outcome (actors/worker/resp/multi-key.ts): a refusal before any write keeps its own
// "not applied" error; a failure after another key was written, or one of unknown outcome, is
// OUTCOME_UNKNOWN.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ErrorCodes, RowanError } from '../../../../../config/base/errors.js';
import { defaultLimits } from '../../../../../config/limits.js';
import { allOrUnknown, checkWrite } from '../../../../../actors/worker/resp/multi-key.js';
import { RespErr, err } from '../../../../../runtime/resp/reply.js';

const refused = () => Promise.reject(new RowanError(ErrorCodes.PM_FULL, 'full'));
const codeOf = (code: string) => (e: unknown) => e instanceof RowanError && e.code === code;

test('checkWrite refuses an empty key, an over-limit key and an over-limit value', () => {
  assert.throws(() => checkWrite(defaultLimits, Buffer.alloc(0), null), codeOf(ErrorCodes.KEY_EMPTY));
  assert.throws(() => checkWrite(defaultLimits, Buffer.alloc(defaultLimits.keyBytesMax + 1), null), codeOf(ErrorCodes.KEY_TOO_LARGE));
  assert.throws(() => checkWrite(defaultLimits, Buffer.from('k'), Buffer.alloc(defaultLimits.valueBytesMax + 1)), codeOf(ErrorCodes.VALUE_TOO_LARGE));
  checkWrite(defaultLimits, Buffer.alloc(defaultLimits.keyBytesMax), Buffer.alloc(defaultLimits.valueBytesMax));
});

test('allOrUnknown: all written, all refused (not applied), some written (outcome unknown)', async () => {
  assert.deepEqual(await allOrUnknown('MSET', [Promise.resolve(1), Promise.resolve(2)]), [1, 2]);
  await assert.rejects(allOrUnknown('MSET', [refused(), refused()]), codeOf(ErrorCodes.PM_FULL));
  await assert.rejects(allOrUnknown('MSET', [Promise.reject(err('MOVED 1 127.0.0.1:1')), refused()]), (e) => e instanceof RespErr && e.s.startsWith('MOVED'));
  await assert.rejects(allOrUnknown('MSET', [Promise.resolve(1), refused()]), codeOf(ErrorCodes.OUTCOME_UNKNOWN));
  const gone = Promise.reject(new RowanError(ErrorCodes.REPLICATION_FAILED, 'backup gone'));
  await assert.rejects(allOrUnknown('DEL', [refused(), gone]), codeOf(ErrorCodes.OUTCOME_UNKNOWN));
  await assert.rejects(allOrUnknown('DEL', [refused(), Promise.reject(err('UNKNOWN ROWAN_ERR_PEER_GONE x'))]), codeOf(ErrorCodes.OUTCOME_UNKNOWN));
});
