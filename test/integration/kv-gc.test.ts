// Commit tracking and garbage collection through a real 3-node cluster (`rowan cluster`, §4.4), in
// pools of 32 segments of 256 KiB (8 MiB per node):
// - long run: an overwrite-heavy workload (with some DELs) writes more than 20x each node's pool
//   capacity; no write fails for lack of space; at the end every key reads its newest acknowledged
//   value on its primary and on every backup, before and after a full restart (cold start from pools
//   that GC has rewritten);
// - full pool: unique keys beyond the pool's capacity get ROWAN_ERR_PM_FULL, every acknowledged write
//   stays readable and the nodes keep answering GETs; deleting half the keys (DELs may use part of
//   the GC reserve) lets GC reclaim space, and PUTs succeed again.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RowanClient } from '../../client/client.js';
import { shardOfKey } from '../../config/slots.js';
import { FileConfigStore } from '../../config/store.js';
import { collectClusterStatus, formatClusterStatus } from '../../bin/cluster-status.js';
import { RowanError } from '../../config/base/errors.js';
import { launchCluster, randomBasePort, stopCluster } from '../fixtures/cluster.js';
import { eventually } from '../fixtures/eventually.js';

const POOL = ['--pool-mib', '8', '--segment-kib', '256'];
const POOL_BYTES = 8 * 1024 * 1024;
const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array | null) => (b === null ? null : new TextDecoder().decode(b));

/** `check` on every item, 64 in flight at a time (as the writes go): reads without one round trip after another. */
async function forAll<T>(items: Iterable<T>, check: (x: T) => Promise<void>): Promise<void> {
  const all = [...items];
  for (let i = 0; i < all.length; i += 64) await Promise.all(all.slice(i, i + 64).map(check));
}

test('overwrites of 20x the pool capacity run in a bounded pool; primaries and backups agree', { timeout: 300_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-gc-long-'));
  const base = randomBasePort();
  let run = launchCluster(dir, base, POOL);
  try {
    await run.ready;
    const file = join(dir, 'cluster.json');
    const cluster = new FileConfigStore(file).readSync();
    const client = await RowanClient.connect({ cluster: file });
    const KEYS = 500;
    const VALUE = 1000;
    /** Newest acknowledged state per key: the value, or null after a DEL. */
    const newest = new Map<string, { n: number; v: string | null }>();
    const failures = new Map<string, number>();
    let n = 0;
    let entryBytes = 0;
    const t0 = Date.now();
    // Every PUT lands on all 3 nodes (primary t-log + 2 backup b-logs): each node takes ~the full stream.
    while (entryBytes < 21 * POOL_BYTES) {
      const batch: Promise<void>[] = [];
      for (let j = 0; j < 64; j++, n++) {
        const k = `key-${n % KEYS}`;
        const my = n;
        const del = n % 17 === 0;
        const v = del ? null : `${n}:`.padEnd(VALUE, String.fromCharCode(97 + (n % 26)));
        entryBytes += del ? 64 : 1088;
        batch.push(
          (del ? client.del(k) : client.put(k, v!)).then(
            () => {
              if ((newest.get(k)?.n ?? -1) < my) newest.set(k, { n: my, v });
            },
            (err: unknown) => {
              const code = err instanceof RowanError ? err.code : String(err);
              failures.set(code, (failures.get(code) ?? 0) + 1);
            },
          ),
        );
      }
      await Promise.all(batch);
    }
    const secs = (Date.now() - t0) / 1000;
    assert.deepEqual([...failures], [], 'no write failed (in particular none for lack of space)');

    // Move every backup's b-log past the last writes above, so digest has applied them (a segment
    // still being written is not digested, §4.3), then compare.
    const filler = 'f'.repeat(2000);
    for (let b = 0; b < 600; b += 100) await Promise.all(Array.from({ length: 100 }, (_, j) => client.put(`filler-${b + j}`, filler)));
    let backupReads = 0;
    await forAll(newest, async ([k, { v }]) => {
      assert.equal(dec(await client.get(k)), v, `primary read of ${k}`);
      const shard = cluster.shards[shardOfKey(enc(k), cluster.shardCount)]!;
      for (const b of shard.backups) {
        // Digest applies a Used segment after the receiver's grace: wait for it, do not guess a time.
        await eventually(async () => assert.equal(dec(await client.getReplica(b, k)), v, `node ${b}'s backup index for ${k}`));
        backupReads++;
      }
    });
    const status = await collectClusterStatus(file);
    const reclaimed = status.nodes.map((x) => x.status?.storage?.gc.segmentsReclaimed ?? 0);
    const text = formatClusterStatus(status);
    for (const [i, r] of reclaimed.entries()) {
      // 20x the pool went through each node: most of it must have been reclaimed.
      assert.ok(r * 256 * 1024 >= 15 * POOL_BYTES, `node ${i} reclaimed only ${r} segments:\n${text}`);
    }
    await client.close();
    console.log(`# gc long run: ${n} writes (${(entryBytes / 1e6).toFixed(0)} MB of entries per node, ${(entryBytes / POOL_BYTES).toFixed(1)}x the pool) in ${secs.toFixed(1)} s; ` +
      `${newest.size} keys checked on primaries, ${backupReads} backup reads; segments reclaimed per node: ${reclaimed.join(', ')}`);
    console.log(text.split('\n\n')[1]!.split('\n').map((l) => `# ${l}`).join('\n')); // the node table
    assert.equal(await stopCluster(run.child), 0, run.output());

    // Cold start from pools GC has rewritten: everything acknowledged is still there.
    run = launchCluster(dir, base, POOL);
    await run.ready;
    const again = await RowanClient.connect({ cluster: file });
    await forAll(newest, async ([k, { v }]) => assert.equal(dec(await again.get(k)), v, `after restart: ${k}`));
    await again.close();
  } finally {
    if (run.child.exitCode === null) await stopCluster(run.child);
    rmSync(dir, { recursive: true, force: true });
  }
});

