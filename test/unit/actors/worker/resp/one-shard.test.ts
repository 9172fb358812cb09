// The writes of RENAME and MSETNX (actors/worker/resp/one-shard.ts writeInOrder): a failure of the first
// write keeps its own code (not applied stays not applied), a failure after an earlier write was
// applied is outcome-unknown whatever its own code, and the RESP reply says so (handler.ts).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ErrorCodes, RowanError } from '../../../../../config/base/errors.js';
import { rowanErrorReply } from '../../../../../actors/worker/resp/outcome.js';
import { writeInOrder } from '../../../../../actors/worker/resp/one-shard.js';

const refused = () => Promise.reject(new RowanError(ErrorCodes.VALUE_TOO_LARGE, 'too large'));

test('the first write refused: the error stands (not applied), nothing after it runs', async () => {
  let second = false;
  const e = await writeInOrder('RENAME', [refused, async () => void (second = true)]).catch((x: unknown) => x);
  assert.equal((e as RowanError).code, ErrorCodes.VALUE_TOO_LARGE);
  assert.equal(second, false);
  assert.match(rowanErrorReply(e).s, /^ERR ROWAN_ERR_VALUE_TOO_LARGE/);
});

test('the second write fails after the first was applied: UNKNOWN, naming the write', async () => {
  const e = await writeInOrder('RENAME', [async () => undefined, refused]).catch((x: unknown) => x);
  assert.equal((e as RowanError).code, ErrorCodes.OUTCOME_UNKNOWN);
  assert.match(rowanErrorReply(e).s, /^UNKNOWN ROWAN_ERR_OUTCOME_UNKNOWN RENAME: write 2 of 2 failed after the earlier ones were applied \(ROWAN_ERR_VALUE_TOO_LARGE too large\) \(outcome unknown\)$/);
});
