// The client protocol end to end over real TCP on 127.0.0.1: serveClients in front of an in-memory
// fake KvHandler (test/fixtures/fake-kv.ts, term 3), driven by RowanClient (pipelined, hundreds in
// flight, routed over two worker ports), by raw sockets sending bad input, and by `rowan put/get/del`
// as child processes. Bad input gets an ERROR response or a closed connection, the server keeps
// serving everyone else, and nothing partial ever reaches the handler.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { RowanClient } from '../../client/client.js';
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import { serveClients, type RpcServer, type ServeOptions } from '../../runtime/rpc/rpc-server.js';
import { FrameReader, Op, PROTOCOL_VERSION, Status, decodeResponse, encodeRequest, type Response } from '../../runtime/rpc/frames.js';
import * as L from '../../runtime/rpc/frames-layout.js';
import { ALWAYS_STALE, BOOM, FakeKv, SLOW, TICK, fakeCluster } from '../fixtures/fake-kv.js';

const limits = { keyBytesMax: 1024, valueBytesMax: 1024 * 1024 };
const rowanBin = new URL('../../../bin/rowan', import.meta.url).pathname;
const tmp = mkdtempSync(join(tmpdir(), 'rowan-rpc-'));

const servers: RpcServer[] = [];
after(async () => {
  await Promise.all(servers.map((s) => s.close()));
  rmSync(tmp, { recursive: true, force: true });
});

/** `n` worker ports sharing one fake handler (one node with n workers). */
async function startFake(n = 1, extra: Partial<ServeOptions> = {}): Promise<{ kv: FakeKv; srv: RpcServer[]; ports: number[] }> {
  const kv = new FakeKv(3);
  const srv: RpcServer[] = [];
  for (let i = 0; i < n; i++) srv.push(await serveClients({ host: '127.0.0.1', port: 0, handler: kv, limits, secret: null, ...extra }));
  servers.push(...srv);
  kv.ports = srv.map((s) => s.port);
  return { kv, srv, ports: kv.ports };
}

async function rejectsCode(p: Promise<unknown>, code: string): Promise<void> {
  await assert.rejects(p, (err: unknown) => {
    assert.ok(err instanceof RowanError, `expected a RowanError, got ${String(err)}`);
    assert.equal(err.code, code, err.message);
    return true;
  });
}

// ---- raw sockets -------------------------------------------------------------------------------------

interface RawResult {
  responses: Response[];
  closed: boolean;
}

/** Write `writes` on a fresh connection; collect responses until `until` holds, the server closes, or waitMs. */
function raw(port: number, writes: Uint8Array[], o: { end?: boolean; until?: (r: Response[]) => boolean; waitMs?: number } = {}): Promise<RawResult> {
  return new Promise((resolve) => {
    const s = connect({ host: '127.0.0.1', port });
    const reader = new FrameReader(L.responseBytesMax(limits));
    const responses: Response[] = [];
    let done = false;
    const finish = (closed: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      s.destroy();
      resolve({ responses, closed });
    };
    const timer = setTimeout(() => finish(false), o.waitMs ?? 3000);
    s.on('connect', () => {
      for (const w of writes) s.write(w);
      if (o.end) s.end();
    });
    s.on('data', (chunk) => {
      reader.push(chunk);
      for (let f = reader.next(); f; f = reader.next()) responses.push(decodeResponse(f, limits));
      if (o.until?.(responses)) finish(false);
    });
    s.on('error', () => {});
    s.on('close', () => finish(true));
  });
}

const hello = (id = 1, version = PROTOCOL_VERSION) => encodeRequest({ op: Op.HELLO, id, term: 0, version });
const key = (s: string) => Buffer.from(s);
const get = (id: number, k: string) => encodeRequest({ op: Op.GET, id, term: 3, key: key(k) });
const put = (id: number, k: string | Uint8Array, v: Uint8Array) =>
  encodeRequest({ op: Op.PUT, id, term: 3, key: typeof k === 'string' ? key(k) : k, value: v });
const statuses = (r: RawResult) => r.responses.map((x) => [x.id, x.status === Status.ERROR ? x.code : x.status]);

