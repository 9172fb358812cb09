// No peer node ALLOCs a node's pool empty (issue 12, "bounded memory"): the regions one peer node holds
// -- segments of role Remote of its owner id that are not Free, counted in the pool's meta table -- stop
// at fabric.remoteSegmentsMax, whichever connection or NIC incarnation asks, and count no more once
// garbage collection frees them. Regression test for "one authenticated peer took every segment
// outside the GC reserve with repeated ALLOCs". NicMemory runs single-threaded on a real pool file.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { scaleRemoteToPool } from '../../../../config/defaults.js';
import { resolveConfig } from '../../../../config/load.js';
import { configFromEnv } from '../../../../config/env.js';
import { NicMemory, newNicPeer, type NicPeer } from '../../../../actors/nic/nic-verbs.js';
import { OwnerRole, Pool, SegmentState } from '../../../../shm/pool.js';
import { NicServer } from '../../../../actors/nic/nic-server.js';
import { monotonicClock } from '../../../../config/base/clock.js';
import { TcpConnection } from '../../../../runtime/fabric/tcp.js';
import { eventually } from '../../../fixtures/eventually.js';

const SEG = 64 * 1024;

function rig(segmentCount = 32) {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-nic-quota-'));
  const path = join(dir, 'pool.pm');
  let pool = Pool.create(path, { segmentCount, segmentBytes: SEG });
  const nic = (remoteSegmentsMax?: number) =>
    new NicMemory({ dataDir: dir, pool: () => pool, frameBytesMax: 1 << 16, now: () => 0, reserveSegments: 3, ...(remoteSegmentsMax !== undefined ? { remoteSegmentsMax } : {}) });
  return {
    dir,
    get pool() {
      return pool;
    },
    nic,
    /** Unmap and map the pool file again, as a restarted node's nic does. */
    reopen(): void {
      pool.close();
      pool = Pool.open(path);
    },
    held: (node: number) => pool.segments({ role: OwnerRole.Remote, ownerId: node }).length,
    done(): void {
      pool.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const peer = (nodeId: number): NicPeer => ({ ...newNicPeer(), nodeId });
/** An error message that gives away pool geometry ("[a, b)" ranges, offsets, segment numbers). */
const leaksLayout = (m: string) => /\[\d+, \d+\)|pool's segments|offset|segment \d/.test(m);
const quotaRefusal = (e: unknown) => {
  const err = e as Error & { code?: string };
  return err.code === 'ROWAN_ERR_QUOTA' && /node 1/.test(err.message) && !leaksLayout(err.message);
};

test('ALLOC past a peer node\'s quota is refused with QUOTA, on any of its connections, while another node still gets segments', () => {
  const r = rig();
  try {
    const mem = r.nic(3);
    const [a, b, c] = [peer(1), peer(1), peer(2)]; // a and b: two connections of node 1 (share's workers)
    for (const p of [a, b, a]) mem.alloc(p, 1);
    const free = r.pool.freeCount();
    for (const p of [a, b]) assert.throws(() => mem.alloc(p, 1), quotaRefusal);
    assert.equal(r.pool.freeCount(), free, 'a refused ALLOC took nothing');
    assert.equal(r.held(1), 3);
    for (let i = 0; i < 3; i++) mem.alloc(c, 2);
    assert.throws(() => mem.alloc(c, 2), { code: 'ROWAN_ERR_QUOTA' });
    assert.equal(r.held(2), 3);
    // The quota is not a reservation: the GC reserve still wins when the pool runs out first.
    assert.ok(r.pool.freeCount() > 3);
  } finally {
    r.done();
  }
});

test('the quota counts the meta table: a NIC restarted on the same pool refuses too', () => {
  const r = rig();
  try {
    let mem = r.nic(4);
    for (let i = 0; i < 4; i++) mem.alloc(peer(1), 1);
    mem.close();
    r.reopen();
    mem = r.nic(4);
    assert.throws(() => mem.alloc(peer(1), 1), quotaRefusal);
    assert.equal(r.held(1), 4);
    mem.alloc(peer(2), 2);
    mem.close();
  } finally {
    r.done();
  }
});

test('a region counts until garbage collection frees it; then the node may ALLOC again', () => {
  const r = rig();
  try {
    const mem = r.nic(2);
    const p = peer(1);
    const [x] = [mem.alloc(p, 1), mem.alloc(p, 1)];
    assert.throws(() => mem.alloc(p, 1), { code: 'ROWAN_ERR_QUOTA' });
    // Committed (handed to GC) is not yet free: it still counts.
    r.pool.transition(x.segment, SegmentState.Using, SegmentState.Committed);
    assert.throws(() => mem.alloc(p, 1), { code: 'ROWAN_ERR_QUOTA' });
    r.pool.free(x.segment); // what a clean actor does once no reader holds an address in it
    const again = mem.alloc(p, 1);
    assert.equal(r.pool.meta(again.segment).ownerId, 1);
    assert.throws(() => mem.alloc(p, 1), { code: 'ROWAN_ERR_QUOTA' });
  } finally {
    r.done();
  }
});

test('a tcp sender over its quota waits for garbage collection like PM_FULL, and gives up with QUOTA', async () => {
  const r = rig();
  const secret = new Uint8Array(32).fill(3);
  const nic = await NicServer.listen({ dataDir: r.dir, pool: () => r.pool, clock: monotonicClock, host: '127.0.0.1', port: 0, secret, remoteSegmentsMax: 1 });
  try {
    const patient = await TcpConnection.connect({ host: '127.0.0.1', port: nic.endpoint.port, secret, senderId: 1 });
    const first = await patient.allocateRegion(1);
    const second = patient.allocateRegion(1);
    await eventually(() => assert.ok(patient.stats().noBufferWaits > 0, 'refused and re-sent'), 5_000, 5);
    r.pool.transition(first.segment, SegmentState.Using, SegmentState.Committed);
    r.pool.free(first.segment); // a clean actor reclaims it
    assert.equal(r.pool.meta((await second).segment).ownerId, 1, 'the re-sent ALLOC got the freed segment');
    const hasty = await TcpConnection.connect({ host: '127.0.0.1', port: nic.endpoint.port, secret, senderId: 1, noBufferTimeoutMs: 20 });
    await assert.rejects(hasty.allocateRegion(1), (e: Error & { code?: string }) => e.code === 'ROWAN_ERR_QUOTA' && /gave up after 20 ms/.test(e.message) && !leaksLayout(e.message));
    await Promise.all([patient.close(), hasty.close()]);
  } finally {
    await nic.close();
    r.done();
  }
});

test('without a configured quota a NIC takes the config default, a quarter of the pool', () => {
  const r = rig(32);
  try {
    const mem = r.nic();
    assert.equal(scaleRemoteToPool(32), 8);
    for (let i = 0; i < 8; i++) mem.alloc(peer(1), 1);
    assert.throws(() => mem.alloc(peer(1), 1), { code: 'ROWAN_ERR_QUOTA' });
    assert.equal(r.held(1), 8);
  } finally {
    r.done();
  }
});

test('fabric.remoteSegmentsMax: scaled to the pool unless set, settable from the environment and flags, range-checked', () => {
  const base = { dataDir: '/d', allowedCores: [0] };
  assert.equal(resolveConfig({ ...base, file: { pool: { segmentCount: 96 } } }).fabric.remoteSegmentsMax, 24);
  assert.equal(resolveConfig({ ...base, file: { pool: { segmentCount: 7 }, gc: { reserveSegments: 1 } } }).fabric.remoteSegmentsMax, 1);
  const env = configFromEnv({ ROWAN_FABRIC_REMOTE_SEGMENTS_MAX: '40' });
  assert.equal(resolveConfig({ ...base, env }).fabric.remoteSegmentsMax, 40);
  assert.equal(resolveConfig({ ...base, env, flags: { fabric: { remoteSegmentsMax: 5 } } }).fabric.remoteSegmentsMax, 5);
  assert.throws(() => resolveConfig({ ...base, flags: { fabric: { remoteSegmentsMax: 0 } } }), { code: 'ROWAN_ERR_BAD_CONFIG', message: /fabric\.remoteSegmentsMax/ });
});
