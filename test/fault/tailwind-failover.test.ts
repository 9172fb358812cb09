// Tailwind's promise (issue 29; replication mode tailwind, actors/baselines/tailwind.ts): backups do
// nothing until recovery, yet a failover loses no acknowledged write -- the promoted backup runs the
// recovery scan (Algorithm 1) over the dead primary's backup buffers before it serves.
// A 3-node `rowan cluster --replication-mode tailwind` (replication 3) under a concurrent PUT/GET/DEL
// load with a recorded history and a writer of unique keys (each acknowledged one must survive); before the kill, no backup has indexed any of it (getReplica reads
// nothing); then SIGKILL of the primary of the most shards mid-load: every shard is served again, the
// new primaries' logs show the scan and the records it applied, and the whole history (the final
// reads included) is linearizable per key -- no acknowledged write lost, none torn applied. The status
// says the mode and that its backup buffers are never reclaimed (no GC), and the manager logs it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RowanClient } from '../../client/client.js';
import { collectClusterStatus, formatClusterStatus } from '../../bin/cluster-status.js';
import { defaultTimings } from '../../config/timings.js';
import { shardOfKey } from '../../config/slots.js';
import { checkLinearizability } from '../check/linearizability.js';
import { launchCluster, randomBasePort, stopCluster } from '../fixtures/cluster.js';
import { allShardsServed, nodePids, probeKeys, storedTerm, waitFor } from '../fixtures/failover-cluster.js';
import { KvLoad } from '../fixtures/failover-load.js';

const SHARDS = 8;
const KEYS = Array.from({ length: 6 }, (_, i) => `tw-key-${i}`);
const CLIENTS = 4;

/** Unique keys written once each, 8 at a time, until stopped: the acknowledged ones are remembered. */
class UniqueWriter {
  readonly acked = new Set<number>();
  private next = 0;
  private stopped = false;
  private readonly loops: Promise<void>[] = [];
  constructor(private readonly c: RowanClient) {}
  start(): void {
    for (let k = 0; k < 8; k++) this.loops.push(this.loop());
  }
  private async loop(): Promise<void> {
    while (!this.stopped) {
      const i = this.next++;
      try {
        await this.c.put(`tw-u-${i}`, `u${i}`);
        this.acked.add(i);
      } catch {
        // not acknowledged: may or may not be there after the failover
      }
    }
  }
  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.loops);
  }
}

interface ScanLine {
  msg: string;
  buffers: number;
  records: number;
  torn: number;
  corrupt: number;
}

/** The 'tailwind-scan' lines of node `id`'s log (actors/node/tailwind-recovery.ts logTailwindScan). */
function scans(dir: string, id: number): ScanLine[] {
  const out: ScanLine[] = [];
  for (const line of readFileSync(join(dir, `node-${id}.log`), 'utf8').split('\n')) {
    if (!line.includes('"tailwind-scan"')) continue;
    out.push(JSON.parse(line) as ScanLine);
  }
  return out;
}

