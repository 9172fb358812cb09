// A receiver restart and the shm senders of its previous incarnation (issue 24 hazard 4). A sender
// process stalled between its reservation and its copy (test/fixtures/stalled-sender.ts) sits across a
// full restart of the receiving node: cold start closes the old receive queue (closeStaleQueue) and
// then recycles the b-log segments the old incarnation posted -- an empty one is freed and reused at
// once. The late copy must never land in what the segment became: the restart waits for it (bounded),
// refuses to start while a live sender still holds a reservation, and does not wait for a dead one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fork, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mapFile } from '../../../../native/mapping.js';
import { SRQ_CLOSED, SharedReceiveQueue } from '../../../../runtime/rowan/srq.js';
import { ErrorCodes, type RowanError } from '../../../../config/base/errors.js';
import { closeStaleQueue } from '../../../../runtime/rowan/stale-queue.js';
import { LATE } from '../../../../runtime/rowan/land.js';
import * as L from '../../../../runtime/rowan/srq-layout.js';
import { eventually } from '../../../fixtures/eventually.js';
import { STALLED_BLOCK_BYTES, STALLED_FILL } from '../../../fixtures/stalled-sender.js';

const BUF = 4096;
/** What the restarted node put in the recycled segment (a worker's new t-log, say). */
const RECYCLED_FILL = 0x5a;
const child = new URL('../../../fixtures/stalled-sender.js', import.meta.url).pathname;
/** A restart that is to wait for a copy waits this long at most: far more than a loaded machine takes
 *  to pass a message to the sender and copy 64 B (a short bound is tested on its own below). */
const PATIENT_MS = 120_000;

interface Stalled {
  proc: ChildProcess;
  reserved: number;
  /** Resolves with landOnce's result once told to copy. */
  copy(): Promise<number>;
}