// ---- tests -------------------------------------------------------------------------------------------

test('RowanClient: hundreds of pipelined put/get/del in flight, routed over two worker ports', async (t) => {
  const { kv, srv, ports } = await startFake(2);
  const c = await RowanClient.connect({ endpoints: [`127.0.0.1:${ports[0]}`], maxInFlight: 512 });
  assert.equal(c.config().term, 3, 'the configuration came from CONFIG');
  const n = 2000;
  const keys = Array.from({ length: n }, (_, i) => (i % 4 === 0 ? `${TICK}${i}` : `k${i}`));
  await Promise.all(keys.map((k, i) => c.put(k, `value-${i}`)));
  assert.equal(kv.map.size, n);
  assert.ok(kv.runningMax > 50, `requests ran concurrently in the handler (max ${kv.runningMax})`);
  assert.ok(srv[0]!.stats.requests > n / 4 && srv[1]!.stats.requests > n / 4, 'both workers of the node got their shards');
  const got = await Promise.all(keys.map((k) => c.get(k)));
  got.forEach((v, i) => assert.equal(v && Buffer.from(v).toString(), `value-${i}`));
  assert.deepEqual(await c.getReplica(0, keys[7]!), Buffer.from('value-7'));
  await Promise.all(keys.filter((_, i) => i % 2 === 0).map((k) => c.del(k)));
  const after = await Promise.all(keys.map((k) => c.get(k)));
  after.forEach((v, i) => assert.equal(v === null, i % 2 === 0, `key ${i}`));
  assert.equal(await c.get('never-put'), null);
  await rejectsCode(c.put('x'.repeat(1025), 'v'), ErrorCodes.KEY_TOO_LARGE);
  await rejectsCode(c.put('x', new Uint8Array(limits.valueBytesMax + 1)), ErrorCodes.VALUE_TOO_LARGE);
  const big = Buffer.alloc(limits.valueBytesMax, 7);
  await c.put('big', big);
  assert.ok(big.equals((await c.get('big'))!), 'a 1 MiB value round-trips');

  // Throughput of one client against the fake handler, many requests in flight.
  const m = 20_000;
  const value = new Uint8Array(100).fill(1);
  for (let i = 0; i < 5000; i += 500) await Promise.all(Array.from({ length: 500 }, (_, j) => c.get(`p${i + j}`))); // warm up the JIT
  let t0 = performance.now();
  await Promise.all(Array.from({ length: m }, (_, i) => c.put(`p${i}`, value)));
  const putRate = m / ((performance.now() - t0) / 1000);
  t0 = performance.now();
  await Promise.all(Array.from({ length: m }, (_, i) => c.get(`p${i}`)));
  const getRate = m / ((performance.now() - t0) / 1000);
  t.diagnostic(`one client, 512 in flight, 100 B values: ${Math.round(putRate)} PUT/s, ${Math.round(getRate)} GET/s`);
  await c.close();
});

test('a stale term makes the client fetch the new configuration (CONFIG) and succeed', async () => {
  const { kv, ports } = await startFake(2);
  const c = await RowanClient.connect({ cluster: fakeCluster(ports, 1) });
  assert.equal(c.config().term, 1);
  await c.put('a', '1');
  assert.equal(c.config().term, 3, 'refreshed to the server term');
  assert.ok(kv.calls.stale >= 1);
  assert.deepEqual(await c.get('a'), Buffer.from('1'));

  // The cluster moves on while 300 requests are in flight: they all retry, sharing a few refreshes.
  kv.currentTerm = 4;
  const configsBefore = kv.calls.config;
  await Promise.all(Array.from({ length: 300 }, (_, i) => c.put(`${TICK}${i}`, 'v')));
  assert.equal(c.config().term, 4);
  assert.ok(kv.calls.config - configsBefore <= 5, `concurrent refreshes coalesce (${kv.calls.config - configsBefore} CONFIGs)`);

  // A server that never accepts the term: bounded retries, then the error itself.
  const stale0 = kv.calls.stale;
  const c2 = await RowanClient.connect({ cluster: fakeCluster(ports, 4), retries: 2 });
  await rejectsCode(c2.put(ALWAYS_STALE, 'v'), ErrorCodes.STALE_TERM);
  assert.equal(kv.calls.stale - stale0, 3, 'one try and two retries');
  await Promise.all([c.close(), c2.close()]);
});

