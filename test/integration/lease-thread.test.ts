// The node's lease is renewed on a thread of its own (actors/node/lease-thread.ts, issue 26): a stall of
// the main thread -- here a busy loop of four leases -- must not cost the lease. A manager stand-in on
// loopback grants every renew (300 ms leases, renew every 30 ms); the stalled thread itself samples the
// configuration cell, which the lease thread keeps extending. The stand-in runs on a thread of its own. With the renewals on the main thread (as
// before: LeaseClient on the calling thread) this test fails: the lease ran out 93 ms into the stall (at 100 ms leases).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Worker } from 'node:worker_threads';
import { monotonicClock } from '../../config/base/clock.js';
import { createLogger } from '../../config/base/log.js';
import { planCluster } from '../../config/cluster.js';
import { ConfigCell } from '../../actors/shared/config-cell.js';
import { LeaseThread } from '../../actors/node/lease-thread-link.js';
import { setThreadRealtime, threadIsRealtime } from '../../native/libc.js';

const LEASE = { leaseMs: 300, renewMs: 30, driftMs: 15 }; // a renewal may wait 255 ms: a busy machine does not fail the test

/** A configuration manager that only authenticates (--no-auth) and grants every renew, as JSON lines --
 *  on a thread of its own, so that the test's stalled thread does not hold up its grants. */
const FAKE_MANAGER = `
const { parentPort } = require('node:worker_threads');
const { createServer } = require('node:net');
const lease = ${JSON.stringify(LEASE)};
let renews = 0;
const server = createServer((s) => {
  let buf = '';
  s.on('data', (d) => {
    buf += d.toString('utf8');
    for (let nl = buf.indexOf('\\n'); nl >= 0; nl = buf.indexOf('\\n')) {
      const m = JSON.parse(buf.slice(0, nl));
      buf = buf.slice(nl + 1);
      if (m.t === 'auth-hello') s.write(JSON.stringify({ t: 'auth-ok' }) + '\\n');
      else if (m.t === 'hello' || m.t === 'renew') {
        renews++;
        s.write(JSON.stringify({ t: 'grant', seq: m.t === 'hello' ? 0 : m.seq, term: 1, ...lease }) + '\\n');
      }
    }
  });
  s.on('error', () => {});
});
server.listen(0, '127.0.0.1', () => parentPort.postMessage({ port: server.address().port }));
let conn = null;
server.on('connection', (s) => (conn = s));
parentPort.on('message', (m) => {
  if (m && m.t === 'prepare') conn.write(JSON.stringify(m) + '\\n');
  else parentPort.postMessage({ renews });
});
`;

async function fakeManager(): Promise<{ worker: Worker; port: number; renews: () => Promise<number> }> {
  const worker = new Worker(FAKE_MANAGER, { eval: true });
  const port = await new Promise<number>((resolve) => worker.once('message', (m: { port: number }) => resolve(m.port)));
  const renews = () => new Promise<number>((resolve) => {
    worker.once('message', (m: { renews: number }) => resolve(m.renews));
    worker.postMessage('count');
  });
  return { worker, port, renews };
}

function cell(): ConfigCell {
  const c = planCluster({
    nodes: [0, 1].map((id) => ({ id, host: '127.0.0.1', dataDir: `/tmp/n${id}`, workerPorts: [7000 + id], fabric: { kind: 'tcp' as const, host: '127.0.0.1', port: 7500 + id } })),
    shardCount: 4,
    replicationFactor: 2,
  });
  return ConfigCell.create(c, true);
}

test('a main thread stalled for four leases keeps its lease: the lease thread renews and the cell shows it', async () => {
  const m = await fakeManager();
  const c = cell();
  const lease = new LeaseThread({
    managers: [{ host: '127.0.0.1', port: m.port }], nodeId: 0, cell: c, clock: monotonicClock, log: createLogger('warn'),
    hooks: { prepare: () => Promise.reject(new Error('no rounds here')), promote: () => Promise.reject(new Error('no rounds here')) },
    rejoin: false, secret: null, tls: null, loadPeriodMs: 500,
  });
  lease.start();
  try {
    // Wait (without stalling) for the first grant.
    const t0 = monotonicClock.now();
    while (!c.leaseValid(monotonicClock.now())) {
      assert.ok(monotonicClock.now() - t0 < 10_000, 'a first grant within 10 s');
      await new Promise((r) => setTimeout(r, 5));
    }
    const before = await m.renews();
    // The stall: no event-loop turn on this thread for 6 leases; the lease is sampled throughout.
    const start = monotonicClock.now();
    let samples = 0;
    let lapsedAt = -1;
    while (monotonicClock.now() - start < 4 * LEASE.leaseMs) {
      samples++;
      if (lapsedAt < 0 && !c.leaseValid(monotonicClock.now())) lapsedAt = monotonicClock.now() - start;
    }
    assert.ok(samples > 1000);
    assert.equal(lapsedAt, -1, `the lease ran out ${lapsedAt.toFixed(0)} ms into the main thread's stall`);
    const during = (await m.renews()) - before;
    assert.ok(during >= (4 * LEASE.leaseMs) / LEASE.renewMs / 2, `renewals kept going during the stall (${during})`);
  } finally {
    lease.stop();
    await m.worker.terminate();
  }
});

test('a round from the manager runs the main thread under SCHED_FIFO before the main thread takes it up', async (t) => {
  const m = await fakeManager();
  const c = cell();
  let prepared = false;
  const lease = new LeaseThread({
    managers: [{ host: '127.0.0.1', port: m.port }], nodeId: 0, cell: c, clock: monotonicClock, log: createLogger('warn'),
    hooks: { prepare: async () => ((prepared = true), { versions: {}, entries: [], truncated: false }), promote: () => Promise.reject(new Error('no commit here')) },
    rejoin: false, secret: null, tls: null, loadPeriodMs: 500,
  });
  lease.start();
  try {
    const t0 = monotonicClock.now();
    while (!c.leaseValid(monotonicClock.now()) || lease.priority === null) {
      assert.ok(monotonicClock.now() - t0 < 10_000, 'a first grant within 10 s');
      await new Promise((r) => setTimeout(r, 5));
    }
    if (lease.priority.kind !== 'fifo') return t.skip(`SCHED_FIFO refused here (${lease.priority.refused.join('; ')}): nothing to raise the main thread to`);
    assert.equal(threadIsRealtime(), false, 'the main thread runs unraised before any round');
    const next = { ...c.config(), term: c.term() + 1 };
    m.worker.postMessage({ t: 'prepare', term: next.term, config: next, shards: [] });
    // No event-loop turn on this thread: only the lease thread can raise it.
    const start = monotonicClock.now();
    let raisedAt = -1;
    while (raisedAt < 0 && monotonicClock.now() - start < 5_000) if (threadIsRealtime()) raisedAt = monotonicClock.now() - start;
    assert.ok(raisedAt >= 0, 'the main thread was raised to SCHED_FIFO while the prepare waited for it');
    assert.equal(prepared, false, 'raised before the round reached the main thread');
    while (!prepared) await new Promise((r) => setTimeout(r, 5));
  } finally {
    lease.stop();
    setThreadRealtime(false); // the acknowledged prepare holds the thread raised until its commit
    await m.worker.terminate();
  }
});
