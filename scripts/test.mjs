// Runs every compiled test file under dist/test with node's built-in test runner, each file in a process of its own.
// Usage: node scripts/test.mjs [unit|integration|fault ...]  (default: all suites)
// ROWAN_TEST_DIST names another compiled tree than dist/test (the runner's own test uses it).
//
// Each file runs in a process group of its own, so that one hung test costs minutes, not the whole CI
// budget (a CI run that never finishes reports nothing): a file still running after
// ROWAN_TEST_FILE_BUDGET_MS (default 20 min) is killed with its group, and after every file whatever
// is left of its group (a cluster launcher whose test was cancelled at its own timeout) is killed too.
// (Not node's --test-timeout: it bounds each file as a whole, and long files set their own timeouts.)
// Unit files run ROWAN_TEST_UNIT_JOBS (default 2) at a time and integration files
// ROWAN_TEST_INTEGRATION_JOBS (default 2), each one's output held and printed whole when it ends (two
// files' spec lines never interleave); fault files one at a time. Each file is told its lane
// (ROWAN_TEST_LANE of ROWAN_TEST_LANES): test/fixtures/cluster.ts randomBasePort picks cluster ports
// only in its lane's share of the range, so two files running together never pick the same ports.
// At the end: a table of the files by time (every file's start and duration also to
// ROWAN_TEST_TIMES_FILE, default $TMPDIR/rowan-test-times.json), the failures, and the skipped tests
// with their reasons.
// Under CI (CI set and not 'false') a skipped test fails the run: in CI every tool a test needs is
// installed (.ci/run), so a skip there means a test did not run, not a machine without the tool.
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { spawn } from 'node:child_process';

const root = new URL('..', import.meta.url).pathname;
const suites = process.argv.slice(2).length ? process.argv.slice(2) : ['unit', 'integration', 'fault'];
const distTest = process.env.ROWAN_TEST_DIST ?? join(root, 'dist', 'test');
const fileBudgetMs = Number(process.env.ROWAN_TEST_FILE_BUDGET_MS ?? 1_200_000);
const unitJobs = Math.max(1, Number(process.env.ROWAN_TEST_UNIT_JOBS ?? 2));
const integrationJobs = Math.max(1, Number(process.env.ROWAN_TEST_INTEGRATION_JOBS ?? 2));
const underCi = process.env.CI !== undefined && process.env.CI !== '' && process.env.CI !== 'false';

function* walk(dir) {
  let names;
  try { names = readdirSync(dir).sort(); } catch { return; }
  for (const name of names) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) yield* walk(p);
    else if (name.endsWith('.test.js')) yield p;
  }
}

/** One file under node --test: spec to our stdout (as it comes, or `held` until the file ends), TAP to a
 *  file we read the counts and skips from. */
function runFile(file, tapFile, held, lane, lanes) {
  return new Promise((resolve) => {
    const t0 = Date.now();
    const child = spawn(process.execPath, [
      '--test',
      '--test-reporter=spec', '--test-reporter-destination=stdout',
      '--test-reporter=tap', `--test-reporter-destination=${tapFile}`,
      file,
    ], { stdio: ['ignore', 'pipe', 'pipe'], cwd: root, detached: true, env: { ...process.env, ROWAN_TEST_LANE: String(lane), ROWAN_TEST_LANES: String(lanes) } });
    // Passed through as it comes; the end kept, to repeat a failing file's output after the summary
    // (a CI log is often read from its end).
    let tail = '';
    const hold = [];
    const keep = (out) => (d) => {
      if (held) hold.push([out, d]);
      else out.write(d);
      tail = (tail + d).slice(-12_000);
    };
    child.stdout.on('data', keep(process.stdout));
    child.stderr.on('data', keep(process.stderr));
    let overBudget = false;
    const timer = setTimeout(() => {
      overBudget = true;
      console.error(`test: ${relative(root, file)} ran past its budget of ${fileBudgetMs / 60_000} min; killing it`);
      try { process.kill(-child.pid, 'SIGKILL'); } catch { /* gone already */ }
    }, fileBudgetMs);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      for (const [out, d] of hold) out.write(d);
      try { process.kill(-child.pid, 'SIGKILL'); } catch { /* nothing left of the group */ }
      resolve({ code: code ?? 1, signal, overBudget, ms: Date.now() - t0, tail: () => tail });
    });
  });
}

