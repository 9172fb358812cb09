// The replication modes of the evaluation (ROWAN §6.1) in a real 3-process cluster, one cluster per
// mode (`rowan cluster --replication-mode X`): PUT/overwrite/DEL read back from the primaries; backups'
// indexes checked online where the mode indexes online (rpc: the backup worker indexes before it
// replies; rowan: the digest, once filler has moved the b-log past the keys' segments); then a full
// restart, after which every mode serves everything from the primaries and every backup's index holds
// it too (rwrite/batch/share are indexed at a backup only by the cold start's scan of its
// Remote-owned segments; tailwind's by its recovery scan, Algorithm 1, over the same; asymnvm's by the
// cold start's replay of its op-log regions).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { launchCluster, randomBasePort, stopCluster } from '../fixtures/cluster.js';
import { eventually } from '../fixtures/eventually.js';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RowanClient } from '../../client/client.js';
import { type ClusterConfig, type ClusterReplicationMode } from '../../config/cluster.js';
import { shardOfKey } from '../../config/slots.js';
import { FileConfigStore } from '../../config/store.js';
import { collectClusterStatus, formatClusterStatus } from '../../bin/cluster-status.js';

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array | null) => (b === null ? null : new TextDecoder().decode(b));

/** rpc and share run 2 workers per node: rpc picks the backup worker by shard, share's workers share
 *  one remote-log counter per backup. The others run 1 (a cluster of 2-worker nodes starts slower). */
const workersFor = (mode: ClusterReplicationMode) => (mode === 'rpc' || mode === 'share' ? '2' : '1');

const launch = (dir: string, basePort: number, mode: ClusterReplicationMode, fabric: 'shm' | 'tcp') =>
  launchCluster(dir, basePort, ['--workers', workersFor(mode), '--replication-mode', mode, '--fabric', fabric]);
const stop = stopCluster;

const N = 300;
const key = (i: number) => `mkey-${i}`;
/** 0..79 overwritten, 80..129 deleted, the rest as first written. A multi-block value every 37th key. */
const v1 = (i: number) => (i % 37 === 0 ? `v1-${i}-`.padEnd(6000, 'x') : `v1-${i}`);
const expected = (i: number) => (i < 80 ? `v2-${i}` : i < 130 ? null : v1(i));

/** `check(i)` for every key index 0..N-1, 50 keys in flight at a time (not one round trip after another). */
async function everyKey(check: (i: number) => Promise<void>): Promise<void> {
  for (let b = 0; b < N; b += 50) await Promise.all(Array.from({ length: Math.min(50, N - b) }, (_, j) => check(b + j)));
}

async function checkBackups(client: RowanClient, cluster: ClusterConfig, what: string): Promise<number> {
  let reads = 0;
  await everyKey(async (i) => {
    const shard = cluster.shards[shardOfKey(enc(key(i)), cluster.shardCount)]!;
    for (const b of shard.backups) {
      // Digest (rowan) applies a Used segment after the receiver's grace: wait for it, not a fixed time.
      await eventually(async () => assert.equal(dec(await client.getReplica(b, key(i))), expected(i), `${what}: backup ${b} index for ${key(i)}`));
      reads++;
    }
  });
  return reads;
}

const MODES: ClusterReplicationMode[] = ['rowan', 'rpc', 'rwrite', 'batch', 'share',
  'tailwind']; // erda: its own CASES below
/** Every mode on the shm fabric; the one-sided baselines also over the tcp fabric, where the NIC grants
 *  regions per sending node (actors/nic/nic-verbs.ts): share's workers write one region through their own
 *  connections, rwrite's each allocate their own. */
