// A failover cut short by a full restart (nemesis seed 345667674, docs/failover.md; the simulator's
// promotion-cut scenario runs it in many shapes, this runs it once on a real `rowan cluster`):
//   1. shard S (replication 2: primary A, backup B) moves to B and back to A -- B's replica record
//      notes its promotion, then B is a backup again;
//   2. writes of S are acknowledged by A and B (versions above B's old promotion);
//   3. A is SIGKILLed; the failover, which makes B the primary of S, is stored; the lease is long
//      (2 s), so B is still waiting for the commit when every node is SIGKILLed: B never promotes;
//   4. the whole cluster starts again from its pools: B is S's primary in the stored configuration.
// B's cold start used to refuse every block of S above its old promotion's version (the record of a
// tenure two configurations old), so the acknowledged writes of step 2 read back their old values.
// Every operation is recorded and the history checked for linearizability.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RowanClient } from '../../client/client.js';
import { assertLinearizable } from '../check/linearizability.js';
import { launchCluster, randomBasePort, stopCluster } from '../fixtures/cluster.js';
import { RecordedClient } from '../fixtures/recorded-client.js';
import { nodePids, readCluster, storedTerm, waitFor } from '../fixtures/failover-cluster.js';
import { keysOfShard, move } from '../fixtures/reshard.js';

const SHARDS = 4;

test('a failover whose promotion a full restart cut short keeps the writes acknowledged since the new primary last held the shard', { timeout: 300_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-promotion-cut-'));
  const base = randomBasePort();
  const flags = ['--nodes', '3', '--replication', '2', '--shards', String(SHARDS), '--lease-ms', '2000', '--no-restart', '--no-auto-reshard'];
  let run = launchCluster(dir, base, flags);
  let r: RecordedClient | null = null;
  try {
    await run.ready;
    const file = join(dir, 'cluster.json');
    const c1 = readCluster(file);
    const shard = 1;
    const a = c1.shards[shard]!.primary;
    const b = c1.shards[shard]!.backups[0]!;
    const keys = keysOfShard(shard, SHARDS, 8);
    r = new RecordedClient(await RowanClient.connect({ cluster: file, retries: 8 }));
    for (const k of keys) await r.put(k, `old-${k}`);

    // 1. To B and back: B's record notes its promotion, then B is S's backup again.
    const there = await move(readCluster(file), shard, b, dir);
    assert.ok(there.doneAt !== undefined, `move to node ${b} finished: ${JSON.stringify(there)}`);
    const back = await move(readCluster(file), shard, a, dir);
    assert.ok(back.doneAt !== undefined, `move back to node ${a} finished: ${JSON.stringify(back)}`);
    assert.deepEqual([readCluster(file).shards[shard]!.primary, readCluster(file).shards[shard]!.backups], [a, [b]]);

    const promotions = () => readFileSync(join(dir, `node-${b}.log`), 'utf8').split('"msg":"promoted ').length - 1;
    const promotedBefore = promotions();
    // 2. Acknowledged by A and B, above B's old promotion.
    for (const k of keys) await r.put(k, `new-${k}`);
    await r.client.close();

    // 3. A dies; once the failover naming B is stored, everyone dies (B is waiting out A's 2 s lease).
    const before = storedTerm(file);
    const pids = nodePids(run.output());
    process.kill(pids.get(a)!, 'SIGKILL');
    await waitFor(`the failover of node ${a} to be stored`, () => storedTerm(file) > before && readCluster(file).shards[shard]!.primary === b, 60_000, 5);
    for (const [id, pid] of pids) if (id !== a) process.kill(pid, 'SIGKILL');
    const promoted = promotions() > promotedBefore;
    const stored = readCluster(file);

    // 4. The cluster again, from its pools.
    await stopCluster(run.child); // non-zero: the launcher lost its nodes
    run = launchCluster(dir, base, flags);
    await run.ready;
    r.client = await RowanClient.connect({ cluster: file, retries: 8 });
    const got = new Map<string, string | null>();
    for (const k of keys) got.set(k, await r.get(k));
    assertLinearizable(r.history.history());
    assert.deepEqual([...got.values()], keys.map((k) => `new-${k}`), 'every acknowledged write of the shard survives the cut promotion');
    const untrusted = /"untrusted":(\d+)/.exec(readFileSync(join(dir, `node-${b}.log`), 'utf8').split('\n').filter((l) => l.includes('cold start:') && l.includes('"untrusted"')).at(-1) ?? '')?.[1];
    console.log(`# promotion cut: shard ${shard} ${a}->${b}->${a}, ${keys.length} keys rewritten, node ${a} killed; failover term ${stored.term} stored (node ${b} had ${promoted ? 'already' : 'not yet'} promoted) and every node killed; after the restart node ${b} serves all ${keys.length} acknowledged values (its cold start refused ${untrusted ?? '?'} b-log blocks)`);
    assert.equal(promoted, false, `node ${b} promoted before the kill: the cut was late (the 2 s lease should hold the commit)`);
  } finally {
    await r?.client.close().catch(() => {});
    if (run.child.exitCode === null) await stopCluster(run.child);
    if (process.env['ROWAN_TEST_KEEP'] === undefined) rmSync(dir, { recursive: true, force: true });
    else console.log(`kept ${dir}`);
  }
});
