// Resharding (§4.6) on a real `rowan cluster`: moves of one shard's primary role under a concurrent
// PUT/GET/DEL load on that very shard (history checked for linearizability: no acknowledged write lost,
// no stale read; and from the logs, the source stopped before the target served, every time);
// `rowan reshard` by hand while `rowan put/get` keep working; and a full cold start in the middle of a
// move, which the restarted manager resumes from the stored migration list.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { connect } from 'node:net';
import { RowanClient } from '../../client/client.js';
import { checkLinearizability } from '../check/linearizability.js';
import { alive, launchCluster, randomBasePort, stopCluster } from '../fixtures/cluster.js';
import { logRecords, nodePids, readCluster, storedTerm, waitFor } from '../fixtures/failover-cluster.js';
import { KvLoad } from '../fixtures/failover-load.js';
import { checkOneServer, keysOfShard, move, otherReplica } from '../fixtures/reshard.js';
import { checkLateBlocks, lateBlockCounts, unknownWrites } from '../fixtures/node-metrics.js';

const run = promisify(execFile);
const rowan = new URL('../../../bin/rowan', import.meta.url).pathname;
const SHARDS = 6;
const HOT = 2;

function cleanup(dir: string): void {
  if (process.env['ROWAN_TEST_KEEP'] === undefined) rmSync(dir, { recursive: true, force: true });
  else console.log(`kept ${dir}`);
}

test('moves of a shard under PUT/GET/DEL on it: history linearizable, one node serves it at any time', { timeout: 150_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-reshard-'));
  const base = randomBasePort();
  const cl = launchCluster(dir, base, ['--shards', String(SHARDS), '--lease-ms', '1000', '--no-auto-reshard']);
  const clients: RowanClient[] = [];
  try {
    await cl.ready;
    const file = join(dir, 'cluster.json');
    for (let i = 0; i < 4; i++) clients.push(await RowanClient.connect({ cluster: file, retries: 5, timeoutMs: 5000 }));
    const probe = clients.pop()!;
    const keys = keysOfShard(HOT, SHARDS, 8);
    // Data the targets must have: 2000 keys of the shard, written before any move.
    const pre = keysOfShard(HOT, SHARDS, 2000).map((k) => `pre${k}`);
    for (let i = 0; i < pre.length; i += 20) await Promise.all(pre.slice(i, i + 20).map((k) => probe.put(k, `v-${k}`)));
    const load = new KvLoad(clients, keys, 60_000);
    load.start();
    await waitFor('load to start', () => load.ops > 100, 30_000);
    const MOVES = 8;
    const times: number[] = [];
    for (let i = 0; i < MOVES; i++) {
      const c = readCluster(file);
      const to = otherReplica(c, HOT, i);
      const rec = await move(c, HOT, to, dir);
      assert.ok(rec.doneAt !== undefined, `move ${i} finished: ${JSON.stringify(rec)}`);
      times.push(rec.doneAt! - rec.startedAt);
      assert.equal(readCluster(file).shards[HOT]!.primary, to);
      const ops = load.ops;
      await waitFor('load to go on after the move', () => load.ops > ops + 50, 30_000);
    }
    await load.stop();
    for (const key of keys) await load.one(probe, 3, key, 'get');
    const r = checkLinearizability(load.operations(), { timeLimitMs: 60_000 });
    assert.equal(r.ok, true, r.describe());
    // Every preloaded key reads back from the shard's last primary.
    for (let i = 0; i < pre.length; i += 50) assert.equal(Buffer.from((await probe.get(pre[i]!))!).toString(), `v-${pre[i]}`);
    const one = checkOneServer(dir, 3);
    assert.equal(one.checked, MOVES);
    assert.deepEqual(readCluster(file).migrations, []);
    times.sort((a, b) => a - b);
    // No node killed or paused: only a write of unknown outcome (none expected) could be late.
    const unknown = unknownWrites(load.operations());
    const late = checkLateBlocks(await lateBlockCounts([0, 1, 2], base), unknown > 0, `${unknown} write(s) of unknown outcome`);
    console.log(
      `reshard test: ${MOVES} moves of shard ${HOT} under load, each ${times[0]!.toFixed(0)}-${times[times.length - 1]!.toFixed(0)} ms (median ${times[MOVES >> 1]!.toFixed(0)}); ` +
        `${load.ops} ops (${load.counts.ok} ok, ${load.counts.fail} not applied, ${load.counts.unknown} unknown ${JSON.stringify(load.counts.codes)}), linearizable (${r.ok === true ? r.checked : 0} checked); ` +
        `source stopped before the target served in all ${one.checked} (gap >= ${one.minGapMs.toFixed(1)} ms); ${late}`,
    );
  } finally {
    await Promise.all(clients.map((c) => c.close()));
    await stopCluster(cl.child);
    cleanup(dir);
  }
});

