// Authentication against a real cluster (issue 12, "Authentication"): `rowan cluster` makes a secret
// (0600) and its nodes demand it on every port -- the binary client port (REPLICATE of rpc mode
// included), the Redis ports and the tcp fabric's NIC -- while the CLI and RowanClient find it beside
// cluster.json. Unauthenticated requests get ROWAN_ERR_NOAUTH (-NOAUTH on Redis) and change nothing.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { connect, type Socket } from 'node:net';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { RowanClient } from '../../actors/kv/client/client.js';
import { defaultLimits } from '../../config/limits.js';
import { readSecretFile, secretHex, newNonce, proof } from '../../config/base/secret.js';
import { FileConfigStore } from '../../config/store.js';
import { decodeResponse, encodeRequest, FrameReader, Op, Status, type Response } from '../../runtime/rpc/frames.js';
import { CLIENT_LABEL, SERVER_LABEL } from '../../runtime/rpc/frames-layout.js';
import * as nic from '../../runtime/fabric/nic-frames.js';
import { launchCluster, randomBasePort, stopCluster, type LaunchedCluster } from '../fixtures/cluster.js';
import { rawPeer } from '../fixtures/nic-raw-peer.js';
import { raw } from '../fixtures/redis.js';

const rowan = new URL('../../../bin/rowan', import.meta.url).pathname;
const limits = { keyBytesMax: defaultLimits.keyBytesMax, valueBytesMax: defaultLimits.valueBytesMax };
const dir = mkdtempSync(join(tmpdir(), 'rowan-auth-'));
const file = join(dir, 'cluster.json');
const base = randomBasePort();
let cl: LaunchedCluster;
let secret: Uint8Array;

before(async () => {
  cl = launchCluster(dir, base, ['--nodes', '2', '--replication', '2', '--shards', '4', '--fabric', 'tcp', '--replication-mode', 'rpc']);
  await cl.ready;
  secret = readSecretFile(join(dir, 'secret'));
});

after(async () => {
  await stopCluster(cl.child);
  rmSync(dir, { recursive: true, force: true });
});

/** A raw client-port connection: send frames, take responses in order. */
async function rpcPeer(port: number): Promise<{ send(b: Uint8Array): void; next(): Promise<Response>; closed: Promise<void>; end(): void }> {
  const s: Socket = await new Promise((resolve, reject) => {
    const x = connect({ port, host: '127.0.0.1' }, () => resolve(x));
    x.once('error', reject);
  });
  s.on('error', () => {});
  const reader = new FrameReader(1 << 24);
  const got: Response[] = [];
  const waiting: ((r: Response | null) => void)[] = [];
  const closed = new Promise<void>((r) => s.once('close', () => {
    for (const w of waiting.splice(0)) w(null);
    r();
  }));
  s.on('data', (d) => {
    reader.push(d);
    for (let f = reader.next(); f; f = reader.next()) {
      const r = decodeResponse(f, limits);
      const w = waiting.shift();
      if (w) w(r);
      else got.push(r);
    }
  });
  return {
    send: (b) => void s.write(b),
    next: () => {
      const r = got.shift();
      if (r) return Promise.resolve(r);
      return new Promise((resolve, reject) => {
        const t = setTimeout(() => reject(new Error('no response within 30 s')), 30_000);
        waiting.push((x) => (clearTimeout(t), x ? resolve(x) : reject(new Error('closed before a response'))));
      });
    },
    closed,
    end: () => void s.destroy(),
  };
}

const codeOf = (r: Response) => (r.status === Status.ERROR ? r.code : `status ${r.status}`);

test('the secret, the pools and the receive queues are created 0600', () => {
  assert.equal(statSync(join(dir, 'secret')).mode & 0o777, 0o600);
  for (const n of [0, 1]) for (const f of ['pool.pm', 'rowan.srq']) assert.equal(statSync(join(dir, `node-${n}`, f)).mode & 0o777, 0o600, `node-${n}/${f}`);
});

test('client port: before AUTH every request is ROWAN_ERR_NOAUTH and nothing runs; a wrong proof ends the connection', async () => {
  const cfg = new FileConfigStore(file).readSync();
  const port = cfg.nodes[0]!.workerPorts[0]!;
  const term = cfg.term;
  const p = await rpcPeer(port);
  const mine = newNonce();
  p.send(encodeRequest({ op: Op.HELLO, id: 1, term: 0, version: 2, nonce: mine }));
  const ch = await p.next();
  assert.equal(ch.status, Status.CHALLENGE);
  assert.ok(ch.status === Status.CHALLENGE);
  assert.deepEqual([...ch.proof], [...proof(secret, SERVER_LABEL, mine, ch.nonce)], 'the server proves the secret');
  const key = new TextEncoder().encode('noauth-key');
  p.send(encodeRequest({ op: Op.PUT, id: 2, term, key, value: key }));
  p.send(encodeRequest({ op: Op.GET, id: 3, term, key }));
  p.send(encodeRequest({ op: Op.DEL, id: 4, term, key }));
  p.send(encodeRequest({ op: Op.CONFIG, id: 5, term: 0 }));
  p.send(encodeRequest({ op: Op.REPLICATE, id: 6, term, block: new Uint8Array(64).fill(1) }));
  const answers = await Promise.all([p.next(), p.next(), p.next(), p.next(), p.next()]);
  assert.deepEqual(answers.map(codeOf), Array(5).fill('ROWAN_ERR_NOAUTH'));
  // A proof made with another secret: AUTH_FAILED, and the server ends the connection.
  p.send(encodeRequest({ op: Op.AUTH, id: 7, term: 0, proof: proof(new Uint8Array(32), CLIENT_LABEL, ch.nonce, mine) }));
  assert.equal(codeOf(await p.next()), 'ROWAN_ERR_AUTH_FAILED');
  await p.closed;

  // A version 1 client is told to upgrade.
  const old = await rpcPeer(port);
  const v1 = Buffer.alloc(24);
  v1.writeUInt32LE(20, 0);
  v1[4] = Op.HELLO;
  v1.writeUInt32LE(1, 8);
  v1.writeUInt32LE(1, 20);
  old.send(v1);
  const r = await old.next();
  assert.equal(codeOf(r), 'ROWAN_ERR_BAD_FRAME');
  assert.match(r.status === Status.ERROR ? r.message : '', /protocol version 1.*upgrade the client/);
  await old.closed;

  // Nothing was applied: an authenticated client (secret found beside cluster.json) sees no value.
  const c = await RowanClient.connect({ cluster: file });
  assert.equal(await c.get('noauth-key'), null);
  await c.close();
});