const CASES: { mode: ClusterReplicationMode; fabric: 'shm' | 'tcp' }[] = [
  ...MODES.map((mode) => ({ mode, fabric: 'shm' as const })),
  { mode: 'rwrite', fabric: 'tcp' },
  { mode: 'share', fabric: 'tcp' },
  { mode: 'tailwind', fabric: 'tcp' },
  // Erda (actors/baselines/erda.ts): rwrite's logs plus an index region per stream at each backup.
  { mode: 'erda', fabric: 'shm' },
  { mode: 'erda', fabric: 'tcp' },
  // AsymNVM: one op-log record per operation; the backup (back end) replays the op log at its cold start.
  { mode: 'asymnvm', fabric: 'shm' },
  { mode: 'asymnvm', fabric: 'tcp' },
];

for (const { mode, fabric } of CASES) {
  test(`replication mode ${mode}${fabric === 'tcp' ? ' over the tcp fabric' : ''}: a 3-node cluster serves writes, and all of them after a full restart`, { timeout: 120_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), `rowan-${mode}-`));
    const base = randomBasePort();
    let run = launch(dir, base, mode, fabric);
    try {
      await run.ready;
      const file = join(dir, 'cluster.json');
      const cluster = new FileConfigStore(file).readSync();
      assert.equal(cluster.replication, mode);
      const client = await RowanClient.connect({ cluster: file });
      const all = (f: (i: number) => Promise<unknown>, from: number, to: number) => Promise.all(Array.from({ length: to - from }, (_, j) => f(from + j)));
      await all((i) => client.put(key(i), v1(i)), 0, N);
      await all((i) => client.put(key(i), `v2-${i}`), 0, 80);
      await all((i) => client.del(key(i)), 80, 130);
      await everyKey(async (i) => assert.equal(dec(await client.get(key(i))), expected(i), `${mode}: primary read of ${key(i)}`));
      let online = 0;
      if (mode === 'rowan') {
        // Filler moves every backup's b-log past the keys' segments, so they are Used and digested.
        const filler = 'f'.repeat(2048);
        for (let b = 0; b < 1500; b += 250) await all((i) => client.put(`filler-${i}`, filler), b, b + 250);
      }
      if (mode === 'rowan' || mode === 'rpc') online = await checkBackups(client, cluster, `${mode} online`);
      else {
        // The one-sided baselines land in remote logs the digest never reads: no backup index has them yet.
        await everyKey(async (i) => {
          if (i < 130) return;
          const shard = cluster.shards[shardOfKey(enc(key(i)), cluster.shardCount)]!;
          for (const b of shard.backups) assert.equal(await client.getReplica(b, key(i)), null, `${mode}: backup ${b} indexed ${key(i)} online`);
        });
      }
      await client.close();
      assert.equal(await stop(run.child), 0, run.output());

      run = launch(dir, base, mode, fabric);
      await run.ready;
      const again = await RowanClient.connect({ cluster: file });
      await everyKey(async (i) => assert.equal(dec(await again.get(key(i))), expected(i), `${mode} after restart: ${key(i)}`));
      const cold = await checkBackups(again, cluster, `${mode} after restart`);
      if (mode === 'asymnvm') {
        for (const n of cluster.nodes) {
          const log = readFileSync(join(dir, `node-${n.id}.log`), 'utf8');
          assert.match(log, /replayed [1-9]\d* op-log record\(s\) from [1-9]\d* region\(s\), 0 region\(s\) ended at a torn record.*NO FAILOVER and NO GC/, `node ${n.id}'s cold start says what it replayed and what the mode cannot do`);
        }
        const status = formatClusterStatus(await collectClusterStatus(file));
        assert.match(status, /replication \d+ \(asymnvm\)\nfailover: NOT SUPPORTED for replication mode asymnvm.*\nasymnvm: NO FAILOVER and NO GC of the op log/, status);
      }
      await again.close();
      console.log(`replication ${mode}: ${N} keys (80 overwritten, 50 deleted) on primaries, ${online} online backup reads, ${cold} backup reads after a full restart`);
    } finally {
      if (run.child.exitCode === null) await stop(run.child);
      rmSync(dir, { recursive: true, force: true });
    }
  });
}
