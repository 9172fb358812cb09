// Bad input against a real node of a running cluster (issue: malformed and truncated frames, unknown
// ops, keys and values over the limits, a client speaking before the handshake): each gets an error
// reply or a closed connection, the node keeps serving, and no data changes. The bad frames after the
// handshake come from a client that authenticated (HELLO, CHALLENGE, AUTH with the client password).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RowanClient } from '../../client/client.js';
import { defaultLimits } from '../../config/limits.js';
import { FileConfigStore } from '../../config/store.js';
import { decodeResponse, encodeRequest, FrameReader, Op, PROTOCOL_VERSION, Status } from '../../runtime/rpc/frames.js';
import { CLIENT_LABEL } from '../../runtime/rpc/frames-layout.js';
import { newNonce, proof, readPasswordFile } from '../../config/base/secret.js';
import { launchCluster, randomBasePort, stopCluster } from '../fixtures/cluster.js';

const limits = { keyBytesMax: defaultLimits.keyBytesMax, valueBytesMax: defaultLimits.valueBytesMax };
const enc = (s: string) => new TextEncoder().encode(s);

/** Send `chunks` on a fresh connection (after HELLO and AUTH with `secret`, when given); collect the
 *  error codes answered after the handshake until close or a quiet 1.5 s. */
function exchange(port: number, chunks: Uint8Array[], endAfter = false, secret: Uint8Array | null = null): Promise<{ codes: string[]; closed: boolean }> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    const reader = new FrameReader(limits.keyBytesMax + limits.valueBytesMax + 64);
    const codes: string[] = [];
    let closed = false;
    let timer: NodeJS.Timeout;
    const finish = () => {
      clearTimeout(timer);
      s.destroy();
      resolve({ codes, closed });
    };
    timer = setTimeout(finish, 1500);
    const nonce = newNonce();
    let handshaking = secret !== null;
    const send = () => {
      for (const c of chunks) s.write(c);
      if (endAfter) s.end();
    };
    s.on('data', (d) => {
      reader.push(d);
      for (let f = reader.next(); f !== null; f = reader.next()) {
        const r = decodeResponse(f, limits);
        if (handshaking && r.status === Status.CHALLENGE) {
          s.write(encodeRequest({ op: Op.AUTH, id: 1000, term: 0, proof: proof(secret!, CLIENT_LABEL, r.nonce, nonce) }));
        } else if (handshaking && r.status === Status.OK && r.id === 1000) {
          handshaking = false;
          send();
        } else codes.push(r.status === Status.ERROR ? r.code : `status-${r.status}`);
      }
    });
    s.on('close', () => {
      closed = true;
      finish();
    });
    s.on('error', () => {});
    s.on('connect', () => {
      if (secret === null) return send();
      s.write(encodeRequest({ op: Op.HELLO, id: 999, term: 0, version: PROTOCOL_VERSION, nonce }));
    });
  });
}

test('bad frames get an error reply or a closed connection; the node keeps serving and no data changes', { timeout: 120_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-badinput-'));
  const run = launchCluster(dir, randomBasePort());
  try {
    await run.ready;
    const file = join(dir, 'cluster.json');
    const cluster = new FileConfigStore(file).readSync();
    const client = await RowanClient.connect({ cluster: file });
    for (let i = 0; i < 50; i++) await client.put(`stable-${i}`, `v-${i}`);
    const port = cluster.nodes[0]!.workerPorts[0]!;
    const term = cluster.term;
    const secret = readPasswordFile(join(dir, 'client-password')); // the client password: these are a client's frames
    const put = (id: number, key: string, value: Uint8Array) => encodeRequest({ op: Op.PUT, id, term, key: enc(key), value });

    // A PUT before HELLO.
    let r = await exchange(port, [put(2, 'evil-before-hello', enc('x'))]);
    assert.deepEqual(r.codes, ['ROWAN_ERR_NO_HANDSHAKE']);
    assert.ok(r.closed);

    // Reserved bits set: the frame is whole, so it gets an error and the connection stays usable.
    const reserved = Buffer.from(put(3, 'evil-reserved', enc('x')));
    reserved[6] = 0xff;
    r = await exchange(port, [reserved], false, secret);
    assert.deepEqual(r.codes.slice(-1), ['ROWAN_ERR_BAD_FRAME']);

    // Unknown op.
    const unknown = Buffer.from(encodeRequest({ op: Op.GET, id: 4, term, key: enc('k') }));
    unknown[4] = 99;
    r = await exchange(port, [unknown], false, secret);
    assert.ok(r.codes.includes('ROWAN_ERR_UNKNOWN_OP'), JSON.stringify(r));

    // Key over the limit, built by hand since the encoder refuses it.
    const bigKey = 'k'.repeat(defaultLimits.keyBytesMax + 1);
    const kf = Buffer.alloc(20 + 6 + bigKey.length + 1);
    kf.writeUInt32LE(kf.length - 4, 0);
    kf[4] = Op.PUT;
    kf.writeUInt32LE(5, 8);
    kf.writeUInt32LE(term, 16);
    kf.writeUInt16LE(bigKey.length, 20);
    kf.writeUInt32LE(1, 22);
    kf.write(bigKey, 26, 'latin1');
    r = await exchange(port, [kf], false, secret);
    assert.ok(r.codes.includes('ROWAN_ERR_KEY_TOO_LARGE'), JSON.stringify(r));

    // Value one byte over the limit, in a whole frame: an error for that request.
    const vlen = defaultLimits.valueBytesMax + 1;
    const vf = Buffer.alloc(20 + 6 + 8 + vlen);
    vf.writeUInt32LE(vf.length - 4, 0);
    vf[4] = Op.PUT;
    vf.writeUInt32LE(6, 8);
    vf.writeUInt32LE(term, 16);
    vf.writeUInt16LE(8, 20);
    vf.writeUInt32LE(vlen, 22);
    vf.write('evil-big', 26, 'latin1');
    r = await exchange(port, [vf], false, secret);
    assert.ok(r.codes.includes('ROWAN_ERR_VALUE_TOO_LARGE'), JSON.stringify(r));

    // A length prefix past any legal frame: refused before the body is buffered, connection closed.
    const huge = Buffer.alloc(20);
    huge.writeUInt32LE(64 * 1024 * 1024, 0);
    huge[4] = Op.PUT;
    r = await exchange(port, [huge], false, secret);
    assert.ok(r.codes.includes('ROWAN_ERR_FRAME_TOO_LARGE'), JSON.stringify(r));
    assert.ok(r.closed);

    // Garbage (an HTTP request) and a truncated PUT followed by FIN.
    r = await exchange(port, [enc('GET / HTTP/1.1\r\nHost: x\r\n\r\n')]);
    assert.ok(r.closed && r.codes.length <= 1);
    const whole = put(7, 'evil-truncated', enc('y'.repeat(500)));
    r = await exchange(port, [whole.subarray(0, whole.length - 100)], true, secret);
    assert.ok(r.closed);

    // The node still serves, nothing changed, and no bad frame wrote anything.
    for (let i = 0; i < 50; i++) assert.equal(new TextDecoder().decode((await client.get(`stable-${i}`))!), `v-${i}`);
    for (const k of ['evil-before-hello', 'evil-reserved', 'evil-truncated', 'evil-big']) assert.equal(await client.get(k), null, k);
    await client.put('after', 'ok');
    assert.equal(new TextDecoder().decode((await client.get('after'))!), 'ok');
    await client.close();
    assert.equal(await stopCluster(run.child), 0, run.output());
  } finally {
    await stopCluster(run.child);
    rmSync(dir, { recursive: true, force: true });
  }
});