/** A sender process attached to the queue: stalled between its reservation and its copy, or idle. */
async function sender(queuePath: string, poolPath: string, mode: 'stall' | 'idle'): Promise<{ proc: ChildProcess; reserved: number }> {
  const proc = fork(child, [queuePath, poolPath, mode], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const reserved = await new Promise<number>((resolve) => proc.once('message', (m: { reserved: number }) => resolve(m.reserved)));
  return { proc, reserved };
}

/** The previous incarnation: a queue with one buffer posted at pool offset 0, and a stalled sender. */
async function setup() {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-stale-queue-'));
  const queuePath = join(dir, 'rowan.srq');
  const poolPath = join(dir, 'pool');
  writeFileSync(poolPath, Buffer.alloc(2 * BUF), { mode: 0o600 });
  const pool = mapFile(poolPath, { mode: 'pagecache', label: poolPath });
  const old = SharedReceiveQueue.create(queuePath, { postCap: 4, cqCap: 8, bufferBytesMax: BUF });
  old.post([{ offset: 0, length: BUF }]);
  const { proc, reserved } = await sender(queuePath, poolPath, 'stall');
  const stalled: Stalled = {
    proc,
    reserved,
    copy: () => new Promise<number>((resolve) => {
      proc.once('message', (m: { landed: number }) => resolve(m.landed));
      proc.send({ copy: true });
    }),
  };
  return {
    queuePath,
    poolPath,
    pool,
    old,
    stalled,
    /** Cold start's reuse of the old buffer's segment: zeroed, then written with other data. */
    recycle(): void {
      pool.bytes.fill(RECYCLED_FILL, 0, BUF);
      pool.persist(0, BUF);
    },
    /** Bytes of the recycled segment that are not what the new incarnation wrote there. */
    corrupted(): number {
      return pool.bytes.subarray(0, BUF).filter((b) => b !== RECYCLED_FILL).length;
    },
    async done(): Promise<void> {
      if (proc.exitCode === null && proc.signalCode === null) {
        const gone = new Promise((r) => proc.once('exit', r));
        proc.kill('SIGKILL');
        await gone;
      }
      old.close();
      pool.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

test('a sender stalled between reserve and copy across a receiver restart: its late copy never lands in the recycled segment', { timeout: 180_000 }, async () => {
  const t = await setup();
  try {
    assert.equal(t.stalled.reserved, 0, 'the stalled sender holds the first slot of the posted buffer');
    // The node dies (nothing shuts the queue down; this process keeps its mapping only to watch the
    // state word) and restarts: cold start closes the stale queue, then recycles the old buffer's
    // segment (empty: nothing landed in it).
    const restart = (async () => {
      await closeStaleQueue(t.queuePath, { waitMs: PATIENT_MS });
      t.recycle();
    })();
    // The sender wakes up once the restart has closed its queue.
    await eventually(() => assert.ok(t.old.isClosed(), 'the restart has not closed the old queue'), 10_000, 5);
    const landed = await t.stalled.copy();
    await restart;
    assert.equal(t.corrupted(), 0, `the late copy (landOnce returned ${landed}: ${landed >= 0 ? "acknowledged" : "re-issued"}) landed in the recycled segment: ${t.corrupted()} bytes of ${STALLED_BLOCK_BYTES} overwritten with 0x${STALLED_FILL.toString(16)}`);
  } finally {
    await t.done();
  }
});

test('a sender stalled past the wait: the restart refuses to start (SENDERS_HOLDING) and recycles nothing; once it copied, the next start goes on', { timeout: 180_000 }, async () => {
  const t = await setup();
  try {
    t.old.close();
    const waitMs = 300;
    await assert.rejects(closeStaleQueue(t.queuePath, { waitMs }), (err: RowanError) => {
      assert.equal(err.code, ErrorCodes.SENDERS_HOLDING);
      assert.match(err.message, new RegExp(`1 reservation\\(s\\) whose copy has not finished after ${waitMs} ms, held by live process\\(es\\) ${t.stalled.proc.pid}:`));
      return true;
    });
    assert.ok(existsSync(t.queuePath), 'the stale queue stays for the next start');
    // The sender wakes up: its copy lands in the old buffer, still the old incarnation's (nothing was
    // recycled), and is acknowledged -- the next cold start's b-log scan finds it there.
    assert.equal(await t.stalled.copy(), t.stalled.reserved);
    const report = await closeStaleQueue(t.queuePath, { waitMs });
    assert.deepEqual(report && { holds: report.holds, voided: report.voided }, { holds: 0, voided: 0 });
    assert.ok(!existsSync(t.queuePath));
    t.recycle();
    assert.equal(t.corrupted(), 0);
  } finally {
    await t.done();
  }
});

test('a sender that died holding a reservation holds nothing: the restart goes on without waiting out the bound, while an idle sender still maps the queue', { timeout: 180_000 }, async () => {
  const t = await setup();
  const idle = await sender(t.queuePath, t.poolPath, 'idle');
  try {
    t.old.close();
    const gone = new Promise((r) => t.stalled.proc.once('exit', r));
    t.stalled.proc.kill('SIGKILL');
    await gone;
    const report = await closeStaleQueue(t.queuePath, { waitMs: 10 * PATIENT_MS }); // the test's timeout fails a wait for the bound
    assert.deepEqual(report && { holds: report.holds, voided: report.voided }, { holds: 1, voided: 1 });
    assert.ok(!existsSync(t.queuePath));
  } finally {
    idle.proc.kill('SIGKILL');
    await t.done();
  }
});

test('a sender attached to the old queue reserves nothing once the restart closed and fenced it (SRQ_CLOSED)', { timeout: 180_000 }, async () => {
  const t = await setup();
  try {
    // A second sender of the same process, attached before the restart, reserves after it closed.
    const late = SharedReceiveQueue.attach(t.queuePath);
    assert.equal(await t.stalled.copy(), t.stalled.reserved, 'the first sender finishes: no hold is left');
    const report = await closeStaleQueue(t.queuePath);
    assert.deepEqual(report && { holds: report.holds, voided: report.voided }, { holds: 0, voided: 0 });
    assert.equal(late.reserve(STALLED_BLOCK_BYTES), SRQ_CLOSED);
    late.close();
  } finally {
    await t.done();
  }
});

test('a hold the running receiver fenced (its sender stalled past holdTimeoutMs) counts until the sender releases it: the restart waits for that copy too', { timeout: 180_000 }, async () => {
  const t = await setup();
  try {
    assert.equal(t.old.fence(0), true);
    let restarted = false;
    const restart = closeStaleQueue(t.queuePath, { waitMs: PATIENT_MS }).then((r) => ((restarted = true), r));
    await eventually(() => assert.ok(t.old.isClosed(), 'the restart has not closed the old queue'), 10_000, 5);
    assert.equal(restarted, false, 'the restart did not wait for the fenced hold');
    // The sender wakes up: its release finds the fence (LATE: it re-issues), and drops the hold.
    assert.equal(await t.stalled.copy(), LATE);
    const report = await restart;
    assert.deepEqual(report && { holds: report.holds, voided: report.voided }, { holds: 1, voided: 0 });
  } finally {
    await t.done();
  }
});

test('a hold whose count is gone (the running receiver fenced it and refilled its slot) still keeps the restart waiting: its sender counts it in its own slot', { timeout: 180_000 }, async () => {
  const t = await setup();
  try {
    assert.equal(t.old.fence(0), true);
    // What post() of buffer `ring` into the same slot does to the hold word: a new tag, no holds.
    const raw = mapFile(t.queuePath, { mode: 'pagecache', label: t.queuePath });
    const i32 = new Int32Array(raw.bytes.buffer, raw.bytes.byteOffset, raw.size >> 2);
    const ring = i32[L.W_RING]!;
    Atomics.store(i32, L.holdsWord(ring, 0), L.holdWord(ring, 0));
    raw.close();
    let restarted = false;
    const restart = closeStaleQueue(t.queuePath, { waitMs: PATIENT_MS }).then((r) => ((restarted = true), r));
    await eventually(() => assert.ok(t.old.isClosed(), 'the restart has not closed the old queue'), 10_000, 5);
    assert.equal(restarted, false, 'the restart did not wait for the sender whose hold count is gone');
    // The sender wakes up: its release finds another buffer's tag (LATE), and its slot drops to 0.
    assert.equal(await t.stalled.copy(), LATE);
    const report = await restart;
    assert.deepEqual(report && { holds: report.holds, voided: report.voided }, { holds: 0, voided: 0 });
    t.recycle();
    assert.equal(t.corrupted(), 0);
  } finally {
    await t.done();
  }
});