test('a client made from a cluster file re-reads it, then asks the nodes', async () => {
  const { ports } = await startFake(1);
  const file = join(tmp, 'cluster.json');
  writeFileSync(file, JSON.stringify(fakeCluster(ports, 1)));
  const c = await RowanClient.connect({ cluster: file });
  await c.put('f', 'v');
  assert.equal(c.config().term, 3);
  await c.close();
});

test('timeouts, a dead server and a closed idle connection', async () => {
  const { ports, srv } = await startFake(1, { idleMs: 150 });
  const c = await RowanClient.connect({ endpoints: [`127.0.0.1:${ports[0]}`], timeoutMs: 250 });
  await rejectsCode(c.get(`${SLOW}x`), ErrorCodes.TIMEOUT);
  await sleep(400); // the server closes the idle connection; the client opens a new one when needed
  const c2 = await RowanClient.connect({ endpoints: [`127.0.0.1:${ports[0]}`] });
  await c2.put('idle', 'v');
  await sleep(400);
  assert.deepEqual(await c2.get('idle'), Buffer.from('v'), 'works after the server closed the idle connection');
  await srv[0]!.close();
  await rejectsCode(c2.get('idle'), ErrorCodes.PEER_GONE);
  await Promise.all([c.close(), c2.close()]);
  await rejectsCode(c2.get('idle'), ErrorCodes.PEER_GONE);
  await rejectsCode(RowanClient.connect({ endpoints: [`127.0.0.1:${ports[0]}`] }), ErrorCodes.PEER_GONE);
});

test('flow control: no more than inFlightMax requests of one connection run at once', async () => {
  const { kv, srv } = await startFake(1, { inFlightMax: 16 });
  const c = await RowanClient.connect({ endpoints: [`127.0.0.1:${srv[0]!.port}`], maxInFlight: 1000 });
  await Promise.all(Array.from({ length: 1000 }, (_, i) => c.put(`${TICK}${i}`, 'v')));
  assert.equal(kv.map.size, 1000);
  assert.ok(kv.runningMax <= 16 && kv.runningMax >= 8, `handler saw at most 16 at once (saw ${kv.runningMax})`);
  await c.close();
});

test('responses leave in completion order and carry their request ids', async () => {
  const { kv, ports } = await startFake(1);
  kv.map.set(`${SLOW}a`, Buffer.from('slow'));
  const r = await raw(ports[0]!, [Buffer.concat([hello(), get(2, `${SLOW}a`), get(3, 'missing')])], { until: (x) => x.length === 3 });
  assert.deepEqual(statuses(r), [[1, Status.OK], [3, Status.NOT_FOUND], [2, Status.VALUE]]);
  assert.ok(r.responses.every((x) => x.term === 3), "responses carry the server's term");
  // Requests followed by a FIN are still all answered (half-close), then the connection ends.
  const fin = await raw(ports[0]!, [Buffer.concat([hello(), put(2, 'h', Buffer.from('x')), get(3, 'h')])], { end: true });
  assert.deepEqual(statuses(fin), [[1, Status.OK], [2, Status.OK], [3, Status.VALUE]]);
  assert.ok(fin.closed);
});

