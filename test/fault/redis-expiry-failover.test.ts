// Expiry deadlines are replicated state (issue 27): keys written with TTLs keep their exact deadlines
// across a cold start of the whole cluster (stopped and started again from the pools) and across a
// failover (their primary SIGKILLed), and expire on time on whoever serves them then: visible until
// the deadline, gone for every read made from it on. Deadlines given as a relative TTL (EX) were converted by the old
// primary's clock; given as PXAT they must come back bit-exact (PEXPIRETIME). The victim is killed while
// its expiry sweep deletes a few thousand keys that just expired: those keys stay gone, and no backup
// refused an acknowledged client write as late (the sweep's in-flight DELs may be; see assertNoLatePuts).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { Cluster, Redis } from 'ioredis';
import type { ClusterConfig } from '../../config/cluster.js';
import { keySlot, shardOfSlot } from '../../config/slots.js';
import { launchCluster, randomBasePort, stopCluster, type LaunchedCluster } from '../fixtures/cluster.js';
import { nodePids, storedTerm, waitFor } from '../fixtures/failover-cluster.js';
import { readCluster, respPorts, useClusterPassword } from '../fixtures/redis.js';
import { assertNoLatePuts } from '../fixtures/node-metrics.js';

// No automatic resharding: the keys this test writes all go to the victim's shards, which would make it
// the overloaded node and move shards (a term change) before the kill.
const FLAGS = ['--shards', '12', '--lease-ms', '200', '--no-restart', '--no-auto-reshard'];
const VICTIM = 0;
/** Keys expiring just before the kill, so the victim's sweep is deleting them when it dies. */
const SWEPT = 3000;
/**
 * Deadlines (ms after their write, before the cold start) of groups of keys that must outlive the cold
 * start; the first group still COLD_AHEAD_MS ahead once the cluster is back is followed through the
 * failover to its expiry. The restart takes 10 s on a quiet machine and 40 s on a loaded one: with one
 * deadline 60 s out a quiet CI run spent 45 s waiting for it, now it waits about as long as its restart
 * took. The groups due earlier must be gone on time too; those due later keep their exact deadline.
 */
const COLD_AFTER_MS = [20_000, 30_000, 40_000, 60_000, 90_000];
const COLD_AHEAD_MS = 15_000;

interface ColdGroup {
  at: number;
  keys: string[];
}

function connect(dir: string, password: string): Cluster {
  const ports = respPorts(readCluster(dir)).cluster;
  return new Cluster(ports.map((port) => ({ host: '127.0.0.1', port })), { clusterRetryStrategy: (n) => (n > 200 ? null : 50), maxRedirections: 32, redisOptions: { password } });
}

async function ready(io: Cluster): Promise<Cluster> {
  await new Promise((resolve) => io.once('ready', resolve));
  return io;
}

/** `n` keys named `prefix:i` whose shard's primary is node `node` in `c`. */
function keysOn(c: ClusterConfig, node: number, prefix: string, n: number): string[] {
  const out: string[] = [];
  for (let i = 0; out.length < n; i++) {
    const k = `${prefix}:${i}`;
    if (c.shards[shardOfSlot(keySlot(Buffer.from(k)), c.shardCount)]!.primary === node) out.push(k);
  }
  return out;
}

/** Keys node `node`'s expiry sweeps deleted so far (INFO expired_keys over its workers' ports). */
async function expiredOn(c: ClusterConfig, node: number, password: string): Promise<number> {
  let n = 0;
  for (const port of c.nodes[node]!.resp!.ports) {
    const r = new Redis({ port, password, lazyConnect: true });
    try {
      await r.connect();
      n += Number(/expired_keys:(\d+)/.exec(await r.info('stats'))?.[1] ?? NaN);
    } finally {
      r.disconnect();
    }
  }
  return n;
}

/** Keys due at `at`: PEXPIRETIME is exactly `at` while it is well ahead; from near it on, they expire on time. */
async function deadlineKept(io: Cluster, g: ColdGroup, what: string): Promise<void> {
  if (Date.now() < g.at - 2000) {
    for (const k of g.keys) assert.equal(await io.pexpiretime(k), g.at, `${k}: ${what}: the deadline kept exactly`);
    return;
  }
  await expiresOnTime(io, g.keys, g.at, g.at, what);
}

