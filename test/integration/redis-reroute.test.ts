// Moves under Redis clients: a shard's primary role moves (§4.6, as the manager's overload balancer
// does on its own) while a plain Redis client on a single-endpoint port and an ioredis Cluster client
// write and read its keys, and a third runs WATCH/MULTI/EXEC blocks on them. A request caught by the change of term was not applied, so the RESP port
// runs it again on the new view (actors/worker/resp/reroute.ts): a standalone client, which has no
// notion of TRYAGAIN or MOVED, sees no error; the cluster client sees at most -MOVED for the rest of a
// pipeline a move split (not applied, as Redis Cluster answers); every acknowledged INCR and
// transaction is counted exactly once; and the SETs and GETs of the two pipelining clients, on keys
// they share, with a final read of every key, make a linearizable history (test/check/).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Cluster, Redis } from 'ioredis';
import { checkLinearizability, HistoryRecorder } from '../check/linearizability.js';
import { randomBasePort, stopCluster } from '../fixtures/cluster.js';
import { launchClusterReady } from '../fixtures/cluster-retry.js';
import { readCluster, respPorts, useClusterPassword } from '../fixtures/redis.js';
import { keysOfShard, move, otherReplica } from '../fixtures/reshard.js';

const SHARDS = 6;
const HOT = 1;
const MOVES = 6;

interface Writer {
  errors: string[];
  incrs: number;
  batches: number;
  stop: boolean;
  done: Promise<void>;
}

/** What a command's error says of it for the history: -MOVED and -TRYAGAIN were not applied (the
 *  rest of a pipeline a move split, as Redis Cluster answers); anything else may have been. */
function recordError(h: HistoryRecorder, id: number, e: Error): void {
  if (/^(MOVED|TRYAGAIN) /.test(e.message)) h.fail(id);
  else h.unknown(id);
}

/** Pipelines of SET, GET and INCR on the hot shard's keys, one after another until stopped; the SETs
 *  and GETs recorded as client `client` (each spans its whole pipeline). */
function startWriter(c: Redis | Cluster, keys: string[], counter: string, h: HistoryRecorder, client: number): Writer {
  const w: Writer = { errors: [], incrs: 0, batches: 0, stop: false, done: Promise.resolve() };
  w.done = (async () => {
    for (let b = 0; !w.stop; b++) {
      const p = c.pipeline();
      const ids: number[] = [];
      for (const k of keys) {
        const value = `${client}-${b}`;
        ids.push(h.invoke(client, k, 'put', value));
        p.set(k, value);
      }
      for (const k of keys) {
        ids.push(h.invoke(client, k, 'get'));
        p.get(k);
      }
      p.incr(counter);
      const rs = (await p.exec())!;
      rs.forEach(([e, v], i) => {
        if (e) w.errors.push(String(e.message));
        if (i >= ids.length) return;
        if (e) recordError(h, ids[i]!, e);
        else if (i < keys.length) h.ok(ids[i]!);
        else h.ok(ids[i]!, v as string | null);
      });
      if (!rs.at(-1)![0]) w.incrs++;
      w.batches++;
    }
  })();
  return w;
}

/** Transactions on the hot shard: WATCH, then MULTI / INCR / SET / EXEC, one after another. */
function startTransactions(c: Redis, counter: string, other: string): Writer {
  const w: Writer = { errors: [], incrs: 0, batches: 0, stop: false, done: Promise.resolve() };
  w.done = (async () => {
    for (let b = 0; !w.stop; b++) {
      try {
        await c.watch(counter);
        const rs = await c.multi().incr(counter).set(other, `t${b}`).exec();
        if (rs === null) continue; // the watched key changed: nothing applied (nothing else writes it)
        for (const [e] of rs) if (e) w.errors.push(String(e.message));
        if (!rs[0]![0]) w.incrs++;
      } catch (e) {
        w.errors.push(String((e as Error).message));
      }
      w.batches++;
    }
  })();
  return w;
}

async function until(what: string, ok: () => boolean, ms = 60_000): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

test('a shard moving under standalone and cluster Redis clients and WATCH/MULTI/EXEC: no errors, every INCR counted once', { timeout: 300_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-reroute-'));
  const run = await launchClusterReady(dir, randomBasePort(), ['--nodes', '3', '--shards', String(SHARDS), '--no-auto-reshard']);
  const clients: (Redis | Cluster)[] = [];
  try {
    const password = useClusterPassword(dir);
    const ports = respPorts(readCluster(dir));
    const single = new Redis({ port: ports.single[0]!, password });
    const cluster = new Cluster(ports.cluster.map((port) => ({ host: '127.0.0.1', port })), { redisOptions: { password } });
    const txns = new Redis({ port: ports.single[1]!, password });
    clients.push(single, cluster, txns);
    const keys = keysOfShard(HOT, SHARDS, 12);
    const h = new HistoryRecorder(() => performance.now());
    const writers = [startWriter(single, keys, `${keys[0]}:n1`, h, 1), startWriter(cluster, keys, `${keys[0]}:n2`, h, 2), startTransactions(txns, `${keys[0]}:n3`, `${keys[0]}:t`)];
    await until('both clients to write', () => writers.every((w) => w.batches > 3));
    for (let i = 0; i < MOVES; i++) {
      const c = readCluster(dir);
      const to = otherReplica(c, HOT, i);
      const rec = await move(c, HOT, to, dir);
      assert.ok(rec.doneAt !== undefined, `move ${i} finished: ${JSON.stringify(rec)}`);
      const seen = writers.map((w) => w.batches);
      await until('the clients to go on after the move', () => writers.every((w, j) => w.batches > seen[j]! + 3));
    }
    for (const w of writers) w.stop = true;
    await Promise.all(writers.map((w) => w.done));
    assert.equal(readCluster(dir).term > MOVES, true, `the moves changed the term (${readCluster(dir).term})`);
    assert.deepEqual(writers[0]!.errors.slice(0, 5), [], `the standalone client saw no error (${writers[0]!.errors.length} in all)`);
    // A pipeline of a cluster client may be split by a move: the commands after it get -MOVED (not
    // applied), as from Redis Cluster; ioredis re-sends a pipeline only when all of it was redirected.
    const other = writers[1]!.errors.filter((e) => !/^MOVED \d+ /.test(e));
    assert.deepEqual(other.slice(0, 5), [], `the cluster client saw no error but -MOVED (${other.length} in all)`);
    assert.equal(await single.get(`${keys[0]}:n1`), String(writers[0]!.incrs), 'every acknowledged INCR counted once');
    assert.equal(await cluster.get(`${keys[0]}:n2`), String(writers[1]!.incrs), 'every acknowledged INCR counted once');
    assert.deepEqual(writers[2]!.errors.slice(0, 5), [], `the transactions saw no error (${writers[2]!.errors.length} in all)`);
    assert.equal(await single.get(`${keys[0]}:n3`), String(writers[2]!.incrs), 'every acknowledged transaction counted once');
    for (const k of keys) {
      const id = h.invoke(0, k, 'get'); // the final reads, once every client stopped
      h.ok(id, await single.get(k));
    }
    const lin = checkLinearizability(h.history());
    assert.equal(lin.ok, true, lin.describe());
    console.log(`${MOVES} moves of shard ${HOT}: ${writers.map((w) => `${w.batches} batches, ${w.incrs} INCRs, ${w.errors.length} errors`).join('; ')}; term ${readCluster(dir).term}; ${h.size} SETs and GETs, ${lin.describe()}`);
  } finally {
    for (const c of clients) c.disconnect();
    await stopCluster(run.child);
    rmSync(dir, { recursive: true, force: true });
  }
});