test('bad input on raw sockets: an ERROR or a closed connection, nothing partial reaches the handler', async () => {
  const { kv, srv, ports } = await startFake(1, { handshakeMs: 300 });
  const port = ports[0]!;
  const seed = await RowanClient.connect({ endpoints: [`127.0.0.1:${port}`] });
  await seed.put('kept', 'v');
  const before = kv.snapshot();
  const putsBefore = kv.calls.put;
  const header = (o: { length: number; op: number; id: number; reserved?: number }) => {
    const b = Buffer.alloc(L.HEADER_BYTES);
    b.writeUInt32LE(o.length, 0);
    b[4] = o.op;
    b.writeUInt16LE(o.reserved ?? 0, 6);
    b.writeUInt32LE(o.id, 8);
    b.writeUInt32LE(3, 16);
    return b;
  };
  const goOn = (n: number) => ({ until: (x: Response[]) => x.length === n });

  // Well-framed but wrong: answered, and the connection goes on (the trailing GET is answered too).
  const reservedPut = put(2, 'bad', Buffer.from('x'));
  reservedPut.writeUInt16LE(1, 6);
  let r = await raw(port, [hello(), reservedPut, get(3, 'kept')], goOn(3));
  assert.deepEqual(statuses(r), [[1, Status.OK], [2, ErrorCodes.BAD_FRAME], [3, Status.VALUE]], 'reserved non-zero');
  const inconsistent = put(4, 'bad', Buffer.from('xyz'));
  inconsistent.writeUInt32LE(1000, L.HEADER_BYTES + L.PUT_VALUE_LEN_OFF);
  r = await raw(port, [hello(), inconsistent, get(5, 'kept')], goOn(3));
  assert.deepEqual(statuses(r), [[1, Status.OK], [4, ErrorCodes.BAD_FRAME], [5, Status.VALUE]], 'lengths disagree with the frame');
  r = await raw(port, [hello(), header({ length: L.LENGTH_MIN, op: 99, id: 6 }), get(7, 'kept')], goOn(3));
  assert.deepEqual(statuses(r), [[1, Status.OK], [6, ErrorCodes.UNKNOWN_OP], [7, Status.VALUE]], 'unknown op');
  r = await raw(port, [hello(), put(8, Buffer.alloc(2000, 65), Buffer.from('v')), get(9, 'kept')], goOn(3));
  assert.deepEqual(statuses(r), [[1, Status.OK], [8, ErrorCodes.KEY_TOO_LARGE], [9, Status.VALUE]], 'key over the limit');
  r = await raw(port, [hello(), put(10, 'bigv', new Uint8Array(limits.valueBytesMax + 1)), get(11, 'kept')], goOn(3));
  assert.deepEqual(statuses(r), [[1, Status.OK], [10, ErrorCodes.VALUE_TOO_LARGE], [11, Status.VALUE]], 'value over the limit');

  // Cannot be framed or skipped the handshake: an ERROR, then the server closes.
  r = await raw(port, [hello(), header({ length: 3, op: Op.PUT, id: 12 })]);
  assert.deepEqual(statuses(r), [[1, Status.OK], [0, ErrorCodes.BAD_FRAME]], 'length below the header');
  assert.ok(r.closed, 'closed after a length below the header');
  r = await raw(port, [hello(), header({ length: 0x7fffffff, op: Op.PUT, id: 13 })]);
  assert.deepEqual(statuses(r), [[1, Status.OK], [13, ErrorCodes.FRAME_TOO_LARGE]], 'length above the limit');
  assert.ok(r.closed, 'closed after a length above the limit');
  r = await raw(port, [put(14, 'early', Buffer.from('x')), get(15, 'kept')]);
  assert.deepEqual(statuses(r), [[14, ErrorCodes.NO_HANDSHAKE]], 'a request before HELLO');
  assert.ok(r.closed, 'closed after a request before HELLO');
  r = await raw(port, [hello(1, 99)]);
  assert.deepEqual(statuses(r), [[1, ErrorCodes.BAD_FRAME]], 'another protocol version');
  assert.ok(r.closed);
  r = await raw(port, [Buffer.from('GET / HTTP/1.1\r\nHost: x\r\n\r\n')]);
  assert.ok(r.closed && r.responses.every((x) => x.status === Status.ERROR), 'HTTP at the client port');

  // A truncated frame, then FIN: the partial PUT is dropped and reported; then a reset mid-frame.
  const truncated = put(16, 'trunc', new Uint8Array(5000).fill(9));
  r = await raw(port, [hello(), truncated.subarray(0, 2000)], { end: true });
  assert.deepEqual(statuses(r), [[1, Status.OK], [16, ErrorCodes.BAD_FRAME]], 'truncated frame then close');
  assert.ok(r.closed);
  const s = connect({ host: '127.0.0.1', port });
  s.on('error', () => {});
  await new Promise((res) => s.on('connect', res));
  s.write(Buffer.concat([hello(), truncated.subarray(0, 3000)]));
  await sleep(50);
  s.resetAndDestroy();
  // A connection that never says anything is closed after handshakeMs.
  r = await raw(port, [], { waitMs: 3000 });
  assert.ok(r.closed && r.responses.length === 0, 'silent connection closed by the handshake timer');

  await sleep(100);
  assert.equal(kv.snapshot(), before, 'the store is unchanged');
  assert.equal(kv.calls.put, putsBefore, 'no bad PUT reached the handler');
  // The server kept serving throughout, other connections included.
  assert.deepEqual(await seed.get('kept'), Buffer.from('v'));
  const other = await RowanClient.connect({ endpoints: [`127.0.0.1:${port}`] });
  await other.put('after', 'ok');
  assert.deepEqual(await other.get('after'), Buffer.from('ok'));

  // A handler bug is answered ROWAN_ERR_INTERNAL, not a crash.
  await rejectsCode(other.put(BOOM, 'v'), ErrorCodes.INTERNAL);
  assert.equal(srv[0]!.stats.internalErrors, 1);
  await Promise.all([seed.close(), other.close()]);
  for (let i = 0; i < 50 && srv[0]!.stats.open > 0; i++) await sleep(20);
  assert.equal(srv[0]!.stats.open, 0, 'every connection is gone once its peer is');
});

