// ROWAN-KV against a real 3-process cluster started the way the README starts one (`rowan cluster`):
// every acknowledged PUT is readable from its primary, present in every backup's b-log and, once
// digested, in every backup's index; DEL removes; overwrites return the newest value; a full restart of
// the cluster serves everything acknowledged before it (cold start).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { launchCluster, randomBasePort, stopCluster } from '../fixtures/cluster.js';
import { eventually } from '../fixtures/eventually.js';
import { notRefused } from '../fixtures/cluster-retry.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RowanClient } from '../../client/client.js';
import { shardOfKey } from '../../config/slots.js';
import { defaultLimits } from '../../config/limits.js';
import { FileConfigStore } from '../../config/store.js';
import { scanBlogBlocks } from '../../runtime/rowan/blog-scan.js';
import { EntryType } from '../../shm/log.js';
import { setChecksumSeed } from '../../shm/log-checksum.js';
import { OwnerRole, Pool } from '../../shm/pool.js';

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array | null) => (b === null ? null : new TextDecoder().decode(b));

const launch = launchCluster;
const stop = stopCluster;

const N = 2000;
const key = (i: number) => `key-${i}`;
/** What each key must read as: overwritten, deleted or as first written. */
const expected = (i: number) => (i < 500 ? `v2-${i}` : i < 750 ? null : `v1-${i}`);

test('a 3-node cluster replicates, digests, survives a full restart', { timeout: 240_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-cluster-'));
  const base = randomBasePort();
  let run = launch(dir, base);
  try {
    await run.ready;
    const file = join(dir, 'cluster.json');
    const cluster = new FileConfigStore(file).readSync();
    const client = await RowanClient.connect({ cluster: file });
    const batch = async (f: (i: number) => Promise<unknown>, from: number, to: number) => {
      for (let b = from; b < to; b += 250) await Promise.all(Array.from({ length: Math.min(250, to - b) }, (_, j) => f(b + j)));
    };
    await batch((i) => client.put(key(i), `v1-${i}`), 0, N);
    await batch((i) => client.put(key(i), `v2-${i}`), 0, 500);
    await batch((i) => client.del(key(i)), 500, 750);
    // Filler so every backup moves past the segments holding the keys above: they become Used and
    // are digested (a segment still being written is not, §4.3).
    const filler = 'f'.repeat(2048);
    await batch((i) => client.put(`filler-${i}`, filler), 0, 1500);

    for (let i = 0; i < N; i++) assert.equal(dec(await client.get(key(i))), expected(i), `primary read of ${key(i)}`);
    let replicaReads = 0;
    for (let i = 0; i < N; i++) {
      const shard = cluster.shards[shardOfKey(enc(key(i)), cluster.shardCount)]!;
      for (const b of shard.backups) {
        // Digest applies a Used segment after the receiver's grace: wait for it, not a fixed time.
        await eventually(async () => assert.equal(dec(await client.getReplica(b, key(i))), expected(i), `backup ${b} index for ${key(i)}`));
        replicaReads++;
      }
    }
    await client.close();
    assert.equal(await stop(run.child), 0, run.output());

    // Every backup's b-log holds the newest acknowledged entry of each key it backs up, or its clean log
    // does: a backup's cleaner reclaims b-log segments whose entries are mostly dead (overwritten, or
    // tombstones dropped under the shard's floor) and relocates the live ones. `rowan cluster` keyed
    // every block checksum with the cluster's seed (shm/log-checksum.ts): so does this scan.
    assert.ok((cluster.checksumSeed ?? 0) !== 0, 'rowan cluster makes a seeded cluster');
    setChecksumSeed(cluster.checksumSeed!);
    for (const node of cluster.nodes) {
      const pool = Pool.open(join(node.dataDir, 'pool.pm'));
      const seen = new Map<string, string | null>();
      const newest = new Map<string, number>();
      for (const seg of [...pool.segments({ role: OwnerRole.Control }), ...pool.segments({ role: OwnerRole.Clean })]) {
        const start = pool.segmentOffset(seg);
        for (const b of scanBlogBlocks(pool.region.bytes, start, start + pool.segmentBytes, defaultLimits)) {
          if (b.type === EntryType.CommitVer) continue;
          const k = dec(b.payload.subarray(0, b.keyLen))!;
          if ((newest.get(k) ?? 0) >= b.version) continue;
          newest.set(k, b.version);
          seen.set(k, b.type === EntryType.Del ? null : dec(b.payload.subarray(b.keyLen, b.keyLen + b.valueLen)));
        }
      }
      pool.close();
      for (let i = 0; i < N; i++) {
        const shard = cluster.shards[shardOfKey(enc(key(i)), cluster.shardCount)]!;
        if (!shard.backups.includes(node.id)) continue;
        // A deleted key may have left no entry at all: the tombstone sweep drops a committed DEL once no
        // older PUT of the key is left on PM (a PUT left without its DEL fails the equality below).
        if (expected(i) !== null) assert.ok(seen.has(key(i)), `node ${node.id}'s b-log and clean log lack ${key(i)}`);
        assert.equal(seen.get(key(i)) ?? null, expected(i), `node ${node.id}'s b-log, newest ${key(i)}`);
      }
    }

    // Full restart: cold start from the pools alone.
    run = launch(dir, base);
    await run.ready;
    const again = await RowanClient.connect({ cluster: file });
    // A node starved of CPU right after its restart may refuse a read until its lease is renewed.
    for (let i = 0; i < N; i++) assert.equal(dec(await notRefused(() => again.get(key(i)))), expected(i), `after restart: ${key(i)}`);
    await again.close();
    console.log(`kv cluster: ${N} keys (500 overwritten, 250 deleted) checked on primaries, ${replicaReads} backup index reads, every backup b-log, and after a full restart`);
  } finally {
    if (run.child.exitCode === null) await stop(run.child);
    rmSync(dir, { recursive: true, force: true });
  }
});
