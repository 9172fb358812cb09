// The Rowan ordering test over the tcp fabric, across processes on 127.0.0.1 (same checks as
// rowan-shm.test.ts): the receiver -- pool, receive queue and the RowanReceiver control loop of
// TestReceiver, plus a real node running only the nic actor on its own worker_thread -- lives in this
// process; every sender is a separate child process holding a TcpConnection. Then: a sender SIGKILLed
// mid-writes, and peers that send garbage, while the other senders keep writing; a nic that goes away;
// and a whole node with fabric tcp (control actor + nic).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fork, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultConfig, scaleRemoteToPool } from '../../config/defaults.js';
import { validateConfig } from '../../config/validate.js';
import { schedGetaffinity } from '../../native/libc.js';
import { startNode, type RowanNode } from '../../runtime/node.js';
import { formatStatus } from '../../bin/status-format.js';
import { TcpConnection } from '../../runtime/fabric/tcp.js';
import { Pool } from '../../shm/pool.js';
import { TestReceiver, verifyLanding } from '../fixtures/rowan-receiver.js';
import { encodeWrite, type SenderJob } from '../fixtures/rowan-sender.js';
import { rawPeer } from '../fixtures/nic-raw-peer.js';
import { Op, OP_ERROR, encodeRequest, encodeSend, FRAME_VERSION } from '../../runtime/fabric/nic-frames.js';

const senderScript = new URL('../fixtures/rowan-sender.js', import.meta.url).pathname;

interface Rx {
  rx: TestReceiver;
  node: RowanNode;
  port: number;
}

/** A receiver whose pool and queue this process drives, and a node running just the nic over them. */
async function startReceiver(o: { segmentBytes: number; segmentCount: number; preallocate: number; batch: number; recycle?: boolean }): Promise<Rx> {
  const rx = new TestReceiver(o);
  const config = defaultConfig(rx.dataDir, schedGetaffinity(0));
  config.roles = [{ role: 'nic', count: 1 }];
  config.fabric = { kind: 'tcp', host: '127.0.0.1', port: 0, remoteSegmentsMax: scaleRemoteToPool(o.segmentCount) };
  config.pool = { segmentCount: o.segmentCount, segmentBytes: o.segmentBytes };
  config.blog = { preallocSegments: o.preallocate, batchSegments: o.batch, usedGraceMs: 2 };
  config.logLevel = 'warn';
  let node: RowanNode;
  try {
    node = await startNode({ config: validateConfig(config) });
  } catch (err) {
    rx.close();
    throw err;
  }
  const nic = (await node.status()).actors.find((a) => a.role === 'nic');
  assert.ok(nic?.endpoint && nic.endpoint.port > 0, 'the nic reports the port it bound in READY and status');
  rx.start();
  return { rx, node, port: nic.endpoint.port };
}

async function stopReceiver(r: Rx): Promise<void> {
  for (const c of live) c.kill('SIGKILL');
  live.clear();
  await r.node.shutdown(0, 'test done');
  r.rx.close();
}

interface Sender {
  child: ChildProcess;
  /** The child has exited. */
  exited: boolean;
  /** Resolves with the sender's result; rejects if it failed or died without one. */
  done: Promise<{ retries: number; noBufferWaits: number }>;
  /** Resolves once the sender has reported at least n acks (needs progressEvery). */
  acked(n: number): Promise<void>;
}

/** Every sender child still running; stopReceiver kills them, so a failed test leaves no process behind. */
const live = new Set<ChildProcess>();

