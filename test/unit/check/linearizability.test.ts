// The linearizability checker (test/check/): histories it must accept, the anomalies it must reject
// (lost write, stale read, a write applied twice, a read of a value never written, an ignored DEL),
// unknown outcomes, budgets, the recorder, and property tests against a real in-memory register.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  assertLinearizable,
  checkLinearizability,
  HistoryRecorder,
  type CheckResult,
  type NotLinearizable,
  type Operation,
} from '../../check/linearizability.js';
import { execute, randomSteps, type Step } from '../../fixtures/register-execution.js';

const K = 'k';
const put = (client: number, value: string, invoke: number, response: number | undefined, outcome: Operation['outcome'] = 'ok', key = K): Operation =>
  ({ client, key, op: 'put', value, invoke, response, outcome });
const get = (client: number, output: string | null, invoke: number, response: number | undefined, outcome: Operation['outcome'] = 'ok', key = K): Operation =>
  ({ client, key, op: 'get', output, invoke, response, outcome });
const del = (client: number, invoke: number, response: number | undefined, outcome: Operation['outcome'] = 'ok', key = K): Operation =>
  ({ client, key, op: 'del', invoke, response, outcome });

function accepts(history: Operation[]): void {
  const r = checkLinearizability(history);
  assert.equal(r.ok, true, r.describe());
}

function rejects(history: Operation[], culpritIndex?: number): NotLinearizable {
  const r: CheckResult = checkLinearizability(history);
  assert.equal(r.ok, false, `expected a violation, got: ${r.describe()}`);
  const v = r as NotLinearizable;
  if (culpritIndex !== undefined) assert.equal(v.culpritIndex, culpritIndex, v.describe());
  assert.ok(v.ops.includes(v.culprit));
  return v;
}

test('sequential histories are accepted; a key never written reads as not found', () => {
  accepts([]);
  accepts([
    get(1, null, 0, 1),
    put(1, 'a', 2, 3),
    get(2, 'a', 4, 5),
    put(2, 'b', 6, 7),
    get(1, 'b', 8, 9),
    del(1, 10, 11),
    get(2, null, 12, 13),
    get(2, null, 14, 15, 'ok', 'other'),
    put(1, 'a', 16, 17),
    get(1, 'a', 18, 19),
  ]);
});

test('overlapping PUTs may take effect in either order', () => {
  const puts = [put(1, 'a', 0, 10), put(2, 'b', 1, 9)];
  accepts([...puts, get(3, 'a', 11, 12), get(3, 'a', 13, 14)]);
  accepts([...puts, get(3, 'b', 11, 12), get(3, 'b', 13, 14)]);
  // Whichever order they took, it is one order: a later read cannot go back.
  rejects([...puts, get(3, 'b', 11, 12), get(3, 'a', 13, 14)], 3);
});

test('a GET concurrent with a PUT may return the old or the new value, but not new then old', () => {
  const base = [put(1, 'a', 0, 1), put(1, 'b', 2, 10)];
  accepts([...base, get(2, 'a', 3, 4)]);
  accepts([...base, get(2, 'b', 3, 4)]);
  accepts([...base, get(2, 'a', 3, 4), get(3, 'b', 5, 6)]);
  rejects([...base, get(2, 'b', 3, 4), get(3, 'a', 5, 6)], 3);
});

test('operations that only touch in time (response == invoke) count as concurrent', () => {
  accepts([put(1, 'a', 0, 5), get(2, null, 5, 6)]);
  rejects([put(1, 'a', 0, 5), get(2, null, 6, 7)], 1);
});

test('an unknown-outcome write may take effect at any time after its invoke, or never -- but once', () => {
  const base = [put(1, 'a', 0, 1), put(1, 'b', 2, undefined, 'unknown')];
  accepts([...base, get(2, 'b', 10, 11)]);
  accepts([...base, get(2, 'a', 10, 11)]);
  // Applied long after the client gave up (at 3).
  accepts([put(1, 'a', 0, 1), put(1, 'b', 2, 3, 'unknown'), get(2, 'a', 10, 11), get(2, 'b', 12, 13)]);
  rejects([...base, get(2, 'b', 10, 11), get(2, 'a', 12, 13)], 3);
  // Never before its invoke.
  rejects([put(1, 'a', 0, 1), get(2, 'b', 2, 3), put(1, 'b', 4, undefined, 'unknown')], 1);
  // An unknown DEL, too.
  const d = [put(1, 'a', 0, 1), del(1, 2, undefined, 'unknown')];
  accepts([...d, get(2, null, 5, 6)]);
  accepts([...d, get(2, 'a', 5, 6)]);
  rejects([...d, get(2, null, 5, 6), get(2, 'a', 7, 8)], 3);
});

