// Copy moves (§4.6, issue 28) on a real 4-node `rowan cluster` (replication 3, so each shard has a
// node holding no replica of it): a shard's primary replica and then one of its backups move to such
// a node under a PUT/GET/DEL load on that shard -- the target copies the shard, the primary role is
// handed over, the source leaves; then copies interrupted by a SIGKILL of the target or of the source
// while the target copies: the failover ends the copy, the source's data stays. Every history is
// checked for linearizability (no acknowledged write lost, no stale read), every preloaded key
// reads back, and no backup refused an acknowledged write's block as late (every node's log, killed
// processes included: only a write of unknown outcome may be late; fixtures/node-metrics.ts).
import { test } from 'node:test';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RowanClient } from '../../client/client.js';
import { checkLinearizability, type Operation } from '../check/linearizability.js';
import { shardOfKey } from '../../config/slots.js';
import { killNode, launchCluster, randomBasePort, stopCluster } from '../fixtures/cluster.js';
import { allShardsServed, logRecords, nodePids, probeKeys, readCluster, waitFor } from '../fixtures/failover-cluster.js';
import { KvLoad } from '../fixtures/failover-load.js';
import { assertLateOnlyUnknown, loggedLateBlocks } from '../fixtures/node-metrics.js';
import { fullyReplicated } from '../fixtures/rereplication.js';
import { copyMove, keysOfShard, nonReplica } from '../fixtures/reshard.js';

const run = promisify(execFile);
const rowan = new URL('../../../bin/rowan', import.meta.url).pathname;
const SHARDS = 6;
const HOT = 2;

function cleanup(dir: string): void {
  if (process.env['ROWAN_TEST_KEEP'] === undefined) rmSync(dir, { recursive: true, force: true });
  else console.log(`kept ${dir}`);
}

/** `n` keys of the hot shard with 100-byte values, written before any move. */
async function preload(c: RowanClient, n: number): Promise<string[]> {
  const pre = keysOfShard(HOT, SHARDS, n).map((k) => `pre${k}`);
  for (let i = 0; i < pre.length; i += 64) await Promise.all(pre.slice(i, i + 64).map((k) => c.put(k, valueOf(k))));
  return pre;
}

/** No node of the 4 refused an acknowledged write's block as late (the preload's writes all were). */
function checkLate(dir: string, history: readonly Operation[]): string {
  return assertLateOnlyUnknown(loggedLateBlocks(dir, [0, 1, 2, 3]), history, (k) => shardOfKey(Buffer.from(k), SHARDS), 2);
}

const valueOf = (k: string) => `v-${k}`.padEnd(100, '.');

async function checkPreloaded(c: RowanClient, pre: string[]): Promise<void> {
  for (let i = 0; i < pre.length; i += 97) assert.equal(Buffer.from((await c.get(pre[i]!))!).toString(), valueOf(pre[i]!), `preloaded key ${pre[i]}`);
}

async function withCluster(name: string, f: (dir: string, file: string, out: () => string, clients: RowanClient[]) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), `rowan-${name}-`));
  const cl = launchCluster(dir, randomBasePort(), ['--nodes', '4', '--shards', String(SHARDS), '--lease-ms', '500', '--no-auto-reshard', '--pool-mib', '48']);
  const clients: RowanClient[] = [];
  try {
    await cl.ready;
    const file = join(dir, 'cluster.json');
    for (let i = 0; i < 4; i++) clients.push(await RowanClient.connect({ cluster: file, retries: 10, timeoutMs: 5000 }));
    await f(dir, file, cl.output, clients);
  } finally {
    await Promise.all(clients.map((c) => c.close()));
    await stopCluster(cl.child);
    cleanup(dir);
  }
}

