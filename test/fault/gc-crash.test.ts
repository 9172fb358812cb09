// Garbage collection and crashes (§4.4, §4.7): a 3-node cluster in small pools runs an overwrite-heavy
// workload, so its clean actors are relocating entries and freeing segments all the time, and every
// node process is SIGKILLed in the middle of it -- several times in a row, restarting in between.
// After each restart (cold start from pools GC was rewriting) every key reads its newest acknowledged
// value or a newer one whose PUT was still in flight at the kill -- never an older one -- on its
// primary and on its backups.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RowanClient } from '../../client/client.js';
import { shardOfKey } from '../../config/slots.js';
import { FileConfigStore } from '../../config/store.js';
import { collectClusterStatus } from '../../bin/cluster-status.js';
import { launchCluster, randomBasePort, stopCluster } from '../fixtures/cluster.js';
import { checkLateBlocks, lateBlockCounts } from '../fixtures/node-metrics.js';

const POOL = ['--pool-mib', '8', '--segment-kib', '256'];
const KEYS = 300;
const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array | null) => (b === null ? null : new TextDecoder().decode(b));
const valueOf = (n: number) => `${n}:`.padEnd(900, String.fromCharCode(97 + (n % 26)));
const nOf = (v: string | null) => (v === null ? -1 : Number(v.slice(0, v.indexOf(':'))));

test('SIGKILL of every node during GC loses no acknowledged write', { timeout: 300_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-gc-crash-'));
  const base = randomBasePort();
  let run = launchCluster(dir, base, POOL);
  /** Per key: newest acknowledged write number, and every write number issued for it. */
  const acked = new Map<string, number>();
  const issued = new Map<string, number[]>();
  let n = 0;
  let reclaimedBeforeKills = 0;
  let notAcked = 0;
  let late = '';
  try {
    const KILLS = 3;
    for (let round = 0; round <= KILLS; round++) {
      await run.ready;
      const file = join(dir, 'cluster.json');
      const cluster = new FileConfigStore(file).readSync();
      const client = await RowanClient.connect({ cluster: file });
      // Check what the previous round left, after its crash and this cold start.
      for (const [k, a] of acked) {
        const ok = (got: number) => got === a || (got > a && issued.get(k)!.includes(got));
        const primary = nOf(dec(await client.get(k)));
        assert.ok(ok(primary), `round ${round}: ${k} reads write ${primary}, newest acknowledged is ${a}`);
        const shard = cluster.shards[shardOfKey(enc(k), cluster.shardCount)]!;
        for (const b of shard.backups) {
          const got = nOf(dec(await client.getReplica(b, k)));
          // A backup may lag its primary by the writes of the segment it had not digested yet, but it
          // never holds less than what was acknowledged (acked = persistent on every replica, and the
          // cold start indexes every b-log segment).
          assert.ok(ok(got), `round ${round}: node ${b}'s copy of ${k} is write ${got}, newest acknowledged is ${a}`);
        }
      }
      if (round === KILLS) {
        await client.close();
        // Every node was SIGKILLed with writes in flight: a cold start may refuse their blocks as late.
        late = checkLateBlocks(await lateBlockCounts([0, 1, 2], base), notAcked > 0, `${notAcked} write(s) cut off by the kills`);
        break;
      }
      const pids = (await collectClusterStatus(file)).nodes.map((x) => x.status!.pid);
      // Overwrite load; kill every node after a while, with writes in flight.
      const killAt = Date.now() + 2500 + Math.random() * 1500;
      let killed = false;
      const load = (async () => {
        while (!killed) {
          await Promise.all(
            Array.from({ length: 32 }, () => {
              const my = n++;
              const k = `key-${my % KEYS}`;
              (issued.get(k) ?? issued.set(k, []).get(k)!).push(my);
              return client.put(k, valueOf(my)).then(
                () => {
                  if ((acked.get(k) ?? -1) < my) acked.set(k, my);
                },
                () => void notAcked++, // failed or cut off by the kill: never acknowledged
              );
            }),
          );
        }
      })();
      while (Date.now() < killAt) await new Promise((r) => setTimeout(r, 50));
      const st = await collectClusterStatus(file);
      reclaimedBeforeKills += st.nodes.reduce((a, x) => a + (x.status?.storage?.gc.segmentsReclaimed ?? 0), 0);
      for (const pid of pids) process.kill(pid, 'SIGKILL');
      killed = true;
      await load;
      await client.close().catch(() => {});
      await stopCluster(run.child);
      run = launchCluster(dir, base, POOL);
    }
    assert.ok(reclaimedBeforeKills > 30, `GC was running when the nodes were killed (${reclaimedBeforeKills} segments reclaimed)`);
    console.log(`# gc crash: ${KILLS} rounds of SIGKILL during overwrites, ${n} writes issued, ${acked.size} keys checked after each cold start; ${reclaimedBeforeKills} segments reclaimed before the kills; ${late}`);
  } finally {
    if (run.child.exitCode === null) await stopCluster(run.child);
    rmSync(dir, { recursive: true, force: true });
  }
});