// ---- the CLI -----------------------------------------------------------------------------------------

function rowan(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [rowanBin, ...args], { timeout: 20_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

test('rowan put/get/del as child processes against the fake server', async () => {
  const { kv, ports } = await startFake(2);
  const ep = `127.0.0.1:${ports[1]}`;
  let r = await rowan('put', 'cli-key', 'héllo wörld', '--endpoint', ep);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(Buffer.from(kv.map.get('cli-key')!).toString(), 'héllo wörld');
  r = await rowan('get', 'cli-key', '--endpoint', ep);
  assert.deepEqual([r.code, r.stdout], [0, 'héllo wörld\n'], r.stderr);
  r = await rowan('get', 'cli-key', '--raw', '--endpoint', ep);
  assert.equal(r.stdout, 'héllo wörld');
  const file = join(tmp, 'cli-cluster.json');
  writeFileSync(file, JSON.stringify(fakeCluster(ports, 1)));
  r = await rowan('del', 'cli-key', '--cluster', file);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(kv.map.has('cli-key'), false);
  r = await rowan('get', 'cli-key', '--endpoint', ep);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /cli-key.*ROWAN_ERR_NOT_FOUND/);
  r = await rowan('get', 'cli-key');
  assert.equal(r.code, 2, 'no --cluster or --endpoint is a usage error');
  assert.match(r.stderr, /--cluster.*--endpoint/);
  r = await rowan('put', 'only-key', '--endpoint', ep);
  assert.equal(r.code, 2, 'a missing argument is a usage error');
  r = await rowan('get', 'k', '--endpoint', '127.0.0.1:1');
  assert.equal(r.code, 1);
  assert.match(r.stderr, /ROWAN_ERR_PEER_GONE/);
  r = await rowan('put', 'x'.repeat(2000), 'v', '--endpoint', ep);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /ROWAN_ERR_KEY_TOO_LARGE/);
  r = await rowan('get', '--help');
  assert.equal(r.code, 0);
  assert.match(r.stdout, /--endpoint/);
  assert.match(r.stdout, /Exit codes/);
});

test('CONFIG never carries the checksum seed: a client that knew it could make a value hold a block that verifies', async () => {
  const { kv, ports } = await startFake(1);
  const plain = kv.config.bind(kv);
  kv.config = () => ({ ...plain(), checksumSeed: 0x5eed1234 });
  const c = await RowanClient.connect({ endpoints: [`127.0.0.1:${ports[0]}`] });
  try {
    assert.equal(c.config().term, 3);
    assert.equal('checksumSeed' in c.config(), false, JSON.stringify(c.config()).slice(0, 200));
  } finally {
    await c.close();
  }
});
