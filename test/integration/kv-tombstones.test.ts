// Issue 12: DEL tombstones were never removed from a shard's index, so a churn of unique PUT+DEL keys
// grew every index (and the live bytes GC has to keep copying) without bound. Through a real cluster
// (3 node processes, every shard on its primary only: the sweep drops tombstones on primaries, see
// actors/clean/tombstones.ts), a bounded churn of unique keys next to a set of long-lived keys: the
// tombstones are dropped, the index holds the live keys plus at most the tombstones of the last few
// sweep cycles, live bytes stay near the live keys' bytes, and every key reads right -- also after a
// full restart (cold start from the pools). The second test replicates every shard to two backups:
// backups drop tombstones too (under their persisted floors, rule 2B), every replica's index settles at
// the live keys, and after a restart no deleted key comes back on any replica.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBasePort, stopCluster } from '../fixtures/cluster.js';
import { launchClusterReady, notRefused } from '../fixtures/cluster-retry.js';
import { RowanClient } from '../../client/client.js';
import { collectClusterStatus } from '../../bin/cluster-status.js';

const dec = (b: Uint8Array | null) => (b === null ? null : new TextDecoder().decode(b));
const FLAGS = ['--nodes', '3', '--replication', '1', '--shards', '6', '--pool-mib', '24', '--segment-kib', '256'];
const LIVE = 200;
const CHURN = 12_000;
const BATCH = 100;
const VALUE = 'v'.repeat(100);

interface Sample {
  keys: number;
  items: number;
  dropped: number;
  liveBytes: number;
  segments: number;
}

/** The long-lived keys, `live-0` .. `live-(LIVE-1)`, in batches. */
async function putLive(client: RowanClient): Promise<void> {
  for (let i = 0; i < LIVE; i += BATCH) await Promise.all(Array.from({ length: BATCH }, (_, j) => notRefused(() => client.put(`live-${i + j}`, `${VALUE}${i + j}`))));
}

/** A PUT then a DEL of each unique key `churn-0` .. `churn-(n-1)`, a batch at a time; `after(done)` once
 *  each batch is done. */
async function churn(client: RowanClient, n: number, after?: (done: number) => Promise<void>): Promise<void> {
  for (let i = 0; i < n; i += BATCH) {
    await Promise.all(
      Array.from({ length: BATCH }, async (_, j) => {
        const k = `churn-${i + j}`;
        await notRefused(() => client.put(k, VALUE));
        await notRefused(() => client.del(k));
      }),
    );
    await after?.(i + BATCH);
  }
}

/** `check(i)` for i = 0, step, 2 * step, ... below n, BATCH of them in flight at a time (reads, checked
 *  each, without one round trip after another). */
async function forEvery(n: number, step: number, check: (i: number) => Promise<void>): Promise<void> {
  const all = Array.from({ length: Math.ceil(n / step) }, (_, j) => j * step);
  for (let b = 0; b < all.length; b += BATCH) await Promise.all(all.slice(b, b + BATCH).map(check));
}

async function sample(file: string, keys: number): Promise<Sample> {
  const st = await collectClusterStatus(file);
  const s: Sample = { keys, items: 0, dropped: 0, liveBytes: 0, segments: 0 };
  for (const n of st.nodes) {
    const g = n.status?.storage;
    assert.ok(g?.index, `node ${n.id} reports its index (${n.error ?? ''})`);
    s.items += g.index.items ?? 0;
    s.dropped += g.index.tombstonesDropped;
    for (const grp of g.groups) {
      s.liveBytes += grp.liveBytes ?? 0;
      s.segments += grp.segments;
    }
  }
  return s;
}

/** Poll until `ok` holds for a sample (bounded); returns the last sample. */
async function waitFor(file: string, keys: number, ok: (s: Sample) => boolean, ms: number): Promise<Sample> {
  const until = Date.now() + ms;
  let s = await sample(file, keys);
  while (!ok(s) && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 250));
    s = await sample(file, keys);
  }
  return s;
}

test('unique PUT+DEL churn: tombstones are dropped, index items and live bytes stay bounded, a restart keeps every key right', { timeout: 300_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-tombstones-'));
  const file = join(dir, 'cluster.json');
  const basePort = randomBasePort();
  let run = await launchClusterReady(dir, basePort, FLAGS);
  try {
    let client = await RowanClient.connect({ cluster: file });
    await putLive(client);
    const base = await sample(file, 0);
    const samples: Sample[] = [];
    await churn(client, CHURN, async (done) => {
      if (done % 3000 === 0) samples.push(await sample(file, done));
    });
    // Settled: the sweep gets to the last tombstones (a cycle every 100 ms, 1.6 s at its longest pause).
    const end = await waitFor(file, CHURN, (s) => s.items <= LIVE + 50, 60_000);
    samples.push(end);
    for (const s of samples) console.log(`# tombstones: after ${s.keys} churned keys: ${s.items} index items, ${s.dropped} tombstones dropped, ${s.liveBytes} live bytes, ${s.segments} non-free segments`);
    assert.ok(end.items <= LIVE + 50, `index items settle at the live keys: ${end.items} (${LIVE} live keys, ${CHURN} deleted)`);
    assert.ok(end.dropped >= CHURN * 0.95, `tombstones dropped: ${end.dropped} of ${CHURN}`);
    // Live bytes: the long-lived keys' (measured before the churn) plus a few hundred entries' worth.
    assert.ok(end.liveBytes <= base.liveBytes + 300 * 256, `live bytes ${end.liveBytes}, ${base.liveBytes} before the churn`);

    await forEvery(LIVE, 1, async (i) => assert.equal(dec(await notRefused(() => client.get(`live-${i}`))), `${VALUE}${i}`));
    await forEvery(CHURN, 37, async (i) => assert.equal(dec(await notRefused(() => client.get(`churn-${i}`))), null, `churn-${i}`));
    await client.close();
    assert.equal(await stopCluster(run.child), 0, run.output());

    run = await launchClusterReady(dir, basePort, FLAGS); // the cluster's ports are in its configuration
    client = await RowanClient.connect({ cluster: file });
    await forEvery(LIVE, 1, async (i) => assert.equal(dec(await notRefused(() => client.get(`live-${i}`))), `${VALUE}${i}`, `live-${i} after the restart`));
    await forEvery(CHURN, 7, async (i) => assert.equal(dec(await notRefused(() => client.get(`churn-${i}`))), null, `churn-${i} after the restart`));
    await client.close();
  } finally {
    await stopCluster(run.child);
    rmSync(dir, { recursive: true, force: true });
  }
});