test('rowan reshard moves a shard by hand while rowan put/get keep working; --plan and bad moves answer clearly', { timeout: 120_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-reshard-cli-'));
  const base = randomBasePort();
  const cl = launchCluster(dir, base, ['--shards', String(SHARDS), '--lease-ms', '1000', '--no-auto-reshard']);
  try {
    await cl.ready;
    const file = join(dir, 'cluster.json');
    const key = keysOfShard(HOT, SHARDS, 1)[0]!;
    const cli = (...args: string[]) => run(process.execPath, [rowan, ...args, '--cluster', file], { timeout: 60_000 });
    await cli('put', key, 'before');
    // put/get in a loop beside the moves, each checked.
    let stop = false;
    let rounds = 0;
    const loop = (async () => {
      while (!stop && rounds < 200) {
        const v = `v${rounds}`;
        await cli('put', key, v);
        const got = (await cli('get', key)).stdout.trim();
        assert.equal(got, v);
        rounds++;
      }
    })();
    const c = readCluster(file);
    const from = c.shards[HOT]!.primary;
    const to = otherReplica(c, HOT, 0);
    const moved = await cli('reshard', '--shard', String(HOT), '--to', String(to));
    assert.match(moved.stdout, new RegExp(`shard ${HOT} moved from node ${from} to node ${to} in \\d+ ms`));
    const back = await cli('reshard', '--shard', String(HOT), '--to', String(from));
    assert.match(back.stdout, new RegExp(`shard ${HOT} moved from node ${to} to node ${from}`));
    await waitFor('put/get rounds across the moves', () => rounds >= 3, 60_000, 50);
    stop = true;
    await loop;
    const plan = await cli('reshard', '--plan');
    assert.match(plan.stdout, /load \(requests\/s/);
    assert.match(plan.stdout, /automatic resharding: off/);
    // A move to the shard's own primary, to a node without the shard, of a shard that does not exist.
    const bad = await cli('reshard', '--shard', String(HOT), '--to', String(from)).then(() => null, (e: { stderr: string; code: number }) => e);
    assert.ok(bad && /ROWAN_ERR_MOVE_REFUSED/.test(bad.stderr) && /primary already/.test(bad.stderr), JSON.stringify(bad));
    const none = await cli('reshard', '--shard', '999', '--to', '1').then(() => null, (e: { stderr: string }) => e);
    assert.ok(none && /no shard 999/.test(none.stderr), JSON.stringify(none));
    assert.equal(readCluster(file).shards[HOT]!.primary, from);
    const late = checkLateBlocks(await lateBlockCounts([0, 1, 2], base), false, 'every write acknowledged, no node killed or paused');
    console.log(`reshard CLI test: 2 moves by rowan reshard, ${rounds} put+get rounds by the CLI around them, all read their own write; ${late}`);
  } finally {
    await stopCluster(cl.child);
    cleanup(dir);
  }
});

test('a full cold start in the middle of a move: the restarted manager resumes it from the migration list', { timeout: 150_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-reshard-cold-'));
  const base = randomBasePort();
  const cl = launchCluster(dir, base, ['--shards', String(SHARDS), '--lease-ms', '200', '--no-auto-reshard', '--debug-pause', 'move-committed:60000']);
  let cl2: ReturnType<typeof launchCluster> | null = null;
  const clients: RowanClient[] = [];
  try {
    await cl.ready;
    const file = join(dir, 'cluster.json');
    const probe = await RowanClient.connect({ cluster: file, retries: 5, timeoutMs: 5000 });
    clients.push(probe);
    const keys = keysOfShard(HOT, SHARDS, 300);
    for (let i = 0; i < keys.length; i += 20) await Promise.all(keys.slice(i, i + 20).map((k) => probe.put(k, `v1-${k}`)));
    const c = readCluster(file);
    const to = otherReplica(c, HOT, 0);
    void move(c, HOT, to, dir).catch(() => {}); // held after its commit by the test hook
    await waitFor('the move to commit', () => logRecords(join(dir, 'manager.log')).some((r) => r['event'] === 'move-committed'), 30_000, 20);
    // Writes at the new term, on the target, before the crash.
    await waitFor('the target to serve', () => probe.put(keys[0]!, 'v2').then(() => true, () => false), 30_000, 50);
    assert.deepEqual(readCluster(file).migrations, [{ source: c.shards[HOT]!.primary, target: to, shard: HOT }]);
    await probe.close();
    clients.length = 0;
    // Power off: the launcher and with it every node and the manager (parent-death signal).
    cl.child.kill('SIGKILL');
    const pids = [...nodePids(cl.output()).values()];
    await waitFor('every node to exit', () => pids.every((p) => !alive(p)), 30_000, 100);
    await waitFor('the manager to exit', () => portFree(base + 490), 30_000, 100);
    cl2 = launchCluster(dir, base, ['--lease-ms', '200', '--no-auto-reshard']);
    await cl2.ready;
    await waitFor('the resumed move to finish', () => readCluster(file).migrations.length === 0, 60_000, 50);
    // The manager logs move-done after it stored the configuration without the migration: wait for the
    // line (a fresh-clone CI run read the log in between and failed).
    const done = (r: Record<string, unknown>) => r['event'] === 'move-done' && r['why'] === 'resume';
    await waitFor('the manager to log the resumed move done', () => logRecords(join(dir, 'manager.log')).some(done), 30_000, 50);
    const recs = logRecords(join(dir, 'manager.log'));
    assert.ok(recs.some((r) => r['event'] === 'move-started' && r['why'] === 'resume'), 'the manager resumed the move');
    assert.equal(readCluster(file).shards[HOT]!.primary, to);
    const after = await RowanClient.connect({ cluster: file, retries: 10, timeoutMs: 5000 });
    clients.push(after);
    assert.equal(Buffer.from((await after.get(keys[0]!))!).toString(), 'v2');
    for (const k of keys.slice(1)) assert.equal(Buffer.from((await after.get(k))!).toString(), `v1-${k}`);
    await after.put(keys[1]!, 'v3');
    assert.equal(Buffer.from((await after.get(keys[1]!))!).toString(), 'v3');
    const late = checkLateBlocks(await lateBlockCounts([0, 1, 2], base), false, 'every write acknowledged before the power-off, none in flight');
    console.log(`reshard cold-start test: crashed after the move's commit (term ${storedTerm(file)} now), the restarted manager resumed and finished it; ${keys.length} keys read back; ${late}`);
  } finally {
    await Promise.all(clients.map((c) => c.close()));
    if (cl2) await stopCluster(cl2.child);
    await stopCluster(cl.child);
    cleanup(dir);
  }
});

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ host: '127.0.0.1', port });
    s.on('connect', () => (s.destroy(), resolve(false)));
    s.on('error', () => resolve(true));
  });
}

