// The lease's binary frames (actors/shared/manager-frames.ts): renew and grant round-trip through the
// stream reader, mixed with JSON lines in order, whatever the chunking (every split point of a stream);
// values that do not fit a frame are refused by the writers (the caller sends a line); a frame of
// unknown kind, a line that is not JSON and an over-long line are BAD_FRAME / FRAME_TOO_LARGE; a
// writer reuses its buffer only when the socket took the previous write at once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FRAME_MARK, GRANT_FRAME_BYTES, GrantWriter, ManagerStreamReader, RENEW_FRAME_BYTES, RenewWriter } from '../../../../actors/shared/manager-frames.js';
import { LINE_BYTES_MAX, encodeLine } from '../../../../actors/shared/manager-protocol.js';
import { ErrorCodes } from '../../../../config/base/errors.js';

/** Everything a reader yields for `chunks`, copied (the reader reuses its frame objects). */
function readAll(chunks: (Buffer | string)[]): unknown[] {
  const r = new ManagerStreamReader<unknown>();
  const out: unknown[] = [];
  for (const c of chunks) r.push(c, (m) => out.push({ ...(m as object) }));
  return out;
}

test('a renew frame round-trips with its node, seq and term', () => {
  const b = new RenewWriter().renew(513, 4_000_000_000, 77)!;
  assert.equal(b.length, RENEW_FRAME_BYTES);
  assert.equal(b[0], FRAME_MARK);
  assert.deepEqual(readAll([Buffer.from(b)]), [{ t: 'renew', node: 513, seq: 4_000_000_000, term: 77 }]);
});

test('a grant frame round-trips with its seq, term and (fractional) timings', () => {
  const b = new GrantWriter().grant(9, 200, 40.5, 10, 0xffff_ffff)!;
  assert.equal(b.length, GRANT_FRAME_BYTES);
  assert.deepEqual(readAll([Buffer.from(b)]), [{ t: 'grant', seq: 9, leaseMs: 200, renewMs: 40.5, driftMs: 10, term: 0xffff_ffff }]);
});

test('values that do not fit a frame are refused, for a JSON line instead', () => {
  const r = new RenewWriter();
  assert.equal(r.renew(1, 2 ** 32, 1), null);
  assert.equal(r.renew(1, 1, -1), null);
  assert.equal(r.renew(65_536, 1, 1), null);
  assert.equal(r.renew(1, 1.5, 1), null);
  assert.equal(new GrantWriter().grant(1, 200, 40, 10, 2 ** 32), null);
});

test('frames and lines mixed in one stream come out in order, however the stream is split', () => {
  const hello = { t: 'hello', node: 2, pid: 1, term: 3, frames: 1 };
  const prepare = { t: 'prepare', term: 4, config: { nodes: [], text: 'x'.repeat(300) } };
  const stream = Buffer.concat([
    Buffer.from(encodeLine(hello as never)),
    Buffer.from(new RenewWriter().renew(2, 1, 3)!),
    Buffer.from(new GrantWriter().grant(1, 200, 40, 10, 3)!),
    Buffer.from('\n'), // an empty line is skipped
    Buffer.from(encodeLine(prepare as never)),
    Buffer.from(new RenewWriter().renew(2, 2, 4)!),
  ]);
  const want = [hello, { t: 'renew', node: 2, seq: 1, term: 3 }, { t: 'grant', seq: 1, leaseMs: 200, renewMs: 40, driftMs: 10, term: 3 }, prepare, { t: 'renew', node: 2, seq: 2, term: 4 }];
  assert.deepEqual(readAll([stream]), want);
  for (let a = 1; a < stream.length; a++) {
    assert.deepEqual(readAll([stream.subarray(0, a), stream.subarray(a)]), want, `split at ${a}`);
  }
  assert.deepEqual(readAll([...stream].map((x) => Buffer.from([x]))), want, 'one byte at a time');
  assert.deepEqual(readAll(['', stream]), want, 'an empty chunk first');
});

test('the reader says whether a frame came (a node renews in frames from then on)', () => {
  const r = new ManagerStreamReader<unknown>();
  r.push(encodeLine({ t: 'evicted', term: 1 }), () => {});
  assert.equal(r.framed, false);
  r.push(Buffer.from(new GrantWriter().grant(1, 200, 40, 10, 1)!), () => {});
  assert.equal(r.framed, true);
});

test('a frame of unknown kind, a line that is not JSON and an over-long line are refused', () => {
  const code = (chunks: (Buffer | string)[]) => {
    try {
      readAll(chunks);
    } catch (e) {
      return (e as { code: string }).code;
    }
    return 'none';
  };
  assert.equal(code([Buffer.from([FRAME_MARK, 9, 0, 0])]), ErrorCodes.BAD_FRAME);
  assert.equal(code([Buffer.from([FRAME_MARK]), Buffer.from([9, 0, 0])]), ErrorCodes.BAD_FRAME);
  assert.equal(code(['{"t": nope}\n']), ErrorCodes.BAD_FRAME);
  const chunk = Buffer.alloc(1024 * 1024, 0x61);
  assert.equal(code(Array.from({ length: LINE_BYTES_MAX / chunk.length + 1 }, () => chunk)), ErrorCodes.FRAME_TOO_LARGE);
});

test('a writer reuses its buffer only after a write the socket took at once', () => {
  const w = new RenewWriter();
  const a = w.renew(1, 1, 1)!;
  w.sent(0);
  assert.equal(w.renew(1, 2, 1), a, 'written at once: the same buffer again');
  w.sent(12);
  const b = w.renew(1, 3, 1)!;
  assert.notEqual(b, a, 'still queued: a new buffer');
  assert.equal(a.readUInt32LE(4), 2, 'the queued frame kept its bytes');
  w.sent(undefined);
  assert.notEqual(w.renew(1, 4, 1), b, 'a socket that does not say: never reused');
});

test('the reader keeps no reference to a chunk: the socket may read the next bytes into the same buffer', () => {
  // A node's lease socket reads into one buffer it reuses (runtime/net/tls.ts connectSocket readInto):
  // bytes of an incomplete message that the reader holds must be its own copy, whichever chunk left them.
  const grant = new GrantWriter().grant(7, 100, 20, 5, 3)!;
  const line = Buffer.from(encodeLine({ t: 'evicted', term: 4 }));
  const reused = Buffer.alloc(64);
  for (const whole of [Buffer.from(grant), line]) {
    for (let a = 1; a < whole.length - 1; a++) {
      for (let b = a + 1; b < whole.length; b++) {
        const r = new ManagerStreamReader<unknown>();
        const out: unknown[] = [];
        for (const [from, to] of [[0, a], [a, b], [b, whole.length]] as const) {
          reused.fill(0xee); // the next read lands in the same memory
          whole.copy(reused, 0, from, to);
          r.push(reused.subarray(0, to - from), (m) => out.push({ ...(m as object) }));
        }
        assert.deepEqual(out, readAll([whole]), `split at ${a} and ${b} of ${whole.length}`);
      }
    }
  }
});
