// Short cuts of the configuration manager (issue 24, hazard 3; nemesis seed 884161638): only the
// manager's bridge port goes down, each time for less than one lease, six times. A node's renewals
// lost in a cut come back when its TCP connection retransmits, and the retransmission timer backs
// off: one node may be heard only well after the heal, past its lease at the manager, while the
// others renewed at once. A manager that took that for the node's failure evicted a healthy node
// (before actors/manager/reach.ts counted any silence of the whole cluster longer than two renewal
// periods as its own). Nothing may be reassigned: the stored term stays 1. Every acknowledged write
// reads back and the history of all clients is linearizable.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { checkLinearizability } from '../check/linearizability.js';
import { logRecords, waitFor } from '../fixtures/failover-cluster.js';
import { netnsUnavailable } from '../fixtures/netns.js';
import { NetnsCluster, PARTITION_LEASE_MS, startTwoHostLoad } from '../fixtures/netns-cluster.js';
import { checkLateBlocks, lateBlockCounts, unknownWrites } from '../fixtures/node-metrics.js';

/** The cuts, each under one lease (PARTITION_LEASE_MS) and over two renewal periods. */
const CUTS = [0.6, 0.75, 0.9, 0.65, 0.8, 0.85].map((f) => Math.round(f * PARTITION_LEASE_MS));
/** After a heal, how long a wrongful failover would take to show: the manager's reconnect grace
 *  (recoveryGraceLeases), a lease and a prepare round, with margin. */
const WATCH_MS = 8 * PARTITION_LEASE_MS;
const unavailable = netnsUnavailable();

test('the manager cut off six times for less than a lease: nothing is reassigned, the history is linearizable', { timeout: 150_000, skip: unavailable ?? false }, async (t) => {
  const { c, dir } = await NetnsCluster.forTest(t, 'part-s', 8);
  const { l0, l1, ok } = await startTwoHostLoad(c, dir);
  assert.equal((await c.config())?.term, 1);

  for (const ms of CUTS) {
    c.lab.cut('cm');
    await sleep(ms); // the fault's length
    c.lab.heal('cm');
    const okAtHeal = ok();
    await waitFor('the load to go on after the heal', () => ok() > okAtHeal + 100, 60_000, 20);
    await sleep(WATCH_MS); // the window in which a wrongful failover would be stored
    const term = (await c.config())?.term;
    assert.equal(term, 1, `a ${ms} ms cut of the manager (lease ${PARTITION_LEASE_MS} ms) changed the stored term:\n${managerWarnings(dir)}`);
  }
  const r0 = await l0.stop();
  const r1 = await l1.stop();
  assert.deepEqual(r0.uniqueMissing, [], 'acknowledged writes missing');
  const history = [...r0.history, ...r1.history];
  const lin = checkLinearizability(history, { timeLimitMs: 60_000 });
  assert.equal(lin.ok, true, lin.describe());
  const warnings = logRecords(join(dir, 'manager.log')).map((r) => String(r['msg']));
  const graces = warnings.filter((m) => /not suspected for the next/.test(m)).length;
  const spared = warnings.filter((m) => /heard from again before its failover was stored/.test(m)).length;
  const unknown = unknownWrites(history);
  const late = checkLateBlocks(await lateBlockCounts([0, 1, 2], (id) => c.metric(id, 'rowan_blog_late_blocks_total')), unknown > 0, `${unknown} write(s) of unknown outcome`);
  console.log(
    `partition (short): the manager cut off ${CUTS.length} times for ${CUTS.join(', ')} ms (lease ${PARTITION_LEASE_MS} ms); term stayed 1; ` +
      `the manager took ${graces} silence(s) for its own and spared ${spared} suspected node(s); ` +
      `c0: ${r0.fresh.ops} ops (${r0.fresh.ok} ok, ${r0.fresh.unknown} unknown), c1: ${r1.fresh.ops} ops (${r1.fresh.ok} ok, ${r1.fresh.unknown} unknown); ${r0.uniqueAcked} unique writes acknowledged, all read back; ` +
      `history of ${history.length} ops linearizable (${lin.ok === true ? lin.checked : 0} checked); ${late}`,
  );
});

function managerWarnings(dir: string): string {
  return logRecords(join(dir, 'manager.log'))
    .filter((r) => r['level'] === 'warn' || r['level'] === 'error')
    .map((r) => `${String(r['time'])} ${String(r['msg'])}`)
    .join('\n');
}

if (unavailable) console.log(`partition (short) skipped: ${unavailable}`);
