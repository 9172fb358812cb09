// MULTI/EXEC across a failover (issue 27): ioredis clients (plain clients on both workers of the
// surviving nodes' single-endpoint ports -- their blocks are forwarded to the shard's primary -- and
// Cluster clients) run transactions that increment two counters of one slot, {ft:i}a by 1 and {ft:i}b
// by 1, while a primary is SIGKILLed; a reader MGETs each pair all along. A transaction's writes are
// durable and visible as one unit (DESIGN §7), so: no reader ever sees a pair differ (a transaction
// half applied); at the end every pair is equal and holds at least the transactions acknowledged for it
// and at most those plus the ones whose outcome is unknown; and no acknowledged block was refused as
// late at a backup. The clients never resend by themselves (a block resent after it reached the dead
// node would be counted once and applied twice).
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
const PAIRS = Array.from({ length: 16 }, (_, i) => [`{ft:${i}}a`, `{ft:${i}}b`] as const);
/** Replies that say "not applied" (handler.ts, and EXECABORT: a block refused while queuing). */
const NOT_APPLIED = /^(TRYAGAIN|CLUSTERDOWN|MOVED|CROSSSLOT|ERR|OOM|EXECABORT) /;

interface Tally {
  acked: number[];
  unknown: number[];
  notApplied: number;
}

async function transactUntil(cli: Redis | Cluster, t: Tally, stop: () => boolean, seed: number): Promise<void> {
  for (let i = seed; !stop(); i++) {
    const k = i % PAIRS.length;
    const [a, b] = PAIRS[k]!;
    try {
      const res = await cli.multi().incr(a).incr(b).exec();
      assert.ok(res !== null, 'no WATCH: EXEC never answers a null array');
      // No INCR of a block fails on its own (a counter's value is always an integer; a node that
      // cannot run one answers EXEC with the error), and the two ran back to back under the slot's locks.
      assert.deepEqual([res[0]![0], res[1]![0]], [null, null], `one block's INCRs failed: ${String(res[0]![0])} / ${String(res[1]![0])}`);
      assert.equal(res[0]![1], res[1]![1], `one block's INCRs of ${a} and ${b} answered ${res[0]![1]} and ${res[1]![1]}`);
      t.acked[k]!++;
    } catch (e) {
      if (e instanceof assert.AssertionError) throw e;
      if (NOT_APPLIED.test((e as Error).message)) t.notApplied++;
      else t.unknown[k]!++;
      await pause(20); // pacing while the cluster reconfigures, not a wait for a condition
    }
  }
}

/** MGET every pair until stopped; a pair that differs is a transaction seen half applied. */
async function readUntil(cli: Cluster, stop: () => boolean, seen: { reads: number; halves: string[] }): Promise<void> {
  while (!stop()) {
    for (const [a, b] of PAIRS) {
      try {
        const [va, vb] = await cli.mget(a, b);
        seen.reads++;
        if (va !== vb) seen.halves.push(`${a}=${va} ${b}=${vb}`);
      } catch {
        await pause(20); // the pair's primary is being failed over
      }
    }
  }
}

test('MULTI/EXEC blocks from many clients across a primary SIGKILL: never seen half applied, each pair holds its acknowledged blocks, at most plus the unknown ones', { skip, timeout: 300_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-redis-txn-failover-'));
  const run = await launchReadyCluster(dir, ['--shards', '12', '--workers', '2', '--lease-ms', '200', '--no-restart']);
  const clients: (Redis | Cluster)[] = [];
  try {
    const password = useClusterPassword(dir);
    const c1 = readCluster(dir);
    const victim = 0;
    const noResend = { password, maxRetriesPerRequest: 0, autoResendUnfulfilledCommands: false, enableOfflineQueue: true };
    for (const n of c1.nodes.filter((x) => x.id !== victim)) for (const port of n.resp!.ports) clients.push(new Redis({ ...noResend, port }));
    const seeds = c1.nodes.map((n) => ({ host: '127.0.0.1', port: n.resp!.clusterPorts[0]! }));
    const cluster = () => new Cluster(seeds, { redisOptions: noResend, retryDelayOnFailover: 0, clusterRetryStrategy: (n) => (n > 200 ? null : 50), maxRedirections: 32 });
    for (let i = 0; i < 2; i++) clients.push(cluster());
    const reader = cluster();
    clients.push(reader); // disconnected with the others; it runs no transactions
    for (const x of clients) x.on('error', () => undefined); // a dead node's connection errors: counted per command
    const t: Tally = { acked: PAIRS.map(() => 0), unknown: PAIRS.map(() => 0), notApplied: 0 };
    const seen = { reads: 0, halves: [] as string[] };
    let stopped = false;
    const acked = () => t.acked.reduce((a, b) => a + b, 0);
    const loops = [...clients.slice(0, -1).map((x, i) => transactUntil(x, t, () => stopped, i * 5)), readUntil(reader, () => stopped, seen)];

    await waitFor('200 transactions acknowledged before the kill', () => acked() >= 200, 120_000, 20);
    process.kill(nodePids(run.output()).get(victim)!, 'SIGKILL');
    const file = join(dir, 'cluster.json');
    await waitFor('the failover to be stored', () => storedTerm(file) > c1.term, 60_000, 20);
    const afterFailover = acked();
    await waitFor('200 more transactions acknowledged after the failover', () => acked() >= afterFailover + 200, 120_000, 20);
    stopped = true;
    await Promise.all(loops);

    assert.deepEqual(seen.halves, [], `a reader saw a transaction half applied (${seen.reads} reads)`);
    const unknown = t.unknown.reduce((a, b) => a + b, 0);
    for (let k = 0; k < PAIRS.length; k++) {
      const [a, b] = PAIRS[k]!;
      const [va, vb] = (await reader.mget(a, b)).map(Number) as [number, number];
      assert.equal(va, vb, `${a} and ${b} differ at the end`);
      assert.ok(va >= t.acked[k]! && va <= t.acked[k]! + t.unknown[k]!, `${a}: ${va}, acknowledged ${t.acked[k]}, unknown ${t.unknown[k]}`);
    }
    const late = checkLateBlocks(await lateBlockCounts(c1.nodes.map((n) => n.id), basePortOf(run.output())), unknown > 0, `${unknown} transaction(s) of unknown outcome`);
    console.log(`# MULTI/EXEC across a failover: node ${victim} killed, term ${c1.term} -> ${storedTerm(file)}; ${acked()} transactions acknowledged, ${unknown} unknown, ${t.notApplied} refused (not applied); ${seen.reads} pair reads, none half applied; every pair within [acknowledged, acknowledged + unknown]; ${late}`);
  } finally {
    for (const x of clients) x.disconnect();
    await stopCluster(run.child);
    rmSync(dir, { recursive: true, force: true });
  }
});
