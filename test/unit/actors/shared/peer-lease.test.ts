// Peer leases, the granting side (actors/shared/peer-lease.ts, docs/failover.md "Partitions"): what a node promises,
// when it refuses, and that the promise is recorded in the configuration cell before the checks, so a
// refusal never loses one and the main thread's takeover wait (promisesOverAt) covers every grant. The
// asking side asks only while its manager lease runs low (an idle cluster sends no request for it).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../../../../config/base/clock.js';
import { planCluster, type ClusterConfig } from '../../../../config/cluster.js';
import { ErrorCodes, RowanError } from '../../../../config/base/errors.js';
import { ConfigCell } from '../../../../actors/shared/config-cell.js';
import { askBelowMs, decodePeerLeaseRequest, encodePeerLeaseRequest, grantPeerLease, PeerLeases, promisesOverAt, PEER_LEASE_REQUEST_BYTES } from '../../../../actors/shared/peer-lease.js';
import { defaultLimits } from '../../../../config/limits.js';
import { StepTimers } from '../../../fixtures/step-timers.js';
import { recordingLog, settle } from '../../../fixtures/manager-fakes.js';

function cluster(): ClusterConfig {
  return planCluster({
    nodes: [0, 1, 2].map((id) => ({ id, host: '127.0.0.1', dataDir: `/tmp/n${id}`, workerPorts: [7000 + id], fabric: { kind: 'tcp' as const, host: '127.0.0.1', port: 7500 + id } })),
    shardCount: 4,
    replicationFactor: 3,
  });
}

const code = (c: string) => (err: unknown) => err instanceof RowanError && err.code === c;

test('a peer lease request round-trips, and a malformed one is BAD_ARGUMENT', () => {
  const r = { from: 7, leaseMs: 400, driftMs: 20 };
  const b = encodePeerLeaseRequest(r);
  assert.equal(b.length, PEER_LEASE_REQUEST_BYTES);
  assert.deepEqual(decodePeerLeaseRequest(b), r);
  assert.throws(() => decodePeerLeaseRequest(b.subarray(1)), code(ErrorCodes.BAD_ARGUMENT));
  assert.throws(() => decodePeerLeaseRequest(encodePeerLeaseRequest({ from: 5000, leaseMs: 400, driftMs: 20 })), code(ErrorCodes.BAD_ARGUMENT));
  assert.throws(() => decodePeerLeaseRequest(encodePeerLeaseRequest({ from: 1, leaseMs: 0, driftMs: 0 })), code(ErrorCodes.BAD_ARGUMENT));
  assert.throws(() => decodePeerLeaseRequest(encodePeerLeaseRequest({ from: 1, leaseMs: 100, driftMs: 100 })), code(ErrorCodes.BAD_ARGUMENT));
});

test('a node grants at its own term with nothing pending, records every promise (refused ones too), and never lowers one', () => {
  const clock = new ManualClock(10_000);
  const c = cluster();
  const cell = ConfigCell.create(c, true, clock);
  const req = (from: number) => encodePeerLeaseRequest({ from, leaseMs: 400, driftMs: 20 });
  // Before any grant the promise horizon is the cell's creation plus a lease (a restarted node).
  assert.equal(cell.grantedUntil(1), -Infinity);
  assert.equal(promisesOverAt(cell, 1, 400, 20), 10_000 + 420);

  grantPeerLease(cell, req(1), 1, 11_000, 0);
  assert.ok(cell.grantedUntil(1) >= 11_000 + 420, `recorded until ${cell.grantedUntil(1)}`);
  assert.ok(cell.grantedUntil(1) < 11_000 + 422, 'ceiled to the millisecond, no more');
  grantPeerLease(cell, req(1), 1, 10_500, 0); // an older request answered late: the promise stays
  assert.ok(cell.grantedUntil(1) >= 11_420);
  assert.equal(promisesOverAt(cell, 1, 400, 20), cell.grantedUntil(1));
  assert.equal(cell.grantedUntil(2), -Infinity, 'one word per node');

  // The asker routed with another term: refused, but the promise is recorded first (conservative).
  assert.throws(() => grantPeerLease(cell, req(2), 2, 12_000, 0), code(ErrorCodes.STALE_TERM));
  assert.ok(cell.grantedUntil(2) >= 12_420);
  // A configuration pending (prepared, not committed): nothing is promised any more.
  cell.setPending(2);
  assert.throws(() => grantPeerLease(cell, req(1), 1, 12_000, 0), code(ErrorCodes.STALE_TERM));
  cell.setPending(0);
  // Not a live member at this term, or itself: refused.
  const next = { ...structuredClone(c), term: 2, dead: [2], shards: c.shards.map((s) => ({ ...s, primary: s.primary === 2 ? 0 : s.primary, backups: s.backups.filter((b) => b !== 2 && b !== (s.primary === 2 ? 0 : s.primary)) })) };
  cell.publish(next);
  assert.throws(() => grantPeerLease(cell, req(2), 2, 13_000, 0), code(ErrorCodes.STALE_TERM));
  grantPeerLease(cell, req(1), 2, 13_000, 0);
  assert.throws(() => grantPeerLease(cell, req(0), 2, 13_000, 0), code(ErrorCodes.BAD_ARGUMENT));
  // Evicted: no promise is worth anything.
  cell.evict();
  assert.throws(() => grantPeerLease(cell, req(1), 2, 14_000, 0), code(ErrorCodes.LEASE_EXPIRED));
});

test('a node asks its peers for grants only once a manager lease renewal is half a period overdue', async () => {
  const clock = new ManualClock(10_000);
  const timers = new StepTimers(clock);
  const cell = ConfigCell.create(cluster(), true, clock);
  const timing = { leaseMs: 200, renewMs: 40, driftMs: 10 };
  let managerUntil = 0;
  const asked: { peer: number; at: number }[] = [];
  const held: number[] = [];
  const peers = new PeerLeases(0, cell, clock, recordingLog().log, null, defaultLimits, null, () => timing, (until) => held.push(until), () => managerUntil, {
    timers,
    ask: async (peer) => void asked.push({ peer, at: clock.now() }),
  });
  const grant = () => (managerUntil = clock.now() + timing.leaseMs - timing.driftMs);
  grant();
  peers.start();
  // The manager grants every renewMs: no request goes to a peer, however long that lasts.
  for (let i = 0; i < 50; i++) {
    timers.advance(timing.renewMs);
    grant();
    await settle();
  }
  assert.equal(asked.length, 0, 'no peer asked while the manager lease holds');
  // The manager goes silent: once its last grant is a renewal and a half old, every other member is asked.
  const silentAt = clock.now();
  for (let i = 0; i < 6; i++) {
    timers.advance(timing.renewMs);
    await settle();
  }
  const first = Math.min(...asked.map((a) => a.at));
  assert.deepEqual([...new Set(asked.map((a) => a.peer))].sort(), [1, 2]);
  const overdue = timing.leaseMs - timing.driftMs - askBelowMs(timing);
  assert.equal(overdue, 1.5 * timing.renewMs);
  assert.ok(first - silentAt > overdue, `asked ${first - silentAt} ms into the silence: too early`);
  assert.ok(first - silentAt <= overdue + timing.renewMs, `asked ${first - silentAt} ms into the silence: too late`);
  assert.ok(held.some((u) => u > managerUntil), 'the grants hold past the manager lease');
  peers.stop();
});
