// config/timings.ts: the defaults pass; each relation checkTimings asserts is rejected when broken
// (ROWAN_ERR_BAD_CONFIG naming the fields); the waits that must outlast a failover follow the lease in
// force and equal the old fixed values at the default lease.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backupGoneWaitMsFor, checkTimings, deadWaitMsFor, defaultTimings, failoverBoundMs, leaseTiming, noGrantMsFor, type Timings } from '../../../config/timings.js';
import { validateConfig } from '../../../config/validate.js';
import { defaultConfig } from '../../../config/defaults.js';

const broken = (over: Partial<Timings>, message: RegExp) => () =>
  assert.throws(() => checkTimings({ ...defaultTimings, ...over }), { code: 'ROWAN_ERR_BAD_CONFIG', message });

test('the default timings satisfy every relation, and a node configuration checks them at load', () => {
  assert.equal(checkTimings(defaultTimings), defaultTimings);
  assert.ok(Object.isFrozen(defaultTimings));
  validateConfig(defaultConfig('/d', [0]), [0]);
});

test('the defaults keep the values the product used before the table', () => {
  const t = defaultTimings;
  assert.deepEqual(
    [t.leaseMs, t.prepareTimeoutMs, t.failoverRetryMs, t.movePromoteTimeoutMs, t.joinGraceMs, t.takeoverGraceMs, t.recoveryGraceLeases, t.noGrantMs, t.admitWaitMs, t.backupGoneWaitMs, t.drainTimeoutMs, t.deadWaitMs],
    [100, 2000, 1000, 10_000, 120_000, 3000, 5, 3000, 2000, 3000, 1500, 10_000],
  );
});

test('every timing must be a positive number', broken({ nicParkMs: 0 }, /nicParkMs must be a positive/));
test('NaN is no timing', broken({ admitWaitMs: Number.NaN }, /admitWaitMs must be a positive/));
test('lease counts are whole', broken({ silentLeases: 2.5 }, /silentLeases must be a whole number/));

test('the default lease lies within the accepted range', () => {
  broken({ leaseMs: 3, leaseMsMin: 3 }, /4 <= leaseMsMin/)();
  broken({ leaseMs: 700_000 }, /leaseMs \(700000\) <= leaseMsMax/)();
  broken({ leaseMsMax: 2 ** 31 }, /2\^31 - 1/)();
});

test('a drain timeout at or above the prepare timeout is refused', () => {
  broken({ drainTimeoutMs: 2000 }, /drainTimeoutMs \(2000\) must be below prepareTimeoutMs \(2000\)/)();
  broken({ prepareTimeoutMs: 1000, backupGoneWaitMs: 3000 }, /drainTimeoutMs \(1500\) must be below prepareTimeoutMs \(1000\)/)();
});

test('a backup-gone wait shorter than lease + drift + prepare + slack is refused', () => {
  // 100 + 5 + 2000 + 500 = 2605 at the defaults.
  assert.equal(failoverBoundMs(defaultTimings, 105), 2605);
  broken({ backupGoneWaitMs: 2604 }, /backupGoneWaitMs \(2604\) must be at least .*\(2605\)/)();
  checkTimings({ ...defaultTimings, backupGoneWaitMs: 2605 });
  // ...and so is a longer default lease that the fixed floor no longer covers.
  broken({ leaseMs: 1000 }, /backupGoneWaitMs \(3000\) must be at least .*\(3550\)/)();
});

test("a dead-node wait shorter than the failover bound is refused", broken({ deadWaitMs: 2000 }, /deadWaitMs \(2000\) must be at least/));

test('noGrantMs must allow two renew periods of the default lease', broken({ noGrantMs: 39, takeoverGraceMs: 3000 }, /noGrantMs \(39\) must be at least two renew periods of the default lease \(40\)/));

test('the takeover grace must cover noGrantMs, and the join grace the takeover grace', () => {
  broken({ takeoverGraceMs: 2999 }, /takeoverGraceMs \(2999\) must be at least noGrantMs \(3000\)/)();
  broken({ joinGraceMs: 2999 }, /joinGraceMs \(2999\) must be at least takeoverGraceMs/)();
});

test("the manager's recovery grace must exceed the leases a member waits before reconnecting", () => {
  broken({ recoveryGraceLeases: 2 }, /recoveryGraceLeases \(2\) must exceed silentLeases \(2\)/)();
});

