// Authentication against a real cluster (issue 12, "Authentication"): `rowan cluster` makes a secret
// and a client password (both 0600). Nodes demand the secret of peers -- the tcp fabric's NIC, REPLICATE
// of rpc mode, the configuration manager's port -- and the password of clients on the binary client port
// and the Redis ports, where the secret is no longer accepted; the CLI and RowanClient find the
// password beside cluster.json. Unauthenticated requests get ROWAN_ERR_NOAUTH (-NOAUTH on Redis) and
// change nothing; a client's REPLICATE gets ROWAN_ERR_FORBIDDEN.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { connect, type Socket } from 'node:net';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { RowanClient } from '../../client/client.js';
import { defaultLimits } from '../../config/limits.js';
import { readPasswordFile, readSecretFile, secretHex, newNonce, passwordText, proof } from '../../config/base/secret.js';
import { MANAGER_LABEL, NODE_LABEL } from '../../actors/shared/manager-auth.js';
import { managerPortOf } from '../../bin/cluster-lifecycle.js';
import { FileConfigStore } from '../../config/store.js';
import { decodeResponse, encodeRequest, FrameReader, Op, Status, type Response } from '../../runtime/rpc/frames.js';
import { CLIENT_LABEL, HelloRole, PEER_LABEL, PEER_SERVER_LABEL, PROTOCOL_VERSION, SERVER_LABEL } from '../../runtime/rpc/frames-layout.js';
import * as nic from '../../runtime/fabric/nic-frames.js';
import { launchCluster, launchReadyCluster, stopCluster, type LaunchedCluster } from '../fixtures/cluster.js';
import { rawPeer } from '../fixtures/nic-raw-peer.js';
import { raw } from '../fixtures/redis.js';

const rowan = new URL('../../../bin/rowan', import.meta.url).pathname;
const limits = { keyBytesMax: defaultLimits.keyBytesMax, valueBytesMax: defaultLimits.valueBytesMax };
const dir = mkdtempSync(join(tmpdir(), 'rowan-auth-'));
const file = join(dir, 'cluster.json');
let base = 0;
let cl: LaunchedCluster;
let secret: Uint8Array;
let password: Uint8Array;

