// The real `rowan` command as child processes: start, status, SIGTERM, stop, bad input, a failing actor.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { schedGetaffinity } from '../../native/libc.js';
import type { NodeStatus } from '../../runtime/status.js';
import { eventually } from '../fixtures/eventually.js';

const root = new URL('../../../', import.meta.url).pathname;
const rowan = join(root, 'bin', 'rowan');
const faultyNode = new URL('../fixtures/faulty-node.js', import.meta.url).pathname;
const allowed = schedGetaffinity(0);

const dirs: string[] = [];
const children: ChildProcess[] = [];
after(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'rowan-node-'));
  dirs.push(d);
  return d;
}

interface Running {
  child: ChildProcess;
  stderr: () => string;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

function launch(script: string, args: string[]): Running {
  const child = spawn(process.execPath, [script, ...args], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let err = '';
  child.stderr!.setEncoding('utf8').on('data', (c: string) => (err += c));
  child.stdout!.resume();
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) =>
    child.once('exit', (code, signal) => r({ code, signal })),
  );
  return { child, stderr: () => err, exit };
}

async function waitFor(r: Running, pattern: RegExp, timeoutMs = 20_000): Promise<void> {
  const t0 = Date.now();
  while (!pattern.test(r.stderr())) {
    if (r.child.exitCode !== null) throw new Error(`exited ${r.child.exitCode} before ${pattern}:\n${r.stderr()}`);
    if (Date.now() - t0 > timeoutMs) throw new Error(`no ${pattern} within ${timeoutMs} ms:\n${r.stderr()}`);
    await new Promise((res) => setTimeout(res, 25));
  }
}

