import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Bell, Doorbell, Inbox, Outbox, RecordKind, type RingMessage } from '../../../shm/mailbox.js';
import { Ring } from '../../../shm/ring.js';

test('a producer rings only when the consumer announced it sleeps', () => {
  const bell = new Doorbell();
  const w = new Int32Array(bell.sab);
  bell.ring();
  assert.equal(w[Bell.SEQ], 0, 'no sleeper: ringing costs one load and changes nothing');
  const seq = bell.arm();
  assert.equal(w[Bell.WAITING], 1);
  bell.ring();
  assert.equal(w[Bell.SEQ], seq + 1, 'sleeper announced: SEQ moves');
});

test('sleep returns at once when SEQ moved after arm (no lost wake-up)', async () => {
  const bell = new Doorbell();
  const seq = bell.arm();
  bell.ring(); // a publish between arm() and sleep()
  await bell.sleep(seq); // must not hang
  assert.equal(new Int32Array(bell.sab)[Bell.WAITING], 0);
});

test('an inbox reads every ring into one actor, naming the sender', () => {
  const bell = new Doorbell();
  const r1 = Ring.create(64);
  const r2 = Ring.create(64);
  const inbox = new Inbox([{ from: 'control.0', ring: r1 }, { from: 'main', ring: r2 }], bell);
  new Outbox('digest.0', r1, bell).send({ kind: RecordKind.SEGMENT_BATCH, segments: Int32Array.of(1, 2) });
  new Outbox('digest.0', r2, bell).send({ kind: RecordKind.PING, seq: 9 });
  assert.equal(inbox.hasWork(), true);
  const seen: [string, RingMessage][] = [];
  assert.equal(inbox.drain((m, from) => seen.push([from, m])), 2);
  assert.deepEqual(seen, [
    ['control.0', { kind: RecordKind.SEGMENT_BATCH, segments: Int32Array.of(1, 2) }],
    ['main', { kind: RecordKind.PING, seq: 9 }],
  ]);
  assert.equal(inbox.hasWork(), false);
});

test('send reports a full ring and leaves nothing pending', () => {
  const ring = Ring.create(64);
  const out = new Outbox('x', ring, new Doorbell());
  let n = 0;
  while (out.send({ kind: RecordKind.PING, seq: n })) n++;
  assert.equal(n, 32, '64 words hold 32 two-word records');
  assert.equal(out.pendingCount, 0);
  assert.throws(() => out.append({ kind: RecordKind.SEGMENT_BATCH, segments: new Int32Array(64) }), {
    code: 'ROWAN_ERR_RECORD_TOO_LARGE',
  });
});
