// Interrupted moves (§4.6): a move of a shard's primary role is started and, at a random point of it,
// its source or (alternately) its target is SIGKILLed. The manager rolls an unprepared move back or
// finishes a committed one through the failover of the dead node; `rowan cluster` restarts the node,
// which rejoins and gets its replicas back (re-replication) before the next cycle. A PUT/GET/DEL load
// on the moving shard and one other runs throughout; its history is checked for linearizability (no
// acknowledged write lost, no stale read) and, from the logs, no node served a moved shard before
// its source had stopped. ROWAN_RESHARD_KILL_CYCLES kills (default 4: 2 sources, 2 targets; a victim
// that died on its own before its kill does not count);
// `npm run test:reshard-kills` runs 40 (20 each).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RowanClient } from '../../client/client.js';
import { checkLinearizability } from '../check/linearizability.js';
import { monotonicClock } from '../../config/base/clock.js';
import { killNode, launchCluster, randomBasePort, stopCluster } from '../fixtures/cluster.js';
import { allShardsServed, logRecords, nodePids, probeKeys, readCluster, waitFor } from '../fixtures/failover-cluster.js';
import { KvLoad } from '../fixtures/failover-load.js';
import { fullyReplicated } from '../fixtures/rereplication.js';
import { checkOneServer, keysOfShard, move, otherReplica } from '../fixtures/reshard.js';
import { checkLateBlocks, lateBlockCounts, unknownWrites } from '../fixtures/node-metrics.js';

const SHARDS = 6;
const HOT = 1;
const CYCLES = Number(process.env['ROWAN_RESHARD_KILL_CYCLES'] ?? 4);

