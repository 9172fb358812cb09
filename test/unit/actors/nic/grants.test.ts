// The soft NIC does only what Rowan needs (issue 12: "no input can read a node"): an authenticated peer
// may WRITE and READ only inside the regions ALLOC handed to its own node, plus a 1-byte persistence
// READ of the write it landed last; ALLOC takes only the peer's own owner id and never the GC reserve.
// Regression tests for "a peer read another key's value straight out of the pool" and "ALLOC with owner
// ids >= 256 held 73 of 96 segments so PUTs got PM_FULL".
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monotonicClock } from '../../../../config/base/clock.js';
import { NicServer } from '../../../../actors/nic/nic-server.js';
import { shmPaths } from '../../../../runtime/fabric/shm.js';
import { SharedReceiveQueue } from '../../../../runtime/rowan/srq.js';
import { TcpConnection } from '../../../../runtime/fabric/tcp.js';
import { OwnerRole, Pool, SegmentState } from '../../../../shm/pool.js';
import type { NicMembership } from '../../../../actors/nic/nic-verbs.js';

const SEG = 64 * 1024;
const SECRET = new Uint8Array(32).fill(0x5a);

async function setup(o: { reserveSegments?: number; segmentCount?: number; members?: () => NicMembership; remoteSegmentsMax?: number } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-nic-grants-'));
  const p = shmPaths(dir);
  const pool = Pool.create(p.pool, { segmentCount: o.segmentCount ?? 16, segmentBytes: SEG });
  const srq = SharedReceiveQueue.create(p.srq, { postCap: 16, cqCap: 64 });
  // One posted b-log buffer (a Control segment, as the receiver posts them), with another key's value
  // already in it: what no peer's READ may see.
  const blogSeg = pool.allocate(OwnerRole.Control, 0);
  const planted = Buffer.from("another key's value, replicated here");
  pool.region.bytes.set(planted, pool.segmentOffset(blogSeg));
  srq.post([{ offset: pool.segmentOffset(blogSeg) + 4096, length: SEG - 4096 }]);
  const nic = await NicServer.listen({ dataDir: dir, pool: () => pool, clock: monotonicClock, host: '127.0.0.1', port: 0, secret: SECRET, ...(o.reserveSegments !== undefined ? { reserveSegments: o.reserveSegments } : {}), ...(o.members ? { members: o.members } : {}), ...(o.remoteSegmentsMax !== undefined ? { remoteSegmentsMax: o.remoteSegmentsMax } : {}) });
  const connect = (senderId: number) => TcpConnection.connect({ host: '127.0.0.1', port: nic.endpoint.port, secret: SECRET, senderId });
  return {
    pool, nic, planted, blogSeg, connect,
    done: async () => {
      await nic.close();
      srq.close();
      pool.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** An error message that gives away pool geometry ("[a, b)" ranges, "the pool's segments"). */
const leaksLayout = (m: string) => /\[\d+, \d+\)|pool's segments/.test(m);

test('a peer READs and WRITEs only its own regions; the b-log and other nodes\' regions are refused', async () => {
  const t = await setup();
  try {
    const a = await t.connect(1);
    const b = await t.connect(2);
    const ra = await a.allocateRegion(1);
    await a.writeAt(ra.offset, new Uint8Array(64).fill(0xaa));
    assert.deepEqual([...(await a.read(ra.offset, 4))], [0xaa, 0xaa, 0xaa, 0xaa], 'the owner reads its region back');
    // Another node of the same cluster (authenticated) cannot read or write node 1's region...
    for (const p of [b.read(ra.offset, 64), b.writeAt(ra.offset, new Uint8Array(64).fill(0xbb))]) {
      await assert.rejects(p, (e: Error & { code?: string }) => e.code === 'ROWAN_ERR_NOT_GRANTED' && !leaksLayout(e.message));
    }
    assert.equal(t.pool.region.bytes[ra.offset], 0xaa, 'the refused WRITE wrote nothing');
    // ... nor any byte of the b-log (another key's value), the superblock, or a free segment.
    const blog = t.pool.segmentOffset(t.blogSeg);
    for (const [off, len] of [[blog, t.planted.length], [0, 64], [t.pool.segmentOffset(t.pool.segmentCount - 1), 64], [2 ** 40, 8]] as const) {
      await assert.rejects(a.read(off, len), (e: Error & { code?: string }) => e.code === 'ROWAN_ERR_NOT_GRANTED' && !leaksLayout(e.message), `READ [${off}, +${len})`);
    }
    // A READ crossing from the region into the next segment is refused too.
    await assert.rejects(a.read(ra.offset + ra.length - 8, 16), { code: 'ROWAN_ERR_NOT_GRANTED' });
    // The 1-byte persistence READ of a Rowan write: allowed inside the write this connection landed last.
    const at = await b.write(new Uint8Array(128).fill(0x77));
    assert.deepEqual([...(await b.read(at + 127, 1))], [0x77]);
    await assert.rejects(b.read(at, 2), { code: 'ROWAN_ERR_NOT_GRANTED' }, 'only the 1-byte READ, not a copy of the b-log');
    await assert.rejects(a.read(at, 1), { code: 'ROWAN_ERR_NOT_GRANTED' }, 'not another connection\'s landing');
    await a.close();
    await b.close();
  } finally {
    await t.done();
  }
});

test('ALLOC takes only the peer\'s own owner id, and never the GC reserve', async () => {
  const t = await setup({ reserveSegments: 3, remoteSegmentsMax: 16 }); // no quota short of the pool (./quota.test.ts)
  try {
    const a = await t.connect(1);
    for (const owner of [2, 300, 1023, 0]) {
      await assert.rejects(a.allocateRegion(owner), (e: Error & { code?: string }) => e.code === 'ROWAN_ERR_NOT_GRANTED' && /owner id/.test(e.message), `owner ${owner}`);
    }
    assert.equal(t.pool.segments({ role: OwnerRole.Remote }).length, 0, 'no refused ALLOC took a segment');
    // Allocate until refused: the last 3 free segments stay for garbage collection.
    let got = 0;
    for (let i = 0; i < t.pool.segmentCount; i++) {
      try {
        await a.allocateRegion(1);
        got++;
      } catch (err) {
        assert.equal((err as { code?: string }).code, 'ROWAN_ERR_PM_FULL');
        break;
      }
    }
    assert.equal(t.pool.freeCount(), 3, `the GC reserve is left free (${got} regions granted)`);
    assert.ok(got > 0);
    for (const s of t.pool.segments({ role: OwnerRole.Remote })) assert.equal(t.pool.meta(s).ownerId, 1);
    assert.equal(t.pool.segmentsInState(SegmentState.Free).length, 3);
    await a.close();
  } finally {
    await t.done();
  }
});

test('on a node with a configuration, ALLOC is refused to this node\'s own id and to nodes that are not live members', async () => {
  let live = new Set([0, 1, 2]);
  const t = await setup({ members: () => ({ self: 0, live }) });
  try {
    const [self, member, stranger] = await Promise.all([t.connect(0), t.connect(1), t.connect(5)]);
    await assert.rejects(self.allocateRegion(0), { code: 'ROWAN_ERR_NOT_GRANTED', message: /this node itself/ });
    await assert.rejects(stranger.allocateRegion(5), { code: 'ROWAN_ERR_NOT_GRANTED', message: /not a live member/ });
    await member.allocateRegion(1);
    live = new Set([0, 2]); // node 1 declared dead
    await assert.rejects(member.allocateRegion(1), { code: 'ROWAN_ERR_NOT_GRANTED', message: /not a live member/ });
    assert.deepEqual(t.pool.segments({ role: OwnerRole.Remote }).map((s) => t.pool.meta(s).ownerId), [1]);
    await Promise.all([self.close(), member.close(), stranger.close()]);
  } finally {
    await t.done();
  }
});
