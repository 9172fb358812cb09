// Issue "no input can crash a node", finding 1: a shard's index used to hold a fixed 65,536 keys; past
// it the primary answered INDEX_FULL with the entry already in its t-log and on both backups, each
// backup's digest threw and took its node down, and cold start refused to start. Now the index grows
// on demand up to a configured maximum; at the maximum a PUT of a new key is refused before anything
// is persisted, and neither digest nor cold start can die on a full index.
//
// The growth test starts every index small (--index-keys) and writes the fewest keys that force its
// overflow area through a given number of doublings whatever the hash does (keysForDoublings): the
// primaries' PUTs, every backup's digest and the cold start all grow it, as they would past 65,536 keys
// at the default size, in seconds instead of minutes of CI.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { launchCluster, randomBasePort, stopCluster } from '../fixtures/cluster.js';
import { eventually } from '../fixtures/eventually.js';
import { RowanClient } from '../../client/client.js';
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import { defaultLimits } from '../../config/limits.js';
import { shardOfKey } from '../../config/slots.js';
import { ShardIndex } from '../../shm/index.js';

const dec = (b: Uint8Array | null) => (b === null ? null : new TextDecoder().decode(b));

async function inBatches(n: number, size: number, f: (i: number) => Promise<unknown>): Promise<void> {
  for (let b = 0; b < n; b += size) await Promise.all(Array.from({ length: Math.min(size, n - b) }, (_, j) => f(b + j)));
}

/** Overwrites of 20 keys created first, 3 MB in all: every backup's b-log moves past the segments
 *  holding the writes before it, so they are Used and digested (a segment being written is not, §4.3). */
async function pushSegments(client: RowanClient): Promise<void> {
  const big = 'f'.repeat(2048);
  await inBatches(1500, 100, (i) => client.put(`fill-${i % 20}`, big));
}

/** Reads every key of `keys` on its primary and every `backupEvery`th on the `replicas` nodes' indexes
 *  (the backups of a one-shard cluster by default); returns how many replica reads agreed. */
async function checkAll(client: RowanClient, keys: number, value: (i: number) => string | null, backupEvery: number, replicas = [1, 2]): Promise<number> {
  let backupReads = 0;
  await inBatches(keys, 500, async (i) => {
    assert.equal(dec(await client.get(`k${i}`)), value(i), `primary read of k${i}`);
    if (i % backupEvery !== 0) return;
    for (const node of replicas) {
      // Digest applies a Used segment after the receiver's grace: wait for it, not a fixed time.
      await eventually(async () => assert.equal(dec(await client.getReplica(node, `k${i}`)), value(i), `backup ${node} read of k${i}`));
      backupReads++;
    }
  });
  return backupReads;
}

/** 1,000 PUTs in flight on a busy 2-core machine can wait past the client's default 5 s (a CI run
 *  saw ROWAN_ERR_TIMEOUT, outcome unknown): these tests are about the index, not latency. */
const CLIENT = (dir: string) => ({ cluster: join(dir, 'cluster.json'), timeoutMs: 60_000 });

/** Writes `n` keys into a new cluster made with `flags`, reads each back (and every `replicaEvery`th on
 *  the `replicas` nodes' indexes), restarts the whole cluster (cold start) and reads them all again. */