function spawnSender(job: SenderJob): Sender {
  const child = fork(senderScript, [JSON.stringify(job)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  live.add(child);
  let progress = 0;
  const waits: { n: number; resolve: () => void }[] = [];
  const done = new Promise<{ retries: number; noBufferWaits: number }>((resolve, reject) => {
    let result: { ok: boolean; retries: number; noBufferWaits: number; code?: string; message?: string } | null = null;
    child.on('message', (m: { progress?: number; ok?: boolean }) => {
      if (m.progress !== undefined) {
        progress = m.progress;
        for (const w of waits.filter((x) => x.n <= progress)) w.resolve();
      } else result = m as typeof result;
    });
    child.once('exit', (code, signal) => {
      live.delete(child);
      sender.exited = true;
      if (result?.ok) resolve(result);
      else reject(new Error(`sender ${job.sender} ${result ? `failed: ${result.code}: ${result.message}` : `died (code ${code}, signal ${signal})`}`));
    });
  });
  done.catch(() => {}); // observed by whoever awaits it
  const acked = (n: number) => (progress >= n ? Promise.resolve() : new Promise<void>((resolve) => waits.push({ n, resolve })));
  const sender: Sender = { child, exited: false, done, acked };
  return sender;
}

function acksFile(rx: TestReceiver, senders: number, writes: number): string {
  const f = join(rx.dataDir, `acks-${senders}x${writes}.f64`);
  writeFileSync(f, Buffer.alloc(senders * writes * 8));
  return f;
}

function readAcks(file: string): Float64Array {
  const b = readFileSync(file);
  return new Float64Array(new Uint8Array(b).buffer);
}

/** Drop the blocks of `shard` from what the receiver found (after checking them separately). */
function takeShard(rx: TestReceiver, shard: number): { write: number; offset: number }[] {
  const out: { write: number; offset: number }[] = [];
  for (const [k, list] of rx.found) {
    if (Math.floor(k / 2 ** 24) !== shard) continue;
    for (const l of list) out.push({ write: k % 2 ** 24, offset: l.offset });
    rx.found.delete(k);
  }
  return out;
}

// The shm test's full 8 x 100k: each sender awaits every ack over TCP (one write in flight, so its
// writes must land in order), a loopback round trip through three event loops; this 2-core machine does
// ~25-30k of them per second in total, so the test takes ~30 s while recycling the 12 MiB pool dozens of
// times (buffer exhaustion and re-posting).
const SENDERS = 8;
const WRITES = 100_000;

// The bound catches a hang, not slowness: 63 s alone in CI, past 180 s at a load of 40 beside another
// integration file (scripts/test.mjs runs two at a time).
test(`${SENDERS} tcp sender processes x ${WRITES / 1000}k mixed-size writes land sequentially, each exactly once`, { timeout: 600_000 }, async () => {
  const r = await startReceiver({ segmentBytes: 256 * 1024, segmentCount: 48, preallocate: 16, batch: 4 });
  const { rx } = r;
  try {
    const file = acksFile(rx, SENDERS, WRITES);
    const t0 = performance.now();
    const senders = Array.from({ length: SENDERS }, (_, s) =>
      spawnSender({ fabric: 'tcp', dataDir: rx.dataDir, port: r.port, sender: s, writes: WRITES, seed: 11, valueMax: 900, acksFile: file }),
    );
    const results = await Promise.all(senders.map((s) => s.done));
    const secs = (performance.now() - t0) / 1000;
    rx.drain();
    const retries = results.reduce((a, x) => a + x.retries, 0);
    const noBuffer = results.reduce((a, x) => a + x.noBufferWaits, 0);
    const problems = verifyLanding(rx, readAcks(file), SENDERS, WRITES, retries);
    const st = rx.receiver.stats();
    console.log(
      `rowan tcp ordering: ${SENDERS * WRITES} writes from ${SENDERS} processes in ${secs.toFixed(2)} s ` +
        `(${Math.round((SENDERS * WRITES) / secs)} writes/s, one in flight per sender); segments handed off ${st.handedOff}, ` +
        `nic re-landings ${retries}, no-buffer waits ${noBuffer}, scan: ${rx.scan.blocks} blocks, ` +
        `${rx.scan.zeroStrides} zero strides, ${rx.scan.invalidStrides} invalid strides`,
    );
    assert.deepEqual(problems, []);
    assert.ok(st.handedOff > rx.pool.segmentCount * 2, `pool should recycle: only ${st.handedOff} segments handed off`);
    // The nic lands only whole frames: nothing partial or torn is ever in the b-log.
    assert.equal(rx.scan.invalidStrides, 0);
  } finally {
    await stopReceiver(r);
  }
});

test('a tcp sender SIGKILLed with writes in flight leaves no torn entry; the nic keeps serving the others', { timeout: 120_000 }, async () => {
  // No recycling, so every block stays readable for the byte-for-byte check at the end: 80 MiB holds
  // the others' ~36 MB and what the victim writes before the kill with room to spare.
  const r = await startReceiver({ segmentBytes: 256 * 1024, segmentCount: 320, preallocate: 16, batch: 4, recycle: false });
  const { rx } = r;
  const writes = 20_000;
  const victimId = 3;
  try {
    const file = acksFile(rx, victimId, writes);
    // The victim pipelines 64 large writes, so the kill very likely cuts a frame in half on the wire. It
    // has far more writes than it can finish before the kill, and its own acks file.
    const victimWrites = 500_000;
    const victimFile = join(rx.dataDir, 'victim-acks.f64');
    writeFileSync(victimFile, Buffer.alloc((victimId + 1) * victimWrites * 8));
    const victimJob: SenderJob = { fabric: 'tcp', dataDir: rx.dataDir, port: r.port, sender: victimId, writes: victimWrites, seed: 5, valueMax: 3000, inFlight: 64, acksFile: victimFile, progressEvery: 250 };
    // The others write first (one in flight each); the victim joins and is killed once it has 1000 acks,
    // while the others are still mid-run.
    const others = Array.from({ length: victimId }, (_, s) =>
      spawnSender({ fabric: 'tcp', dataDir: rx.dataDir, port: r.port, sender: s, writes, seed: 11, valueMax: 900, acksFile: file, progressEvery: 500 }),
    );
    await Promise.all(others.map((o) => o.acked(500)));
    const victim = spawnSender(victimJob);
    await victim.acked(1000);
    victim.child.kill('SIGKILL');
    assert.ok(others.every((o) => !o.exited), 'the others were still writing when the victim died');
    await assert.rejects(victim.done, /died \(code null, signal SIGKILL\)/);
    const results = await Promise.all(others.map((o) => o.done)); // they finish after the kill
    rx.drain();

    const acks = readAcks(file);
    const victimAcks = readAcks(victimFile);
    const landed = takeShard(rx, victimId);
    const buf = new Uint8Array(8192);
    for (const l of landed) {
      const n = encodeWrite(victimJob, victimId, l.write, buf);
      // slice(): a failed assertion must not keep a view of the mapping, which is unmapped before it is reported.
      assert.deepEqual(rx.pool.region.bytes.slice(l.offset, l.offset + n), buf.slice(0, n), `victim write ${l.write} at ${l.offset} is exactly what it sent`);
    }
    const landedAt = new Map<number, number[]>();
    for (const l of landed) landedAt.set(l.write, [...(landedAt.get(l.write) ?? []), l.offset]);
    let victimAcked = 0;
    for (let i = 0; i < victimWrites; i++) {
      const ack = victimAcks[victimId * victimWrites + i]!;
      if (ack === 0) continue;
      victimAcked++;
      assert.ok(landedAt.get(i)?.includes(ack), `victim write ${i} was acked at ${ack} and must be there`);
    }
    assert.ok(victimAcked >= 1000 && victimAcked < victimWrites, `victim acked ${victimAcked}`);
    const retries = results.reduce((a, x) => a + x.retries, 0);
    assert.deepEqual(verifyLanding(rx, acks, victimId, writes, retries), []);
    assert.equal(rx.scan.invalidStrides, 0, 'no partial write reached the b-log');
    console.log(`tcp kill: victim acked ${victimAcked}, landed ${landed.length} (in flight at the kill: ${landed.length - victimAcked}); others ${victimId} x ${writes} verified`);
  } finally {
    await stopReceiver(r);
  }
});

test('peers sending garbage get an error reply or a closed connection; other connections keep working', { timeout: 120_000 }, async () => {
  const r = await startReceiver({ segmentBytes: 256 * 1024, segmentCount: 64, preallocate: 16, batch: 4, recycle: false });
  const { rx } = r;
  const writes = 4000;
  const junkShard = 99;
  try {
    const file = acksFile(rx, 2, writes);
    const senders = [0, 1].map((s) =>
      spawnSender({ fabric: 'tcp', dataDir: rx.dataDir, port: r.port, sender: s, writes, seed: 3, valueMax: 900, acksFile: file, progressEvery: 200 }),
    );
    await Promise.all(senders.map((s) => s.acked(200)));

    // Not a frame at all (an HTTP request): the stream cannot be framed -> BAD_FRAME, then closed.
    const http = await rawPeer(r.port);
    http.send(Buffer.from('GET / HTTP/1.1\r\nHost: x\r\n\r\n'));
    const e1 = await http.reply();
    assert.equal(e1.op, OP_ERROR);
    assert.equal(e1.op === OP_ERROR && e1.code, 'ROWAN_ERR_BAD_FRAME');
    await http.closed;

    // A well-framed unknown op: UNKNOWN_OP with its request id, and the connection keeps working.
    const odd = await rawPeer(r.port);
    const f = encodeRequest({ op: Op.HELLO, id: 77, version: FRAME_VERSION, senderId: 9, nonce: new Uint8Array(32) });
    f[5] = 0x42;
    odd.send(f);
    assert.deepEqual(await odd.reply(), { op: OP_ERROR, id: 77, code: 'ROWAN_ERR_UNKNOWN_OP', message: 'unknown request op 0x42' });
    // A SEND that is not whole strides, and one-sided WRITEs outside what ALLOC handed out.
    odd.send(encodeSend(78, new Uint8Array(100)));
    const e2 = await odd.reply();
    assert.ok(e2.op === OP_ERROR && e2.id === 78 && e2.code === 'ROWAN_ERR_BAD_ARGUMENT', JSON.stringify(e2));
    odd.send(encodeRequest({ op: Op.WRITE, id: 79, offset: 0, data: new Uint8Array(64).fill(0xee) }));
    const e3 = await odd.reply();
    assert.ok(e3.op === OP_ERROR && e3.id === 79 && e3.code === 'ROWAN_ERR_NOT_GRANTED', JSON.stringify(e3));
    odd.send(encodeRequest({ op: Op.WRITE, id: 80, offset: rx.pool.segmentOffset(rx.pool.segmentCount - 1), data: new Uint8Array(64).fill(0xee) }));
    const e4 = await odd.reply();
    assert.ok(e4.op === OP_ERROR && e4.id === 80 && e4.code === 'ROWAN_ERR_NOT_GRANTED', JSON.stringify(e4));
    odd.send(encodeRequest({ op: Op.HELLO, id: 81, version: FRAME_VERSION, senderId: 9, nonce: new Uint8Array(32) }));
    assert.equal((await odd.reply()).op, Op.HELLO, 'still serving this connection');
    odd.close();

    // A length far beyond the frame limit: FRAME_TOO_LARGE (with the request id), then closed.
    const big = await rawPeer(r.port);
    const h = encodeSend(82, new Uint8Array(64));
    h.writeUInt32LE(64 * 1024 * 1024, 0);
    big.send(h.subarray(0, 12));
    const e5 = await big.reply();
    assert.ok(e5.op === OP_ERROR && e5.id === 82 && e5.code === 'ROWAN_ERR_FRAME_TOO_LARGE', JSON.stringify(e5));
    await big.closed;

    // A SEND cut off mid-frame by a peer that then vanishes: nothing of it may land.
    const cut = await rawPeer(r.port);
    const junk = new Uint8Array(8192);
    const n = encodeWrite({ seed: 1, valueMax: 3000 }, junkShard, 0, junk);
    const whole = encodeSend(83, junk.subarray(0, n));
    cut.send(whole.subarray(0, whole.length >> 1));
    await new Promise((res) => setTimeout(res, 50));
    cut.destroy();

    // One-sided verbs through a TcpConnection: ALLOC, WRITE, READ back; WRITE outside the region fails.
    const conn = await TcpConnection.connect({ host: '127.0.0.1', port: r.port, senderId: 42 });
    const region = await conn.allocateRegion(42); // its own node id (the HELLO sender id): regions are granted per node
    const data = new Uint8Array(256).map((_, i) => i);
    await conn.writeAt(region.offset + 4096, data);
    assert.deepEqual(await conn.read(region.offset + 4096, 256), data);
    await assert.rejects(conn.writeAt(region.offset + region.length - 8, data), { code: 'ROWAN_ERR_NOT_GRANTED' });
    await conn.close();
    await assert.rejects(conn.write(new Uint8Array(64)), { code: 'ROWAN_ERR_RECEIVER_CLOSED' });

    const results = await Promise.all(senders.map((s) => s.done));
    rx.drain();
    // The refused WRITEs (64 B of 0xee at the superblock and at an unallocated segment) left no trace.
    const bytes = rx.pool.region.bytes;
    const last = rx.pool.segmentOffset(rx.pool.segmentCount - 1);
    assert.ok(!bytes.subarray(0, 64).every((b) => b === 0xee) && !bytes.subarray(last, last + 64).every((b) => b === 0xee));
    Pool.open(rx.pool.path).close(); // and the superblock still validates
    assert.deepEqual(takeShard(rx, junkShard), [], 'the cut-off SEND landed nothing');
    const retries = results.reduce((a, x) => a + x.retries, 0);
    assert.deepEqual(verifyLanding(rx, readAcks(file), 2, writes, retries), []);
    assert.equal(rx.scan.invalidStrides, 0);
  } finally {
    await stopReceiver(r);
  }
});

test('a dead nic fails every pending write with PEER_GONE', { timeout: 60_000 }, async () => {
  const r = await startReceiver({ segmentBytes: 256 * 1024, segmentCount: 16, preallocate: 4, batch: 1, recycle: false });
  let stopped = false;
  try {
    const conn = await TcpConnection.connect({ host: '127.0.0.1', port: r.port, senderId: 1 });
    // The largest write of the palette (~3 KB): 2000 of them are more than the 1 MiB posted.
    const buf = new Uint8Array(8192);
    let best = 0;
    for (let i = 0, most = 0; i < 61; i++) {
      const len = encodeWrite({ seed: 1, valueMax: 3000 }, 1, i, buf);
      if (len > most) [most, best] = [len, i];
    }
    const n = encodeWrite({ seed: 1, valueMax: 3000 }, 1, best, buf);
    assert.ok((await conn.write(buf.subarray(0, n))) > 0);
    // Park writes at the nic: stop posting buffers (the receiver's control loop) and fill what is posted.
    r.rx.drain();
    const inflight = Promise.allSettled(Array.from({ length: 2000 }, () => conn.write(buf.subarray(0, n))));
    await new Promise((res) => setTimeout(res, 100));
    await r.node.shutdown(0, 'nic goes away');
    stopped = true;
    const settled = await inflight;
    const gone = settled.filter((s) => s.status === 'rejected');
    assert.ok(gone.length > 0, 'some writes were still waiting for a buffer');
    for (const g of gone) assert.equal((g as PromiseRejectedResult).reason.code, 'ROWAN_ERR_PEER_GONE');
    assert.match((gone[0] as PromiseRejectedResult).reason.message, /connection to the nic at 127\.0\.0\.1:\d+ lost/);
    await assert.rejects(conn.write(buf.subarray(0, n)), { code: 'ROWAN_ERR_PEER_GONE' });
    await conn.close();
  } finally {
    if (!stopped) await r.node.shutdown(0, 'test done');
    r.rx.close();
  }
});

test('a node whose fabric is tcp starts its nic; writes land in the b-log the real control actor posts', { timeout: 60_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-tcp-node-'));
  const config = defaultConfig(dir, schedGetaffinity(0));
  config.roles = [{ role: 'control', count: 1 }];
  config.fabric = { kind: 'tcp', host: '127.0.0.1', port: 0, remoteSegmentsMax: scaleRemoteToPool(16) };
  config.pool = { segmentCount: 16, segmentBytes: 256 * 1024 };
  config.blog = { preallocSegments: 4, batchSegments: 1, usedGraceMs: 2 };
  config.logLevel = 'warn';
  const node = await startNode({ config: validateConfig(config) });
  try {
    const st = await node.status();
    assert.deepEqual(st.actors.map((a) => a.name), ['control.0', 'nic.0'], 'the nic joins the roles for fabric tcp');
    const port = st.actors[1]!.endpoint!.port;
    assert.match(formatStatus(st), new RegExp(`nic\\.0 listens on 127\\.0\\.0\\.1:${port}`));
    const conn = await TcpConnection.connect({ host: '127.0.0.1', port, senderId: 3 });
    const buf = new Uint8Array(8192);
    const offsets: number[] = [];
    for (let i = 0; i < 200; i++) offsets.push(await conn.write(buf.subarray(0, encodeWrite({ seed: 2, valueMax: 500 }, 3, i, buf))));
    assert.ok(offsets.every((o, i) => i === 0 || o > offsets[i - 1]!), 'sequential writes land in increasing b-log order');
    assert.equal(conn.stats().writes, 200);
    await conn.close();
  } finally {
    await node.shutdown(0, 'test done');
    rmSync(dir, { recursive: true, force: true });
  }
});
