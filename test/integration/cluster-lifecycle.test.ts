// `rowan cluster` as a service a person runs in a terminal: nodes go down with their launcher however it
// dies (SIGHUP when the terminal closes, SIGKILL), a taken port fails before anything is written, a
// second launcher on a running cluster is refused without touching its logs, and `rowan cluster stop`
// stops a running cluster.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { collectClusterStatus } from '../../bin/cluster-status.js';
import { SERVER_V8_FLAGS } from '../../runtime/server-flags.js';
import { alive, launchCluster, randomBasePort, stopCluster } from '../fixtures/cluster.js';

const rowan = new URL('../../../bin/rowan', import.meta.url).pathname;


/** Wait (bounded) until none of `pids` is alive; the pids still alive at the deadline. */
async function gone(pids: number[], timeoutMs: number): Promise<number[]> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (!pids.some(alive)) return [];
    await new Promise((r) => setTimeout(r, 100));
  }
  return pids.filter(alive);
}

async function nodePids(dir: string): Promise<number[]> {
  const st = await collectClusterStatus(join(dir, 'cluster.json'));
  const pids = st.nodes.map((n) => n.status?.pid ?? 0);
  assert.ok(pids.every((p) => p > 0), `every node answers status: ${JSON.stringify(st.nodes.map((n) => n.error ?? 'up'))}`);
  return pids;
}

for (const signal of ['SIGHUP', 'SIGKILL'] as const) {
  test(`a launcher ended by ${signal} takes every node down with it`, { timeout: 180_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), `rowan-lifecycle-${signal}-`));
    const run = launchCluster(dir, randomBasePort());
    try {
      await run.ready;
      const pids = await nodePids(dir);
      run.child.kill(signal);
      assert.deepEqual(await gone(pids, 60_000), [], `nodes still running after the launcher got ${signal}`);
    } finally {
      await stopCluster(run.child);
      rmSync(dir, { recursive: true, force: true });
    }
  });
}

test('a taken port fails at once and leaves no cluster.json behind', { timeout: 60_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-lifecycle-port-'));
  const base = randomBasePort();
  const squatter = createServer();
  await new Promise<void>((r) => squatter.listen({ host: '127.0.0.1', port: base + 10 }, () => r())); // node 1's client port
  try {
    const r = spawnSync(process.execPath, [rowan, 'cluster', '--dir', join(dir, 'c'), '--base-port', String(base)], { encoding: 'utf8', timeout: 30_000 });
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, new RegExp(`node 1 client port 127\\.0\\.0\\.1:${base + 10} is not free`));
    assert.equal(existsSync(join(dir, 'c', 'cluster.json')), false, 'no configuration was written');
  } finally {
    squatter.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a second launcher on a running cluster is refused and truncates nothing; rowan cluster stop stops it', { timeout: 180_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-lifecycle-second-'));
  const base = randomBasePort();
  const run = launchCluster(dir, base);
  try {
    await run.ready;
    const pids = await nodePids(dir);
    const logs = [0, 1, 2].map((i) => join(dir, `node-${i}.log`));
    const before = logs.map((l) => statSync(l).size);
    const r = spawnSync(process.execPath, [rowan, 'cluster', '--dir', dir, '--base-port', String(base), '--nodes', '5'], { encoding: 'utf8', timeout: 30_000 });
    assert.equal(r.status, 2, r.stdout + r.stderr);
    assert.match(r.stderr, /already running the cluster/);
    logs.forEach((l, i) => assert.ok(statSync(l).size >= before[i]!, `${l} was truncated`));
    assert.deepEqual(pids.filter(alive), pids, 'the running nodes were left alone');
    // Every node runs with the server processes' V8 flags (runtime/server-flags.ts: no idle-time GCs).
    for (const pid of pids) {
      const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      for (const f of SERVER_V8_FLAGS) assert.ok(argv.includes(f), `node ${pid} runs without ${f}: ${argv.join(' ')}`);
    }

    const stop = spawnSync(process.execPath, [rowan, 'cluster', 'stop', '--dir', dir, '--timeout', '8000'], { encoding: 'utf8', timeout: 60_000 });
    assert.equal(stop.status, 0, `${stop.stdout}${stop.stderr}\nlauncher:\n${run.output()}`);
    assert.match(stop.stdout, /stopped the cluster/);
    assert.deepEqual(await gone(pids, 30_000), []);
  } finally {
    await stopCluster(run.child);
    rmSync(dir, { recursive: true, force: true });
  }
});
