// INCR across a failover (issue 27): ioredis clients increment shared counters of a real
// `rowan cluster --workers 2` (plain clients on both workers of the surviving nodes' single-endpoint
// ports, and Cluster clients) while a node is SIGKILLed. Each client counts, per key, the increments
// acknowledged and those whose outcome is unknown (an UNKNOWN reply, a dropped connection); once the
// failover is committed and the clients have gone on incrementing, every counter must hold at least
// its acknowledged increments and at most those plus the unknown ones: no acknowledged increment lost
// (the new primary's index holds every acknowledged write), none applied twice. The clients never resend
// a command by themselves (ioredis's resend on reconnect and its failover retry are off): a resend of an
// increment that reached the dead node would be counted once and applied twice.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as pause } from 'node:timers/promises';
import { test } from 'node:test';
import { Cluster, Redis } from 'ioredis';
import { basePortOf, checkLateBlocks, lateBlockCounts } from '../fixtures/node-metrics.js';
import { launchReadyCluster, stopCluster } from '../fixtures/cluster.js';
import { nodePids, storedTerm, waitFor } from '../fixtures/failover-cluster.js';
import { haveRedisTools, readCluster, useClusterPassword } from '../fixtures/redis.js';

const skip = haveRedisTools();
const KEYS = Array.from({ length: 24 }, (_, i) => `fctr:${i}`);
/** Replies that say "not applied" (handler.ts): not counted either way. */
const NOT_APPLIED = /^(TRYAGAIN|CLUSTERDOWN|MOVED|CROSSSLOT|ERR|OOM) /;

interface Tally {
  acked: number[];
  unknown: number[];
  notApplied: number;
}

async function incrementUntil(cli: Redis | Cluster, t: Tally, stop: () => boolean, seed: number): Promise<void> {
  for (let i = seed; !stop(); i++) {
    const k = i % KEYS.length;
    try {
      await cli.incr(KEYS[k]!);
      t.acked[k]!++;
    } catch (e) {
      if (NOT_APPLIED.test((e as Error).message)) t.notApplied++;
      else t.unknown[k]!++;
      await pause(20); // pacing while the cluster reconfigures, not a wait for a condition
    }
  }
}

test('INCR from many clients across a primary SIGKILL: each counter holds its acknowledged increments, at most plus the unknown ones', { skip, timeout: 300_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-redis-incr-failover-'));
  const run = await launchReadyCluster(dir, ['--shards', '12', '--workers', '2', '--lease-ms', '200', '--no-restart']);
  const clients: (Redis | Cluster)[] = [];
  try {
    const password = useClusterPassword(dir);
    const c1 = readCluster(dir);
    const victim = 0;
    const noResend = { password, maxRetriesPerRequest: 0, autoResendUnfulfilledCommands: false, enableOfflineQueue: true };
    for (const n of c1.nodes.filter((x) => x.id !== victim)) for (const port of n.resp!.ports) clients.push(new Redis({ ...noResend, port }));
    for (let i = 0; i < 2; i++) {
      const seeds = c1.nodes.map((n) => ({ host: '127.0.0.1', port: n.resp!.clusterPorts[0]! }));
      clients.push(new Cluster(seeds, { redisOptions: noResend, retryDelayOnFailover: 0, clusterRetryStrategy: (n) => (n > 200 ? null : 50), maxRedirections: 32 }));
    }
    for (const x of clients) x.on('error', () => undefined); // a dead node's connection errors: counted per command
    const t: Tally = { acked: KEYS.map(() => 0), unknown: KEYS.map(() => 0), notApplied: 0 };
    let stopped = false;
    const acked = () => t.acked.reduce((a, b) => a + b, 0);
    const loops = clients.map((x, i) => incrementUntil(x, t, () => stopped, i * 7));

    await waitFor('300 increments acknowledged before the kill', () => acked() >= 300, 120_000, 20);
    process.kill(nodePids(run.output()).get(victim)!, 'SIGKILL');
    const file = join(dir, 'cluster.json');
    await waitFor('the failover to be stored', () => storedTerm(file) > c1.term, 60_000, 20);
    const afterFailover = acked();
    await waitFor('300 more increments acknowledged after the failover', () => acked() >= afterFailover + 300, 120_000, 20);
    stopped = true;
    await Promise.all(loops);

    const reader = clients.at(-1)! as Cluster;
    const unknown = t.unknown.reduce((a, b) => a + b, 0);
    for (let k = 0; k < KEYS.length; k++) {
      const v = Number(await reader.get(KEYS[k]!));
      assert.ok(v >= t.acked[k]! && v <= t.acked[k]! + t.unknown[k]!, `${KEYS[k]}: ${v}, acknowledged ${t.acked[k]}, unknown ${t.unknown[k]}`);
    }
    // No acknowledged write refused as late at a backup: only an increment of unknown outcome may be.
    const late = checkLateBlocks(await lateBlockCounts(c1.nodes.map((n) => n.id), basePortOf(run.output())), unknown > 0, `${unknown} increment(s) of unknown outcome`);
    console.log(`# INCR across a failover: node ${victim} killed, term ${c1.term} -> ${storedTerm(file)}; ${acked()} increments acknowledged, ${unknown} unknown, ${t.notApplied} refused (not applied); every counter within [acknowledged, acknowledged + unknown]; ${late}`);
  } finally {
    for (const x of clients) x.disconnect();
    await stopCluster(run.child);
    rmSync(dir, { recursive: true, force: true });
  }
});