function cli(...args: string[]) {
  const r = spawnSync(process.execPath, [rowan, ...args], { cwd: root, encoding: 'utf8', timeout: 30_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

function procCpus(pid: number, tid: number): string {
  return /Cpus_allowed_list:\s*(\S+)/.exec(readFileSync(`/proc/${pid}/task/${tid}/status`, 'utf8'))![1]!;
}

test('rowan start: actors READY on the cores they report; status shows them; SIGTERM exits 0 leaving nothing', async () => {
  const dir = join(tempDir(), 'x');
  const node = launch(rowan, ['start', '--no-auth', '--roles', 'worker:2,control,digest,clean,migration', '--data-dir', dir]);
  await waitFor(node, /"msg":"node ready"/);
  const ready = node.stderr().split('\n').filter((l) => l.includes('READY')).map((l) => JSON.parse(l));
  assert.equal(ready.length, 6);

  // `status` pings every actor through its rings with a 500 ms timeout: on a loaded machine an answer
  // can come late (pingUs null), so ask again until every actor answered (bounded), counting the asks.
  let asks = 0;
  const s = await eventually(() => {
    asks++;
    const st = cli('status', '--data-dir', dir, '--json');
    assert.equal(st.code, 0, st.stderr);
    const got = JSON.parse(st.stdout) as NodeStatus;
    for (const a of got.actors) assert.notEqual(a.pingUs, null, `${a.name} answered a ping through its rings`);
    return got;
  }, 60_000, 200);
  assert.equal(s.pid, node.child.pid);
  assert.deepEqual(s.actors.map((a) => a.name), ['worker.0', 'worker.1', 'control.0', 'digest.0', 'clean.0', 'migration.0']);
  for (const a of s.actors) {
    assert.equal(a.state, 'ready');
    assert.deepEqual(a.cores, a.pinned, `${a.name} runs where it was pinned`);
    assert.equal(procCpus(s.pid, a.tid), a.cores.join(','), `${a.name}: the kernel agrees`);
    assert.ok(a.cores.includes(a.cpu));
    // Its PONG came back, and the count is published before the PONG goes out: at least that ping is
    // counted; at most one per ask (a ping that timed out may have been answered and counted later).
    assert.ok(a.counters.PINGS >= 1 && a.counters.PINGS <= asks, `${a.name}: ${a.counters.PINGS} pings counted, ${asks} status asks`);
  }
  assert.ok(s.rings.some((r) => r.from === 'control.0' && r.to === 'digest.0'));
  assert.ok(s.rings.some((r) => r.from === 'digest.0' && r.to === 'clean.0'));
  const human = cli('status', '--data-dir', dir);
  assert.match(human.stdout, /control\.0\s+control\s+ready/);

  node.child.kill('SIGTERM');
  const { code } = await node.exit;
  assert.equal(code, 0, node.stderr());
  assert.match(node.stderr(), /"msg":"node stopped"/);
  assert.equal(existsSync(join(dir, 'rowan.sock')), false, 'control socket removed');
  assert.equal(existsSync(`/proc/${node.child.pid}`), false, 'process gone');
  assert.equal(cli('status', '--data-dir', dir).code, 1, 'status now says no node');
});

test('rowan start --threads: shared runs the background actors on one thread, dedicated each on its own; status shows it', async () => {
  const tids = async (threads: string) => {
    const dir = join(tempDir(), 'x');
    const node = launch(rowan, ['start', '--no-auth', '--roles', 'worker,control,digest,clean', '--threads', threads, '--data-dir', dir]);
    await waitFor(node, /"msg":"node ready"/);
    const st = cli('status', '--data-dir', dir, '--json');
    assert.equal(st.code, 0, st.stderr);
    const actors = (JSON.parse(st.stdout) as NodeStatus).actors;
    const human = cli('status', '--data-dir', dir).stdout;
    node.child.kill('SIGTERM');
    assert.equal((await node.exit).code, 0, node.stderr());
    return { by: new Map(actors.map((a) => [a.name, a])), human };
  };
  const shared = await tids('shared');
  const bg = ['control.0', 'digest.0', 'clean.0'].map((n) => shared.by.get(n)!);
  assert.deepEqual(bg.map((a) => a.thread), ['background', 'background', 'background']);
  assert.equal(new Set(bg.map((a) => a.tid)).size, 1, 'one thread for the three');
  assert.notEqual(shared.by.get('worker.0')!.tid, bg[0]!.tid, 'the worker keeps its own');
  assert.match(shared.human, /digest\.0\s+digest\s+ready\s+background\s+\d+/);
  const dedicated = await tids('dedicated');
  assert.equal(new Set([...dedicated.by.values()].map((a) => a.tid)).size, 4, 'four threads');
  assert.deepEqual([...dedicated.by.values()].map((a) => a.thread), ['worker.0', 'control.0', 'digest.0', 'clean.0']);
});

test('rowan stop drains and stops a node (exit 0 for both)', async () => {
  const dir = tempDir();
  const node = launch(rowan, ['start', '--no-auth', '--roles', 'control,digest', '--data-dir', dir, '--cores', String(allowed[0])]);
  await waitFor(node, /"msg":"node ready"/);
  const st = cli('stop', '--data-dir', dir);
  assert.equal(st.code, 0, st.stderr);
  assert.match(st.stdout, /stopped/);
  assert.equal((await node.exit).code, 0);
});

test('a second node on the same data dir is refused while the first runs', async () => {
  const dir = tempDir();
  const node = launch(rowan, ['start', '--no-auth', '--roles', 'control', '--data-dir', dir]);
  await waitFor(node, /"msg":"node ready"/);
  const second = cli('start', '--no-auth', '--roles', 'control', '--data-dir', dir);
  assert.equal(second.code, 2);
  assert.match(second.stderr, /already running/);
  node.child.kill('SIGTERM');
  assert.equal((await node.exit).code, 0);
});

test('an actor that throws takes the node down non-zero with the error code in the log', async () => {
  const dir = tempDir();
  const node = launch(faultyNode, ['start', '--no-auth', '--roles', 'control,digest,clean', '--data-dir', dir]);
  const { code } = await node.exit;
  assert.equal(code, 1, node.stderr());
  const fatal = node.stderr().split('\n').find((l) => l.includes('"level":"fatal"'));
  assert.ok(fatal, node.stderr());
  assert.match(fatal!, /ROWAN_ERR_PM_FULL/);
  assert.match(fatal!, /digest\.0 failed/);
  assert.equal(existsSync(join(dir, 'rowan.sock')), false);
});

test('a restart policy keeps the node up through one failure, then the next failure ends it', async () => {
  const dir = tempDir();
  const cfg = join(dir, 'cfg.json');
  writeFileSync(cfg, JSON.stringify({ runtime: { restarts: { digest: 1 } } }));
  const node = launch(faultyNode, ['start', '--no-auth', '--roles', 'control,digest', '--data-dir', join(dir, 'n'), '--config', cfg]);
  const { code } = await node.exit;
  assert.equal(code, 1);
  assert.match(node.stderr(), /"restart":1.*restarting/);
  assert.match(node.stderr(), /"level":"fatal".*ROWAN_ERR_PM_FULL/);
});

test('bad usage: clear message on stderr and exit code 2', () => {
  const dir = tempDir();
  const secretFile = join(dir, 'secret');
  writeFileSync(secretFile, 'ab'.repeat(32) + '\n', { mode: 0o600 });
  const sameAsSecret = join(dir, 'same-password');
  writeFileSync(sameAsSecret, 'AB'.repeat(32) + '\n', { mode: 0o600 });
  const cases: [string[], RegExp][] = [
    [['start', '--roles', 'worker,wizard', '--data-dir', dir], /unknown role 'wizard'/],
    [['start', '--cores', '0-999', '--data-dir', dir], /--cores: CPU .* is not available to this process/],
    [['start', '--cores', 'zero', '--data-dir', dir], /--cores: 'zero' is not a CPU list/],
    [['start', '--cores', '1-0', '--data-dir', dir], /runs backwards/],
    [['start', '--roles', 'control:2', '--data-dir', dir], /roles\.control\.count/],
    [['start', '--persistence', 'tape', '--data-dir', dir], /tape/],
    [['start', '--no-auth', '--data-dir', join(dir, 'no', 'such', 'parent')], /parent does not exist/],
    [['start', '--config', join(dir, 'missing.json'), '--data-dir', dir], /cannot read config file/],
    [['start'], /--data-dir/],
    [['start', '--data-dir', dir], /no cluster secret: give --secret-file FILE .* or --no-auth/],
    [['start', '--no-auth', '--secret-file', join(dir, 's'), '--data-dir', dir], /--no-auth and --secret-file contradict/],
    [['start', '--no-auth', '--client-password-file', join(dir, 's'), '--data-dir', dir], /--no-auth and --client-password-file contradict/],
    [['start', '--secret-file', secretFile, '--data-dir', dir], /no client password: give --client-password-file FILE .* or --no-auth/],
    [['start', '--secret-file', secretFile, '--client-password-file', sameAsSecret, '--data-dir', dir], /the client password in .* is the cluster secret/],
    [['status', '--data-dir', join(dir, 'nope')], /does not exist/],
    [['launch'], /unknown command/],
  ];
  for (const [args, msg] of cases) {
    const r = cli(...args);
    assert.equal(r.code, 2, `rowan ${args.join(' ')} -> ${r.code}\n${r.stderr}`);
    assert.match(r.stderr, msg, `rowan ${args.join(' ')}`);
  }
  const file = join(dir, 'not-a-dir');
  writeFileSync(file, '');
  const r = cli('start', '--no-auth', '--data-dir', file);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /not a directory/);
  assert.equal(cli('--help').code, 0);
});