/**
 * Wait until every key reads nil, and assert that none did before `notBefore` and that no read sent
 * at or after `by` (Unix ms) saw one: on time means invisible to every request made from the deadline
 * on, however long the failover or this loaded machine took to answer. Reads that fail while the
 * failover is under way are retried.
 */
async function expiresOnTime(io: Cluster, keys: string[], notBefore: number, by: number, what: string): Promise<void> {
  if (Date.now() < notBefore - 300) {
    const vs = await Promise.all(keys.map((k) => io.get(k)));
    const t = Date.now();
    if (t < notBefore) assert.ok(vs.every((v) => v !== null), `${what}: every key still there ${notBefore - t} ms before its deadline`);
  }
  let sent = 0;
  await waitFor(`${what} to expire`, async () => {
    sent = Date.now();
    const n = await Promise.all(keys.map((k) => io.exists(k))).catch(() => null);
    if (n === null) return false; // the failover is not done: no answer yet
    const left = keys.filter((_, i) => n[i] !== 0);
    assert.ok(left.length === 0 || sent < by, `${what}: ${left.join(' ')} still there in a read sent ${sent - by} ms after the deadline`);
    return left.length === 0;
  }, Math.max(by - Date.now(), 0) + 60_000, 50);
  const gone = Date.now();
  assert.ok(gone >= notBefore, `${what}: gone at ${gone}, not before its deadline ${notBefore}`);
  console.log(`# ${what}: gone ${gone - by} ms after the deadline (read sent ${sent - by} ms after it)`);
}

