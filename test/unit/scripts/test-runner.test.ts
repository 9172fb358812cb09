// scripts/test.mjs (npm test's runner) on small trees of test files made here: a skip is reported with
// its reason and fails the run only under CI; a failing file fails it; a file past its budget is
// killed with the processes it started, and the run still ends with the summary.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBasePort } from '../../fixtures/cluster.js';

const runner = new URL('../../../../scripts/test.mjs', import.meta.url).pathname;

function run(files: Record<string, string>, env: Record<string, string>, suite = 'unit'): { code: number; out: string } {
  const dist = mkdtempSync(join(tmpdir(), 'rowan-runner-'));
  try {
    mkdirSync(join(dist, suite));
    for (const [name, text] of Object.entries(files)) writeFileSync(join(dist, suite, name), text);
    // Not CI's own setting, and not the variable that tells node:test it runs inside a test file.
    const { CI: _ci, NODE_TEST_CONTEXT: _ctx, ...rest } = process.env;
    const r = spawnSync(process.execPath, [runner, suite], { encoding: 'utf8', env: { ...rest, ROWAN_TEST_DIST: dist, ...env }, timeout: 60_000 });
    return { code: r.status ?? -1, out: `${r.stdout}${r.stderr}` };
  } finally {
    rmSync(dist, { recursive: true, force: true });
  }
}

const passing = "import { test } from 'node:test';\ntest('fine', () => {});\n";
const skipping = "import { test } from 'node:test';\ntest('needs a tool', { skip: 'the tool is not installed' }, () => {});\n";

test('a skipped test is listed with its reason; the run passes locally and fails under CI', () => {
  const files = { 'a.test.js': passing, 'b.test.js': skipping };
  const local = run(files, {});
  assert.equal(local.code, 0, local.out);
  assert.match(local.out, /1 passed, 0 failed, 1 skipped/);
  assert.match(local.out, /b\.test\.js: needs a tool: the tool is not installed/);
  const ci = run(files, { CI: 'true' });
  assert.equal(ci.code, 1, ci.out);
  assert.match(ci.out, /CI is set: a skip fails the run/);
  assert.equal(run(files, { CI: 'false' }).code, 0);
});