test('failed operations are dropped, and so is what an unknown GET returned', () => {
  accepts([put(1, 'a', 0, 1), put(1, 'b', 2, 3, 'fail'), get(2, 'a', 4, 5)]);
  accepts([put(1, 'a', 0, 1), del(1, 2, 3, 'fail'), get(2, 'a', 4, 5)]);
  accepts([put(1, 'a', 0, 1), get(2, 'garbage', 2, undefined, 'unknown'), get(2, null, 3, 4, 'fail')]);
  const v = rejects([put(1, 'a', 0, 1), put(1, 'b', 2, 3, 'fail'), get(2, 'b', 4, 5)], 2);
  assert.match(v.reason, /only a failed PUT wrote/);
});

test('rejects a lost write: an acknowledged PUT that a later GET does not see', () => {
  const v = rejects([put(1, 'a', 0, 1), get(2, null, 2, 3)], 1);
  assert.equal(v.state, 'a');
  const w = rejects([put(1, 'a', 0, 1), put(1, 'b', 2, 3), get(3, 'b', 4, 5), get(3, 'b', 6, 7), get(2, 'a', 20, 21)], 4);
  assert.equal(w.state, 'b');
  assert.deepEqual(w.prefix.map((o) => o.value ?? o.output), ['a', 'b', 'b', 'b']);
});

test('rejects a stale read: a GET invoked after a newer PUT completed returns the older value', () => {
  rejects([put(1, 'a', 0, 1), put(1, 'b', 2, 3), get(2, 'a', 4, 5)], 2);
  // Still stale while a third PUT is in flight: the register holds b or c, never a.
  const v = rejects([put(1, 'a', 0, 1), put(1, 'b', 2, 3), put(3, 'c', 3.5, 20), get(2, 'a', 4, 5)], 3);
  assert.ok(v.ops.some((o) => o.value === 'c'), v.describe());
  assert.notEqual(v.state, 'a');
});

test('rejects a write applied twice: reads see 1, then 2, then 1 again with one PUT of 1', () => {
  rejects([put(1, '1', 0, 1), get(2, '1', 2, 3), put(1, '2', 4, 5), get(2, '2', 6, 7), get(2, '1', 8, 9)], 4);
  // The same when the PUT of 1 timed out and its client gave up: an unknown write applies at most once.
  rejects([put(1, '1', 0, 1, 'unknown'), get(2, '1', 2, 3), put(3, '2', 4, 5), get(2, '2', 6, 7), get(2, '1', 8, 9)], 4);
  // And with everything overlapping the PUT of 1.
  rejects([put(1, '1', 0, 100), put(3, '2', 1, 3), get(2, '1', 4, 5), get(2, '2', 6, 7), get(2, '1', 8, 9)]);
});

test('rejects a read of a value never written, including a value written to another key', () => {
  const v = rejects([put(1, 'a', 0, 1), get(2, 'zzz', 2, 3)], 1);
  assert.match(v.reason, /no PUT of this key wrote/);
  const w = rejects([put(1, 'x', 0, 1, 'ok', 'k1'), get(2, 'x', 2, 3, 'ok', 'k2')], 1);
  assert.equal(w.key, 'k2');
});

test('rejects an ignored DEL: a GET after a completed DEL still returns the value', () => {
  accepts([put(1, 'a', 0, 1), del(1, 2, 6), get(2, 'a', 3, 4), get(2, null, 7, 8)]);
  const v = rejects([put(1, 'a', 0, 1), del(1, 2, 3), get(2, 'a', 4, 5)], 2);
  assert.equal(v.state, null);
});

test('keys are independent registers; the failing key is named', () => {
  accepts([put(1, 'a', 0, 10, 'ok', 'x'), put(2, 'a', 1, 2, 'ok', 'y'), get(3, null, 3, 4, 'ok', 'x'), get(3, 'a', 5, 6, 'ok', 'y')]);
  const v = rejects([put(1, 'a', 0, 1, 'ok', 'x'), put(2, 'a', 0, 1, 'ok', 'y'), get(3, 'a', 2, 3, 'ok', 'x'), get(3, null, 2, 3, 'ok', 'y')], 3);
  assert.equal(v.key, 'y');
});

