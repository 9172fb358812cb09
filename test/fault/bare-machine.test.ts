// rowan on a machine without the Debian packages (issue 30): libpmem2 and libibverbs hidden from the
// loader (test/fixtures/hidden-libs.ts). The pagecache and msync pools then map through libc
// (native/mapping.ts, native/libc-mapping.ts): the README's quick start runs and restarts with its
// data, `rowan status` names the back end, `dax` says which package it needs, and the pool's tests and
// the t-log crash test (SIGKILL during appends, torn last writes; 24 kills here) pass over the libc back end.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { hiddenLibsUnavailable, withLibsHidden } from '../fixtures/hidden-libs.js';
import { randomBasePort, stopCluster } from '../fixtures/cluster.js';
import { assertNoLateBlocks } from '../fixtures/node-metrics.js';
import type { ClusterConfig } from '../../config/cluster.js';

const root = new URL('../../../', import.meta.url).pathname;
const bin = join(root, 'bin', 'rowan');
const dist = join(root, 'dist');
const skip = hiddenLibsUnavailable() ?? false;
const work = mkdtempSync(join(tmpdir(), 'rowan-bare-'));
after(() => rmSync(work, { recursive: true, force: true }));

/** Run to completion with the libraries hidden. */
function hidden(cmd: string, args: string[], timeoutMs = 60_000, extraEnv: Record<string, string> = {}): { code: number; out: string } {
  const [c, a] = withLibsHidden(cmd, args);
  // Not the variable that tells node:test it runs inside a test file: a nested `node --test` would
  // then skip its files (scripts/test.mjs runs this file under node --test).
  const { NODE_TEST_CONTEXT: _ctx, ...env } = process.env;
  const r = spawnSync(c, a, { cwd: root, encoding: 'utf8', timeout: timeoutMs, env: { ...env, ...extraEnv } });
  return { code: r.status ?? -1, out: `${r.stdout ?? ''}${r.stderr ?? ''}` };
}

const rowan = (...args: string[]) => hidden(process.execPath, [bin, ...args]);

/** `rowan cluster` in the foreground with the libraries hidden; resolves once it serves. */
async function startCluster(dir: string, base: number): Promise<{ child: ChildProcess; out: () => string }> {
  const [c, a] = withLibsHidden(process.execPath, [bin, 'cluster', '--dir', dir, '--base-port', String(base), '--pool-mib', '24', '--segment-kib', '256']);
  const child = spawn(c, a, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], env: { ROWAN_RUNTIME_READY_TIMEOUT_MS: '60000', ...process.env } });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  await new Promise<void>((resolve, reject) => {
    const t = setInterval(() => {
      if (out.includes('serving.')) resolve();
      else if (child.exitCode !== null) reject(new Error(`rowan cluster exited ${child.exitCode} with the libraries hidden:\n${out}`));
      else return;
      clearInterval(t);
    }, 100);
  });
  return { child, out: () => out };
}

test('with libpmem2 hidden the pools map through libc; dax names the package it needs', { skip }, () => {
  const probe = join(work, 'probe.mjs');
  writeFileSync(probe, [
    `import { writeFileSync } from 'node:fs';`,
    `import { pmem2Loadable } from '${dist}/native/pmem2.js';`,
    `import { backendFor, mapFile } from '${dist}/native/mapping.js';`,
    `writeFileSync('${work}/f', Buffer.alloc(1 << 20));`,
    `const m = mapFile('${work}/f', { mode: 'msync' });`,
    `m.bytes[4096] = 7; m.persist(4096, 1); m.close();`,
    `let dax = '';`,
    `try { mapFile('${work}/f', { mode: 'dax' }); } catch (e) { dax = e.code + ' ' + e.message; }`,
    `console.log(JSON.stringify({ loadable: pmem2Loadable(), pagecache: backendFor('pagecache'), msync: m.backend, dax }));`,
  ].join('\n'));
  const r = hidden(process.execPath, [probe]);
  assert.equal(r.code, 0, r.out);
  const o = JSON.parse(r.out.trim().split('\n').pop()!) as { loadable: boolean; pagecache: string; msync: string; dax: string };
  assert.equal(o.loadable, false, 'libpmem2 is hidden');
  assert.equal(o.pagecache, 'libc');
  assert.equal(o.msync, 'libc');
  assert.match(o.dax, /^ROWAN_ERR_NATIVE_LIBRARY .*apt-get install libpmem2/);
  assert.equal(readFileSync(join(work, 'f'))[4096], 7, 'the msync persist reached the file');
});

