// A flush stays a flush (issue 27): keys written before a FLUSHALL do not come back after a cold start
// of the whole cluster (every node rebuilds its indexes from pools that still hold their entries: the
// FLUSH entry's floor drops them), nor after the primary of half the shards is SIGKILLed right after a
// flush (its backups are promoted; a promoted backup applies the FLUSH it holds, or is scattered it);
// keys written after each flush survive both, and DBSIZE counts exactly them.
//
// Every SET, GET and EXISTS is recorded in a client history (a reader keeps reading through the
// failover) and the history is checked for linearizability (test/check/). The checker's model is one
// register per key, so a flush is recorded as a DEL of every key the history holds, each spanning the
// flush's own invoke and response: exactly what a flush is to each key alone. What one key's register
// cannot say, that a flush clears all keys at one instant, the exact checks (DBSIZE, KEYS) cover here,
// since nothing else writes while a flush runs. And no backup refused a block as late: every write was
// acknowledged, so any late block would be an acknowledged write thrown away (node logs, the killed
// primary's included).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { Redis } from 'ioredis';
import { checkLinearizability, HistoryRecorder } from '../check/linearizability.js';
import { launchCluster, randomBasePort, stopCluster, type LaunchedCluster } from '../fixtures/cluster.js';
import { nodePids, storedTerm, waitFor } from '../fixtures/failover-cluster.js';
import { assertNoLateBlocks, loggedLateBlocks } from '../fixtures/node-metrics.js';
import { readCluster, respPorts, useClusterPassword } from '../fixtures/redis.js';

const FLAGS = ['--shards', '12', '--lease-ms', '200', '--no-restart'];
const VICTIM = 0;

/** The test's Redis calls, each recorded in one history (client 0: the test; 1: the failover reader). */
class Recorded {
  readonly history = new HistoryRecorder(() => performance.now());
  private readonly keys = new Set<string>();

  async writeKeys(r: Redis, prefix: string, n: number): Promise<string[]> {
    const keys = Array.from({ length: n }, (_, i) => `${prefix}:${i}`);
    const p = r.pipeline();
    const ids = keys.map((k) => (this.keys.add(k), this.history.invoke(0, k, 'put', `v-${k}`)));
    for (const k of keys) p.set(k, `v-${k}`);
    const replies = (await p.exec())!;
    replies.forEach(([e, v], i) => {
      assert.equal(e === null ? v : e, 'OK');
      this.history.ok(ids[i]!);
    });
    return keys;
  }

  /** FLUSHALL or FLUSHDB: a DEL of every key written so far, over the flush's interval. */
  async flush(r: Redis, how: 'flushall' | 'flushdb'): Promise<void> {
    const ids = [...this.keys].map((k) => this.history.invoke(0, k, 'del'));
    assert.equal(await r[how](), 'OK');
    for (const id of ids) this.history.ok(id);
  }

  /** GET, recorded; an error is an unknown read (it saw nothing) and is rethrown. */
  async get(r: Redis, k: string, client = 0): Promise<string | null> {
    const id = this.history.invoke(client, k, 'get');
    try {
      const v = await r.get(k);
      this.history.ok(id, v);
      return v;
    } catch (err) {
      this.history.unknown(id);
      throw err;
    }
  }

  /** EXISTS of `keys`: 0 is a read of "not found" of each of them over its interval. */
  async noneExists(r: Redis, keys: string[], what: string): Promise<void> {
    const ids = keys.map((k) => this.history.invoke(0, k, 'get'));
    assert.equal(await r.exists(...keys), 0, what);
    for (const id of ids) this.history.ok(id, null);
  }
}

/** None of `gone` and all of `kept` readable, and DBSIZE and KEYS count exactly `kept`. */
async function exactly(h: Recorded, r: Redis, gone: string[], kept: string[], what: string): Promise<void> {
  await h.noneExists(r, gone, `${what}: no flushed key came back`);
  for (const k of kept) assert.equal(await h.get(r, k), `v-${k}`, `${what}: ${k}`);
  assert.equal(await r.dbsize(), kept.length, `${what}: DBSIZE`);
  assert.deepEqual((await r.keys('*')).sort(), [...kept].sort(), `${what}: KEYS`);
}

