// Peer leases under the partition they must not break (docs/failover.md "Partitions"): a primary cut off from
// the configuration manager ONLY -- its peers and the clients still reach it. Its manager lease runs
// out, so the manager fails it over; meanwhile it may serve on its peers' grants. Safety needs: the
// survivors stop granting once they prepare the new configuration, and a survivor takes over node 0's
// shards only once the grant it gave node 0 has certainly expired. So node 0 refuses (no grant from
// everyone, no manager lease) before any new primary serves its shards.
//
// A stale client pinned to the first configuration keeps sending to node 0, while the other clients
// write the same keys through the new primaries. No request node 0 acknowledges may have been sent
// after a new primary reported it serves, and the history of all clients is linearizable.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { monotonicClock } from '../../config/base/clock.js';
import { ErrorCodes } from '../../config/base/errors.js';
import { shardOfKey } from '../../config/slots.js';
import { checkLinearizability } from '../check/linearizability.js';
import { logRecords, readCluster, waitFor } from '../fixtures/failover-cluster.js';
import { netnsUnavailable } from '../fixtures/netns.js';
import { ClientLoad, NetnsCluster } from '../fixtures/netns-cluster.js';
import { checkLateBlocks, lateBlockCounts, unknownWrites } from '../fixtures/node-metrics.js';

const SHARDS = 8;
const STALE_LOOPS = 4;
const unavailable = netnsUnavailable();

test('a primary cut off from the manager only serves on peer leases until its failover, and never once a new primary serves its shards', { timeout: 150_000, skip: unavailable ?? false }, async (t) => {
  const { c, dir } = await NetnsCluster.forTest(t, 'part-c', SHARDS);
  const victim = 0;
  const first = readCluster(c.file);
  const victimKeys = Array.from({ length: 64 }, (_, i) => `s-${i}`).filter((k) => first.shards[shardOfKey(new TextEncoder().encode(k), SHARDS)]!.primary === victim);
  const keys = [...Array.from({ length: 8 }, (_, i) => `h-${i}`), ...victimKeys];
  const staleFile = join(dir, 'stale-config.json');
  writeFileSync(staleFile, JSON.stringify(first));
  const common = { cluster: c.file, passwordFile: c.passwordFile, maxOps: 40_000 };
  const l0 = ClientLoad.start(c, 'c0', { ...common, out: join(dir, 'load-c0.json'), keys, clients: 2, clientBase: 0, unique: true });
  const l1 = ClientLoad.start(c, 'c1', { ...common, out: join(dir, 'load-c1.json'), keys, clients: 1, clientBase: 10, stale: { config: staleFile, keys: victimKeys, clientBase: 20, maxOps: 40_000, loops: STALE_LOOPS } });
  await waitFor('both client hosts to be served', () => (l0.progress()?.fresh.ok ?? 0) > 100 && (l1.progress()?.stale?.ok ?? 0) > 30, 60_000, 50);

  const tCut = monotonicClock.now();
  c.lab.cutPair(`n${victim}`, 'cm');
  let committedAt = NaN;
  let term = NaN;
  let promotedAt = NaN; // the first new primary of node 0's shards reporting it serves them
  await waitFor('the manager to fail node 0 over and a new primary to serve its shards', () => {
    for (const r of logRecords(join(dir, 'manager.log'))) {
      if (r['event'] === 'committed' && r['node'] === victim) [committedAt, term] = [r['at'] as number, r['term'] as number];
      if (r['term'] === term && /promoted \d+ shard/.test(String(r['msg'])) && !(promotedAt <= (r['at'] as number))) promotedAt = r['at'] as number;
    }
    return Number.isFinite(promotedAt);
  }, 30_000, 20);
  await waitFor('node 0 to refuse the stale client', () => l1.progress()?.stale?.firstCodeAt[ErrorCodes.LEASE_EXPIRED] !== undefined, 30_000, 20);
  const okAt = l0.progress()!.fresh.ok;
  await waitFor('the other clients to be served after the failover', () => l0.progress()!.fresh.ok > okAt + 200, 60_000, 50);
  const r0 = await l0.stop();
  const r1 = await l1.stop();
  c.lab.healPair(`n${victim}`, 'cm');

  const stale = r1.stale!;
  const staleOps = r1.history.filter((o) => o.client >= 20 && o.client < 20 + STALE_LOOPS);
  const lateServed = staleOps.filter((o) => o.outcome === 'ok' && o.invoke > promotedAt);
  assert.deepEqual(lateServed, [], 'node 0 served requests sent after a new primary served its shards');
  const waits = [1, 2].flatMap((n) => logRecords(c.logOf(n)).filter((r) => String(r['msg']).includes(`peer leases granted to node ${victim}`)).map((r) => `node ${n} ${r['waitMs'] as number} ms`));
  assert.deepEqual(r0.uniqueMissing, [], 'acknowledged writes missing');
  const history = [...r0.history, ...r1.history];
  const lin = checkLinearizability(history, { timeLimitMs: 60_000 });
  assert.equal(lin.ok, true, lin.describe());
  // Node 0 reaches its peers throughout: only a write whose outcome is unknown (cut off at its failover) may land late.
  const unknown = unknownWrites(history);
  const late = checkLateBlocks(await lateBlockCounts([0, 1, 2], (id) => c.metric(id, 'rowan_blog_late_blocks_total')), unknown > 0, `${unknown} write(s) of unknown outcome`);
  const ms = (x: number | null | undefined) => (x === null || x === undefined ? '-' : `${(x - tCut).toFixed(0)} ms`);
  const lastStaleOk = staleOps.filter((o) => o.outcome === 'ok').reduce((m, o) => Math.max(m, o.response ?? -Infinity), -Infinity);
  console.log(
    `partition (c): node 0 cut from the manager only at 0 ms; failover committed ${ms(committedAt)}, new primaries serving ${ms(promotedAt)}; ` +
      `node 0's last answer served to the stale client ${ms(lastStaleOk)}, its first LEASE_EXPIRED ${ms(stale.firstCodeAt[ErrorCodes.LEASE_EXPIRED])}; ` +
      `takeover waits for node 0's peer leases: ${waits.join(', ') || 'none (the grants had expired by the commit)'}; ` +
      `stale client ${stale.ops} ops (${stale.ok} ok, codes ${JSON.stringify(stale.codes)}); c0 ${r0.fresh.ops} ops (${r0.fresh.ok} ok, ${r0.fresh.unknown} unknown); ` +
      `${r0.uniqueAcked} unique writes acknowledged, all read back; history of ${history.length} ops linearizable (${lin.ok === true ? lin.checked : 0} checked); ${late}`,
  );
});

if (unavailable) console.log(`partition (c) skipped: ${unavailable}`);