async function fillRestartRead(prefix: string, flags: string[], n: number, replicaEvery: number, replicas?: number[]): Promise<{ putS: number; before: number; after: number }> {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const base = randomBasePort();
  let run = launchCluster(dir, base, flags);
  try {
    await run.ready;
    let client = await RowanClient.connect(CLIENT(dir));
    await inBatches(20, 20, (i) => client.put(`fill-${i}`, '-'));
    const t0 = performance.now();
    await inBatches(n, 1000, (i) => client.put(`k${i}`, `v${i}`));
    const putS = (performance.now() - t0) / 1000;
    await pushSegments(client);
    const before = await checkAll(client, n, (i) => `v${i}`, replicaEvery, replicas);
    await client.close();
    assert.equal(await stopCluster(run.child), 0, run.output());

    run = launchCluster(dir, base, flags); // the cold start rebuilds every index from the pool
    await run.ready;
    client = await RowanClient.connect(CLIENT(dir));
    const after = await checkAll(client, n, (i) => `v${i}`, replicaEvery, replicas);
    await client.close();
    return { putS, before, after };
  } finally {
    await stopCluster(run.child);
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The index size the growth test starts from (--index-keys): small, so that few keys make it grow. */
const INDEX_KEYS = 512;

/**
 * Keys one shard must take so that its index (made as createKvShared makes it from --index-keys, with
 * the default --index-keys-max) has doubled its overflow area at least `doublings` times, whatever the
 * hash does. A primary bucket holds at most itemsPerBucket keys, and so does an overflow bucket (no key
 * is removed here), so past the primary buckets every itemsPerBucket keys claim at least one overflow
 * bucket; claiming bucket number c (from 0) when the capacity is c doubles it (shm/index.ts "Growth"),
 * so the d-th doubling comes with bucket overflowBuckets * 2^(d-1).
 */
function keysForDoublings(indexKeys: number, doublings: number): { keys: number; capacity: number } {
  const o = ShardIndex.optionsFor(indexKeys, undefined, undefined, Math.max(indexKeys, defaultLimits.indexKeysPerShardMax));
  const items = (o.bucketItems ?? defaultLimits.indexBucketItems) - 1;
  const capacity = o.overflowBuckets * 2 ** doublings;
  assert.ok(capacity <= o.overflowBucketsMax!, `${doublings} doublings stay under the maximum ${o.overflowBucketsMax}`);
  return { keys: items * (o.buckets + capacity / 2) + 1, capacity };
}

/** The fewest keys k0, k1, ... that give every one of `shards` shards at least `perShard` of them. */
function keysForEveryShard(shards: number, perShard: number): number {
  const enc = new TextEncoder();
  const count = new Array<number>(shards).fill(0);
  let n = 0;
  for (let short = shards; short > 0; n++) if (++count[shardOfKey(enc.encode(`k${n}`), shards)]! === perShard) short--;
  return n;
}

test(`a 3-node cluster of 4 shards whose indexes start at ${INDEX_KEYS} keys takes enough to double every shard's overflow area 5 times: no node dies, a restart serves every key`, { timeout: 300_000 }, async () => {
  // Every node holds every shard (3 replicas) and is the primary of one or two of them: each node grows
  // all four indexes, as a primary (PUTs) or a backup (digest), and again at the cold start. (This
  // replaces 150 k keys into one shard at the default size, whose overflow area doubled twice, and 280 k
  // into 4 shards, whose 70 k per shard doubled none: 3 of CI's minutes.)
  const SHARDS = 4;
  const { keys: perShard, capacity } = keysForDoublings(INDEX_KEYS, 5);
  const N = keysForEveryShard(SHARDS, perShard);
  const r = await fillRestartRead('rowan-index-growth-', ['--shards', String(SHARDS), '--index-keys', String(INDEX_KEYS)], N, 13, [0, 1, 2]);
  console.log(`# index growth: ${N} keys in ${SHARDS} shards (at least ${perShard} each, overflow areas grown to at least ${capacity} buckets): PUTs in ${r.putS.toFixed(1)} s, every key read on its primary and ${r.before} replica reads before and ${r.after} after a full restart`);
});

test('at its configured maximum the index refuses new keys before persisting them; updates, DELs, digests and restarts go on', { timeout: 300_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-index-max-'));
  const base = randomBasePort();
  const flags = ['--shards', '1', '--index-keys', '512', '--index-keys-max', '4096'];
  let run = launchCluster(dir, base, flags);
  try {
    await run.ready;
    let client = await RowanClient.connect({ cluster: join(dir, 'cluster.json') });
    await inBatches(20, 20, (i) => client.put(`fill-${i}`, '-'));
    let acked = 0;
    let refused: RowanError | null = null;
    for (let i = 0; i < 20_000 && !refused; i++) {
      try {
        await client.put(`k${i}`, `v${i}`);
        acked++;
      } catch (err) {
        refused = err as RowanError;
      }
    }
    assert.ok(refused, 'a PUT of a new key must be refused at the maximum');
    assert.equal(refused.code, ErrorCodes.INDEX_FULL, String(refused));
    assert.ok(acked >= 1000 && acked <= 4096, `${acked} keys acknowledged before the refusal`);
    // Not applied: the refused key is nowhere, now or after a restart.
    assert.equal(dec(await client.get(`k${acked}`)), null);
    // Keys already held still take updates and DELs; a DEL of an absent key is a no-op, not a new item.
    await inBatches(acked, 500, (i) => client.put(`k${i}`, `w${i}`));
    await inBatches(100, 100, (i) => client.del(`k${i}`));
    await client.del('never-written');
    await assert.rejects(client.put('another-new-key', 'x'), (e: RowanError) => e.code === ErrorCodes.INDEX_FULL);
    const expect = (i: number) => (i < 100 ? null : i < acked ? `w${i}` : null);
    await pushSegments(client);
    await checkAll(client, acked + 1, expect, 13); // the backups' digests took all of it and are alive
    await client.close();
    assert.equal(await stopCluster(run.child), 0, run.output());

    run = launchCluster(dir, base, flags);
    await run.ready;
    client = await RowanClient.connect({ cluster: join(dir, 'cluster.json') });
    await checkAll(client, acked + 1, expect, 13);
    await client.close();
    console.log(`# index maximum: ${acked} keys acknowledged, then ${refused.code}; all served after a restart`);
  } finally {
    await stopCluster(run.child);
    rmSync(dir, { recursive: true, force: true });
  }
});