test('describe() names the key, the reason, the prefix and the op that could not be placed', () => {
  const v = rejects([put(1, 'a', 0, 1), put(1, 'b', 2, 3), get(2, 'a', 4, 5)]);
  const text = v.describe();
  assert.match(text, /^key "k" is not linearizable: #2 \(c2 get -> "a" \[4, 5\] ok\) read "a"/);
  assert.match(text, /last written by #1/);
  assert.match(text, /longest linearizable prefix \(2 ops/);
  assert.match(text, /#1 c1 put "b" \[2, 3\] ok/);
  assert.match(text, /register holds "b"/);
  assert.throws(() => assertLinearizable([put(1, 'a', 0, 1), get(2, null, 2, 3)]), { name: 'AssertionError', message: /not linearizable/ });
  assert.doesNotThrow(() => assertLinearizable([put(1, 'a', 0, 1), get(2, 'a', 2, 3)]));
});

test('a search over budget or time is undecided, never a pass', () => {
  // Twelve overlapping PUTs, then a read no order explains: the search must try many orders.
  const hard: Operation[] = [];
  for (let c = 0; c < 12; c++) hard.push(put(c, `v${c}`, c, 100 + c));
  hard.push(get(99, 'v0', 200, 201), get(99, 'v1', 202, 203));
  assert.equal(checkLinearizability(hard).ok, false);
  const r = checkLinearizability(hard, { maxStepsPerKey: 50 });
  assert.equal(r.ok, 'unknown');
  assert.match(r.describe(), /undecided at key "k": the search exceeded its budget of 50 steps/);
  let t = 0;
  const late = checkLinearizability(hard, { timeLimitMs: 1, now: () => (t += 1000) });
  assert.equal(late.ok, 'unknown');
  assert.match(late.describe(), /time limit of 1 ms/);
  assert.throws(() => assertLinearizable(hard, { maxStepsPerKey: 50 }), /undecided/);
});

test('a malformed history is a bug in the recorder and throws', () => {
  assert.throws(() => checkLinearizability([{ client: 1, key: K, op: 'put', invoke: 0, response: 1, outcome: 'ok' }]), /needs a string value/);
  assert.throws(() => checkLinearizability([get(1, 'a', 0, undefined)]), /finite response/);
  assert.throws(() => checkLinearizability([get(1, 'a', 5, 4)]), /before invoke/);
  assert.throws(() => checkLinearizability([{ client: 1, key: K, op: 'get', invoke: 0, response: 1, outcome: 'ok' }]), /needs an output/);
});

test('HistoryRecorder stamps times from the injected clock and keeps open ops as unknown', () => {
  let now = 100;
  const rec = new HistoryRecorder(() => now++);
  const p = rec.invoke(1, 'k', 'put', 'a');
  const g = rec.invoke(2, 'k', 'get');
  rec.ok(p);
  rec.ok(g, null);
  const d = rec.invoke(1, 'k', 'del');
  rec.fail(d);
  const q = rec.invoke(3, 'k', 'put', 'b');
  rec.unknown(q);
  rec.invoke(3, 'k', 'get');
  assert.equal(rec.size, 5);
  assert.deepEqual(rec.history(), [
    { client: 1, key: 'k', op: 'put', value: 'a', invoke: 100, response: 102, outcome: 'ok' },
    { client: 2, key: 'k', op: 'get', output: null, invoke: 101, response: 103, outcome: 'ok' },
    { client: 1, key: 'k', op: 'del', invoke: 104, response: 105, outcome: 'fail' },
    { client: 3, key: 'k', op: 'put', value: 'b', invoke: 106, response: 107, outcome: 'unknown' },
    { client: 3, key: 'k', op: 'get', invoke: 108, response: undefined, outcome: 'unknown' },
  ]);
  accepts(rec.history());
  assert.throws(() => rec.ok(p), /not open/);
  assert.throws(() => rec.ok(rec.invoke(1, 'k', 'get')), /needs its output/);
  assert.throws(() => rec.ok(rec.invoke(1, 'k', 'del'), 'x'), /has no output/);
  assert.throws(() => rec.invoke(1, 'k', 'put'), /needs a string value/);
});

const stepArb: fc.Arbitrary<Step> = fc.record({
  client: fc.nat({ max: 4 }),
  key: fc.nat({ max: 2 }),
  kind: fc.constantFrom('put', 'get', 'get', 'del') as fc.Arbitrary<Step['kind']>,
  value: fc.nat({ max: 3 }),
  gap: fc.nat({ max: 6 }),
  duration: fc.nat({ max: 30 }),
  lin: fc.double({ min: 0, max: 1, noNaN: true }),
  fate: fc.nat({ max: 19 }),
});

test('property: every execution of a real register, with random concurrency windows, is accepted', () => {
  fc.assert(
    fc.property(fc.array(stepArb, { maxLength: 80 }), (steps) => {
      const r = checkLinearizability(execute(steps));
      assert.equal(r.ok, true, r.describe());
    }),
  );
});

test('property: the same executions with one GET reading a never-written value are rejected', () => {
  fc.assert(
    fc.property(fc.array(stepArb, { minLength: 1, maxLength: 80 }), fc.nat(), (steps, pick) => {
      const history = execute(steps);
      const reads = history.map((o, i) => (o.op === 'get' && o.outcome === 'ok' ? i : -1)).filter((i) => i >= 0);
      fc.pre(reads.length > 0);
      const victim = reads[pick % reads.length] as number;
      history[victim] = { ...(history[victim] as Operation), output: 'never-written' };
      const r = checkLinearizability(history);
      assert.equal(r.ok, false, r.describe());
      assert.equal((r as NotLinearizable).key, history[victim]?.key);
      assert.equal((r as NotLinearizable).culpritIndex, victim);
    }),
  );
});

test('5,000 ops over 20 keys from 8 concurrent clients check completely and are accepted', () => {
  const history = execute(randomSteps(0x5eed, { ops: 5000, clients: 8, keys: 20, values: 4 }));
  const r = checkLinearizability(history);
  assert.equal(r.ok, true, r.describe());
  assert.equal(r.ok === true && r.keys, 20);
});

test('3,000 ops on one key from 8 concurrent clients check completely and are accepted', () => {
  const history = execute(randomSteps(0xbeef, { ops: 3000, clients: 8, keys: 1, values: 3 }));
  const r = checkLinearizability(history);
  assert.equal(r.ok, true, r.describe());
  // One stale read near the end is still found in a history that long.
  const last = history.length - 1 - [...history].reverse().findIndex((o) => o.op === 'get' && o.outcome === 'ok');
  const fresh = checkLinearizability([...history, put(100, 'late', 1e9, 1e9 + 1), get(101, history[last]?.output ?? null, 1e9 + 2, 1e9 + 3)]);
  assert.equal(fresh.ok, false);
});

/** The definition, by brute force: some order of the ops of each key respects real time and the register. */
function linearizableByEnumeration(history: readonly Operation[]): boolean {
  const live = history.filter((o) => o.outcome !== 'fail' && !(o.outcome === 'unknown' && o.op === 'get'));
  const end = (o: Operation): number => (o.outcome === 'ok' ? (o.response as number) : Infinity);
  return [...new Set(live.map((o) => o.key))].every((key) => {
    const ops = live.filter((o) => o.key === key);
    const done = ops.map(() => false);
    const place = (state: string | null, left: number): boolean => {
      if (left === 0) return true;
      return ops.some((o, i) => {
        if (done[i] || ops.some((p, j) => !done[j] && j !== i && end(p) < o.invoke)) return false;
        if (o.op === 'get' && o.output !== state) return false;
        done[i] = true;
        const ok = place(o.op === 'put' ? (o.value as string) : o.op === 'del' ? null : state, left - (o.outcome === 'ok' ? 1 : 0));
        done[i] = false;
        return ok;
      });
    };
    return place(null, ops.filter((o) => o.outcome === 'ok').length);
  });
}

const arbitraryOp: fc.Arbitrary<Operation> = fc
  .record({
    client: fc.nat({ max: 3 }),
    key: fc.constantFrom('x', 'y'),
    op: fc.constantFrom('put', 'get', 'get', 'del') as fc.Arbitrary<Operation['op']>,
    word: fc.constantFrom('a', 'b', 'c', null),
    invoke: fc.nat({ max: 8 }),
    length: fc.nat({ max: 5 }),
    outcome: fc.constantFrom('ok', 'ok', 'ok', 'fail', 'unknown') as fc.Arbitrary<Operation['outcome']>,
  })
  .map(({ client, key, op, word, invoke, length, outcome }) => {
    const o: Operation = { client, key, op, invoke, response: invoke + length, outcome };
    if (op === 'put') o.value = word ?? 'a';
    if (op === 'get' && outcome === 'ok') o.output = word;
    return o;
  });

test('property: on small arbitrary histories the checker agrees with brute-force enumeration', () => {
  let rejected = 0;
  fc.assert(
    fc.property(fc.array(arbitraryOp, { maxLength: 9 }), (history) => {
      const expected = linearizableByEnumeration(history);
      const r = checkLinearizability(history);
      assert.equal(r.ok, expected, `enumeration says ${expected}; checker: ${r.describe()}`);
      if (!expected) rejected++;
    }),
    { numRuns: 1000 },
  );
  // Both answers occur, so the agreement means something.
  assert.ok(rejected > 100 && rejected < 900, `${rejected} of 1000 rejected`);
});

test('property: on real executions with one GET output changed, the checker agrees with brute-force enumeration', () => {
  const oneKey = stepArb.map((s) => ({ ...s, key: 0 }));
  fc.assert(
    fc.property(fc.array(oneKey, { minLength: 3, maxLength: 10 }), fc.nat(), fc.constantFrom('v0', 'v1', 'v2', null), (steps, pick, output) => {
      const history = execute(steps);
      const reads = history.filter((o) => o.op === 'get' && o.outcome === 'ok');
      if (reads.length > 0) (reads[pick % reads.length] as Operation).output = output;
      const expected = linearizableByEnumeration(history);
      const r = checkLinearizability(history);
      assert.equal(r.ok, expected, `enumeration says ${expected}; checker: ${r.describe()}`);
    }),
    { numRuns: 500 },
  );
});