test(`moves interrupted by SIGKILL of the source or the target (${CYCLES} kills, half of each): rollback or failover, every acknowledged write readable, history linearizable`, { timeout: 120_000 + CYCLES * 60_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-reshard-kill-'));
  const base = randomBasePort();
  const cl = launchCluster(dir, base, ['--shards', String(SHARDS), '--lease-ms', '200', '--no-auto-reshard', '--pool-mib', '48']);
  const clients: RowanClient[] = [];
  const outcomes: Record<string, number> = {};
  try {
    await cl.ready;
    const file = join(dir, 'cluster.json');
    for (let i = 0; i < 4; i++) clients.push(await RowanClient.connect({ cluster: file, retries: 10, timeoutMs: 5000 }));
    const probe = clients.pop()!;
    const keys = [...keysOfShard(HOT, SHARDS, 6), ...keysOfShard((HOT + 1) % SHARDS, SHARDS, 3)];
    // Paced (about 200 ops/s per client at most) so that a long run stays under the bound on operations.
    const maxOps = 60_000 + CYCLES * 15_000;
    const load = new KvLoad(clients, keys, maxOps, 5);
    load.start();
    await waitFor('load to start', () => load.ops > 50, 30_000);
    // CYCLES kills, half of sources and half of targets: a victim that died on its own before the kill
    // (below) does not count, and the role that is behind is killed next.
    const want = { source: Math.ceil(CYCLES / 2), target: Math.floor(CYCLES / 2) };
    const killed = { source: 0, target: 0 };
    for (let cycle = 0; killed.source < want.source || killed.target < want.target; cycle++) {
      assert.ok(cycle < CYCLES * 2, `only ${killed.source} sources and ${killed.target} targets killed in ${cycle} tries`);
      await waitFor(`cycle ${cycle}: every shard with 3 caught-up replicas`, () => fullyReplicated(file, 3) && (readCluster(file).dead ?? []).length === 0, 90_000, 50);
      const c = readCluster(file);
      const source = c.shards[HOT]!.primary;
      const target = otherReplica(c, HOT, cycle);
      const role = killed.source < want.source && (killed.source <= killed.target || killed.target >= want.target) ? 'source' : 'target';
      const victim = role === 'source' ? source : target;
      const pid = nodePids(cl.output()).get(victim)!;
      const ops = load.ops;
      assert.ok(load.ops < maxOps, `the load reached its bound of ${maxOps} operations`);
      await waitFor('load to go on', () => load.ops > ops + 20, 30_000);
      const moving = move(c, HOT, target, dir).then((r) => (r.doneAt !== undefined ? 'done' : 'stalled'), (e: Error) => (/rolled back/.test(e.message) ? 'rolled back' : `refused`));
      const delayMs = Math.random() * (killed[role] % 2 === 0 ? 8 : 60); // half early (prepare), half late (promotion)
      await new Promise((r) => setTimeout(r, delayMs)); // a random point of the move (it takes ~10-100 ms here)
      const killedAt = monotonicClock.now(); // the clock of the manager's `at` (CLOCK_MONOTONIC)
      if (!killNode(pid)) {
        // It died on its own since the cluster was whole (a lease lost to a stalled machine: an evicted
        // node stops and is restarted to rejoin); the next cycle waits for it to be back.
        outcomes['victim gone before the kill'] = (outcomes['victim gone before the kill'] ?? 0) + 1;
        await moving;
        continue;
      }
      killed[role]++;
      const outcome = await moving;
      // Where in the move the kill landed, from the manager's step records of this move.
      const steps = logRecords(join(dir, 'manager.log')).filter((x) => typeof x['event'] === 'string' && (x['event'] as string).startsWith('move-') && x['term'] === c.term + 1);
      const before = steps.filter((x) => (x['at'] as number) <= killedAt).map((x) => (x['event'] as string).slice(5));
      const phase = before.length === 0 ? 'before the move' : `after ${before[before.length - 1]}`;
      const key = `${victim === source ? 'source' : 'target'} killed ${phase}, move ${outcome}`;
      outcomes[key] = (outcomes[key] ?? 0) + 1;
      await waitFor(`cycle ${cycle}: failover of node ${victim}`, () => (readCluster(file).dead ?? []).includes(victim) || readCluster(file).nodes.length === 0, 30_000, 20);
      await allShardsServed(probe, probeKeys(SHARDS), 30_000);
      assert.ok(!readCluster(file).migrations.some((t) => t.source === victim || t.target === victim), 'the failover ended the task');
    }
    await waitFor('the last node back', () => fullyReplicated(file, 3) && (readCluster(file).dead ?? []).length === 0, 90_000, 50);
    await load.stop();
    for (const k of keys) await load.one(probe, 3, k, 'get');
    const r = checkLinearizability(load.operations(), { timeLimitMs: 120_000 });
    assert.equal(r.ok, true, r.describe());
    const one = checkOneServer(dir, 3);
    // A SIGKILLed source's or target's in-flight writes (unknown outcomes) may land late at a backup.
    const unknown = unknownWrites(load.operations());
    const late = checkLateBlocks(await lateBlockCounts([0, 1, 2], base), unknown > 0, `${unknown} write(s) of unknown outcome`);
    const rolledBack = logRecords(join(dir, 'manager.log')).filter((x) => x['event'] === 'move-rolled-back').length;
    console.log(
      `reshard kill test: ${killed.source + killed.target} kills mid-move (${killed.source} sources, ${killed.target} targets) ${JSON.stringify(outcomes)}; ${rolledBack} rolled back by the manager; ` +
        `${load.ops} ops (${load.counts.ok} ok, ${load.counts.fail} not applied, ${load.counts.unknown} unknown ${JSON.stringify(load.counts.codes)}), linearizable (${r.ok === true ? r.checked : 0} checked), 0 acknowledged writes lost; ` +
        `${one.checked} served moves: source stopped first in all; ${late}`,
    );
  } finally {
    await Promise.all(clients.map((c) => c.close()));
    await stopCluster(cl.child);
    if (process.env['ROWAN_TEST_KEEP'] === undefined) rmSync(dir, { recursive: true, force: true });
    else console.log(`kept ${dir}`);
  }
});
