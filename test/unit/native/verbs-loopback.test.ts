// The loopback RNIC (native/verbs-loopback.ts) under the production verbs transport, in one process:
// the receiver's queue over a real pool file, the side channel, a VerbsConnection. What the node-level
// test (test/integration/node-verbs-loopback.test.ts) relies on: SENDs land in posted receive buffers
// in posting order, a SEND waits for a buffer rather than being lost, the READ behind a SEND acks it,
// one-sided verbs move bytes, and a receiver that goes away fails its senders with PEER_GONE.
import { afterEach, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ErrorCodes, RowanError } from '../../../config/base/errors.js';
import { listDevices } from '../../../native/verbs.js';
import { loopbackDevices, selectVerbsDevices } from '../../../runtime/fabric/verbs-devices.js';
import {
  LANDED_ADDRESS_UNKNOWN,
  VerbsConnection,
  VerbsReceiverQueue,
  listenVerbs,
  openVerbsFabric,
} from '../../../runtime/fabric/verbs-sender.js';
import { OwnerRole, Pool } from '../../../shm/pool.js';

const SEGMENT = 64 * 1024;
const BUFFER = 4096;
let dir = '';
const cleanup: (() => unknown)[] = [];

before(() => {
  dir = mkdtempSync(join(tmpdir(), 'rowan-loopback-'));
  selectVerbsDevices(loopbackDevices(join(dir, 'fabric')));
});
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});
test.after(() => rmSync(dir, { recursive: true, force: true }));

/** A receiver (pool, queue, side channel) and one connected sender; `segments` posted at once. */
async function pair(name: string, segments: number) {
  const pool = Pool.create(join(dir, `${name}.pm`), { segmentCount: 8, segmentBytes: SEGMENT });
  cleanup.push(() => pool.close());
  const fabric = openVerbsFabric();
  cleanup.push(() => fabric.close());
  const queue = VerbsReceiverQueue.create(fabric, pool, { bufferBytes: BUFFER });
  cleanup.push(() => queue.close());
  const post = (n: number): number[] => {
    const segs = Array.from({ length: n }, () => pool.allocate(OwnerRole.Control, 1)).sort((a, b) => a - b);
    queue.post(segs.map((s) => ({ offset: pool.segmentOffset(s), length: SEGMENT })));
    return segs;
  };
  const posted = post(segments);
  const listener = await listenVerbs({ fabric, queue, pool });
  cleanup.push(() => listener.close());
  const conn = await VerbsConnection.connect({ host: listener.host, port: listener.port, retryMs: 2000, noBufferTimeoutMs: 10_000 });
  cleanup.push(() => conn.close());
  return { pool, queue, listener, conn, post, posted };
}

const entry = (len: number, fill: number): Uint8Array => new Uint8Array(len).fill(fill);

test('the device list holds the loopback device while it is selected', () => {
  assert.deepEqual(listDevices().map((d) => d.name), ['loopback0']);
});

test('SENDs land one per receive buffer, in posting order, acknowledged by the READ behind them', async () => {
  const { pool, queue, conn, posted, listener } = await pair('order', 2);
  for (let i = 1; i <= 20; i++) assert.equal(await conn.write(entry(64 * (1 + (i % 3)), i)), LANDED_ADDRESS_UNKNOWN);
  const first = pool.segmentOffset(posted[0]!);
  for (let i = 1; i <= 20; i++) {
    const at = first + (i - 1) * BUFFER;
    assert.deepEqual(pool.region.bytes.subarray(at, at + 64), entry(64, i), `write ${i} is in buffer ${i - 1}`);
  }
  assert.equal(listener.connections(), 1);
  assert.equal(queue.drain(), 20, 'one receive completion per SEND in the ring CQ');
  assert.equal(queue.stats().receiveErrors, 0);
  assert.equal(conn.stats().writes, 20);
});

test('a SEND finding no receive buffer waits for one (RNR), then lands', async () => {
  const { pool, conn, post } = await pair('rnr', 1);
  for (let i = 0; i < SEGMENT / BUFFER; i++) await conn.write(entry(64, 1)); // the one segment is full
  let done = false;
  const late = conn.write(entry(64, 0xee)).then(() => (done = true));
  await new Promise((r) => setTimeout(r, 100));
  assert.equal(done, false, 'no buffer posted: the write is not acknowledged');
  const [seg] = post(1);
  await late;
  assert.deepEqual(pool.region.bytes.subarray(pool.segmentOffset(seg!), pool.segmentOffset(seg!) + 64), entry(64, 0xee));
});

test('one-sided WRITE and READ move bytes in the receiver pool', async () => {
  const { pool, conn } = await pair('onesided', 1);
  const region = await conn.allocateRegion(7);
  const bytes = Uint8Array.from({ length: region.length }, (_, i) => (i * 7) & 0xff);
  await conn.writeAt(region.offset, bytes);
  assert.deepEqual(pool.region.bytes.subarray(region.offset, region.offset + region.length), bytes);
  pool.region.bytes[region.offset + 5] = 0xab;
  const back = await conn.read(region.offset, region.length);
  assert.equal(back[5], 0xab, 'READ sees the receiver memory as it is now');
  assert.deepEqual(back.subarray(6), bytes.subarray(6));
});

test('a receiver that goes away fails its sender with PEER_GONE (callers reconnect on it)', async () => {
  const { conn, listener } = await pair('gone', 1);
  await conn.write(entry(64, 1));
  await listener.close(); // destroys the receiver's QPs and closes the side channels
  await assert.rejects(
    (async () => {
      for (let i = 0; i < 50; i++) {
        await conn.write(entry(64, 2));
        await new Promise((r) => setTimeout(r, 20));
      }
    })(),
    (e: unknown) => e instanceof RowanError && e.code === ErrorCodes.PEER_GONE,
  );
});

test('closing every device removes its socket from the fabric directory', async () => {
  await pair('sockets', 1);
  assert.ok(readdirSync(join(dir, 'fabric')).some((f) => f.endsWith('.sock')), 'a receiver context listens');
  for (const f of cleanup.splice(0).reverse()) await f();
  assert.deepEqual(readdirSync(join(dir, 'fabric')).filter((f) => f.endsWith('.sock')), []);
});