const FLAGS_RF3 = ['--nodes', '3', '--replication', '3', '--shards', '6', '--pool-mib', '32', '--segment-kib', '256'];
const CHURN_RF3 = 6000;

interface NodeSample {
  id: number;
  items: number;
  dropped: number;
  droppedOnBackup: number;
  liveBytes: number;
}

async function perNode(file: string): Promise<NodeSample[]> {
  const st = await collectClusterStatus(file);
  return st.nodes.map((n) => {
    const g = n.status?.storage;
    assert.ok(g?.index, `node ${n.id} reports its index (${n.error ?? ''})`);
    return { id: n.id, items: g.index.items ?? 0, dropped: g.index.tombstonesDropped, droppedOnBackup: g.index.tombstonesDroppedOnBackup, liveBytes: g.groups.reduce((a, grp) => a + (grp.liveBytes ?? 0), 0) };
  });
}

test('unique PUT+DEL churn with two backups per shard: backups drop tombstones too, every replica stays bounded, no deleted key comes back on any replica after a restart', { timeout: 300_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-tombstones-rf3-'));
  const file = join(dir, 'cluster.json');
  const basePort = randomBasePort();
  let run = await launchClusterReady(dir, basePort, FLAGS_RF3);
  try {
    let client = await RowanClient.connect({ cluster: file });
    await putLive(client);
    const base = await perNode(file);
    await churn(client, CHURN_RF3);
    // Settled: a backup drops under floors that become effective once the b-log segments holding the
    // CommitVers are digested and committed, so updates to the live keys keep the b-logs moving (a b-log
    // segment is handed to digest once a later one is written) until every replica's index is back to
    // the live keys. Each round rewrites every live key with the value it has (the live bytes stay the
    // live keys'): ~25 KB of b-log per node, so a 256 KiB segment fills in ~10 rounds (20 keys a round
    // took ~200 rounds, half of this test's time).
    const until = Date.now() + 120_000;
    let nodes = await perNode(file);
    let rounds = 0;
    for (; nodes.some((n) => n.items > LIVE + 50) && Date.now() < until; rounds++) {
      await putLive(client);
      await new Promise((r) => setTimeout(r, 100));
      nodes = await perNode(file);
    }
    console.log(`# tombstones rf3: settled after ${rounds} rounds of rewriting the live keys`);
    for (const n of nodes) console.log(`# tombstones rf3: node ${n.id}: ${n.items} index items, ${n.dropped} tombstones dropped (${n.droppedOnBackup} as a backup), ${n.liveBytes} live bytes (${base.find((b) => b.id === n.id)!.liveBytes} before the churn)`);
    for (const n of nodes) {
      assert.ok(n.items <= LIVE + 50, `node ${n.id}: index items settle at the live keys: ${n.items} (${LIVE} live keys, ${CHURN_RF3} deleted)`);
      // Every node backs up two thirds of the shards: most of its drops are a backup's.
      assert.ok(n.droppedOnBackup >= (CHURN_RF3 * 2) / 3 * 0.9, `node ${n.id}: tombstones dropped as a backup: ${n.droppedOnBackup}`);
      assert.ok(n.liveBytes <= base.find((b) => b.id === n.id)!.liveBytes + 300 * 256, `node ${n.id}: live bytes ${n.liveBytes}`);
    }
    await client.close();
    assert.equal(await stopCluster(run.child), 0, run.output());

    run = await launchClusterReady(dir, basePort, FLAGS_RF3);
    client = await RowanClient.connect({ cluster: file });
    for (let node = 0; node < 3; node++) {
      await forEvery(LIVE, 5, async (i) => assert.equal(dec(await notRefused(() => client.getReplica(node, `live-${i}`))), `${VALUE}${i}`, `live-${i} on node ${node} after the restart`));
      await forEvery(CHURN_RF3, 11, async (i) => assert.equal(dec(await notRefused(() => client.getReplica(node, `churn-${i}`))), null, `churn-${i} on node ${node} after the restart`));
    }
    await client.close();
  } finally {
    await stopCluster(run.child);
    rmSync(dir, { recursive: true, force: true });
  }
});