/** Reads `keys` round and round on a connection of its own until stopped; failed reads are retried. */
function readThrough(h: Recorded, port: number, password: string, keys: string[]): { reads: () => number; stop: () => Promise<number> } {
  const r = new Redis({ port, password, maxRetriesPerRequest: 1 });
  let stopped = false;
  let reads = 0;
  const loop = (async () => {
    for (let i = 0; !stopped; i++) {
      await h.get(r, keys[i % keys.length]!, 1).then(() => reads++, () => new Promise((res) => setTimeout(res, 20)));
    }
  })();
  return { reads: () => reads, stop: async () => ((stopped = true), await loop, r.disconnect(), reads) };
}

test('keys flushed stay flushed across a cold start and a failover; keys written after the flush stay', { timeout: 300_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-redis-flush-failover-'));
  const base = randomBasePort();
  const h = new Recorded();
  let run: LaunchedCluster = launchCluster(dir, base, FLAGS);
  let r: Redis | null = null;
  try {
    await run.ready;
    const password = useClusterPassword(dir);
    const port = () => respPorts(readCluster(dir)).single[1]!;
    r = new Redis({ port: port(), password });
    const old = await h.writeKeys(r, 'old', 200);
    await h.flush(r, 'flushall');
    const kept = await h.writeKeys(r, 'new', 40);
    await exactly(h, r, old, kept, 'after FLUSHALL');
    r.disconnect();
    assert.equal(await stopCluster(run.child), 0, run.output());

    run = launchCluster(dir, base, FLAGS); // a cold start: every node rebuilds its indexes from its pool
    await run.ready;
    r = new Redis({ port: port(), password });
    await exactly(h, r, old, kept, 'after the cold start');

    // A second flush, then the primary of a third of the shards dies at once, under a reader.
    const c2 = readCluster(dir);
    const old2 = await h.writeKeys(r, 'old2', 200);
    await h.flush(r, 'flushdb');
    const kept2 = await h.writeKeys(r, 'new2', 40);
    const reader = readThrough(h, port(), password, [...kept2, ...old2.slice(0, 40), ...kept.slice(0, 10)]);
    await waitFor('the reader to read', () => reader.reads() > 20, 30_000, 10);
    process.kill(nodePids(run.output()).get(VICTIM)!, 'SIGKILL');
    const file = join(dir, 'cluster.json');
    await waitFor('the failover to be stored', () => storedTerm(file) > c2.term, 30_000, 20);
    assert.deepEqual(readCluster(dir).dead, [VICTIM]);
    const all = [...old, ...kept, ...old2]; // the second flush took the keys kept through the cold start too
    await waitFor('every shard served again', async () => (await r!.dbsize().catch(() => -1)) >= 0, 30_000, 50);
    await exactly(h, r, all, [...kept2], 'after the failover');
    const reads = await reader.stop();
    const lin = checkLinearizability(h.history.history(), { timeLimitMs: 60_000 });
    assert.equal(lin.ok, true, lin.describe());
    const late = loggedLateBlocks(dir, [0, 1, 2]);
    assert.deepEqual(late, [], 'no block refused as late: every write of this run was acknowledged');
    await assertNoLateBlocks(base, [1, 2], 'every write of this run was acknowledged');
    console.log(`# redis flush: ${all.length} flushed keys stayed gone across a cold start and a failover (term ${c2.term} -> ${readCluster(dir).term}); ${kept2.length} written after the flush kept; ${h.history.size} ops (${reads} reads through the failover) linearizable (${lin.ok === true ? lin.checked : 0} checked); no late b-log block on any node`);
  } finally {
    r?.disconnect();
    await stopCluster(run.child);
    rmSync(dir, { recursive: true, force: true });
  }
});
