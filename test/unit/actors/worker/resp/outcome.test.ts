// Error replies say what the client may assume (actors/worker/resp/outcome.ts): refusals before anything
// was persisted are ERR / OOM / TRYAGAIN ("not applied"), everything else UNKNOWN ("outcome unknown").
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ErrorCodes, RowanError } from '../../../../../config/base/errors.js';
import { isNotApplied, rowanErrorReply } from '../../../../../actors/worker/resp/outcome.js';

const reply = (code: string) => rowanErrorReply(new RowanError(code as never, 'm')).s;

test('refusals before anything was persisted are not applied; the rest is outcome unknown', () => {
  for (const c of [ErrorCodes.KEY_EMPTY, ErrorCodes.KEY_TOO_LARGE, ErrorCodes.VALUE_TOO_LARGE, ErrorCodes.ENTRY_TOO_LARGE]) assert.match(reply(c), new RegExp(`^ERR ${c} `));
  assert.match(reply(ErrorCodes.STALE_TERM), /^TRYAGAIN /);
  assert.match(reply(ErrorCodes.PM_FULL), /^OOM /);
  assert.match(reply(ErrorCodes.INDEX_FULL), /^OOM ROWAN_ERR_INDEX_FULL /, 'a full index refuses a new key before anything is persisted');
  for (const c of [ErrorCodes.OUTCOME_UNKNOWN, ErrorCodes.REPLICATION_FAILED, ErrorCodes.PEER_GONE]) {
    assert.match(reply(c), /^UNKNOWN .*\(outcome unknown\)$/);
    assert.equal(isNotApplied(new RowanError(c, 'm')), false);
  }
  assert.equal(isNotApplied(new RowanError(ErrorCodes.INDEX_FULL, 'm')), true);
  assert.match(rowanErrorReply(new Error('boom')).s, /^UNKNOWN ROWAN_ERR_INTERNAL boom/);
});
