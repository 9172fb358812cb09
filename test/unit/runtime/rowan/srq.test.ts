// The receive queue's one-word cursor, on its own (no receiver, no pool): the buffer seq it holds wraps
// at 2^seqBits, and neither a wrap nor a sender whose view of the queue is a whole wrap old may land a
// write anywhere but its own slot of the current buffer. Also: the layout version is checked, and the
// ring CQ counts completions, not attempts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, openSync, rmSync, writeSync, closeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MemoryRegion } from '../../../../config/base/region.js';
import { NO_BUFFER, SRQ_CLOSED, STALE_RESERVATION, SharedReceiveQueue } from '../../../../runtime/rowan/srq.js';
import { LATE, landOnce } from '../../../../runtime/rowan/land.js';
import { SRQ_VERSION, W_VERSION } from '../../../../runtime/rowan/srq-layout.js';

const BUF = 4096; // 64 strides
// 1 GiB buffers allowed: 25 stride bits leave 6 seq bits, so the seq wraps every 64 buffers.
const WRAP = 64;

function setup() {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-srq-unit-'));
  const path = join(dir, 'rowan.srq');
  const rx = SharedReceiveQueue.create(path, { postCap: 4, cqCap: 8, bufferBytesMax: 2 ** 30 });
  return {
    dir,
    path,
    rx,
    /** Post buffer n (at n * BUF) once the writers have reached buffer n - 3, marking old ones Used. */
    postUpTo(n: number): void {
      while (rx.posted() <= n) {
        const next = rx.posted();
        rx.markUsedBelow(Math.max(0, rx.currentSeq() - 1));
        rx.post([{ offset: next * BUF, length: BUF }]);
      }
    },
    done(...qs: SharedReceiveQueue[]): void {
      for (const q of qs) q.close();
      rx.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

test('the cursor seq wraps every 2^seqBits buffers; writes keep landing in posting order', () => {
  const t = setup();
  const tx = SharedReceiveQueue.attach(t.path);
  try {
    assert.equal(tx.reserve(64), NO_BUFFER, 'nothing posted yet');
    for (let n = 0; n < 3 * WRAP + 5; n++) {
      t.postUpTo(n + 1);
      // Two writes per buffer, the second one filling it; the next write moves the cursor on.
      assert.equal(tx.reserve(64), n * BUF, `first write of buffer ${n}`);
      assert.equal(tx.lastSeq, n);
      assert.equal(tx.reserve(BUF - 64), n * BUF + 64);
      assert.equal(t.rx.currentSeq(), n);
      assert.equal(t.rx.outstanding(), t.rx.posted() - n);
    }
  } finally {
    t.done(tx);
  }
});

test('a sender idle while the cursor went round a whole wrap never writes into the old buffer', () => {
  const t = setup();
  const idle = SharedReceiveQueue.attach(t.path);
  const busy = SharedReceiveQueue.attach(t.path);
  try {
    t.postUpTo(1);
    assert.equal(idle.reserve(64), 0, 'the idle sender caches buffer 0');
    // The busy sender fills buffers 0 .. WRAP-1 and starts buffer WRAP: the cursor word then holds the
    // same seq bits as when the idle sender last saw it, one stride in.
    busy.reserve(BUF - 64);
    for (let n = 1; n < WRAP; n++) {
      t.postUpTo(n + 1);
      assert.equal(busy.reserve(BUF), n * BUF, `buffer ${n}`);
    }
    assert.equal(busy.reserve(64), WRAP * BUF);
    for (let i = 0; i < 3; i++) {
      // The stale cache is caught by the hold's tag before the CAS (the slot holds buffer WRAP now), or
      // by usedBelow after it (then its strides stay a hole and it looks the buffer up again).
      const at = idle.reserve(64);
      if (at === STALE_RESERVATION) continue;
      assert.ok(at > WRAP * BUF && at < (WRAP + 1) * BUF, `landed at ${at}, not in the current buffer ${WRAP}`);
      assert.equal(idle.lastSeq, WRAP);
      return;
    }
    assert.fail('the idle sender never got a slot');
  } finally {
    t.done(idle, busy);
  }
});

test('a full buffer with no next one posted is NO_BUFFER until the receiver posts; shutdown is SRQ_CLOSED', () => {
  const t = setup();
  const tx = SharedReceiveQueue.attach(t.path);
  try {
    t.postUpTo(0);
    assert.equal(tx.reserve(BUF), 0);
    assert.equal(tx.reserve(64), NO_BUFFER);
    assert.equal(t.rx.stats().noBuffer, 1);
    t.postUpTo(1);
    assert.equal(tx.reserve(64), BUF);
    t.rx.shutdown();
    assert.equal(tx.reserve(64), SRQ_CLOSED);
    assert.ok(t.rx.isClosed());
    assert.throws(() => tx.reserve(100), { code: 'ROWAN_ERR_BAD_ARGUMENT' }, 'not whole strides');
  } finally {
    t.done(tx);
  }
});

test('completions count landed writes: a LATE attempt leaves a void CQ entry that is not counted', () => {
  const t = setup();
  const tx = SharedReceiveQueue.attach(t.path);
  const region = new MemoryRegion(1 << 20);
  try {
    t.postUpTo(1);
    const bytes = new Uint8Array(64).fill(9);
    for (let i = 0; i < 5; i++) assert.ok(landOnce(tx, region, bytes, 1) >= 0);
    assert.equal(t.rx.stats().completions, 5);
    // Fenced by the receiver during the copy: re-issued, its CQ entry void.
    const late = { ...region, bytes: region.bytes, persist: () => void t.rx.fence(tx.lastSeq), flush: () => {}, drain: () => {} };
    assert.equal(landOnce(tx, late, bytes, 1), LATE);
    assert.equal(t.rx.stats().completions, 5);
  } finally {
    t.done(tx);
  }
});

test('a queue file of another layout version is refused with the version it has, and replaced by create', () => {
  const t = setup();
  try {
    const fd = openSync(t.path, 'r+');
    const v = Buffer.alloc(4);
    v.writeInt32LE(1);
    writeSync(fd, v, 0, 4, W_VERSION * 4);
    closeSync(fd);
    assert.throws(() => SharedReceiveQueue.attach(t.path), { code: 'ROWAN_ERR_RECEIVER_NOT_READY', message: new RegExp(`version 1 receive queue.*version ${SRQ_VERSION}`) });
    const again = SharedReceiveQueue.create(t.path, { postCap: 4, cqCap: 8 });
    assert.ok(t.rx.isClosed(), 'the old file was marked Closed for its senders');
    again.close();
  } finally {
    t.done();
  }
});
