// The benchmark harness tells the truth about itself: --help lists exactly the benchmarks it runs (each
// with its plots), and a misspelt benchmark or flag is refused with the usage instead of being ignored.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { figures } from '../../../bench/plot/figures.js';

const runJs = new URL('../../../bench/run.js', import.meta.url).pathname;

function bench(args: string[]) {
  return spawnSync(process.execPath, [runJs, ...args], { encoding: 'utf8', timeout: 30_000 });
}

test('--help lists every benchmark the harness knows, each of which has figures', () => {
  const r = bench(['--help']);
  assert.equal(r.status, 0, r.stderr);
  const listed = [...r.stdout.matchAll(/^ {2}(\S+) +~/gm)].map((m) => m[1]!);
  assert.deepEqual([...listed].sort(), Object.keys(figures).sort());
  assert.match(r.stdout, /--replot/);
  assert.match(r.stdout, /failover .*\n.*--kills=N/);
});

test('an unknown benchmark or flag exits 2 with the usage', () => {
  const name = bench(['ycbs']);
  assert.equal(name.status, 2);
  assert.match(name.stderr, /unknown benchmark\(s\): ycbs/);
  assert.match(name.stderr, /usage: npm run bench/);
  const flag = bench(['ring', '--kils=3']);
  assert.equal(flag.status, 2);
  assert.match(flag.stderr, /unknown flag\(s\): --kils=3/);
});