test('the quick start with libpmem2 and libibverbs hidden: put, get, status, redis-cli, stop, restart with the data', { skip, timeout: 300_000 }, async () => {
  const dir = join(work, 'rowan-cluster');
  const base = randomBasePort();
  let cl = await startCluster(dir, base);
  try {
    const cfg = JSON.parse(readFileSync(join(dir, 'cluster.json'), 'utf8')) as ClusterConfig;
    const put = rowan('put', 'hello', 'world', '--cluster', join(dir, 'cluster.json'));
    assert.equal(put.code, 0, put.out);
    const get = rowan('get', 'hello', '--cluster', join(dir, 'cluster.json'));
    assert.equal(get.code, 0, get.out);
    assert.equal(get.out.trim(), 'world');
    const status = rowan('status', '--data-dir', join(dir, 'node-0'));
    assert.equal(status.code, 0, status.out);
    assert.match(status.out, /mode pagecache \(libc\)/, status.out);
    const pw = readFileSync(join(dir, 'client-password'), 'utf8').trim();
    const set = spawnSync('redis-cli', ['-p', String(cfg.nodes[0]!.resp!.ports[0]), '-a', pw, '--no-auth-warning', 'set', 'k', 'v'], { encoding: 'utf8' });
    assert.equal(set.stdout.trim(), 'OK', `${set.stdout}${set.stderr}`);
    assert.match(readFileSync(join(dir, 'node-0.log'), 'utf8'), /persistence mode: pagecache \(mapped through libc\)/, 'the node logs the back end');
    const stop = rowan('cluster', 'stop', '--dir', dir);
    assert.equal(stop.code, 0, stop.out);
    assert.equal(await stopCluster(cl.child), 0, cl.out());
    // Again on the same directory: the nodes cold-start from their libc-mapped pools.
    cl = await startCluster(dir, base);
    const again = rowan('get', 'hello', '--cluster', join(dir, 'cluster.json'));
    assert.equal(again.out.trim(), 'world', again.out);
    // Every write was acknowledged and the stop was clean: no backup refused a block as late.
    await assertNoLateBlocks(base, cfg.nodes.map((n) => n.id), 'every write was acknowledged before a clean stop');
  } finally {
    await stopCluster(cl.child);
  }
});

// The pool's and the queues' unit tests, and the t-log crash test (SIGKILL during appends, some of
// them multi-block: torn last writes), as they run over libpmem2 elsewhere in the suite.
const OVER_LIBC = ['unit/shm/pool', 'unit/shm/tlog', 'unit/runtime/rowan/srq', 'unit/runtime/rowan/stale-queue', 'fault/log-crash'];
test(`${OVER_LIBC.join(', ')} pass over the libc back end (libpmem2 hidden)`, { skip, timeout: 600_000 }, () => {
  const files = OVER_LIBC.map((f) => join(dist, 'test', `${f}.test.js`));
  // 24 SIGKILLs of the t-log writer rather than the 50-64 of its own run, to keep CI's time.
  const r = hidden(process.execPath, ['--test', '--test-reporter=spec', ...files], 540_000, { ROWAN_LOG_CRASH_KILLS: '24' });
  assert.equal(r.code, 0, r.out.slice(-6000));
  assert.match(r.out, /ℹ fail 0/);
  assert.doesNotMatch(r.out, /ℹ pass 0\b/);
});
