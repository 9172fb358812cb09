// Runs every compiled test file under dist/test with node's built-in test runner.
// Usage: node scripts/test.mjs [unit|integration|fault ...]  (default: all suites)
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';

const root = new URL('..', import.meta.url).pathname;
const suites = process.argv.slice(2).length ? process.argv.slice(2) : ['unit', 'integration', 'fault'];

function* walk(dir) {
  let names;
  try { names = readdirSync(dir).sort(); } catch { return; }
  for (const name of names) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) yield* walk(p);
    else if (name.endsWith('.test.js')) yield p;
  }
}

const files = suites.flatMap((s) => [...walk(join(root, 'dist', 'test', s))]);
if (files.length === 0) {
  console.error(`test: no compiled test files under dist/test/{${suites.join(',')}}; run npm run build first`);
  process.exit(1);
}
// Concurrency 1: the fault and integration tests spawn processes and threads of their own, and this
// machine has two cores; running files one at a time keeps them from starving each other.
const r = spawnSync(process.execPath, ['--test', '--test-concurrency=1', '--test-reporter=spec', ...files], {
  stdio: 'inherit',
  cwd: root,
});
process.exit(r.status ?? 1);
