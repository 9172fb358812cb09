// Failover through the client API and lease safety, on a real `rowan cluster`:
//  - a node that dies is failed over: `rowan cluster` keeps going and reports it, `rowan status
//    --cluster` shows the dead node, the term and the new shard distribution, and a write to a shard
//    whose primary died succeeds through RowanClient (retries > 0) with no error reaching the caller;
//  - a node paused (SIGSTOP) past its lease is failed over too, and once resumed (SIGCONT) it refuses
//    requests routed with the old configuration instead of serving them: its lease expired.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { monotonicClock } from '../../config/base/clock.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { RowanClient } from '../../client/client.js';
import { shardOfKey } from '../../config/slots.js';
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import { launchCluster, randomBasePort, stopCluster } from '../fixtures/cluster.js';
import { logRecords, nodePids, readCluster, storedTerm, waitFor } from '../fixtures/failover-cluster.js';
import { checkLateBlocks, lateBlockCounts } from '../fixtures/node-metrics.js';

const rowan = new URL('../../../bin/rowan', import.meta.url).pathname;
const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array | null) => (b === null ? null : Buffer.from(b).toString());

test('a dead primary is failed over: writes to its shards succeed through the client, status shows it; a node paused past its lease refuses after SIGCONT', { timeout: 180_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-lease-'));
  const base = randomBasePort();
  const run = launchCluster(dir, base, ['--shards', '12', '--lease-ms', '200', '--no-restart']);
  const paused: number[] = [];
  try {
    await run.ready;
    const file = join(dir, 'cluster.json');
    const pids = nodePids(run.output());
    const c1 = readCluster(file);
    const client = await RowanClient.connect({ cluster: file, retries: 5 });
    const keys = Array.from({ length: 120 }, (_, i) => `k-${i}`);
    const shardOf = (k: string) => shardOfKey(enc(k), c1.shardCount);
    for (const k of keys) await client.put(k, `v1-${k}`);

    // 1. SIGKILL node 0, then write to the shards it was primary of: no error reaches the caller.
    const victim = 0;
    const onVictim = keys.filter((k) => c1.shards[shardOf(k)]!.primary === victim);
    assert.ok(onVictim.length > 0);
    process.kill(pids.get(victim)!, 'SIGKILL');
    // Once the new configuration is stored (committed right after the lease), the client's cached one
    // still routes these keys to the dead node: it finds it unreachable (nothing sent), refreshes,
    // re-routes to the promoted backup (which holds requests until commit and promotion are done).
    await waitFor('the failover of node 0 to be stored', () => storedTerm(file) === 2, 20_000);
    for (const k of onVictim) await client.put(k, `v2-${k}`);
    assert.equal(client.config().term, 2, 'the client moved to the configuration the manager committed');
    for (const k of keys) assert.equal(dec(await client.get(k)), onVictim.includes(k) ? `v2-${k}` : `v1-${k}`, k);
    const c2 = readCluster(file);
    assert.deepEqual(c2.dead, [victim]);
    assert.ok(c2.shards.every((s) => s.primary !== victim && !s.backups.includes(victim)));
    await waitFor('the launcher to report the failover', () => /failover: term 1 -> 2; dead node\(s\) 0; 4 shard\(s\) moved/.test(run.output()), 10_000);
    assert.equal(run.child.exitCode, null, 'rowan cluster keeps running');
    const st = await promisify(execFile)(process.execPath, [rowan, 'status', '--cluster', file]).catch((e: { stdout: string }) => e);
    assert.match(st.stdout, /cluster term 2: 3 nodes \(dead: 0\)/);
    assert.match(st.stdout, /^0\s+dead\s/m);
    assert.match(st.stdout, /^1\s+up\s+2\s+valid/m);

    // 2. SIGSTOP node 1 past its lease: the manager fails it over (term 3); SIGCONT: it must refuse.
    const stale = readCluster(file); // term 2: still routes node 1's shards to node 1
    const onPaused = keys.filter((k) => stale.shards[shardOf(k)]!.primary === 1);
    assert.ok(onPaused.length > 0);
    process.kill(pids.get(1)!, 'SIGSTOP');
    paused.push(pids.get(1)!);
    const tStop = monotonicClock.now(); // CLOCK_MONOTONIC, as the manager's event times
    await waitFor('node 1 to be failed over', () => storedTerm(file) === 3, 20_000);
    // Stored at detection, committed (shards reassigned) only once the lease certainly expired: at
    // least leaseMs + driftMs after node 1's last renewal, which was at most renewMs before the stop.
    let committedAt = NaN;
    await waitFor('the manager to commit term 3', () => {
      // The manager is still writing its log: whole lines only (logRecords).
      for (const r of logRecords(join(dir, 'manager.log'))) if (r.event === 'committed' && r.term === 3) committedAt = r.at as number;
      return Number.isFinite(committedAt);
    }, 20_000);
    assert.ok(committedAt - tStop >= 200 - 40, `node 1's shards reassigned ${(committedAt - tStop).toFixed(0)} ms after SIGSTOP: before its lease expired`);
    process.kill(pids.get(1)!, 'SIGCONT');
    paused.pop();
    const old = await RowanClient.connect({ cluster: stale, retries: 0, passwordFile: join(dir, 'client-password') });
    let refused = 0;
    for (const k of onPaused) {
      for (const op of [() => old.get(k), () => old.put(k, 'from-a-stale-primary')]) {
        await assert.rejects(op(), (err: RowanError) => {
          assert.ok(err instanceof RowanError);
          assert.ok(err.code === ErrorCodes.LEASE_EXPIRED || err.code === ErrorCodes.STALE_TERM, `${k}: ${err.code}: ${err.message}`);
          return true;
        });
        refused++;
      }
    }
    await old.close();
    // Nothing the resumed node was asked to do happened; the survivor serves every key.
    for (const k of keys) assert.equal(dec(await client.get(k)), onVictim.includes(k) ? `v2-${k}` : `v1-${k}`, k);
    assert.equal(client.config().term, 3);
    await client.close();
    // Every write was acknowledged before each fault (none in flight at the kill or the pause), the stale ones refused.
    const late = checkLateBlocks(await lateBlockCounts([0, 1, 2], base), false, 'no write was in flight at the kill or the pause');
    console.log(`lease test: ${onVictim.length} writes to a dead primary's shards succeeded after failover; node 1 paused past its lease refused ${refused} requests after SIGCONT; ${late}`);
  } finally {
    for (const p of paused) process.kill(p, 'SIGCONT');
    await stopCluster(run.child);
    rmSync(dir, { recursive: true, force: true });
  }
});
