// The soft NIC authenticates its peers (issue 12, finding 2): a peer that does not prove the cluster
// secret gets one ERROR and a closed connection, and no READ, WRITE or ALLOC of it ever runs; the
// sender checks the NIC's proof too. Regression tests for "anyone who connects may read the pool".
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monotonicClock } from '../../../../config/base/clock.js';
import { newNonce, proof } from '../../../../config/base/secret.js';
import { NicServer } from '../../../../actors/nic/nic-server.js';
import { shmPaths } from '../../../../runtime/fabric/shm.js';
import { SharedReceiveQueue } from '../../../../runtime/rowan/srq.js';
import { TcpConnection } from '../../../../runtime/fabric/tcp.js';
import { FRAME_VERSION, NIC_LABEL, Op, OP_ERROR, SENDER_LABEL, encodeRequest, type Reply } from '../../../../runtime/fabric/nic-frames.js';
import { Pool } from '../../../../shm/pool.js';
import { rawPeer, type RawPeer } from '../../../fixtures/nic-raw-peer.js';

const SEG = 64 * 1024;
const SECRET = new Uint8Array(32).fill(0x5a);
const WRONG = new Uint8Array(32).fill(0x5b);

async function setup(secret: Uint8Array | null) {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-nic-auth-'));
  const p = shmPaths(dir);
  const pool = Pool.create(p.pool, { segmentCount: 16, segmentBytes: SEG });
  const srq = SharedReceiveQueue.create(p.srq, { postCap: 16, cqCap: 64 });
  // Bytes another client stored: what an unauthenticated READ must never see.
  const planted = Buffer.from('another key\'s value');
  pool.region.bytes.set(planted, pool.segmentOffset(3));
  const nic = await NicServer.listen({ dataDir: dir, pool: () => pool, clock: monotonicClock, host: '127.0.0.1', port: 0, secret });
  return {
    dir, pool, nic, planted, p,
    done: async () => {
      await nic.close();
      srq.close();
      pool.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Every reply until the NIC closes the connection. */
async function drain(peer: RawPeer): Promise<Reply[]> {
  const out: Reply[] = [];
  for (;;) {
    try {
      out.push(await peer.reply(5000));
    } catch {
      return out;
    }
  }
}

const errCode = (r: Reply | undefined) => (r?.op === OP_ERROR ? r.code : `op ${r?.op}`);

test('pool and receive queue files are created 0600', async () => {
  const t = await setup(SECRET);
  try {
    assert.equal(statSync(t.p.pool).mode & 0o777, 0o600);
    assert.equal(statSync(t.p.srq).mode & 0o777, 0o600);
  } finally {
    await t.done();
  }
});

test('a peer skipping the handshake gets NOAUTH and a closed connection; its READ, WRITE and ALLOC never run', async () => {
  const t = await setup(SECRET);
  try {
    for (const req of [
      encodeRequest({ op: Op.READ, id: 1, offset: t.pool.segmentOffset(3), length: t.planted.length }),
      encodeRequest({ op: Op.WRITE, id: 2, offset: t.pool.segmentOffset(3), data: new Uint8Array(64).fill(0xee) }),
      encodeRequest({ op: Op.ALLOC, id: 3, ownerId: 7 }),
    ]) {
      const peer = await rawPeer(t.nic.endpoint.port);
      // The request and a READ pipelined behind it: neither runs.
      peer.send(Buffer.concat([req, encodeRequest({ op: Op.READ, id: 9, offset: t.pool.segmentOffset(3), length: 16 })]));
      const replies = await drain(peer);
      await peer.closed;
      assert.deepEqual(replies.map(errCode), ['ROWAN_ERR_NOAUTH'], 'one error, then the door');
    }
    // HELLO alone does not authenticate either.
    const peer = await rawPeer(t.nic.endpoint.port);
    peer.send(encodeRequest({ op: Op.HELLO, id: 1, version: FRAME_VERSION, senderId: 1, nonce: newNonce() }));
    const hello = await peer.reply();
    assert.ok(hello.op === Op.HELLO && hello.auth, 'the NIC asks for AUTH');
    peer.send(encodeRequest({ op: Op.READ, id: 2, offset: t.pool.segmentOffset(3), length: t.planted.length }));
    assert.deepEqual((await drain(peer)).map(errCode), ['ROWAN_ERR_NOAUTH']);
    assert.deepEqual(Buffer.from(t.pool.region.bytes.subarray(t.pool.segmentOffset(3), t.pool.segmentOffset(3) + t.planted.length)), t.planted, 'the WRITE did not land');
    const s = t.nic.stats();
    assert.equal(s.refused, 4);
    assert.equal(s.sends, 0);
  } finally {
    await t.done();
  }
});

test('a peer with the wrong secret is refused at AUTH; frames pipelined after it are dropped', async () => {
  const t = await setup(SECRET);
  try {
    const peer = await rawPeer(t.nic.endpoint.port);
    const mine = newNonce();
    peer.send(encodeRequest({ op: Op.HELLO, id: 1, version: FRAME_VERSION, senderId: 1, nonce: mine }));
    const hello = await peer.reply();
    assert.ok(hello.op === Op.HELLO);
    peer.send(Buffer.concat([
      encodeRequest({ op: Op.AUTH, id: 2, proof: proof(WRONG, SENDER_LABEL, hello.nonce, mine) }),
      encodeRequest({ op: Op.ALLOC, id: 3, ownerId: 7 }),
    ]));
    assert.deepEqual((await drain(peer)).map(errCode), ['ROWAN_ERR_AUTH_FAILED']);
    // A replayed proof of the right secret from another connection fails too (new nonces each time).
    const replay = await rawPeer(t.nic.endpoint.port);
    replay.send(encodeRequest({ op: Op.HELLO, id: 1, version: FRAME_VERSION, senderId: 1, nonce: mine }));
    await replay.reply();
    replay.send(encodeRequest({ op: Op.AUTH, id: 2, proof: proof(SECRET, SENDER_LABEL, hello.nonce, mine) }));
    assert.deepEqual((await drain(replay)).map(errCode), ['ROWAN_ERR_AUTH_FAILED']);
    // The NIC's own proof cannot be reflected back as the sender's (different labels).
    const reflect = await rawPeer(t.nic.endpoint.port);
    reflect.send(encodeRequest({ op: Op.HELLO, id: 1, version: FRAME_VERSION, senderId: 1, nonce: mine }));
    const h2 = await reflect.reply();
    assert.ok(h2.op === Op.HELLO);
    assert.deepEqual([...h2.proof], [...proof(SECRET, NIC_LABEL, mine, h2.nonce)], 'the NIC proves the secret');
    reflect.send(encodeRequest({ op: Op.AUTH, id: 2, proof: h2.proof }));
    assert.deepEqual((await drain(reflect)).map(errCode), ['ROWAN_ERR_AUTH_FAILED']);
    assert.equal(t.nic.stats().refused, 3);

    // The real sender with the wrong secret refuses the NIC (its proof does not check out) before sending anything.
    await assert.rejects(TcpConnection.connect({ host: '127.0.0.1', port: t.nic.endpoint.port, secret: WRONG }), { code: 'ROWAN_ERR_AUTH_FAILED' });
    await assert.rejects(TcpConnection.connect({ host: '127.0.0.1', port: t.nic.endpoint.port }), { code: 'ROWAN_ERR_NOAUTH' });
  } finally {
    await t.done();
  }
});

test('the sender with the secret authenticates once and its verbs run; a NIC without one is refused by it', async () => {
  const t = await setup(SECRET);
  const open = await setup(null);
  try {
    const c = await TcpConnection.connect({ host: '127.0.0.1', port: t.nic.endpoint.port, secret: SECRET });
    const region = await c.allocateRegion(0); // the sender id it said HELLO with (default 0)
    await c.writeAt(region.offset, new Uint8Array(64).fill(0x11));
    assert.deepEqual([...(await c.read(region.offset, 4))], [0x11, 0x11, 0x11, 0x11]);
    await c.close();
    assert.equal(t.nic.stats().refused, 0);
    // A sender holding a secret does not write to a NIC that cannot prove one (--no-auth, or an impostor).
    await assert.rejects(TcpConnection.connect({ host: '127.0.0.1', port: open.nic.endpoint.port, secret: SECRET }), { code: 'ROWAN_ERR_AUTH_FAILED' });
    // Without secrets on both sides (--no-auth) it works as before.
    const plain = await TcpConnection.connect({ host: '127.0.0.1', port: open.nic.endpoint.port });
    await plain.allocateRegion(0);
    await plain.close();
  } finally {
    await t.done();
    await open.done();
  }
});
