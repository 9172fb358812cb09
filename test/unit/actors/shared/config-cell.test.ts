// The configuration cell's lease span (actors/shared/config-cell.ts SPAN): each grant stores leaseMs +
// driftMs, every attached thread reads it, and the wait of a write for a gone backup derives from it
// (config/timings.ts backupGoneWaitMsFor) -- the fixed 3000 ms of before only at the default lease.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../../../../config/base/clock.js';
import { planCluster } from '../../../../config/cluster.js';
import { backupGoneWaitMsFor, defaultTimings, leaseTiming } from '../../../../config/timings.js';
import { ConfigCell } from '../../../../actors/shared/config-cell.js';

function cell(clock: ManualClock): ConfigCell {
  const c = planCluster({
    nodes: [0, 1].map((id) => ({ id, host: '127.0.0.1', dataDir: `/tmp/n${id}`, workerPorts: [7000 + id], fabric: { kind: 'tcp' as const, host: '127.0.0.1', port: 7500 + id } })),
    shardCount: 4,
    replicationFactor: 2,
  });
  return ConfigCell.create(c, true, clock);
}

test("the lease span is 0 before a grant, then the last grant's, seen by every attached thread", () => {
  const clock = new ManualClock(5_000);
  const main = cell(clock);
  const worker = ConfigCell.attach(main.buffer);
  assert.equal(worker.leaseSpanMs(), 0);
  assert.equal(backupGoneWaitMsFor(defaultTimings, worker.leaseSpanMs()), defaultTimings.backupGoneWaitMs);
  const def = leaseTiming(defaultTimings.leaseMs);
  main.setLeaseSpan(def.leaseMs, def.driftMs);
  assert.equal(worker.leaseSpanMs(), def.leaseMs + def.driftMs);
  assert.equal(backupGoneWaitMsFor(defaultTimings, worker.leaseSpanMs()), 3000, 'the default lease keeps the old wait');
  // A manager restarted with --lease-ms 20000: the write now outlasts that lease and a failover.
  const long = leaseTiming(20_000);
  main.setLeaseSpan(long.leaseMs, long.driftMs);
  assert.equal(worker.leaseSpanMs(), 21_000);
  assert.equal(backupGoneWaitMsFor(defaultTimings, worker.leaseSpanMs()), 21_000 + defaultTimings.prepareTimeoutMs + defaultTimings.reconfigureSlackMs);
  // The span sits beside the lease and the clock base without touching them.
  main.setLease(5_000 + 100);
  assert.equal(worker.leaseValid(5_050), true);
  assert.equal(worker.leaseValid(5_100), false);
  assert.equal(worker.leaseSpanMs(), 21_000);
});
