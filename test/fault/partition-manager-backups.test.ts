// Issue 24 hazard 3: the configuration manager cut off alone, while one node holds backup replicas
// only. Hosts are network namespaces (test/fixtures/netns.ts): the manager (with the configuration
// store), three nodes (tcp fabric) and two client hosts; only the manager's bridge port goes down,
// for many leases. Nodes 0 and 1 are the primaries of every shard, node 2 a backup of each.
//
// The manager used to refuse a failover only when it had to hand a primary to a member it could not
// hear: node 2's failover needed no taker, so the cut-off manager stored a new term without node 2,
// and after the heal node 2 -- healthy throughout -- stopped as evicted, leaving two copies of every
// shard. Now nothing may be stored while the manager hears no member: the stored term stays, every
// node keeps serving and after the heal the manager grants them all again. Every acknowledged write
// reads back, the history of all clients is linearizable, and no node refused a b-log block as late.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { monotonicClock } from '../../config/base/clock.js';
import type { ClusterConfig } from '../../config/cluster.js';
import { checkLinearizability } from '../check/linearizability.js';
import { logRecords, waitFor } from '../fixtures/failover-cluster.js';
import { netnsUnavailable } from '../fixtures/netns.js';
import { NetnsCluster, PARTITION_LEASE_MS, startTwoHostLoad } from '../fixtures/netns-cluster.js';
import { defaultTimings } from '../../config/timings.js';

const NODES = [0, 1, 2];
const BACKUP_ONLY = 2;
/** Longer than the other partition tests' lease: node 2 starved for 400 ms on a machine at load 58
 *  (it happens) is failed over legitimately before the cut, and the test would be about nothing. */
const LEASE_MS = 2.5 * PARTITION_LEASE_MS;
/** The cut lasts at least this long: past a lease and the reconnect grace, twice over. */
const CUT_MS = 2 * (LEASE_MS * (1 + defaultTimings.recoveryGraceLeases));
const unavailable = netnsUnavailable();

/** Primaries alternate between nodes 0 and 1; node 2 is a backup of every shard and primary of none. */
function backupOnlyNode2(c: ClusterConfig): ClusterConfig {
  return { ...c, shards: c.shards.map((s) => ({ id: s.id, primary: s.id % 2, backups: [1 - (s.id % 2), BACKUP_ONLY] })) };
}

test('the manager cut off alone while a node holds backups only: no configuration change is stored, no node is evicted, the history is linearizable', { timeout: 420_000, skip: unavailable ?? false }, async (t) => {
  const { c, dir } = await NetnsCluster.forTest(t, 'part-d', 8, { layout: backupOnlyNode2, leaseMs: LEASE_MS });
  assert.ok(c.initial.shards.every((s) => s.primary !== BACKUP_ONLY && s.backups.includes(BACKUP_ONLY)), 'node 2 holds backups only');
  const { l0, l1, ok } = await startTwoHostLoad(c, dir);
  const term = (await c.config())?.term;
  assert.equal(term, 1, 'a node was failed over before the cut (starved past its lease)');

  const managerLog = () => logRecords(join(dir, 'manager.log'));
  const tCut = monotonicClock.now();
  c.lab.cut('cm');
  const okAtCut = ok();
  // Past the lease, the grace and several failover attempts -- and until the manager said it looks
  // cut off (it suspected every node). A stored failover ends the wait at once: it cannot be undone.
  await waitFor('the cut to last, the manager to say it looks cut off and the load to go on', () => {
    const msgs = managerLog().map((r) => String(r['msg']));
    if (msgs.some((m) => /^failover stored/.test(m))) return true;
    return monotonicClock.now() - tCut >= CUT_MS && msgs.some((m) => /looks cut off/.test(m)) && ok() - okAtCut > 300;
  }, 60_000, 50);
  const cutMs = monotonicClock.now() - tCut;
  const servedDuringCut = ok() - okAtCut;
  c.lab.heal('cm');
  // After the heal the manager hears every node again and keeps it -- or, had it stored a failover,
  // the evicted node learns so from the answer to its next renew.
  const evicted = (n: number) => logRecords(c.logOf(n)).filter((r) => /removed this node from the cluster/.test(String(r['msg']))).map((r) => String(r['msg']));
  await waitFor('the manager to keep every node (or a node to learn it was evicted)', () => {
    const recs = managerLog();
    return NODES.some((n) => evicted(n).length > 0) || NODES.every((n) => recs.some((r) => r['node'] === n && /heard from again|back before its failover/.test(String(r['msg']))));
  }, 30_000, 50);
  const okAtHeal = ok();
  await waitFor('the load to go on after the heal', () => ok() > okAtHeal + 300, 60_000, 50);
  const r0 = await l0.stop();
  const r1 = await l1.stop();

  const stored = await c.config();
  const manager = managerLog().map((r) => String(r['msg']));
  assert.deepEqual(manager.filter((m) => /^failover (stored|committed):|^failover of node \d+: term/.test(m)), [], 'the cut-off manager stored a configuration change');
  assert.equal(stored?.term, term, `the stored term moved (dead: ${JSON.stringify(stored?.dead ?? [])})`);
  for (const n of NODES) {
    assert.equal(c.procs.get(n)!.exitCode, null, `node ${n} stopped`);
    assert.deepEqual(evicted(n), [], `node ${n} was evicted`);
  }
  const late = await Promise.all(NODES.map((n) => c.metric(n, 'rowan_blog_late_blocks_total')));
  assert.deepEqual(late, [0, 0, 0], 'b-log blocks refused as late');
  assert.deepEqual(r0.uniqueMissing, [], 'acknowledged writes missing');
  assert.ok(r0.uniqueAcked > 0);
  const history = [...r0.history, ...r1.history];
  const lin = checkLinearizability(history, { timeLimitMs: 60_000 });
  assert.equal(lin.ok, true, lin.describe());
  const cutOff = manager.filter((m) => /looks cut off/.test(m)).length;
  console.log(
    `partition (d): manager cut off for ${cutMs.toFixed(0)} ms with node 2 holding backups only; ${servedDuringCut} requests served meanwhile; ` +
      `the manager said ${cutOff} time(s) it looked cut off and stored nothing (term ${stored?.term}, stored in ${c.store}); no node evicted, late b-log blocks ${JSON.stringify(late)}; ` +
      `c0: ${r0.fresh.ops} ops (${r0.fresh.ok} ok, codes ${JSON.stringify(r0.fresh.codes)}), c1: ${r1.fresh.ops} ops (${r1.fresh.ok} ok, codes ${JSON.stringify(r1.fresh.codes)}); ` +
      `${r0.uniqueAcked} unique writes acknowledged, all read back; history of ${history.length} ops linearizable (${lin.ok === true ? lin.checked : 0} checked)`,
  );
});

if (unavailable) console.log(`partition (d) skipped: ${unavailable}`);
