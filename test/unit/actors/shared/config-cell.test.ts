// The configuration cell's lease span (actors/shared/config-cell.ts SPAN): each grant stores leaseMs +
// driftMs, every attached thread reads it, and the wait of a write for a gone backup derives from it
// (config/timings.ts backupGoneWaitMsFor) -- the fixed 3000 ms of before only at the default lease.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../../../../config/base/clock.js';
import { planCluster } from '../../../../config/cluster.js';
import { backupGoneWaitMsFor, defaultTimings, leaseTiming } from '../../../../config/timings.js';
import { ConfigCell, type CellWake } from '../../../../actors/shared/config-cell.js';

function cell(clock: ManualClock, wake: CellWake | null = null): ConfigCell {
  const c = planCluster({
    nodes: [0, 1].map((id) => ({ id, host: '127.0.0.1', dataDir: `/tmp/n${id}`, workerPorts: [7000 + id], fabric: { kind: 'tcp' as const, host: '127.0.0.1', port: 7500 + id } })),
    shardCount: 4,
    replicationFactor: 2,
  });
  return ConfigCell.create(c, true, clock, wake);
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
  main.setLease(5_000 + 100, 5_000);
  assert.equal(worker.leaseValid(5_050), true);
  assert.equal(worker.leaseValid(5_100), false);
  assert.equal(worker.leaseSpanMs(), 21_000);
});

// Issue 26: each grant (50 a second) woke every thread waiting in changed() -- an idle node's main and
// background threads 50 times a second each -- though none waits for a lease that still holds.
test('a grant extending a lease that holds wakes no waiter; the first grant and one after a lapse do', () => {
  const clock = new ManualClock(5_000);
  let notified = 0;
  const c = cell(clock, { wait: () => Promise.resolve(), notify: () => void notified++ });
  notified = 0; // the cell's making published its configuration
  c.setLease(5_100, clock.now()); // the first grant (the cell held 0: lapsed at once)
  assert.equal(notified, 1);
  for (let t = 5_020; t < 5_100; t += 20) {
    clock.advance(20);
    c.setLease(t + 95, clock.now());
  }
  assert.equal(notified, 1, 'extensions of a held lease woke waiters');
  assert.equal(c.leaseValid(clock.now()), true);
  clock.advance(500); // no grant: the lease lapsed
  assert.equal(c.leaseValid(clock.now()), false);
  c.setLease(clock.now() + 95, clock.now());
  assert.equal(notified, 2, 'a lease taken again after a lapse wakes waiters');
  c.setPending(3); // every other change still notifies
  assert.equal(notified, 3);
});
