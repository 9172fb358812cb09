// The read-back check (test/check/read-back.ts): a final read showing an older acknowledged value, a
// resurrected DEL or nothing is a lost write; unknown outcomes and writes concurrent with the last
// acknowledged one are not; and every execution of a real register, final reads appended, passes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { Operation } from '../../check/linearizability.js';
import { readBack } from '../../check/read-back.js';
import { execute, type Step } from '../../fixtures/register-execution.js';

const FINAL = 99;
const put = (client: number, value: string, invoke: number, response: number, outcome: Operation['outcome'] = 'ok', key = 'k'): Operation => ({ client, key, op: 'put', value, invoke, response, outcome });
const del = (client: number, invoke: number, response: number, outcome: Operation['outcome'] = 'ok', key = 'k'): Operation => ({ client, key, op: 'del', invoke, response, outcome });
const final = (output: string | null, at = 1000, key = 'k'): Operation => ({ client: FINAL, key, op: 'get', output, invoke: at, response: at + 1, outcome: 'ok' });
const check = (h: Operation[]) => readBack(h, (o) => o.client === FINAL);

test('the last acknowledged PUT read back: nothing lost', () => {
  assert.deepEqual(check([put(1, 'a', 0, 5), put(2, 'b', 10, 15), final('b')]).lost, []);
});

test('an older acknowledged value, a resurrected DEL, or nothing where a PUT was acknowledged: lost', () => {
  const older = check([put(1, 'a', 0, 5), put(2, 'b', 10, 15), final('a')]);
  assert.equal(older.lost.length, 1);
  assert.deepEqual(older.lost[0]!.possible, ['b']);
  assert.equal(older.lost[0]!.acknowledged[0]!.value, 'b');
  assert.equal(check([put(1, 'a', 0, 5), del(1, 10, 15), final('a')]).lost.length, 1);
  assert.equal(check([put(1, 'a', 0, 5), final(null)]).lost.length, 1);
});

test('writes concurrent with each other may end either way; an unknown write may be last or never happen', () => {
  assert.deepEqual(check([put(1, 'a', 0, 10), put(2, 'b', 5, 15), final('a')]).lost, []);
  assert.deepEqual(check([put(1, 'a', 0, 5), put(2, 'b', 10, 15, 'unknown'), final('a')]).lost, []);
  assert.deepEqual(check([put(1, 'a', 0, 5), put(2, 'b', 10, 15, 'unknown'), final('b')]).lost, []);
  assert.deepEqual(check([put(1, 'a', 0, 5, 'unknown'), final(null)]).lost, []);
  // An unknown write acknowledged-overwritten later can still land after the overwrite.
  assert.deepEqual(check([put(1, 'a', 0, 5, 'unknown'), put(2, 'b', 10, 15), final('a')]).lost, []);
  // A failed write never happened.
  assert.equal(check([put(1, 'a', 0, 5), put(2, 'b', 10, 15, 'fail'), final('b')]).lost.length, 1);
});

test('a key written but never read at the end is reported unread, not passed', () => {
  const r = check([put(1, 'a', 0, 5), { ...final('a'), outcome: 'unknown' }]);
  assert.deepEqual(r.unread, ['k']);
});

const stepArb = fc.record({
  client: fc.nat({ max: 3 }),
  key: fc.nat({ max: 2 }),
  kind: fc.constantFrom('put', 'get', 'del') as fc.Arbitrary<Step['kind']>,
  value: fc.nat({ max: 3 }),
  gap: fc.nat({ max: 6 }),
  duration: fc.nat({ max: 30 }),
  lin: fc.double({ min: 0, max: 1, noNaN: true }),
  fate: fc.nat({ max: 19 }),
});

test('property: executions of a real register, each key read once after everything landed, lose nothing', () => {
  fc.assert(
    fc.property(fc.array(stepArb, { maxLength: 80 }), (steps) => {
      // Far enough after every step that even an unknown write, which lands up to 3 windows late, is in.
      const finals: Step[] = [0, 1, 2].map((key) => ({ client: FINAL, key, kind: 'get', value: 0, gap: 100_000, duration: 1, lin: 0.5, fate: 3 }));
      const r = check(execute([...steps, ...finals]));
      assert.deepEqual(r.lost, []);
      assert.deepEqual(r.unread, []);
    }),
  );
});