for (const fabric of ['shm', 'tcp'] as const) {
  test(`tailwind (${fabric}): SIGKILL of a primary mid-load; the promoted backups' recovery scan loses no acknowledged write`, { timeout: 180_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), `rowan-tailwind-${fabric}-`));
    const base = randomBasePort();
    const run = launchCluster(dir, base, ['--shards', String(SHARDS), '--fabric', fabric, '--lease-ms', String(defaultTimings.leaseMs), '--replication-mode', 'tailwind']);
    const clients: RowanClient[] = [];
    try {
      await run.ready;
      const file = join(dir, 'cluster.json');
      const pids = nodePids(run.output());
      assert.equal(pids.size, 3, run.output());
      // The status names the mode and what it cannot do (no GC of backup buffers); it fails over.
      const status = formatClusterStatus(await collectClusterStatus(file));
      assert.match(status, /replication 3 \(tailwind\)/, status);
      assert.match(status, /NO GC of backup buffers/, status);
      assert.doesNotMatch(status, /failover: NOT SUPPORTED/, status);
      assert.match(readFileSync(join(dir, 'manager.log'), 'utf8'), /replication mode tailwind: NO GC of backup buffers/);
      for (let i = 0; i < CLIENTS + 2; i++) clients.push(await RowanClient.connect({ cluster: file, retries: 5, timeoutMs: 3000 }));
      const probe = clients.pop()!;
      const unique = new UniqueWriter(clients.pop()!);
      const load = new KvLoad(clients, KEYS, 50_000);
      load.start();
      unique.start();
      await waitFor('load to run', () => load.ops > 400, 60_000);
      const c = probe.config();
      // Backups do nothing until recovery: a key written (acknowledged) is in no backup's index.
      const key = 'tw-probe';
      await probe.put(key, 'acked');
      const shard = c.shards[shardOfKey(Buffer.from(key), c.shardCount)]!;
      for (const b of shard.backups) assert.equal(await probe.getReplica(b, key), null, `backup ${b} indexed a tailwind write before any recovery`);

      const count = (n: number) => c.shards.filter((s) => s.primary === n).length;
      const victim = [...pids.keys()].sort((a, b) => count(b) - count(a))[0]!;
      const term = storedTerm(file);
      process.kill(pids.get(victim)!, 'SIGKILL');
      await unique.stop();
      await waitFor(`failover of node ${victim}`, () => storedTerm(file) > term, 30_000);
      await allShardsServed(probe, probeKeys(SHARDS), 30_000);
      const ops = load.ops;
      await waitFor('load to go on after the failover', () => load.ops > ops + 200, 60_000);
      await load.stop();
      for (const k of KEYS) await load.one(probe, CLIENTS, k, 'get');
      assert.equal((await probe.get(key))?.toString(), 'acked', 'the probe write survived the failover');

      // Every acknowledged unique key reads back, those of the dead primary's shards included.
      let ofVictim = 0;
      for (const i of unique.acked) {
        const k = `tw-u-${i}`;
        if (c.shards[shardOfKey(Buffer.from(k), c.shardCount)]!.primary === victim) ofVictim++;
        assert.equal((await probe.get(k))?.toString(), `u${i}`, `acknowledged ${k} after the failover`);
      }
      assert.ok(ofVictim > 0, 'some acknowledged unique keys were the dead primary\'s');
      const history = load.operations();
      const r = checkLinearizability(history, { timeLimitMs: 60_000 });
      assert.equal(r.ok, true, r.describe());
      const promoted = [...pids.keys()].filter((n) => n !== victim).flatMap((n) => scans(dir, n).filter((s) => s.msg.startsWith('promotion')));
      assert.ok(promoted.length > 0, 'a promoted backup ran the tailwind recovery scan');
      const records = promoted.reduce((a, s) => a + s.records, 0);
      assert.ok(records > 0, 'the scan applied the dead primary\'s records');
      assert.equal(promoted.reduce((a, s) => a + s.corrupt, 0), 0, 'no closed buffer corrupt');
      console.log(
        `tailwind failover (${fabric}): node ${victim} (primary of ${count(victim)} shards) killed; ${history.length} ops: ${load.counts.ok} ok, ${load.counts.fail} not applied, ${load.counts.unknown} unknown; ` +
          `linearizable; ${unique.acked.size} unique keys acknowledged (${ofVictim} of its shards) all read back; promotion scans: ${promoted.length}, ${promoted.reduce((a, s) => a + s.buffers, 0)} buffers, ${records} records applied, ${promoted.reduce((a, s) => a + s.torn, 0)} ending torn`,
      );
    } finally {
      await Promise.all(clients.map((x) => x.close()));
      await stopCluster(run.child);
      rmSync(dir, { recursive: true, force: true });
    }
  });
}
