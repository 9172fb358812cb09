import assert from 'node:assert/strict';
import { test } from 'node:test';
import { respLimits } from '../../../../runtime/resp/limits.js';
import { RespProtocolError, RespRequestParser, splitArgs } from '../../../../runtime/resp/parser.js';
import { RMap, RespWriter, Simple, Verbatim, err } from '../../../../runtime/resp/reply.js';

const L = respLimits(1024 * 1024);
const b = (s: string) => Buffer.from(s, 'latin1');
const strs = (a: Buffer[] | null) => a?.map((x) => x.toString('latin1')) ?? null;

function frame(args: string[]): string {
  return `*${args.length}\r\n` + args.map((a) => `$${Buffer.byteLength(a, 'latin1')}\r\n${a}\r\n`).join('');
}

function drain(p: RespRequestParser): string[][] {
  const out: string[][] = [];
  for (let a = p.next(); a !== null; a = p.next()) out.push(strs(a)!);
  return out;
}

test('pipelined multibulk requests parse the same however the bytes are split', () => {
  const reqs = [['SET', 'k', 'v'.repeat(300)], ['GET', 'k'], ['MSET', 'a', '', 'b', 'x\r\ny'], ['PING']];
  const wire = reqs.map(frame).join('');
  for (let cut = 1; cut < wire.length; cut += 7) {
    const p = new RespRequestParser(L);
    const got: string[][] = [];
    p.push(b(wire.slice(0, cut)));
    got.push(...drain(p));
    p.push(b(wire.slice(cut)));
    got.push(...drain(p));
    assert.deepEqual(got, reqs, `split at ${cut}`);
    assert.equal(p.bufferedBytes, 0);
  }
  // byte by byte
  const p = new RespRequestParser(L);
  const got: string[][] = [];
  for (const ch of wire) {
    p.push(b(ch));
    got.push(...drain(p));
  }
  assert.deepEqual(got, reqs);
});

test('arguments of a request that arrived whole are views into the received chunk (zero copy)', () => {
  const chunk = b(frame(['SET', 'key', 'value']));
  const p = new RespRequestParser(L);
  p.push(chunk);
  const a = p.next()!;
  assert.equal(a[2]!.buffer, chunk.buffer);
});

test('inline commands with quotes and escapes, as redis-cli/telnet send them', () => {
  const p = new RespRequestParser(L);
  p.push(b('PING\r\nSET "a b" \'c\\\'d\' "\\x41\\n"\n\r\n  ECHO   x  \r\n'));
  assert.deepEqual(drain(p), [['PING'], ['SET', 'a b', "c'd", 'A\n'], ['ECHO', 'x']]);
  assert.equal(splitArgs(b('"unbalanced')), null);
  assert.equal(splitArgs(b('"a"b')), null);
});

test('bounds: huge bulk length, huge array count, endless inline, bad type byte -> Redis protocol errors', () => {
  const bad = (wire: string | Buffer, msg: RegExp) => {
    const p = new RespRequestParser(L);
    assert.throws(() => {
      p.push(typeof wire === 'string' ? b(wire) : wire);
      p.next();
    }, (e: Error) => e instanceof RespProtocolError && msg.test(e.message));
  };
  bad('*1\r\n$9999999999\r\n', /^Protocol error: invalid bulk length$/);
  bad(`*1\r\n$${L.bulkDiscardBytesMax + 1}\r\n`, /invalid bulk length/);
  bad('*1\r\n$-5\r\n', /invalid bulk length/);
  bad(`*${L.argsMax + 1}\r\n`, /^Protocol error: invalid multibulk length$/);
  bad('*1\r\n+OK\r\n', /expected '\$', got '\+'/);
  bad('*12x\r\n', /invalid mbulk length/);
  bad('*' + '1'.repeat(40), /too big mbulk count string/);
  bad(Buffer.alloc(L.inlineBytesMax + 10, 0x41), /too big inline request/);
  bad('*1\r\n$3\r\nabcXY', /expected CRLF/);
  bad('SET "a\r\n', /unbalanced quotes/);
});

test('a bulk string over bulkBytesMax is dropped as it arrives: the request comes out marked, the next one parses', () => {
  const p = new RespRequestParser(L);
  const n = L.bulkBytesMax + 1;
  p.push(b(`*4\r\n$3\r\nSET\r\n$1\r\nk\r\n$${n}\r\n`));
  assert.equal(p.next(), null);
  for (let left = n; left > 0; left -= 4096) {
    p.push(Buffer.alloc(Math.min(4096, left), 0x61));
    assert.equal(p.next(), null);
    assert.ok(p.bufferedBytes < 64, `${p.bufferedBytes} bytes held while dropping`);
  }
  p.push(b('\r\n$2\r\nNX\r\n*1\r\n$4\r\nPING\r\nPING\r\n'));
  assert.deepEqual(p.next()!.map(String), ['SET', 'k', '', 'NX']);
  assert.equal(p.oversizedBytes, n);
  assert.deepEqual(p.next()!.map(String), ['PING']);
  assert.equal(p.oversizedBytes, 0);
  assert.deepEqual(p.next()!.map(String), ['PING']);
  assert.equal(p.oversizedBytes, 0);
  // All in one chunk.
  const q = new RespRequestParser(L);
  q.push(Buffer.concat([b(`*2\r\n$3\r\nGET\r\n$${n}\r\n`), Buffer.alloc(n + 2, 0x62), b('*1\r\n$4\r\nPING\r\n')]));
  assert.deepEqual(q.next()!.map(String), ['GET', '']);
  assert.equal(q.oversizedBytes, n);
  assert.deepEqual(q.next()!.map(String), ['PING']);
});