test('keys with TTLs keep their deadlines across a cold start and a failover, and expire on time on the new primary', { timeout: 300_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-redis-expiry-failover-'));
  const base = randomBasePort();
  let run: LaunchedCluster = launchCluster(dir, base, FLAGS);
  let io: Cluster | null = null;
  try {
    await run.ready;
    const password = useClusterPassword(dir);
    const c1 = readCluster(dir);
    io = await ready(connect(dir, password));
    // Before the cold start: keys with an absolute deadline far enough to outlive the restart, keys
    // with a long relative TTL, keys whose TTL was removed, and keys that expire while the cluster is down.
    const written = Date.now();
    const colds: ColdGroup[] = COLD_AFTER_MS.map((ms, g) => ({ at: written + ms, keys: keysOn(c1, VICTIM, `cold${g}`, 8) }));
    const long = keysOn(c1, VICTIM, 'long', 8);
    const kept = keysOn(c1, VICTIM, 'kept', 4);
    const down = keysOn(c1, VICTIM, 'down', 4);
    for (const g of colds) for (const k of g.keys) assert.equal(await io.set(k, 'v', 'PXAT', g.at), 'OK');
    for (const k of long) assert.equal(await io.set(k, 'v', 'EX', 1000), 'OK');
    for (const k of kept) {
      assert.equal(await io.set(k, 'v', 'EX', 1000), 'OK');
      assert.equal(await io.persist(k), 1);
    }
    for (const k of down) assert.equal(await io.set(k, 'v', 'PX', 1500), 'OK');
    const downBy = Date.now() + 1500;
    io.disconnect();
    assert.equal(await stopCluster(run.child), 0, run.output());

    run = launchCluster(dir, base, FLAGS); // a cold start: every node rebuilds its indexes from its pool
    await run.ready;
    io = await ready(connect(dir, password));
    const back = Date.now();
    const followed = colds.findIndex((g) => g.at - back >= COLD_AHEAD_MS);
    assert.ok(followed >= 0, `the restart took too long for the test (${colds.at(-1)!.at - back} ms left of the last cold keys' TTL)`);
    const cold = colds[followed]!;
    for (const g of colds.slice(followed)) for (const k of g.keys) assert.equal(await io.pexpiretime(k), g.at, `${k}: the deadline survived the cold start exactly`);
    for (const k of long) {
      const t = await io.ttl(k);
      assert.ok(t > 900 && t <= 1000, `${k}: TTL ${t} after the cold start`);
    }
    for (const k of kept) assert.equal(await io.ttl(k), -1, `${k}: PERSIST survived`);
    assert.ok(Date.now() > downBy);
    for (const k of down) assert.equal(await io.get(k), null, `${k} expired while the cluster was down`);

    // The failover: keys with deadlines a few seconds ahead, then their primary is killed.
    const c2 = readCluster(dir);
    const foAt = Date.now() + 8000;
    const fo = keysOn(c2, VICTIM, 'fo', 8);
    const rel = keysOn(c2, VICTIM, 'rel', 8);
    for (const k of fo) assert.equal(await io.set(k, 'v', 'PXAT', foAt), 'OK');
    const relFrom = Date.now();
    for (const k of rel) assert.equal(await io.set(k, 'v', 'EX', 8), 'OK');
    const relTo = Date.now();
    // Keys whose deadline passes just before the kill: the victim's expiry sweep is deleting them when
    // it dies, so some of its DELs may be in flight and land late at a backup. No client waits for those;
    // a client's acknowledged write must never be refused as late (checked at the end).
    const swept = keysOn(c2, VICTIM, 'swept', SWEPT);
    const sweptAt = Date.now() + 1000;
    assert.ok((await Promise.all(swept.map((k) => io!.set(k, 'v', 'PXAT', sweptAt)))).every((r) => r === 'OK'));
    const before = await expiredOn(c2, VICTIM, password);
    await waitFor("the victim's sweep to start deleting", async () => (await expiredOn(c2, VICTIM, password)) > before, 30_000, 10);
    process.kill(nodePids(run.output()).get(VICTIM)!, 'SIGKILL');
    const file = join(dir, 'cluster.json');
    await waitFor('the failover to be stored', () => storedTerm(file) > c2.term, 30_000, 20);
    const c3 = readCluster(dir);
    assert.deepEqual(c3.dead, [VICTIM]);
    await expiresOnTime(io, fo, foAt, foAt, 'PXAT keys after the failover');
    await expiresOnTime(io, rel, relFrom + 8000, relTo + 8000, 'EX keys after the failover');
    for (const [i, g] of colds.slice(0, followed).entries()) await expiresOnTime(io, g.keys, g.at, g.at, `cold keys ${i} (due ${g.at - back} ms after the cold start)`);
    await expiresOnTime(io, cold.keys, cold.at, cold.at, 'keys whose deadline survived the cold start');
    for (const [i, g] of colds.slice(followed + 1).entries()) await deadlineKept(io, g, `cold keys ${followed + 1 + i} after the failover`);
    for (const k of long) {
      const t = await io.ttl(k);
      assert.ok(t > 900 && t <= 1000, `${k}: TTL ${t} on the new primary`);
    }
    for (const k of kept) assert.equal(await io.get(k), 'v', `${k}: no TTL, still there`);
    await expiresOnTime(io, swept, sweptAt, sweptAt, 'keys the sweep was deleting at the kill');
    // This test's clients write only PUTs (SET, PERSIST), all acknowledged before the kill; the sweep
    // writes only DELs. So a late PUT block would be an acknowledged write thrown away; late DELs are
    // the killed sweep's (fixtures/node-metrics.ts assertNoLatePuts).
    const late = await assertNoLatePuts(base, c3.nodes.map((n) => n.id).filter((id) => id !== VICTIM));
    console.log(`# redis expiry: late b-log blocks after the failover: ${late}`);
    console.log(`# redis expiry: deadlines kept across a cold start and a failover (term ${c2.term} -> ${c3.term}); ${fo.length + rel.length + cold.keys.length} keys expired on time on the new primaries (the cold start's followed deadline ${cold.at - written} ms after its write, ${cold.at - back} ms after the restart)`);
  } finally {
    io?.disconnect();
    await stopCluster(run.child);
    rmSync(dir, { recursive: true, force: true });
  }
});