before(async () => {
  const launched = await launchReadyCluster(dir, ['--nodes', '2', '--replication', '2', '--shards', '4', '--fabric', 'tcp', '--replication-mode', 'rpc']);
  cl = launched;
  base = launched.basePort;
  secret = readSecretFile(join(dir, 'secret'));
  password = readPasswordFile(join(dir, 'client-password'));
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

test('the secret, the client password, the pools and the receive queues are created 0600', () => {
  assert.equal(statSync(join(dir, 'secret')).mode & 0o777, 0o600);
  assert.equal(statSync(join(dir, 'client-password')).mode & 0o777, 0o600);
  assert.notEqual(passwordText(password), secretHex(secret), 'the client password is not the cluster secret');
  for (const n of [0, 1]) for (const f of ['pool.pm', 'rowan.srq']) assert.equal(statSync(join(dir, `node-${n}`, f)).mode & 0o777, 0o600, `node-${n}/${f}`);
});

test('client port: before AUTH every request is ROWAN_ERR_NOAUTH and nothing runs; a wrong proof ends the connection', async () => {
  const cfg = new FileConfigStore(file).readSync();
  const port = cfg.nodes[0]!.workerPorts[0]!;
  const term = cfg.term;
  const p = await rpcPeer(port);
  const mine = newNonce();
  p.send(encodeRequest({ op: Op.HELLO, id: 1, term: 0, version: PROTOCOL_VERSION, nonce: mine }));
  const ch = await p.next();
  assert.equal(ch.status, Status.CHALLENGE);
  assert.ok(ch.status === Status.CHALLENGE);
  assert.deepEqual([...ch.proof], [...proof(password, SERVER_LABEL, mine, ch.nonce)], 'the server proves the client password');
  const key = new TextEncoder().encode('noauth-key');
  p.send(encodeRequest({ op: Op.PUT, id: 2, term, key, value: key }));
  p.send(encodeRequest({ op: Op.GET, id: 3, term, key }));
  p.send(encodeRequest({ op: Op.DEL, id: 4, term, key }));
  p.send(encodeRequest({ op: Op.CONFIG, id: 5, term: 0 }));
  p.send(encodeRequest({ op: Op.REPLICATE, id: 6, term, block: new Uint8Array(64).fill(1) }));
  const answers = await Promise.all([p.next(), p.next(), p.next(), p.next(), p.next()]);
  assert.deepEqual(answers.map(codeOf), Array(5).fill('ROWAN_ERR_NOAUTH'));
  // A client proving the cluster secret instead of the password: AUTH_FAILED, and the connection ends.
  p.send(encodeRequest({ op: Op.AUTH, id: 7, term: 0, proof: proof(secret, CLIENT_LABEL, ch.nonce, mine) }));
  assert.equal(codeOf(await p.next()), 'ROWAN_ERR_AUTH_FAILED');
  await p.closed;

  // Version 1 and 2 clients are told to upgrade (version 2 proved the cluster secret).
  for (const [version, why] of [[1, /protocol version 1.*upgrade the client/], [2, /protocol version 2.*client password/]] as const) {
    const old = await rpcPeer(port);
    const hello = Buffer.alloc(version === 1 ? 24 : 56);
    hello.writeUInt32LE(hello.length - 4, 0);
    hello[4] = Op.HELLO;
    hello.writeUInt32LE(1, 8);
    hello.writeUInt32LE(version, 20);
    old.send(hello);
    const r = await old.next();
    assert.equal(codeOf(r), 'ROWAN_ERR_BAD_FRAME');
    assert.match(r.status === Status.ERROR ? r.message : '', why);
    await old.closed;
  }

  // Nothing was applied: an authenticated client (secret found beside cluster.json) sees no value.
  const c = await RowanClient.connect({ cluster: file });
  assert.equal(await c.get('noauth-key'), null);
  await c.close();
});

test('client port: a client may not REPLICATE or COPY_SHARD; a peer proving the secret may, a peer proving the password may not', async () => {
  const cfg = new FileConfigStore(file).readSync();
  const port = cfg.nodes[0]!.workerPorts[0]!;
  const term = cfg.term;
  const handshake = async (role: number, key: Uint8Array, labels: [string, string]) => {
    const p = await rpcPeer(port);
    const mine = newNonce();
    p.send(encodeRequest({ op: Op.HELLO, id: 1, term: 0, version: PROTOCOL_VERSION, nonce: mine, role: role as 1 | 2 }));
    const ch = await p.next();
    assert.ok(ch.status === Status.CHALLENGE);
    const serverProves = [...ch.proof].join() === [...proof(key, labels[0], mine, ch.nonce)].join();
    p.send(encodeRequest({ op: Op.AUTH, id: 2, term: 0, proof: proof(key, labels[1], ch.nonce, mine) }));
    return { p, serverProves, auth: codeOf(await p.next()) };
  };
  const client = await handshake(HelloRole.CLIENT, password, [SERVER_LABEL, CLIENT_LABEL]);
  assert.ok(client.serverProves);
  assert.equal(client.auth, 'status 0');
  client.p.send(encodeRequest({ op: Op.REPLICATE, id: 3, term, block: new Uint8Array(64).fill(1) }));
  client.p.send(encodeRequest({ op: Op.COPY_SHARD, id: 4, term, key: new Uint8Array(16) }));
  client.p.send(encodeRequest({ op: Op.CONFIG, id: 5, term: 0 }));
  assert.deepEqual([await client.p.next(), await client.p.next(), await client.p.next()].map(codeOf), ['ROWAN_ERR_FORBIDDEN', 'ROWAN_ERR_FORBIDDEN', `status ${Status.CONFIG}`], 'client requests still run');
  client.p.end();
  // A peer proving the secret passes the gate: its garbage block is refused for what it is, not FORBIDDEN.
  const peer = await handshake(HelloRole.PEER, secret, [PEER_SERVER_LABEL, PEER_LABEL]);
  assert.ok(peer.serverProves, 'the server proves the secret to a peer');
  assert.equal(peer.auth, 'status 0');
  peer.p.send(encodeRequest({ op: Op.REPLICATE, id: 3, term, block: new Uint8Array(64).fill(1) }));
  const rep = codeOf(await peer.p.next());
  assert.ok(rep !== 'ROWAN_ERR_FORBIDDEN' && rep !== 'ROWAN_ERR_NOAUTH', rep);
  peer.p.end();
  // The client password does not make a peer.
  const fake = await handshake(HelloRole.PEER, password, [PEER_SERVER_LABEL, PEER_LABEL]);
  assert.ok(!fake.serverProves);
  assert.equal(fake.auth, 'ROWAN_ERR_AUTH_FAILED');
  await fake.p.closed;
});

test('RowanClient and the CLI: the password beside cluster.json works (REPLICATE as a peer underneath); a wrong or missing one, or the secret, is refused', async () => {
  const c = await RowanClient.connect({ cluster: file });
  for (let i = 0; i < 20; i++) await c.put(`auth-${i}`, `v${i}`); // rpc mode: every PUT REPLICATEs to the backup
  assert.equal(new TextDecoder().decode((await c.get('auth-7'))!), 'v7');
  await c.close();
  const cfg = new FileConfigStore(file).readSync();
  const wrong = await RowanClient.connect({ cluster: cfg, password: 'cd'.repeat(32), retries: 0 });
  await assert.rejects(wrong.get('auth-7'), { code: 'ROWAN_ERR_AUTH_FAILED' });
  await wrong.close();
  const withSecret = await RowanClient.connect({ cluster: cfg, password: secretHex(secret), retries: 0 });
  await assert.rejects(withSecret.get('auth-7'), { code: 'ROWAN_ERR_AUTH_FAILED' }, 'the cluster secret is no client password');
  await withSecret.close();
  const none = await RowanClient.connect({ cluster: cfg, retries: 0 });
  await assert.rejects(none.put('auth-none', 'x'), { code: 'ROWAN_ERR_NOAUTH', message: /requires the client password/ });
  await none.close();
  const good = await RowanClient.connect({ cluster: cfg, password: passwordText(password) });
  assert.equal(await good.get('auth-none'), null, 'the refused PUT was not applied');
  await good.close();

  const cli = (...args: string[]) =>
    new Promise<{ code: number; out: string; err: string }>((resolve) =>
      execFile(process.execPath, [rowan, ...args], { timeout: 30_000 }, (e, out, err) => resolve({ code: e ? Number(e.code ?? 1) : 0, out, err })),
    );
  let r = await cli('get', 'auth-3', '--cluster', file);
  assert.equal(r.code, 0, r.err);
  assert.equal(r.out, 'v3\n');
  const badFile = join(dir, 'wrong-password');
  writeFileSync(badFile, 'ef'.repeat(32) + '\n', { mode: 0o600 });
  r = await cli('get', 'auth-3', '--cluster', file, '--password-file', badFile, '--timeout', '2000');
  assert.equal(r.code, 1);
  assert.match(r.err, /ROWAN_ERR_AUTH_FAILED/);
  r = await cli('get', 'auth-3', '--cluster', file, '--secret-file', join(dir, 'secret'));
  assert.equal(r.code, 2);
  assert.match(r.err, /clients prove the client password, not the cluster secret: give --password-file/);
});

test('Redis ports: -NOAUTH until AUTH; wrong passwords and the cluster secret are WRONGPASS; HELLO 3 AUTH and ioredis password work', async () => {
  const cfg = new FileConfigStore(file).readSync();
  const port = cfg.nodes[0]!.resp!.ports[0]!;
  const pw = passwordText(password);
  const bySecret = await raw(port, [`AUTH ${secretHex(secret)}\r\n`, `AUTH default ${secretHex(secret)}\r\n`, 'GET auth-1\r\n', 'QUIT\r\n']);
  assert.equal(bySecret.text, '-WRONGPASS invalid username-password pair or user is disabled.\r\n'.repeat(2) + '-NOAUTH Authentication required.\r\n+OK\r\n');
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

/** A raw connection to the configuration manager's port: JSON lines each way. */
async function managerPeer(port: number): Promise<{ send(m: unknown): void; next(): Promise<Record<string, unknown>>; closed: Promise<void>; end(): void }> {
  const s: Socket = await new Promise((resolve, reject) => {
    const x = connect({ port, host: '127.0.0.1' }, () => resolve(x));
    x.once('error', reject);
  });
  s.on('error', () => {});
  let buf = '';
  const got: Record<string, unknown>[] = [];
  const waiting: ((m: Record<string, unknown> | null) => void)[] = [];
  const closed = new Promise<void>((r) => s.once('close', () => {
    for (const w of waiting.splice(0)) w(null);
    r();
  }));
  s.on('data', (d) => {
    buf += d.toString();
    for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
      const m = JSON.parse(buf.slice(0, nl)) as Record<string, unknown>;
      buf = buf.slice(nl + 1);
      const w = waiting.shift();
      if (w) w(m);
      else got.push(m);
    }
  });
  return {
    send: (m) => void s.write(JSON.stringify(m) + '\n'),
    next: () => {
      const m = got.shift();
      if (m) return Promise.resolve(m);
      return new Promise((resolve, reject) => {
        const t = setTimeout(() => reject(new Error('no message within 30 s')), 30_000);
        waiting.push((x) => (clearTimeout(t), x ? resolve(x) : reject(new Error('closed before a message'))));
      });
    },
    closed,
    end: () => void s.destroy(),
  };
}

test('the configuration manager refuses a peer that skips the handshake or lacks the secret, and proves the secret itself', async () => {
  const cfg = new FileConfigStore(file).readSync();
  const port = managerPortOf(cfg);
  // A lease message first (what any node said before authentication existed): refused, closed.
  const anon = await managerPeer(port);
  anon.send({ t: 'hello', node: 0, pid: 1, term: cfg.term });
  assert.deepEqual([(await anon.next())['t'], (await anon.next().catch(() => null))], ['auth-error', null]);
  await anon.closed;
  // A renew for another node's lease, unauthenticated: the same (it would otherwise extend node 1's lease).
  const renew = await managerPeer(port);
  renew.send({ t: 'renew', node: 1, seq: 1, term: cfg.term });
  const m = await renew.next();
  assert.equal(m['t'], 'auth-error');
  assert.equal(m['code'], 'ROWAN_ERR_NOAUTH');
  await renew.closed;
  // The handshake with a wrong secret: the manager proves the real one, and refuses the wrong proof.
  const wrong = await managerPeer(port);
  const mine = newNonce();
  wrong.send({ t: 'auth-hello', nonce: Buffer.from(mine).toString('hex') });
  const ch = await wrong.next();
  assert.equal(ch['t'], 'auth-challenge');
  const theirs = new Uint8Array(Buffer.from(String(ch['nonce']), 'hex'));
  assert.equal(ch['proof'], Buffer.from(proof(secret, MANAGER_LABEL, mine, theirs)).toString('hex'), 'the manager proves the cluster secret');
  wrong.send({ t: 'auth', proof: Buffer.from(proof(password, NODE_LABEL, theirs, mine)).toString('hex') });
  const refused = await wrong.next();
  assert.deepEqual([refused['t'], refused['code']], ['auth-error', 'ROWAN_ERR_AUTH_FAILED'], 'the client password does not open the manager');
  await wrong.closed;
  // With the secret: auth-ok (and the nodes, which hold it, have their leases: the cluster serves).
  const node = await managerPeer(port);
  const n2 = newNonce();
  node.send({ t: 'auth-hello', nonce: Buffer.from(n2).toString('hex') });
  const ch2 = await node.next();
  const t2 = new Uint8Array(Buffer.from(String(ch2['nonce']), 'hex'));
  node.send({ t: 'auth', proof: Buffer.from(proof(secret, NODE_LABEL, t2, n2)).toString('hex') });
  assert.deepEqual(await node.next(), { t: 'auth-ok', auth: true });
  node.end();
  const c = await RowanClient.connect({ cluster: file });
  await c.put('after-manager-probe', 'x');
  await c.close();
});

test('a cluster directory without a client password gets one at its next start, and the launcher says so', { timeout: 120_000 }, async () => {
  await stopCluster(cl.child);
  const old = passwordText(password);
  rmSync(join(dir, 'client-password'));
  cl = launchCluster(dir, base);
  await cl.ready;
  assert.match(cl.output(), /this cluster had no client password: generated \S*client-password \(mode 0600\); clients and Redis users now need it instead of the cluster secret/);
  assert.equal(statSync(join(dir, 'client-password')).mode & 0o777, 0o600);
  password = readPasswordFile(join(dir, 'client-password'));
  assert.notEqual(passwordText(password), old);
  const cfg = new FileConfigStore(file).readSync();
  const stale = await RowanClient.connect({ cluster: cfg, password: old, retries: 0 });
  await assert.rejects(stale.get('auth-7'), { code: 'ROWAN_ERR_AUTH_FAILED' });
  await stale.close();
  const c = await RowanClient.connect({ cluster: file, retries: 8 });
  assert.equal(new TextDecoder().decode((await c.get('auth-7'))!), 'v7', 'the data survived the restart');
  await c.close();
});
