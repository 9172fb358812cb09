// `--debug-pause STEP:MS` (actors/manager/protocol.ts): the fault tests' way into the manager's rounds,
// a flag parsed once, never an environment variable read in product code.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DEBUG_PAUSE_STEPS, parseDebugPause } from '../../../../actors/manager/protocol.js';
import { ErrorCodes, RowanError } from '../../../../config/base/errors.js';

test('every step parses with its pause; anything else is BAD_ARGUMENT naming the steps', () => {
  for (const step of DEBUG_PAUSE_STEPS) assert.deepEqual(parseDebugPause(`${step}:60000`), { step, ms: 60_000 });
  for (const bad of ['stored:100', 'move-stored', 'move-stored:0', 'move-stored:-5', 'move-stored:1.5', 'move-stored:1e9x', ':100', 'MOVE-STORED:10']) {
    assert.throws(() => parseDebugPause(bad), (e: unknown) => e instanceof RowanError && e.code === ErrorCodes.BAD_ARGUMENT && /failover-stored, move-stored, move-prepared, move-committed/.test(e.message), bad);
  }
});