test('reconnects come no sooner than first renewals and no later than auth retries', () => {
  broken({ firstRenewMs: 21 }, /firstRenewMs \(21\) <= reconnectMs/)();
  broken({ authRetryMs: 19 }, /reconnectMs \(20\) <= authRetryMs \(19\)/)();
});

test('a parked or backed-off write is answered before its sender gives up', () => {
  broken({ nicParkMs: 5000 }, /nicParkMs \(5000\) must be below noBufferTimeoutMs/)();
  broken({ tcpBackoffFirstMs: 51 }, /tcpBackoffFirstMs \(51\) <= tcpBackoffMsMax \(50\)/)();
  broken({ tcpBackoffMsMax: 5000 }, /tcpBackoffMsMax \(5000\) < noBufferTimeoutMs/)();
});

test('ZooKeeper stall bounds are ordered and below the session timeout', () => {
  broken({ zkStallMsMin: 3001 }, /zkStallMsMin \(3001\) <= zkStallMsMax/)();
  broken({ zkSessionTimeoutMs: 3000 }, /zkStallMsMax \(3000\) < zkSessionTimeoutMs \(3000\)/)();
});

test('restart delays are ordered', () => {
  broken({ restartDelayMsMax: 999 }, /restartDelayMs \(1000\) <= restartDelayMsMax \(999\)/)();
  broken({ stableRunMs: 999, deadWaitMs: 10_000 }, /<= stableRunMs \(999\)/)();
});

test('leaseTiming takes its range from the table', () => {
  assert.deepEqual(leaseTiming(defaultTimings.leaseMs), { leaseMs: 100, renewMs: 20, driftMs: 5 });
  assert.deepEqual(leaseTiming(4), { leaseMs: 4, renewMs: 1, driftMs: 1 });
  assert.throws(() => leaseTiming(3), { code: 'ROWAN_ERR_BAD_ARGUMENT', message: /not in \[4, 600000\]/ });
  assert.throws(() => leaseTiming(600_001), { code: 'ROWAN_ERR_BAD_ARGUMENT' });
  assert.throws(() => leaseTiming(200, 100), { code: 'ROWAN_ERR_BAD_ARGUMENT', message: /two renewals/ });
});

test('waits that must outlast a failover follow the lease in force (and keep their values at the default)', () => {
  const t = defaultTimings;
  const at = (leaseMs: number) => leaseTiming(leaseMs);
  const span = (l: { leaseMs: number; driftMs: number }) => l.leaseMs + l.driftMs;
  // The default lease: the old fixed 3000 / 10 000 ms, as before the table.
  assert.equal(backupGoneWaitMsFor(t, span(at(t.leaseMs))), 3000);
  assert.equal(backupGoneWaitMsFor(t, 0), 3000, 'before the first grant');
  assert.equal(deadWaitMsFor(t, at(t.leaseMs)), 10_000);
  // The longest lease --lease-ms accepts: the write outlasts the lease and a failover.
  const long = at(t.leaseMsMax);
  assert.equal(backupGoneWaitMsFor(t, span(long)), 600_000 + 30_000 + 2000 + 500);
  assert.ok(deadWaitMsFor(t, long) > span(long) + t.prepareTimeoutMs);
  // Every accepted lease: both waits at least the failover bound.
  for (const leaseMs of [4, 10, 200, 1000, 2000, 5000, 60_000, 600_000]) {
    const l = at(leaseMs);
    assert.ok(backupGoneWaitMsFor(t, span(l)) >= span(l) + t.prepareTimeoutMs + t.reconfigureSlackMs, `lease ${leaseMs}`);
    assert.ok(deadWaitMsFor(t, l) >= span(l) + t.prepareTimeoutMs + t.reconfigureSlackMs, `lease ${leaseMs}`);
    assert.ok(noGrantMsFor(t, l.renewMs) >= 2 * l.renewMs, `lease ${leaseMs}`);
  }
  // A node does not leave a healthy manager whose grants come every 30 s (a 150 s lease).
  assert.equal(noGrantMsFor(t, null), 3000);
  assert.equal(noGrantMsFor(t, 40), 3000);
  assert.equal(noGrantMsFor(t, 30_000), 60_000);
});