/** Counts and skipped tests from a TAP stream (node's tap reporter). */
function readTap(tapFile) {
  let text = '';
  try { text = readFileSync(tapFile, 'utf8'); } catch { return { pass: 0, fail: 0, skipped: [] }; }
  const count = (k) => Number(text.match(new RegExp(`^# ${k} (\\d+)$`, 'm'))?.[1] ?? 0);
  const skipped = [...text.matchAll(/^\s*ok \d+ - (.*) # SKIP(.*)$/gm)].map((m) => `${m[1]}:${m[2]}`);
  return { pass: count('pass'), fail: count('fail') + count('cancelled'), skipped };
}

const files = suites.flatMap((s) => [...walk(join(distTest, s))]);
if (files.length === 0) {
  console.error(`test: no compiled test files under ${distTest}/{${suites.join(',')}}; run npm run build first`);
  process.exit(1);
}

// Fault files one at a time: they kill, pause and partition processes for real, make network
// namespaces and veth addresses, and lean on timing (leases) the most. Unit files run in this process's
// threads only and mostly take a core each for a second or two (node's start included); integration
// files spend much of their time starting clusters and waiting for them: two at a time, they use the
// second core (a CI run took 29 min with integration files one at a time on 2 cores, 1.3 cores busy).
const tapDir = mkdtempSync(join(tmpdir(), 'rowan-test-'));
const results = new Array(files.length);
const t0 = Date.now();
const suiteOf = (file) => relative(distTest, file).split('/')[0];
const jobsOf = (file) => ({ unit: unitJobs, integration: integrationJobs })[suiteOf(file)] ?? 1;
let next = 0;
/** Runs files from `next` on while they are of the suite `lane` started on and allow `jobs` at a time. */
async function lane(index, jobs, suite) {
  while (next < files.length && suiteOf(files[next]) === suite) {
    const i = next++;
    const tapFile = join(tapDir, `${i}.tap`);
    const startedAt = Date.now() - t0;
    const done = await runFile(files[i], tapFile, jobs > 1, index, jobs);
    results[i] = { file: relative(distTest, files[i]), startedAt, ...done, ...readTap(tapFile) };
  }
}
const suiteMs = new Map();
while (next < files.length) {
  const jobs = jobsOf(files[next]);
  const suite = suiteOf(files[next]);
  const s0 = Date.now();
  await Promise.all(Array.from({ length: jobs }, (_, i) => lane(i, jobs, suite)));
  suiteMs.set(suite, (suiteMs.get(suite) ?? 0) + Date.now() - s0);
}
rmSync(tapDir, { recursive: true, force: true });

// Every file's start and duration, for packing the suites (ROWAN_TEST_TIMES_FILE names where).
const timesFile = process.env.ROWAN_TEST_TIMES_FILE ?? join(tmpdir(), 'rowan-test-times.json');
writeFileSync(timesFile, JSON.stringify(results.map((r) => ({ file: r.file, startedAt: r.startedAt, ms: r.ms, pass: r.pass, fail: r.fail }))));
const secs = (ms) => (ms / 1000).toFixed(1).padStart(7);
const failed = results.filter((r) => r.code !== 0 || r.fail > 0 || r.overBudget);
const skipped = results.flatMap((r) => r.skipped.map((s) => `${r.file}: ${s}`));
console.log(`\ntest: ${files.length} files in ${((Date.now() - t0) / 60_000).toFixed(1)} min (${[...suiteMs].map(([s, ms]) => `${s} ${(ms / 60_000).toFixed(1)}`).join(', ')}); the slowest:`);
for (const r of [...results].sort((a, b) => b.ms - a.ms).slice(0, 15)) {
  console.log(`  ${secs(r.ms)} s  ${r.file}  (${r.pass} passed${r.fail ? `, ${r.fail} failed` : ''}${r.skipped.length ? `, ${r.skipped.length} skipped` : ''})`);
}
console.log(`test: ${results.reduce((a, r) => a + r.pass, 0)} passed, ${results.reduce((a, r) => a + r.fail, 0)} failed, ${skipped.length} skipped`);
for (const r of failed) {
  console.log(`\ntest: the end of ${r.file}'s output:\n${r.tail().split('\n').slice(-80).join('\n')}`);
}
for (const r of failed) {
  console.log(`test: FAILED ${r.file}${r.overBudget ? ` (killed past its ${fileBudgetMs / 60_000} min budget)` : ''}${r.signal ? ` (signal ${r.signal})` : ` (exit ${r.code})`}`);
}
if (skipped.length) {
  console.log(`test: skipped${underCi ? ' (CI is set: a skip fails the run)' : ' (they did not run on this machine; under CI they would fail the run)'}:`);
  for (const s of skipped) console.log(`  ${s}`);
  console.log('test: `npm run setup` installs what they need (Debian packages, as root or with sudo; the list: scripts/setup.sh)');
}
process.exit(failed.length > 0 || (underCi && skipped.length > 0) ? 1 : 0);
