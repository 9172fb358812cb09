// A move blocks only the moved shard (issue 28): while one shard's move is prepared and held before
// its commit (`--debug-pause move-prepared:MS`, a slow participant), PUTs of the OTHER shards whose
// primaries are the move's source and target go on at their usual latency. Before the per-shard
// prepare fence (actors/shared/config-cell.ts FENCE) every member set the node-wide PENDING and every
// request of every shard waited for the commit: the pause's whole length.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RowanClient } from '../../client/client.js';
import { launchCluster, randomBasePort, stopCluster } from '../fixtures/cluster.js';
import { readCluster, waitFor } from '../fixtures/failover-cluster.js';
import { keysOfShard, move, otherReplica } from '../fixtures/reshard.js';

const SHARDS = 6;
const HOT = 2;
const PAUSE_MS = 4000;

function cleanup(dir: string): void {
  if (process.env['ROWAN_TEST_KEEP'] === undefined) rmSync(dir, { recursive: true, force: true });
  else console.log(`kept ${dir}`);
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? NaN;
}

/** Sequential PUTs of `keys` on one client until stopped: each one's start and latency (ms). */
function writer(client: RowanClient, keys: string[], stop: () => boolean, out: { at: number; ms: number }[]): Promise<void> {
  return (async () => {
    for (let i = 0; !stop(); i++) {
      const at = performance.now();
      await client.put(keys[i % keys.length]!, `v${i}`);
      out.push({ at, ms: performance.now() - at });
    }
  })();
}

test('writes of the shards not being moved go on while a move is prepared and held', { timeout: 120_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-moveblock-'));
  const base = randomBasePort();
  const cl = launchCluster(dir, base, ['--shards', String(SHARDS), '--lease-ms', '1000', '--no-auto-reshard', '--debug-pause', `move-prepared:${PAUSE_MS}`]);
  const clients: RowanClient[] = [];
  try {
    await cl.ready;
    const file = join(dir, 'cluster.json');
    const c = readCluster(file);
    const from = c.shards[HOT]!.primary;
    const to = otherReplica(c, HOT, 0);
    // The other shards on the move's two nodes: the ones a node-wide prepare stalls.
    const others = c.shards.filter((s) => s.id !== HOT && (s.primary === from || s.primary === to)).map((s) => s.id);
    assert.ok(others.length > 0, `some other shard has node ${from} or ${to} as its primary: ${JSON.stringify(c.shards)}`);
    for (let i = 0; i < others.length; i++) clients.push(await RowanClient.connect({ cluster: file, retries: 5, timeoutMs: 10_000 }));
    const lat: { at: number; ms: number }[] = [];
    let stopped = false;
    const writers = others.map((s, i) => writer(clients[i]!, keysOfShard(s, SHARDS, 16), () => stopped, lat));
    await waitFor('writes to start', () => lat.length > 50 * others.length, 30_000);
    const t0 = performance.now();
    const rec = await move(c, HOT, to, dir);
    const t1 = performance.now();
    stopped = true;
    await Promise.all(writers);
    assert.ok(rec.doneAt !== undefined && rec.preparedAt !== undefined && rec.committedAt !== undefined, `the move finished: ${JSON.stringify(rec)}`);
    assert.ok(rec.committedAt! - rec.preparedAt! >= PAUSE_MS, `the move was held ${PAUSE_MS} ms between prepare and commit`);
    const during = lat.filter((w) => w.at >= t0 && w.at < t1).map((w) => w.ms).sort((a, b) => a - b);
    const before = lat.filter((w) => w.at < t0).map((w) => w.ms).sort((a, b) => a - b);
    const stats = (xs: number[]) => `n ${xs.length}, p50 ${percentile(xs, 0.5).toFixed(1)} ms, p99 ${percentile(xs, 0.99).toFixed(1)} ms, max ${(xs.at(-1) ?? NaN).toFixed(1)} ms`;
    console.log(`other shards' PUTs (shards ${others.join(', ')}; move of shard ${HOT} ${from}->${to} held ${PAUSE_MS} ms after its prepare): before the move ${stats(before)}; during it ${stats(during)}`);
    assert.ok(during.length > 10, `writes of other shards completed during the move (${during.length})`);
    // Held for the pause they would take ~PAUSE_MS; running they take what they took before, and at
    // most one STALE_TERM refresh at the commit's new term (on a machine at load 45 on 2 cores that
    // was up to 1.3 s before the move, 0.6 s during it: hence the pause's half as the bound).
    assert.ok(during.at(-1)! < PAUSE_MS / 2, `no write of another shard waited for the moved shard's prepare: ${stats(during)}`);
    assert.equal(readCluster(file).shards[HOT]!.primary, to);
  } finally {
    for (const cli of clients) await cli.close().catch(() => {});
    await stopCluster(cl.child);
    cleanup(dir);
  }
});
