// Issue 13 (b): the configuration manager cut off alone. Hosts are network namespaces
// (test/fixtures/netns.ts): the manager, three nodes (tcp fabric) and two client hosts; only the
// manager's bridge port goes down, for many leases. The nodes still reach each other and the clients.
//
// Nothing may be reassigned (the stored term stays), and the clients must be served throughout:
// every read and write of both client hosts succeeds during the cut, on the first try. A node's
// lease with the manager runs out after one lease; it keeps serving on its peer leases
// (actors/shared/peer-lease.ts: every other member promises not to take over its shards before the
// promise expires, and refuses to promise once it prepares a new configuration). After the heal the
// manager grants again, still at the same term. Every acknowledged write reads back and the history
// of all clients is linearizable.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { monotonicClock } from '../../config/base/clock.js';
import { checkLinearizability } from '../check/linearizability.js';
import { logRecords, waitFor } from '../fixtures/failover-cluster.js';
import { netnsUnavailable } from '../fixtures/netns.js';
import { NetnsCluster, startTwoHostLoad } from '../fixtures/netns-cluster.js';
import { checkLateBlocks, lateBlockCounts, unknownWrites } from '../fixtures/node-metrics.js';

/** The cut lasts at least this long: 7 leases, several failover retries of the manager. */
const CUT_MS = 3000;
const unavailable = netnsUnavailable();

test('the manager cut off alone: nothing is reassigned, every client request succeeds throughout, the history is linearizable', { timeout: 150_000, skip: unavailable ?? false }, async (t) => {
  const { c, dir } = await NetnsCluster.forTest(t, 'part-b', 8);
  const { l0, l1, ok } = await startTwoHostLoad(c, dir);
  const failed = () => [l0, l1].reduce((n, l) => n + l.progress()!.fresh.fail + l.progress()!.fresh.unknown, 0);
  const term = (await c.config())?.term;
  assert.equal(term, 1);

  const tCut = monotonicClock.now();
  c.lab.cut('cm');
  const okAtCut = ok();
  // Sample the load: the longest time no request completed, while the manager is cut off.
  let stallMs = 0;
  let lastOk = okAtCut;
  let lastOkAt = tCut;
  while (monotonicClock.now() - tCut < CUT_MS || ok() - okAtCut < 300) {
    assert.ok(monotonicClock.now() - tCut < 60_000, `the load stalled while the manager was cut off: ${ok() - okAtCut} requests served`);
    await sleep(20);
    const now = monotonicClock.now();
    if (ok() > lastOk) {
      lastOk = ok();
      lastOkAt = now;
    } else stallMs = Math.max(stallMs, now - lastOkAt);
  }
  const servedDuringCut = ok() - okAtCut;
  const failedDuringCut = failed();
  const tHeal = monotonicClock.now();
  c.lab.heal('cm');
  // After the heal the manager hears the nodes again and grants their leases, at the same term.
  await waitFor('the manager to grant the nodes again', () => logRecords(join(dir, 'manager.log')).filter((r) => /heard from again|back before its failover/.test(String(r['msg']))).length >= 1, 30_000, 50);
  const okAtHeal = ok();
  await waitFor('the load to go on after the heal', () => ok() > okAtHeal + 300, 60_000, 50);
  const r0 = await l0.stop();
  const r1 = await l1.stop();
  const termAfter = (await c.config())?.term;
  assert.equal(termAfter, term, 'the stored term moved: something was reassigned');
  assert.equal(failedDuringCut, 0, 'requests failed while the manager was cut off');
  for (const r of [r0, r1]) assert.deepEqual(r.fresh.codes, {}, 'every request succeeded');
  assert.deepEqual(r0.uniqueMissing, [], 'acknowledged writes missing');
  const history = [...r0.history, ...r1.history];
  const lin = checkLinearizability(history, { timeLimitMs: 60_000 });
  assert.equal(lin.ok, true, lin.describe());
  const manager = logRecords(join(dir, 'manager.log')).map((r) => String(r['msg']));
  const cutOff = manager.filter((m) => /looks cut off/.test(m)).length;
  // Only the manager was cut off: no primary lost a peer, and no write had an unknown outcome.
  const unknown = unknownWrites(history);
  const late = checkLateBlocks(await lateBlockCounts([0, 1, 2], (id) => c.metric(id, 'rowan_blog_late_blocks_total')), unknown > 0, `${unknown} write(s) of unknown outcome`);
  console.log(
    `partition (b): manager cut off for ${(tHeal - tCut).toFixed(0)} ms; ${servedDuringCut} requests served meanwhile (longest gap without a completion ${stallMs.toFixed(0)} ms), ${failedDuringCut} failed; ` +
      `the manager said ${cutOff} time(s) it looked cut off and reassigned nothing (term ${termAfter}, stored in ${c.store}); ` +
      `c0: ${r0.fresh.ops} ops (${r0.fresh.ok} ok), c1: ${r1.fresh.ops} ops (${r1.fresh.ok} ok); ${r0.uniqueAcked} unique writes acknowledged, all read back; ` +
      `history of ${history.length} ops linearizable (${lin.ok === true ? lin.checked : 0} checked); ${late}`,
  );
});

if (unavailable) console.log(`partition (b) skipped: ${unavailable}`);
