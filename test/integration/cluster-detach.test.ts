// `rowan cluster --detach`: the launcher as a daemon. The command returns once the cluster serves
// (printing the endpoints), the launcher runs on in a session of its own with its output in
// DIR/launcher.log, the cluster serves PUT/GET, `rowan status --dir` names the detached launcher, and
// `rowan cluster stop --dir` leaves no process of the cluster behind. A detached start that cannot
// succeed (a taken port) returns non-zero with the reason and leaves nothing running.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBasePort } from '../fixtures/cluster.js';

const rowan = new URL('../../../bin/rowan', import.meta.url).pathname;

/** Pids of every process whose command line names `dir` (the launcher, the manager, the nodes). */
function processesOf(dir: string): number[] {
  const out: number[] = [];
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const cmd = readFileSync(`/proc/${e}/cmdline`, 'utf8');
      const stat = readFileSync(`/proc/${e}/stat`, 'utf8');
      const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
      if (cmd.includes(dir) && state !== 'Z') out.push(Number(e));
    } catch {
      // exited meanwhile
    }
  }
  return out;
}

/** Wait (bounded) until no process names `dir`; those still there at the deadline. */
async function noneLeft(dir: string, timeoutMs: number): Promise<number[]> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const left = processesOf(dir);
    if (left.length === 0 || Date.now() > until) return left;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** /proc/PID/stat fields after the command name: state ppid pgrp session. */
function sessionOf(pid: number): { ppid: number; session: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { ppid: Number(f[1]), session: Number(f[3]) };
}

function rowanSync(args: string[], timeoutMs = 60_000) {
  return spawnSync(process.execPath, [rowan, ...args], { encoding: 'utf8', timeout: timeoutMs });
}

/** Kill whatever of this test's cluster is left (processes this test started, by pid). */
function killLeft(dir: string): void {
  for (const pid of processesOf(dir)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
}

test('rowan cluster --detach returns once serving; put/get work; status names the launcher; cluster stop leaves no process', { timeout: 300_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-detach-'));
  try {
    // A colleague's process may hold a port of the range: the launcher says so, and we try another.
    let start = rowanSync(['cluster', '--detach', '--dir', dir, '--base-port', String(randomBasePort()), '--pool-mib', '24', '--segment-kib', '256', '--shards', '6'], 240_000);
    for (let i = 0; i < 3 && start.status !== 0 && /is not free/.test(start.stderr + start.stdout); i++)
      start = rowanSync(['cluster', '--detach', '--dir', dir, '--base-port', String(randomBasePort()), '--pool-mib', '24', '--segment-kib', '256', '--shards', '6'], 240_000);
    assert.equal(start.status, 0, `--detach failed:\n${start.stdout}${start.stderr}`);
    assert.match(start.stdout, /node 0 ready \(pid \d+\): clients on 127\.0\.0\.1:\d+/, 'the endpoints are printed');
    assert.match(start.stdout, /cluster stop --dir .* stops the cluster/);
    const m = /launcher running in the background \(pid (\d+)\); log (.*launcher\.log)/.exec(start.stdout);
    assert.ok(m, start.stdout);
    const launcher = Number(m[1]);
    assert.equal(Number(readFileSync(join(dir, 'launcher.pid'), 'utf8').trim()), launcher, 'launcher.pid names the daemon');
    const s = sessionOf(launcher);
    assert.equal(s.session, launcher, 'the launcher leads a session of its own (setsid)');
    assert.notEqual(s.ppid, process.pid);
    assert.match(readFileSync(join(dir, 'launcher.log'), 'utf8'), /serving\. Try:/, 'the launcher logs to DIR/launcher.log');

    const cluster = join(dir, 'cluster.json');
    const put = rowanSync(['put', 'detached-key', 'detached-value', '--cluster', cluster]);
    assert.equal(put.status, 0, put.stdout + put.stderr);
    const get = rowanSync(['get', 'detached-key', '--cluster', cluster]);
    assert.equal(get.status, 0, get.stdout + get.stderr);
    assert.equal(get.stdout.trim(), 'detached-value');

    const st = rowanSync(['status', '--dir', dir]);
    assert.equal(st.status, 0, st.stdout + st.stderr);
    assert.match(st.stdout, new RegExp(`launcher: pid ${launcher}, detached`));
    assert.equal(processesOf(dir).length, 5, `launcher, manager and 3 nodes run: ${processesOf(dir).join(' ')}`);

    const stop = rowanSync(['cluster', 'stop', '--dir', dir, '--timeout', '30000'], 60_000);
    assert.equal(stop.status, 0, stop.stdout + stop.stderr);
    assert.match(stop.stdout, new RegExp(`launcher ${launcher} stopped the cluster`));
    assert.deepEqual(await noneLeft(dir, 30_000), [], 'no process of the cluster is left');
    const after = rowanSync(['status', '--dir', dir]);
    assert.match(after.stdout, /launcher: none running/);
  } finally {
    killLeft(dir);
    rmSync(dir, { recursive: true, force: true });
  }
});

test('rowan cluster --detach that cannot start returns non-zero with the reason and leaves nothing running', { timeout: 120_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-detach-fail-'));
  const base = randomBasePort();
  const squatter = createServer();
  await new Promise<void>((r) => squatter.listen({ host: '127.0.0.1', port: base + 10 }, () => r())); // node 1's client port
  try {
    const r = rowanSync(['cluster', '--detach', '--dir', dir, '--base-port', String(base)], 90_000);
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, new RegExp(`node 1 client port 127\\.0\\.0\\.1:${base + 10} is not free`));
    assert.match(r.stderr, /the launcher exited \(code 2\) before the cluster was serving/);
    assert.deepEqual(await noneLeft(dir, 10_000), []);
  } finally {
    squatter.close();
    killLeft(dir);
    rmSync(dir, { recursive: true, force: true });
  }
});
