// The Rowan receive queue and receiver on a manual clock, single-threaded: what gets posted, when a
// segment counts as consumed and Used, how hand-off batches and re-posting behave, and the sender-side
// rules for stale reservations.
import { monotonicClock } from '../../../../config/base/clock.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool, SegmentState } from '../../../../shm/pool.js';
import { ManualClock } from '../../../../config/base/clock.js';
import { RowanReceiver } from '../../../../runtime/rowan/receiver.js';
import { NO_BUFFER, SRQ_CLOSED, SharedReceiveQueue } from '../../../../runtime/rowan/srq.js';
import { ABANDONED, LATE, ShmConnection, shmPaths } from '../../../../runtime/fabric/shm.js';
import { TcpConnection } from '../../../../runtime/fabric/tcp.js';
import { NicServer } from '../../../../actors/nic/nic-server.js';
import { RowanError } from '../../../../config/base/errors.js';

const SEG = 64 * 1024;

function setup(o: { segments?: number; preallocate?: number; batch?: number; holdTimeoutMs?: number; holdPerWrite?: boolean } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-rx-unit-'));
  const p = shmPaths(dir);
  const pool = Pool.create(p.pool, { segmentCount: o.segments ?? 16, segmentBytes: SEG });
  const srq = SharedReceiveQueue.create(p.srq, { postCap: 16, cqCap: 64 });
  const clock = new ManualClock(0);
  const handed: number[][] = [];
  const rx = new RowanReceiver({
    pool, srq, ownerId: 3, preallocate: o.preallocate ?? 4, batch: o.batch ?? 2, graceMs: 2, clock,
    ...(o.holdTimeoutMs === undefined ? {} : { holdTimeoutMs: o.holdTimeoutMs }),
    onUsed: (s) => handed.push(s),
  });
  rx.start();
  const conn = ShmConnection.connect(dir, o.holdPerWrite ? { holdPerWrite: true } : {});
  return {
    dir, pool, srq, clock, handed, rx, conn,
    done: async () => {
      await conn.close();
      srq.close();
      pool.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const stride = (n: number, fill = 1) => new Uint8Array(64 * n).fill(fill);

test('posts the preallocated segments in increasing address order, each zeroed', async () => {
  const t = setup();
  try {
    assert.equal(t.srq.posted(), 4);
    const offs = [0, 1, 2, 3].map((i) => t.srq.buffer(i).offset);
    assert.deepEqual([...offs].sort((a, b) => a - b), offs);
    for (const o of offs) assert.ok(t.pool.region.bytes.subarray(o, o + SEG).every((b) => b === 0));
  } finally {
    await t.done();
  }
});

test('writes land stride-aligned and back to back; a write that does not fit moves to the next buffer', async () => {
  const t = setup();
  try {
    const b0 = t.srq.buffer(0).offset;
    assert.equal(t.conn.tryWrite(stride(1)), b0);
    assert.equal(t.conn.tryWrite(stride(3)), b0 + 64);
    // Fill buffer 0 up to one stride short of its end, then a 2-stride write must go to buffer 1.
    const left = SEG / 64 - 4 - 1;
    assert.equal(t.conn.tryWrite(stride(left)), b0 + 4 * 64);
    assert.equal(t.conn.tryWrite(stride(2)), t.srq.buffer(1).offset);
    assert.equal(t.srq.currentSeq(), 1);
  } finally {
    await t.done();
  }
});

test('a segment counts as Used only after a later one is written and the grace has passed', async () => {
  const t = setup();
  try {
    const seg0 = t.pool.segmentOf(t.srq.buffer(0).offset);
    t.conn.tryWrite(stride(SEG / 64)); // fills buffer 0 exactly
    t.rx.tick();
    assert.equal(t.rx.stats().consumed, 0, 'buffer 1 not written yet: buffer 0 may still take writes');
    t.conn.tryWrite(stride(1)); // lands at the start of buffer 1
    t.rx.tick();
    assert.equal(t.rx.stats().consumed, 1);
    assert.deepEqual(t.handed, [], 'not before the grace period');
    t.clock.advance(1.9);
    t.rx.tick();
    assert.deepEqual(t.handed, []);
    t.clock.advance(0.2);
    t.rx.tick();
    assert.deepEqual(t.handed, [[seg0]]);
    assert.equal(t.pool.meta(seg0).state, SegmentState.Used);
    assert.equal(t.srq.usedBelow(), 1);
  } finally {
    await t.done();
  }
});

test('hands off in batches of at most `batch` and re-posts to keep `preallocate` ahead', async () => {
  const t = setup({ segments: 24, preallocate: 6, batch: 2 });
  try {
    for (let i = 0; i < 5; i++) t.conn.tryWrite(stride(SEG / 64)); // consume 5 buffers fully
    t.conn.tryWrite(stride(1)); // and start the 6th
    t.rx.tick();
    t.clock.advance(3);
    t.rx.tick();
    assert.deepEqual(t.handed.map((b) => b.length), [2, 2, 1]);
    assert.equal(t.srq.posted() - t.srq.currentSeq(), 6, 'six buffers ahead of the writers again');
  } finally {
    await t.done();
  }
});

test('no posted buffer is NO_BUFFER (counted), never a lost write; a closed queue is SRQ_CLOSED', async () => {
  const t = setup({ segments: 4, preallocate: 2, batch: 1 });
  try {
    t.conn.tryWrite(stride(SEG / 64));
    t.conn.tryWrite(stride(SEG / 64));
    assert.equal(t.conn.tryWrite(stride(1)), NO_BUFFER);
    assert.equal(t.srq.stats().noBuffer, 1);
    // The pool has 2 free segments left: the receiver posts them once the first two are Used.
    t.rx.tick();
    t.clock.advance(3);
    t.rx.tick();
    assert.ok(t.conn.tryWrite(stride(1)) >= 0);
    t.srq.shutdown();
    assert.equal(t.conn.tryWrite(stride(1)), SRQ_CLOSED);
    await assert.rejects(t.conn.write(stride(1)), { code: 'ROWAN_ERR_RECEIVER_CLOSED' });
  } finally {
    await t.done();
  }
});

test('a full pool leaves the receiver posting what it can and counting the failure', async () => {
  const t = setup({ segments: 2, preallocate: 2, batch: 1 });
  try {
    assert.equal(t.pool.counts().free, 0, 'both segments are posted');
    t.conn.tryWrite(stride(SEG / 64));
    t.conn.tryWrite(stride(1)); // buffer 1 started: buffer 0 consumed, and the receiver wants a new one
    t.rx.tick();
    assert.ok(t.rx.stats().postFailures >= 1, 'PM_FULL is counted, not thrown');
    assert.equal(t.srq.posted(), 2);
    t.clock.advance(3);
    t.rx.tick(); // buffer 0 retires as Used regardless
    assert.equal(t.rx.stats().used, 1);
  } finally {
    await t.done();
  }
});

test('a receiver starved by a full pool makes a waiting shm write fail PM_FULL; freed space posts again', async () => {
  const t = setup({ segments: 2, preallocate: 2, batch: 1 });
  const impatient = ShmConnection.connect(t.dir, { noBufferTimeoutMs: 30 });
  try {
    t.conn.tryWrite(stride(SEG / 64));
    t.conn.tryWrite(stride(SEG / 64)); // both posted buffers full
    t.rx.tick();
    assert.equal(t.srq.starved(), true, 'the receiver reports that it could not post');
    await assert.rejects(impatient.write(stride(1)), { code: 'ROWAN_ERR_PM_FULL' });
    // GC frees buffer 0's segment once it is Used and Committed: the receiver posts it again.
    t.clock.advance(3);
    t.rx.tick();
    const seg0 = t.handed.flat()[0]!;
    t.pool.transition(seg0, SegmentState.Used, SegmentState.Committed);
    t.pool.transition(seg0, SegmentState.Committed, SegmentState.Free);
    t.rx.tick();
    assert.equal(t.srq.starved(), false);
    assert.ok((await impatient.write(stride(1))) >= 0);
  } finally {
    await impatient.close();
    await t.done();
  }
});

test('over tcp: the nic answers a starved receiver with PM_FULL, and the sender reports PM_FULL', async () => {
  const t = setup({ segments: 2, preallocate: 2, batch: 1 });
  const nic = await NicServer.listen({ dataDir: t.dir, pool: () => t.pool, clock: monotonicClock, host: '127.0.0.1', port: 0, parkMs: 5, secret: null });
  const tcp = await TcpConnection.connect({ host: '127.0.0.1', port: nic.endpoint.port, noBufferTimeoutMs: 60 });
  try {
    t.conn.tryWrite(stride(SEG / 64));
    t.conn.tryWrite(stride(SEG / 64));
    t.rx.tick();
    assert.equal(t.srq.starved(), true);
    await assert.rejects(tcp.write(stride(1)), (e: unknown) => e instanceof RowanError && e.code === 'ROWAN_ERR_PM_FULL' && /pool has no free segment/.test(e.message));
  } finally {
    await tcp.close();
    await nic.close();
    await t.done();
  }
});

for (const holdPerWrite of [true, false]) {
  const holds = holdPerWrite ? 'a hold per write' : 'holds kept for the turn';
  test(`a reservation in a buffer already declared Used is abandoned; one that went Used during the copy lands; one fenced during the copy is LATE (${holds})`, async () => {
    const t = setup({ holdPerWrite });
    try {
      // Publish "buffer 0 is Used" while writes still land in it: exactly the stale-sender race.
      t.srq.markUsedBelow(1);
      assert.equal(t.conn.tryWrite(stride(1)), ABANDONED);
      assert.equal(t.srq.holds(0), 0, 'an abandoned reservation keeps no hold');
      t.srq.markUsedBelow(0);
      assert.ok(t.conn.tryWrite(stride(1)) >= 0);
      // Drive the receiver's side through a region whose persist acts at that instant, as the control
      // actor could. Declared Used during the copy: the write holds the buffer, so it counts.
      const region = (t.conn as unknown as { region: { persist: (o: number, l: number) => void } }).region;
      const persist = region.persist.bind(region);
      region.persist = (o, l) => {
        persist(o, l);
        t.srq.markUsedBelow(1);
      };
      assert.ok(t.conn.tryWrite(stride(1)) >= 0);
      if (holdPerWrite) assert.equal(t.srq.holds(0), 0, 'the hold was dropped after the persist');
      else {
        assert.equal(t.srq.holds(0), 1, 'one hold for both writes of this turn, kept until the turn ends');
        await null; // the rest of the turn: the microtask that drops the kept hold runs first
        assert.equal(t.srq.holds(0), 0, 'the kept hold was dropped when the turn ended');
      }
      // Fenced during the copy (the receiver gave up waiting): the buffer went on without it; re-issue.
      t.srq.markUsedBelow(0);
      region.persist = (o, l) => {
        persist(o, l);
        t.srq.markUsedBelow(1);
        assert.ok(t.srq.fence(0));
      };
      assert.equal(t.conn.tryWrite(stride(1)), LATE);
    } finally {
      await t.done();
    }
  });
}

test('holds kept for the turn: a Used buffer waits for the end of its sender\'s turn, not of each copy, before it is handed on', async () => {
  const t = setup();
  const other = ShmConnection.connect(t.dir, { holdPerWrite: true });
  try {
    const at = t.conn.tryWrite(stride(1, 5)); // buffer 0; t.conn keeps its hold for this turn
    assert.ok(at >= 0);
    const seg0 = t.pool.segmentOf(t.srq.buffer(0).offset);
    assert.ok(other.tryWrite(stride(SEG / 64 - 1, 7)) >= 0); // fills the rest of buffer 0
    assert.ok(other.tryWrite(stride(1, 8)) >= 0); // starts buffer 1: buffer 0 is consumed
    t.rx.tick();
    t.clock.advance(5);
    t.rx.tick();
    assert.equal(t.srq.usedBelow(), 1, 'buffer 0 is declared Used');
    assert.equal(t.srq.holds(0), 1, 'the hold t.conn keeps');
    assert.equal(t.handed.length, 0, 'not handed on while its sender\'s turn goes on');
    await null; // the turn ends: the kept hold is dropped
    assert.equal(t.srq.holds(0), 0);
    t.rx.tick();
    assert.deepEqual(t.handed, [[seg0]]);
    assert.deepEqual([...t.pool.region.bytes.subarray(at, at + 64)], new Array(64).fill(5), 'with the write in it');
  } finally {
    await other.close();
    await t.done();
  }
});

// Regression for the stalled-sender hazard (issue 10; test/sim seed 256): a sender descheduled between
// its reservation and its copy must not find its buffer digested, freed and reused as another log.
test('a Used buffer is handed on only once the copies reserved in it are done; past holdTimeoutMs it is fenced, copied and kept out of use', async () => {
  const t = setup({ holdTimeoutMs: 100 });
  const rx = t.rx;
  const handed: number[][] = t.handed;
  try {
    const stalled = SharedReceiveQueue.attach(shmPaths(t.dir).srq);
    const at = stalled.reserve(128); // reserved in buffer 0, the copy not done yet
    assert.equal(stalled.lastSeq, 0);
    const seg0 = t.pool.segmentOf(t.srq.buffer(0).offset);
    t.conn.tryWrite(stride(SEG / 64 - 2, 7)); // fills the rest of buffer 0
    t.conn.tryWrite(stride(1, 8)); // starts buffer 1: buffer 0 is consumed
    rx.tick();
    t.clock.advance(5);
    rx.tick();
    assert.equal(t.srq.usedBelow(), 1, 'buffer 0 is declared Used');
    assert.deepEqual(handed.length, 0, 'but not handed on while a copy into it is still to come');
    assert.equal(t.pool.meta(seg0).state, SegmentState.Using);
    // The stalled sender finishes: now it goes, with the late write in it.
    const late = new Uint8Array(128).fill(9);
    t.pool.region.bytes.set(late, at);
    assert.equal(stalled.release(0), true);
    rx.tick();
    assert.deepEqual(handed, [[seg0]]);
    assert.equal(t.pool.meta(seg0).state, SegmentState.Used);

    // Buffer 1 gets a hold that never goes (its sender died): after holdTimeoutMs it is fenced, digest
    // gets a copy, and the original stays Using, never reused.
    assert.equal(stalled.reserve(64) > 0, true);
    assert.equal(stalled.lastSeq, 1);
    const seg1 = t.pool.segmentOf(t.srq.buffer(1).offset);
    t.conn.tryWrite(stride(SEG / 64 - 2, 5));
    t.conn.tryWrite(stride(1, 6)); // starts buffer 2
    rx.tick();
    t.clock.advance(5);
    rx.tick();
    assert.equal(handed.length, 1, 'buffer 1 waits for its hold');
    t.clock.advance(100);
    rx.tick();
    assert.equal(handed.length, 2);
    const [copy] = handed[1]!;
    assert.notEqual(copy, seg1, 'digest gets a copy');
    const o1 = t.pool.segmentOffset(seg1);
    const oc = t.pool.segmentOffset(copy!);
    assert.deepEqual(t.pool.region.bytes.subarray(oc, oc + SEG), t.pool.region.bytes.subarray(o1, o1 + SEG));
    assert.equal(t.pool.meta(seg1).state, SegmentState.Using, 'the original is quarantined');
    assert.deepEqual(rx.quarantined, [seg1]);
    assert.equal(rx.stats().quarantined, 1);
    assert.equal(stalled.release(1), false, 'the dead sender\'s release, had it come, finds its hold fenced');
    stalled.close();
  } finally {
    await t.done();
  }
});