test('a primary and then a backup replica move to nodes holding none, under PUT/GET/DEL on the shard: copied, handed over, history linearizable', { timeout: 180_000 }, async () => {
  await withCluster('copy-move', async (dir, file, _out, clients) => {
    const probe = clients.pop()!;
    const pre = await preload(probe, 5000);
    const load = new KvLoad(clients, keysOfShard(HOT, SHARDS, 8), 60_000);
    load.start();
    await waitFor('load to start', () => load.ops > 100, 30_000);
    const c1 = readCluster(file);
    const from = c1.shards[HOT]!.primary;
    const to = nonReplica(c1, HOT)!;
    const rec = await copyMove(c1, HOT, from, to, dir);
    assert.ok(rec.doneAt !== undefined && rec.entries !== undefined && rec.entries >= pre.length, `copy finished: ${JSON.stringify(rec)}`);
    const c2 = readCluster(file);
    assert.equal(c2.shards[HOT]!.primary, to);
    assert.ok(!c2.shards[HOT]!.backups.includes(from) && c2.shards[HOT]!.backups.length === 2);
    // `rowan status` shows the target's migration actor's copy (objects, bytes, rate) and the copy move.
    const { stdout } = await run(process.execPath, [rowan, 'status', '--cluster', file], { timeout: 30_000 });
    const row = stdout.split('\n').find((l) => new RegExp(`^${to}\\s+0\\s+1\\s+\\d+\\s`).test(l)); // NODE COPYING COPIED OBJECTS
    assert.ok(/^MIGRATION\s+COPYING\s+COPIED\s+OBJECTS\s+MB\s+MB\/S\s+KOBJ\/S/m.test(stdout), stdout);
    assert.ok(row && Number(row.trim().split(/\s+/)[3]) >= pre.length, `node ${to}'s migration row: ${row}\n${stdout}`);
    assert.match(stdout, new RegExp(`copy term \\d+ \\(operator\\): shard ${HOT} ${from}->${to}: done in \\d+ ms, \\d+ objects`));
    let ops = load.ops;
    await waitFor('load to go on after the primary moved', () => load.ops > ops + 50, 30_000);
    // A backup's replica moves to the node that now holds none (the old primary).
    const backup = c2.shards[HOT]!.backups[0]!;
    const rec2 = await copyMove(c2, HOT, backup, from, dir);
    assert.ok(rec2.doneAt !== undefined, `backup copy finished: ${JSON.stringify(rec2)}`);
    const c3 = readCluster(file);
    assert.equal(c3.shards[HOT]!.primary, to);
    assert.ok(c3.shards[HOT]!.backups.includes(from) && !c3.shards[HOT]!.backups.includes(backup));
    assert.equal(c3.copies, undefined);
    // Node `from` left the shard while running and took it back: its copy reconciled the entries its
    // index still held (a key deleted meanwhile must not come back from them).
    const back = logRecords(join(dir, `node-${from}.log`)).filter((x) => x['event'] === 'caught-up' && x['shard'] === HOT);
    assert.equal(back.length, 1);
    assert.equal(back[0]!['kept'], true, JSON.stringify(back[0]));
    ops = load.ops;
    await waitFor('load to go on after the backup moved', () => load.ops > ops + 50, 30_000);
    await load.stop();
    const r = checkLinearizability(load.operations(), { timeLimitMs: 60_000 });
    assert.equal(r.ok, true, r.describe());
    await checkPreloaded(probe, pre);
    assert.ok(fullyReplicated(file, 3));
    const late = checkLate(dir, load.operations());
    console.log(
      `copy-move test: ${late}; primary ${from}->${to} copied ${rec.entries} entries, ${rec.bytes} B in ${rec.copyMs?.toFixed(0)} ms (whole move ${(rec.doneAt! - rec.startedAt).toFixed(0)} ms); ` +
        `backup ${backup}->${from} in ${(rec2.doneAt! - rec2.startedAt).toFixed(0)} ms; ${load.ops} ops (${load.counts.ok} ok, ${load.counts.fail} not applied, ${load.counts.unknown} unknown), linearizable (${r.ok === true ? r.checked : 0} checked)`,
    );
  });
});

test('a copy interrupted by SIGKILL of its target, then of its source: rolled back by the failover, no acknowledged write lost', { timeout: 300_000 }, async () => {
  await withCluster('copy-move-kill', async (dir, file, out, clients) => {
    const probe = clients.pop()!;
    const pre = await preload(probe, 20_000);
    const load = new KvLoad(clients, [...keysOfShard(HOT, SHARDS, 6), ...keysOfShard((HOT + 1) % SHARDS, SHARDS, 3)], 60_000, 5);
    load.start();
    await waitFor('load to start', () => load.ops > 50, 30_000);
    const phases: string[] = [];
    for (const role of ['target', 'source'] as const) {
      // A node that rejoins (the first phase's victim) turns balancing on (4 members, replication 3:
      // actors/manager/healing.ts): the copy below is asked once that balancing is over.
      await waitFor(`${role}: every shard with 3 caught-up replicas, no balancing`, () => fullyReplicated(file, 3) && (readCluster(file).dead ?? []).length === 0 && !readCluster(file).balancing, 120_000, 50);
      const c = readCluster(file);
      const source = c.shards[HOT]!.primary;
      const target = nonReplica(c, HOT)!;
      const victim = role === 'target' ? target : source;
      const moving = copyMove(c, HOT, source, target, dir).then(() => 'done', (e: Error) => (/rolled back/.test(e.message) ? 'rolled back' : `refused: ${e.message}`));
      // Mid-copy: once the manager stored the copy's term.
      await waitFor('the copy stored', () => logRecords(join(dir, 'manager.log')).some((x) => x['event'] === 'copy-stored' && x['term'] === c.term + 1), 30_000, 2);
      assert.ok(killNode(nodePids(out()).get(victim)!), `node ${victim} alive before its kill`);
      const copied = logRecords(join(dir, 'manager.log')).some((x) => x['event'] === 'caught-up' && (x['cleared'] as { shard: number; node: number }[]).some((y) => y.shard === HOT && y.node === target));
      phases.push(`${role} killed ${copied ? 'after' : 'during'} the copy: ${await moving}`);
      await waitFor(`failover of node ${victim}`, () => (readCluster(file).dead ?? []).includes(victim), 30_000, 20);
      assert.equal(readCluster(file).copies, undefined, 'the failover ended the copy');
      await allShardsServed(probe, probeKeys(SHARDS), 30_000);
    }
    await waitFor('the last node back', () => fullyReplicated(file, 3) && (readCluster(file).dead ?? []).length === 0, 120_000, 50);
    await load.stop();
    const r = checkLinearizability(load.operations(), { timeLimitMs: 120_000 });
    assert.equal(r.ok, true, r.describe());
    await checkPreloaded(probe, pre);
    assert.ok(phases.every((p) => /rolled back/.test(p)), phases.join('; '));
    const late = checkLate(dir, load.operations());
    console.log(`copy-move kill test: ${late}; ${phases.join('; ')}; ${load.ops} ops (${load.counts.ok} ok, ${load.counts.fail} not applied, ${load.counts.unknown} unknown), linearizable (${r.ok === true ? r.checked : 0} checked), every preloaded key read back`);
  });
});