for (const fabric of ['shm', 'tcp']) {
test(`a full pool refuses writes with ROWAN_ERR_PM_FULL, keeps every acknowledged write and serves GETs (${fabric})`, { timeout: 300_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-gc-full-'));
  const run = launchCluster(dir, randomBasePort(), [...POOL, '--fabric', fabric]);
  try {
    await run.ready;
    const file = join(dir, 'cluster.json');
    const client = await RowanClient.connect({ cluster: file });
    const acked: string[] = [];
    const failures = new Map<string, number>();
    const value = (k: string) => `${k}:`.padEnd(1000, 'u');
    let n = 0;
    // Unique keys: nothing becomes garbage. 3x the pool per node at most; stop once writes are refused.
    while (n < (3 * POOL_BYTES) / 1088 && (failures.get('ROWAN_ERR_PM_FULL') ?? 0) < 64) {
      await Promise.all(
        Array.from({ length: 64 }, () => {
          const k = `unique-${n++}`;
          return client.put(k, value(k)).then(
            () => void acked.push(k),
            (err: unknown) => {
              const code = err instanceof RowanError ? err.code : String(err);
              failures.set(code, (failures.get(code) ?? 0) + 1);
            },
          );
        }),
      );
    }
    assert.ok((failures.get('ROWAN_ERR_PM_FULL') ?? 0) > 0, `writes beyond the pool were refused with PM_FULL: ${JSON.stringify([...failures])}`);
    assert.deepEqual([...failures.keys()], ['ROWAN_ERR_PM_FULL'], 'the only failure is the stable PM_FULL code');
    assert.ok(acked.length * 1088 > POOL_BYTES / 2, `a good part of the pool was filled before (${acked.length} writes)`);
    await forAll(acked, async (k) => assert.equal(dec(await client.get(k)), value(k), `acknowledged ${k} is readable`));
    // Still answering GETs; more PUTs either find room on their shard's nodes or fail cleanly with the
    // same code (nodes fill at slightly different rates), never hang or fail otherwise.
    assert.equal(dec(await client.get('never-written')), null);
    let refusedAgain = 0;
    await Promise.all(
      Array.from({ length: 32 }, async (_, i) => {
        const k = `again-${i}`;
        try {
          await client.put(k, value(k));
          acked.push(k);
        } catch (err) {
          assert.ok(err instanceof RowanError && err.code === 'ROWAN_ERR_PM_FULL', String(err));
          refusedAgain++;
        }
      }),
    );
    assert.ok(refusedAgain > 0, 'a full pool keeps refusing writes');
    await forAll(acked, async (k) => assert.equal(dec(await client.get(k)), value(k), `acknowledged ${k} is still readable`));

    // Making room: DELs may use one segment of the GC reserve, so half the keys can be deleted; GC then
    // reclaims the segments that became mostly garbage, and PUTs succeed again.
    const doomed = acked.filter((_, i) => i % 2 === 0);
    const kept = acked.filter((_, i) => i % 2 === 1);
    for (let i = 0; i < doomed.length; i += 64) await Promise.all(doomed.slice(i, i + 64).map((k) => client.del(k)));
    let again = 0;
    const deadline = Date.now() + 20_000;
    while (again < 200 && Date.now() < deadline) {
      try {
        await client.put(`after-${again}`, value(`after-${again}`));
        again++;
      } catch (err) {
        assert.ok(err instanceof RowanError && err.code === 'ROWAN_ERR_PM_FULL', String(err));
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    assert.equal(again, 200, 'PUTs succeed again once GC has reclaimed the deleted keys\' space');
    await forAll(doomed, async (k) => assert.equal(await client.get(k), null, `deleted ${k}`));
    await forAll(kept, async (k) => assert.equal(dec(await client.get(k)), value(k), `kept ${k}`));
    await forAll(Array.from({ length: again }, (_, i) => `after-${i}`), async (k) => assert.equal(dec(await client.get(k)), value(k), k));
    console.log(`# full pool (${fabric}): ${acked.length} unique writes acknowledged (${((acked.length * 1088) / 1e6).toFixed(1)} MB per node), ${failures.get('ROWAN_ERR_PM_FULL')} refused with PM_FULL; all acknowledged readable; ${doomed.length} deleted, then ${again} PUTs accepted again`);
    await client.close();
  } finally {
    if (run.child.exitCode === null) await stopCluster(run.child);
    rmSync(dir, { recursive: true, force: true });
  }
});
}