test('a failing file fails the run, is named, and the end of its output comes again after the summary', () => {
  const r = run({ 'a.test.js': passing, 'c.test.js': "import { test } from 'node:test';\ntest('broken', () => { throw new Error('the reason it broke'); });\n" }, {});
  assert.equal(r.code, 1, r.out);
  assert.match(r.out, /FAILED unit\/c\.test\.js/);
  assert.match(r.out, /1 passed, 1 failed/);
  const after = r.out.slice(r.out.indexOf('1 passed, 1 failed'));
  assert.match(after, /the end of unit\/c\.test\.js's output:[^]*the reason it broke/);
});

test('a file past its budget is killed with what it started; the summary still comes', () => {
  // The file starts a child that would outlive it (as a cluster launcher does) and never ends.
  const neverEnds = "import { spawn } from 'node:child_process';\nimport { writeFileSync } from 'node:fs';\n" +
    "const c = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });\n" +
    "writeFileSync(process.env.PID_FILE, String(c.pid));\nsetInterval(() => {}, 1000);\n";
  const pidFile = join(mkdtempSync(join(tmpdir(), 'rowan-runner-pid-')), 'pid');
  const killed = run({ 'k.test.js': neverEnds }, { ROWAN_TEST_FILE_BUDGET_MS: '3000', PID_FILE: pidFile });
  assert.equal(killed.code, 1, killed.out);
  assert.match(killed.out, /FAILED unit\/k\.test\.js \(killed past its/);
  const pid = Number(readFileSync(pidFile, 'utf8'));
  assert.ok(goneWithin(pid, 10_000), `the child the file started (pid ${pid}) is gone too`);
});

test('what a finished file leaves running (a cluster its cancelled test started) is killed after it', () => {
  const leaves = "import { test } from 'node:test';\nimport { spawn } from 'node:child_process';\nimport { writeFileSync } from 'node:fs';\n" +
    "test('starts a child and ends', () => {\n  const c = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });\n" +
    "  c.unref();\n  writeFileSync(process.env.PID_FILE, String(c.pid));\n});\n";
  const pidFile = join(mkdtempSync(join(tmpdir(), 'rowan-runner-pid-')), 'pid');
  const r = run({ 'l.test.js': leaves }, { PID_FILE: pidFile });
  assert.equal(r.code, 0, r.out);
  const pid = Number(readFileSync(pidFile, 'utf8'));
  assert.ok(goneWithin(pid, 10_000), `the child left running by the file (pid ${pid}) is gone`);
});

test('integration files run two at a time, each told its lane (randomBasePort keeps to it); fault files one at a time', () => {
  // Each file says it started, then waits (bounded) for the other file to say so too: run one after
  // the other, the first would give up waiting and fail.
  const meets = (me: string, other: string) => "import { test } from 'node:test';\nimport { existsSync, writeFileSync } from 'node:fs';\nimport { join } from 'node:path';\n" +
    `test('meets', async () => {\n  const d = process.env.OUT_DIR;\n  writeFileSync(join(d, '${me}'), process.env.ROWAN_TEST_LANE + '/' + process.env.ROWAN_TEST_LANES);\n` +
    `  const until = Date.now() + Number(process.env.MEET_MS);\n  while (!existsSync(join(d, '${other}'))) {\n    if (Date.now() > until) throw new Error('ran alone');\n    await new Promise((r) => setTimeout(r, 20));\n  }\n});\n`;
  const files = { 'a.test.js': meets('a', 'b'), 'b.test.js': meets('b', 'a') };
  const out = mkdtempSync(join(tmpdir(), 'rowan-runner-lanes-'));
  try {
    const r = run(files, { OUT_DIR: out, MEET_MS: '30000' }, 'integration');
    assert.equal(r.code, 0, r.out);
    assert.deepEqual([readFileSync(join(out, 'a'), 'utf8'), readFileSync(join(out, 'b'), 'utf8')].sort(), ['0/2', '1/2']);
    rmSync(join(out, 'a'));
    rmSync(join(out, 'b'));
    const alone = run(files, { OUT_DIR: out, MEET_MS: '2000' }, 'fault');
    assert.equal(alone.code, 1, 'fault files run one at a time');
    assert.match(alone.out, /ran alone/);
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});

test('randomBasePort: the two lanes pick from disjoint bases', () => {
  const saved = { lane: process.env['ROWAN_TEST_LANE'], lanes: process.env['ROWAN_TEST_LANES'] };
  const picks = (lane: string) => {
    process.env['ROWAN_TEST_LANE'] = lane;
    process.env['ROWAN_TEST_LANES'] = '2';
    return new Set(Array.from({ length: 400 }, () => randomBasePort()));
  };
  try {
    const [a, b] = [picks('0'), picks('1')];
    assert.ok(a.size > 1 && b.size > 1, `several bases in each lane: ${[...a]} / ${[...b]}`);
    assert.deepEqual([...a].filter((p) => b.has(p)), [], 'no base in both lanes');
    for (const p of [...a, ...b]) assert.ok(p >= 10000 && p + 1000 <= 32768, `base ${p} and its ports below the ephemeral range`);
  } finally {
    for (const [k, v] of [['ROWAN_TEST_LANE', saved.lane], ['ROWAN_TEST_LANES', saved.lanes]] as const) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
});

/** Whether `pid` stops running within `ms`: the runner's SIGKILL is delivered, and the process torn
 *  down, asynchronously -- on a busy machine not yet when the run returns (CI saw it still running). */
function goneWithin(pid: number, ms: number): boolean {
  const until = Date.now() + ms;
  while (running(pid)) {
    if (Date.now() > until) return false;
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
  }
  return true;
}

/** Whether `pid` runs (a zombie left for init to reap does not). */
function running(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

test('unit files run two at a time (ROWAN_TEST_UNIT_JOBS), and each file\'s output still comes in one piece', () => {
  // Each file waits for the other's marker: run one after the other, the first would wait past its budget.
  const meets = (me: string, other: string) => "import { test } from 'node:test';\nimport { existsSync, writeFileSync } from 'node:fs';\nimport { join } from 'node:path';\n" +
    `test('${me} meets ${other}', async () => {\n  writeFileSync(join(process.env.MEET_DIR, '${me}'), '');\n` +
    `  for (let i = 0; !existsSync(join(process.env.MEET_DIR, '${other}')); i++) {\n    console.log('${me} waits ' + i);\n    await new Promise((r) => setTimeout(r, 20));\n  }\n` +
    `  for (let i = 0; i < 5; i++) console.log('${me} met ' + i);\n});\n`;
  const dir = mkdtempSync(join(tmpdir(), 'rowan-runner-meet-'));
  try {
    const files = { 'm.test.js': meets('m', 'n'), 'n.test.js': meets('n', 'm') };
    const r = run(files, { MEET_DIR: dir, ROWAN_TEST_FILE_BUDGET_MS: '20000', ROWAN_TEST_UNIT_JOBS: '2' });
    assert.equal(r.code, 0, r.out);
    assert.match(r.out, /2 passed, 0 failed/);
    const owners = r.out.split('\n').flatMap((l) => /^(m|n) (waits|met) \d+$/.exec(l)?.[1] ?? []);
    assert.equal(owners.filter((o, i) => i > 0 && o !== owners[i - 1]).length, 1, `the two files' lines not interleaved: ${owners.join('')}`);
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir);
    const serial = run(files, { MEET_DIR: dir, ROWAN_TEST_FILE_BUDGET_MS: '3000', ROWAN_TEST_UNIT_JOBS: '1' });
    assert.equal(serial.code, 1, 'one file at a time, the first never meets the second');
    assert.match(serial.out, /FAILED unit\/m\.test\.js \(killed past its/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
