// The fuzz targets in CI: a smaller run than `npm run fuzz` (2,000 mutated inputs per target, fixed
// seed), which must find nothing -- and a check that the harness does catch what it is for.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fuzz } from '../../fuzz/fuzz.js';
import { targets, FuzzViolation, type FuzzTarget } from '../../fuzz/targets.js';

const now = () => performance.now();

for (const t of targets) {
  test(`fuzz ${t.name}: 2,000 mutated inputs, no crash, no broken invariant, none slow`, () => {
    const r = fuzz(t, 7, 2000, now);
    const first = r.findings[0];
    assert.equal(r.findings.length, 0, first ? `${first.kind} at input ${first.input}: ${first.message}` : '');
    if (t.refuses) assert.ok(r.refused > 0, 'mutations should produce refused inputs too');
  });
}

test('the harness reports a crash and a violation (a target that cannot fail would be useless)', () => {
  const broken: FuzzTarget = {
    name: 'broken',
    corpus: [new Uint8Array([1, 2, 3, 4])],
    run(input) {
      if (input.length > 6) throw new TypeError('crash');
      if (input[0] === 0) throw new FuzzViolation('violation');
    },
    expected: () => false,
    refuses: false,
  };
  const r = fuzz(broken, 1, 500, now);
  assert.ok(r.findings.some((f) => f.kind === 'crash'));
  assert.ok(r.findings.some((f) => f.kind === 'violation'));
});