test('RowanClient and the CLI: the secret beside cluster.json works (REPLICATE included); a wrong or missing one is refused', async () => {
  const c = await RowanClient.connect({ cluster: file });
  for (let i = 0; i < 20; i++) await c.put(`auth-${i}`, `v${i}`); // rpc mode: every PUT REPLICATEs to the backup
  assert.equal(new TextDecoder().decode((await c.get('auth-7'))!), 'v7');
  await c.close();
  const cfg = new FileConfigStore(file).readSync();
  const wrong = await RowanClient.connect({ cluster: cfg, secret: 'cd'.repeat(32), retries: 0 });
  await assert.rejects(wrong.get('auth-7'), { code: 'ROWAN_ERR_AUTH_FAILED' });
  await wrong.close();
  const none = await RowanClient.connect({ cluster: cfg, retries: 0 });
  await assert.rejects(none.put('auth-none', 'x'), { code: 'ROWAN_ERR_NOAUTH', message: /requires the cluster secret/ });
  await none.close();
  const good = await RowanClient.connect({ cluster: cfg, secret: secretHex(secret) });
  assert.equal(await good.get('auth-none'), null, 'the refused PUT was not applied');
  await good.close();

  const cli = (...args: string[]) =>
    new Promise<{ code: number; out: string; err: string }>((resolve) =>
      execFile(process.execPath, [rowan, ...args], { timeout: 30_000 }, (e, out, err) => resolve({ code: e ? Number(e.code ?? 1) : 0, out, err })),
    );
  let r = await cli('get', 'auth-3', '--cluster', file);
  assert.equal(r.code, 0, r.err);
  assert.equal(r.out, 'v3\n');
  const badFile = join(dir, 'wrong-secret');
  writeFileSync(badFile, 'ef'.repeat(32) + '\n', { mode: 0o600 });
  r = await cli('get', 'auth-3', '--cluster', file, '--secret-file', badFile, '--timeout', '2000');
  assert.equal(r.code, 1);
  assert.match(r.err, /ROWAN_ERR_AUTH_FAILED/);
});

test('Redis ports: -NOAUTH until AUTH; wrong passwords are WRONGPASS; HELLO 3 AUTH and ioredis password work', async () => {
  const cfg = new FileConfigStore(file).readSync();
  const port = cfg.nodes[0]!.resp!.ports[0]!;
  const pw = secretHex(secret);
  let r = await raw(port, ['*2\r\n$3\r\nGET\r\n$6\r\nauth-1\r\n', '*3\r\n$3\r\nSET\r\n$4\r\nevil\r\n$1\r\nx\r\n', 'AUTH nope\r\n', 'HELLO 3\r\n', 'QUIT\r\n']);
  assert.equal(
    r.text,
    '-NOAUTH Authentication required.\r\n-NOAUTH Authentication required.\r\n-WRONGPASS invalid username-password pair or user is disabled.\r\n' +
      '-NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time\r\n+OK\r\n',
  );
  r = await raw(port, [`AUTH ${pw}\r\n`, 'GET auth-1\r\n', 'GET evil\r\n', 'QUIT\r\n']);
  assert.equal(r.text, '+OK\r\n$2\r\nv1\r\n$-1\r\n+OK\r\n', 'the SET before AUTH did not run');
  r = await raw(port, [`HELLO 3 AUTH default ${pw}\r\n`, 'GET auth-2\r\n', 'QUIT\r\n']);
  assert.match(r.text, /^%7\r\n[\s\S]*\$2\r\nv2\r\n\+OK\r\n$/);
  const io = new Redis({ port, password: pw });
  assert.equal(await io.get('auth-4'), 'v4');
  io.disconnect();
  const anon = new Redis({ port, enableReadyCheck: false, maxRetriesPerRequest: 0 });
  anon.on('error', () => {}); // its connect-time HELLO is refused too (-NOAUTH): expected here
  await assert.rejects(anon.get('auth-4'), /NOAUTH/);
  anon.disconnect();
});

test('the NIC refuses a raw peer that skips the handshake', async () => {
  const cfg = new FileConfigStore(file).readSync();
  const peer = await rawPeer(cfg.nodes[1]!.fabric.port);
  peer.send(nic.encodeRequest({ op: nic.Op.READ, id: 1, offset: 0, length: 64 }));
  const r = await peer.reply();
  assert.ok(r.op === nic.OP_ERROR && r.code === 'ROWAN_ERR_NOAUTH', JSON.stringify(r));
  await peer.closed;
});
