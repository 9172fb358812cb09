// The soft NIC over mutual TLS (issue 12, TLS): a sender with a certificate the cluster CA signed (and
// the secret) writes and reads as over TCP; a plaintext sender, a sender without a certificate and one
// whose certificate another CA signed are refused before a frame is read, and the sender refuses a NIC
// it cannot verify. The secret handshake still runs inside TLS.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monotonicClock } from '../../../../config/base/clock.js';
import { NicServer } from '../../../../actors/nic/nic-server.js';
import { shmPaths } from '../../../../runtime/fabric/shm.js';
import { SharedReceiveQueue } from '../../../../runtime/rowan/srq.js';
import { TcpConnection } from '../../../../runtime/fabric/tcp.js';
import { loadTls, type TlsMaterial } from '../../../../runtime/net/tls.js';
import { Op, encodeRequest } from '../../../../runtime/fabric/nic-frames.js';
import { Pool } from '../../../../shm/pool.js';
import { rawPeer } from '../../../fixtures/nic-raw-peer.js';
import { makeTestCerts, noOpenssl } from '../../../fixtures/tls-certs.js';

const SECRET = new Uint8Array(32).fill(0x5a);
const skip = noOpenssl();
const dir = mkdtempSync(join(tmpdir(), 'rowan-nic-tls-'));
let tls: TlsMaterial;
let rogue: TlsMaterial;
let rogueCa: Buffer;
let pool: Pool;
let srq: SharedReceiveQueue;
let nic: NicServer;

before(async () => {
  if (skip) return;
  const c = makeTestCerts(dir);
  tls = loadTls({ cert: c.cert, key: c.key, ca: c.ca })!;
  rogue = loadTls({ cert: c.rogueCert, key: c.rogueKey, ca: c.ca })!; // trusts our CA, signed by another
  rogueCa = loadTls({ cert: c.rogueCert, key: c.rogueKey, ca: c.rogueCa })!.ca;
  const p = shmPaths(dir);
  pool = Pool.create(p.pool, { segmentCount: 16, segmentBytes: 64 * 1024 });
  srq = SharedReceiveQueue.create(p.srq, { postCap: 16, cqCap: 64 });
  nic = await NicServer.listen({ dataDir: dir, pool: () => pool, clock: monotonicClock, host: '127.0.0.1', port: 0, secret: SECRET, tls });
});

after(async () => {
  if (!skip) {
    await nic.close();
    srq.close();
    pool.close();
  }
  rmSync(dir, { recursive: true, force: true });
});

test('a sender with a certificate the CA signed and the secret writes and reads over TLS', { skip }, async () => {
  const c = await TcpConnection.connect({ host: '127.0.0.1', port: nic.endpoint.port, secret: SECRET, tls, senderId: 7 });
  const region = await c.allocateRegion(7);
  await c.writeAt(region.offset, new Uint8Array(64).fill(0x22));
  assert.deepEqual([...(await c.read(region.offset, 4))], [0x22, 0x22, 0x22, 0x22]);
  await c.close();
});

test('plaintext, certificate-less and foreign-CA senders are refused before any frame runs', { skip }, async () => {
  const accepted = nic.stats().connections;
  // Plaintext: the TLS layer takes the HELLO for a bad record and drops the connection.
  const plain = await rawPeer(nic.endpoint.port);
  plain.send(encodeRequest({ op: Op.READ, id: 1, offset: 0, length: 64 }));
  await plain.closed;
  await assert.rejects(TcpConnection.connect({ host: '127.0.0.1', port: nic.endpoint.port, secret: SECRET, connectTimeoutMs: 5000 }), { code: 'ROWAN_ERR_PEER_GONE' });
  // TLS, verifying the NIC, but presenting no certificate: mutual TLS refuses it.
  await assert.rejects(TcpConnection.connect({ host: '127.0.0.1', port: nic.endpoint.port, secret: SECRET, tls: { ca: tls.ca } }), { code: 'ROWAN_ERR_PEER_GONE' });
  // A certificate another CA signed.
  await assert.rejects(TcpConnection.connect({ host: '127.0.0.1', port: nic.endpoint.port, secret: SECRET, tls: rogue }), { code: 'ROWAN_ERR_PEER_GONE' });
  // The sender verifies the NIC: a CA that did not sign the NIC's certificate refuses it.
  await assert.rejects(TcpConnection.connect({ host: '127.0.0.1', port: nic.endpoint.port, secret: SECRET, tls: { ...tls, ca: rogueCa } }), { code: 'ROWAN_ERR_PEER_GONE' });
  assert.equal(nic.stats().connections, accepted, 'no refused peer became a NIC connection');
});