test('before authentication: more than preAuthArgsMax arguments or a bulk over preAuthBulkBytesMax is a protocol error', () => {
  const p = new RespRequestParser(L);
  p.preAuth = true;
  p.push(b(`*10\r\n` + '$1\r\na\r\n'.repeat(10) + `*2\r\n$4\r\nAUTH\r\n$${L.preAuthBulkBytesMax}\r\n`));
  assert.equal(p.next()!.length, 10);
  assert.equal(p.next(), null, 'a bulk of exactly the bound waits for its bytes');
  const refuse = (wire: string, msg: string) => {
    const q = new RespRequestParser(L);
    q.preAuth = true;
    q.push(b(wire));
    assert.throws(() => q.next(), (e: Error) => e instanceof RespProtocolError && e.message === `Protocol error: ${msg}`);
  };
  refuse('*11\r\n', 'unauthenticated multibulk length');
  refuse(`*2\r\n$4\r\nAUTH\r\n$${L.preAuthBulkBytesMax + 1}\r\n`, 'unauthenticated bulk length');
  const authed = new RespRequestParser(L);
  authed.push(b('*11\r\n' + '$1\r\na\r\n'.repeat(11)));
  assert.equal(authed.next()!.length, 11, 'authenticated, the Redis bounds apply');
});

test('a request larger than requestBytesMax is refused from its header or while it arrives, not buffered', () => {
  const small = { ...L, requestBytesMax: 64 * 1024, bulkBytesMax: 1 << 20 };
  const p = new RespRequestParser(small);
  p.push(b('*2\r\n$3\r\nSET\r\n$500000\r\n'));
  assert.throws(() => p.next(), /too big request/); // the declared length alone exceeds the bound
  const q = new RespRequestParser(small);
  q.push(b('*100000\r\n'));
  assert.throws(() => {
    for (let i = 0; i < 100; i++) {
      q.push(b('$1000\r\n' + 'a'.repeat(1000) + '\r\n'));
      q.next();
    }
  }, /too big request/);
  assert.ok(q.bufferedBytes <= small.requestBytesMax + 1100);
});

test('10^5 fuzzed frames: only RespProtocolError, never another exception, buffered bytes bounded', () => {
  let seed = 0x2545f491;
  const rnd = (n: number) => {
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    return (seed >>> 0) % n;
  };
  const pieces = ['*', '$', '\r\n', '\r', '\n', '-1', '0', '3', '99999999999', 'GET', ' ', '"', "'", '\\x', '*2\r\n$3\r\nGET\r\n$1\r\nk\r\n', '\x00\xff'];
  const small = { ...L, requestBytesMax: 256 * 1024 };
  let protocolErrors = 0;
  let requests = 0;
  let p = new RespRequestParser(small);
  for (let i = 0; i < 100_000; i++) {
    let s = '';
    const n = 1 + rnd(8);
    for (let k = 0; k < n; k++) s += rnd(4) === 0 ? String.fromCharCode(rnd(256)) : pieces[rnd(pieces.length)]!;
    try {
      p.push(b(s));
      while (p.next() !== null) requests++;
    } catch (e) {
      assert.ok(e instanceof RespProtocolError, `frame ${i}: ${(e as Error).stack}`);
      protocolErrors++;
      p = new RespRequestParser(small); // the connection closes; a new one starts clean
    }
    assert.ok(p.bufferedBytes <= small.requestBytesMax + 64, `frame ${i}: ${p.bufferedBytes} B buffered`);
  }
  assert.ok(protocolErrors > 100 && requests > 100, `both outcomes exercised (${protocolErrors} errors, ${requests} requests)`);
});

test('replies encode per protocol version: maps, nulls and verbatim strings fall back in RESP2', () => {
  const enc = (r: Parameters<RespWriter['write']>[0], proto: number) => {
    const w = new RespWriter();
    w.write(r, proto);
    return w.take().toString('latin1');
  };
  assert.equal(enc(null, 2), '$-1\r\n');
  assert.equal(enc(null, 3), '_\r\n');
  assert.equal(enc(new RMap([['a', 1]]), 2), '*2\r\n$1\r\na\r\n:1\r\n');
  assert.equal(enc(new RMap([['a', 1]]), 3), '%1\r\n$1\r\na\r\n:1\r\n');
  assert.equal(enc(new Verbatim('x'), 3), '=5\r\ntxt:x\r\n');
  assert.equal(enc(new Verbatim('x'), 2), '$1\r\nx\r\n');
  assert.equal(enc([new Simple('OK'), err('ERR a\r\nb'), 'é'], 2), '*3\r\n+OK\r\n-ERR a b\r\n$2\r\n\xc3\xa9\r\n');
});

test('RespWriter.take hands out bytes that later replies never overwrite, small and large batches', () => {
  const w = new RespWriter();
  for (const size of [3, 5000, 40_000]) {
    w.write('x'.repeat(size), 2);
    const first = w.take();
    const want = `$${size}\r\n${'x'.repeat(size)}\r\n`;
    w.write('y'.repeat(size), 2);
    const second = w.take();
    assert.equal(first.toString('latin1'), want);
    assert.equal(second.toString('latin1'), want.replaceAll('x', 'y'));
    assert.equal(w.length, 0);
  }
});
