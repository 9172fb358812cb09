// Tombstone GC and crashes (issue 12): a 3-node cluster, every shard on 3 replicas, in small pools.
// Keys are written, then deleted; an overwrite load on other keys keeps GC freeing segments, so the
// older PUTs of the deleted keys leave the pools and the primaries' sweeps drop the tombstones. Then
// every node process is SIGKILLed (with writes in flight) and cold-started from its pool: every deleted
// key stays deleted on its primary and on both backups, and every acknowledged overwrite is there at
// its newest acknowledged version or a newer one still in flight at the kill. Twice in a row.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RowanClient } from '../../client/client.js';
import { shardOfKey } from '../../config/slots.js';
import { FileConfigStore } from '../../config/store.js';
import { collectClusterStatus } from '../../bin/cluster-status.js';
import { randomBasePort, stopCluster } from '../fixtures/cluster.js';
import { launchClusterReady, notRefused } from '../fixtures/cluster-retry.js';
import { checkLateBlocks, lateBlockCounts } from '../fixtures/node-metrics.js';

const POOL = ['--pool-mib', '8', '--segment-kib', '256'];
const DELETED = 300;
const HOT = 100;
const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array | null) => (b === null ? null : new TextDecoder().decode(b));
const valueOf = (n: number) => `${n}:`.padEnd(900, String.fromCharCode(97 + (n % 26)));
/** Large enough that a node's PUTs of the keys to delete fill more than one t-log segment: most of the
 *  tombstones can only drop once GC has freed the segments holding their PUTs. */
const GONE_VALUE = 'g'.repeat(4000);
const nOf = (v: string | null) => (v === null ? -1 : Number(v.slice(0, v.indexOf(':'))));

async function dropped(file: string): Promise<number> {
  const st = await collectClusterStatus(file);
  return st.nodes.reduce((a, n) => a + (n.status?.storage?.index?.tombstonesDropped ?? 0), 0);
}

async function reclaimed(file: string): Promise<number> {
  const st = await collectClusterStatus(file);
  return st.nodes.reduce((a, n) => a + (n.status?.storage?.gc.segmentsReclaimed ?? 0), 0);
}

test('SIGKILL after the sweep dropped tombstones: deleted keys stay deleted on every replica after a cold start', { timeout: 300_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-tombstone-crash-'));
  const file = join(dir, 'cluster.json');
  const basePort = randomBasePort();
  let run = await launchClusterReady(dir, basePort, POOL);
  const acked = new Map<string, number>();
  const issued = new Map<string, number[]>();
  let n = 0;
  const droppedBeforeKill: number[] = [];
  const gcBetween: number[] = [];
  let notAcked = 0;
  let late = '';
  try {
    const ROUNDS = 2;
    for (let round = 0; round <= ROUNDS; round++) {
      const cluster = new FileConfigStore(file).readSync();
      const client = await RowanClient.connect({ cluster: file });
      const replicas = (k: string) => {
        const s = cluster.shards[shardOfKey(enc(k), cluster.shardCount)]!;
        return [s.primary, ...s.backups];
      };
      if (round > 0) {
        // After the kill and this cold start: deleted keys are deleted everywhere; overwrites survive.
        for (let i = 0; i < DELETED * round; i++) {
          const k = `gone-${Math.floor(i / DELETED)}-${i % DELETED}`;
          assert.equal(dec(await notRefused(() => client.get(k))), null, `round ${round}: ${k} came back on its primary`);
          for (const node of replicas(k)) assert.equal(dec(await notRefused(() => client.getReplica(node, k))), null, `round ${round}: ${k} came back on node ${node}`);
        }
        for (const [k, a] of acked) {
          const ok = (got: number) => got === a || (got > a && issued.get(k)!.includes(got));
          for (const node of replicas(k)) {
            const got = nOf(dec(await notRefused(() => client.getReplica(node, k))));
            assert.ok(ok(got), `round ${round}: node ${node}'s copy of ${k} is write ${got}, newest acknowledged is ${a}`);
          }
        }
      }
      if (round === ROUNDS) {
        await client.close();
        // Every node was SIGKILLed with writes in flight: a cold start may refuse their blocks as late.
        late = checkLateBlocks(await lateBlockCounts([0, 1, 2], basePort), notAcked > 0, `${notAcked} write(s) cut off by the kills`);
        break;
      }
      // This incarnation re-indexed the tombstones a kill left on PM and drops them again: let that
      // settle (no change for 3 s, bounded), so the count below is this round's tombstones.
      let before = await dropped(file);
      for (let stable = Date.now(), t0 = Date.now(); Date.now() - stable < 3000 && Date.now() - t0 < 30_000; ) {
        await new Promise((r) => setTimeout(r, 250));
        const d = await dropped(file);
        if (d !== before) [before, stable] = [d, Date.now()];
      }
      // Keys to delete: written (acknowledged everywhere), then deleted.
      for (let i = 0; i < DELETED; i += 50) await Promise.all(Array.from({ length: 50 }, (_, j) => notRefused(() => client.put(`gone-${round}-${i + j}`, GONE_VALUE))));
      for (let i = 0; i < DELETED; i += 50) await Promise.all(Array.from({ length: 50 }, (_, j) => notRefused(() => client.del(`gone-${round}-${i + j}`))));
      const pids = (await collectClusterStatus(file)).nodes.map((x) => x.status!.pid);
      const gcBefore = await reclaimed(file);
      // Overwrites of other keys until the primaries dropped this round's tombstones (bounded).
      let stop = false;
      const load = (async () => {
        for (let b = 0; !stop && b < 5000; b++) {
          await Promise.all(
            Array.from({ length: 32 }, () => {
              const my = n++;
              const k = `hot-${my % HOT}`;
              (issued.get(k) ?? issued.set(k, []).get(k)!).push(my);
              return client.put(k, valueOf(my)).then(
                () => {
                  if ((acked.get(k) ?? -1) < my) acked.set(k, my);
                },
                () => void notAcked++, // cut off by the kill: never acknowledged
              );
            }),
          );
        }
      })();
      const until = Date.now() + 120_000;
      let now = before;
      while (now - before < DELETED && Date.now() < until) {
        await new Promise((r) => setTimeout(r, 200));
        now = await dropped(file);
      }
      droppedBeforeKill.push(now - before);
      gcBetween.push((await reclaimed(file)) - gcBefore);
      for (const pid of pids) process.kill(pid, 'SIGKILL');
      stop = true;
      await load;
      await client.close().catch(() => {});
      assert.ok(now - before >= DELETED, `round ${round}: the sweeps dropped ${now - before} of ${DELETED} tombstones before the kill`);
      await stopCluster(run.child);
      run = await launchClusterReady(dir, basePort, POOL); // the stored configuration keeps its ports
    }
    console.log(`# tombstone crash: ${ROUNDS} rounds: ${DELETED} keys deleted, tombstones dropped before each kill: ${droppedBeforeKill.join(', ')}, segments reclaimed between the DELs and the kill: ${gcBetween.join(', ')}; ${n} overwrites issued; every deleted key null on all 3 replicas after each cold start; ${late}`);
  } finally {
    if (run.child.exitCode === null) await stopCluster(run.child);
    rmSync(dir, { recursive: true, force: true });
  }
});
