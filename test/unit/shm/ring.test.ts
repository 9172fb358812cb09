import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runPair } from '../../../bench/ring-peer.js';
import { schedGetaffinity } from '../../../native/libc.js';
import { Doorbell, Inbox, Outbox, RecordKind, decodeRecord, encodeRecord, recordLength, type RingMessage } from '../../../shm/mailbox.js';
import { Ring, RingCtl } from '../../../shm/ring.js';

function cpuPair(): [number, number] {
  const cpus = schedGetaffinity(0);
  return [cpus[0]!, cpus[1] ?? cpus[0]!];
}

test('a ring holds exactly capacityWords and publishes all or nothing', () => {
  const ring = Ring.create(64);
  assert.equal(ring.capacityWords, 64);
  assert.equal(ring.free(), 64);
  const words = Int32Array.from({ length: 40 }, (_, i) => i);
  assert.equal(ring.tryPublish(words), true);
  assert.equal(ring.depth(), 40);
  assert.equal(ring.tryPublish(words), false, 'a publish that does not fit leaves the ring untouched');
  assert.equal(ring.depth(), 40);
  assert.equal(ring.tryPublish(words, 24), true);
  assert.equal(ring.free(), 0);
  const out = new Int32Array(64);
  assert.equal(ring.take(out, 0, 64), 64);
  assert.deepEqual([...out.subarray(0, 40)], [...words]);
  assert.deepEqual([...out.subarray(40, 64)], [...words.subarray(0, 24)]);
  assert.throws(() => ring.tryPublish(new Int32Array(65)), { code: 'ROWAN_ERR_RECORD_TOO_LARGE' });
});

test('ring capacity outside the limits is a BAD_CONFIG error', () => {
  assert.throws(() => Ring.create(10), { code: 'ROWAN_ERR_BAD_CONFIG' });
  assert.throws(() => Ring.create(1.5), { code: 'ROWAN_ERR_BAD_CONFIG' });
});

test('a ring opened from its handle sees the same words (the other side of a thread boundary)', () => {
  const a = Ring.create(128);
  const b = new Ring(a.handle);
  a.tryPublish(Int32Array.of(7, 8, 9));
  const out = new Int32Array(8);
  assert.equal(b.take(out, 0, 8), 3);
  assert.deepEqual([...out.subarray(0, 3)], [7, 8, 9]);
});

test('records round-trip through the codec', () => {
  const buf = new Int32Array(32);
  const msgs: RingMessage[] = [
    { kind: RecordKind.PING, seq: 42 },
    { kind: RecordKind.PONG, seq: -1 },
    { kind: RecordKind.SEGMENT_BATCH, segments: Int32Array.of(3, 4, 5, 1000) },
    { kind: RecordKind.SEGMENT_BATCH, segments: new Int32Array(0) },
  ];
  let at = 0;
  for (const m of msgs) at += encodeRecord(m, buf, at);
  let rd = 0;
  for (const m of msgs) {
    assert.deepEqual(decodeRecord(buf, rd, at), m);
    rd += recordLength(buf, rd);
  }
  assert.equal(rd, at);
  buf[0] = 99; // unknown kind
  assert.throws(() => decodeRecord(buf, 0, at), { code: 'ROWAN_ERR_INVARIANT' });
});

test('outbox batches wrap around the ring many times without loss or reordering', () => {
  const ring = Ring.create(100); // not a multiple of any record size: records straddle the wrap point
  const inbox = new Inbox([{ from: 'a', ring }], new Doorbell());
  const out = new Outbox('b', ring, new Doorbell());
  let sent = 0;
  let got = 0;
  let segs = 0;
  const check = (m: RingMessage) => {
    if (m.kind === RecordKind.PING) assert.equal(m.seq, got++);
    else if (m.kind === RecordKind.SEGMENT_BATCH) assert.deepEqual([...m.segments], [segs, segs + 1, segs + 2]), (segs += 3);
  };
  for (let round = 0; round < 2000; round++) {
    const batch = 1 + (round % 13);
    for (let i = 0; i < batch; i++) if (!out.append({ kind: RecordKind.PING, seq: sent })) break;
    else sent++;
    if (round % 5 === 0) out.append({ kind: RecordKind.SEGMENT_BATCH, segments: Int32Array.of(segs, segs + 1, segs + 2) });
    if (!out.flush()) {
      inbox.drain(check);
      assert.equal(out.flush(), true, 'after draining, the pending batch fits');
    }
    if (round % 3 === 0) inbox.drain(check);
  }
  inbox.drain(check);
  assert.equal(got, sent);
  assert.ok(sent > 10_000);
});

test('a producer waiting for space sleeps until the consumer frees it', async () => {
  const ring = Ring.create(64);
  const ctl = new Int32Array(ring.handle.ctl);
  assert.equal(ring.tryPublish(new Int32Array(60)), true);
  let woke = false;
  const waiting = ring.waitForSpace(30).then(() => (woke = true));
  await new Promise((r) => setImmediate(r));
  assert.equal(woke, false);
  assert.equal(ctl[RingCtl.SPACE_WAITING], 1, 'the producer announced its sleep');
  ring.take(new Int32Array(64), 0, 40);
  await waiting;
  assert.equal(woke, true);
  assert.equal(ctl[RingCtl.SPACE_WAITING], 0, 'and withdrew it after waking');
});

test('10^6 messages across two real threads arrive complete and in order (batched)', async () => {
  const r = await runPair('ring', 1_000_000, 32, cpuPair());
  assert.equal(r.consumer.received, 1_000_000);
  assert.equal(r.consumer.firstBadSeq, -1);
});

test('10^6 messages across two threads through a tiny ring (producer keeps hitting full)', async () => {
  // 64 words = 32 records: the producer sleeps on SPACE_SEQ and the consumer on its doorbell constantly.
  const r = await runPair('ring', 1_000_000, 5, cpuPair(), 64);
  assert.equal(r.consumer.received, 1_000_000);
  assert.equal(r.consumer.firstBadSeq, -1);
});
