// The `verbs` transport without a device: VerbsConnection and VerbsReceiverQueue run on fake verbs
// objects (native/verbs-fake.ts: an ibv_context whose post_send / post_srq_recv / poll_cq are JS
// callbacks). Every work request the transport posts is decoded from native memory and checked, and
// the completions it acts on are the ones the test puts in the fake CQ. Time is a ManualClock and the
// CQ is polled by hand (autoPoll off), except where the self-arming poller itself is under test.
import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:net';
import { constants as osConstants } from 'node:os';
import { ErrorCodes, InvariantError, RowanError } from '../../../../config/base/errors.js';
import * as abi from '../../../../native/verbs-abi.js';
import * as verbs from '../../../../native/verbs.js';
import { NativeBuffer } from '../../../../native/verbs-mem.js';
import {
  type DecodedRecvWr,
  type DecodedSendWr,
  FakeCompletionFeed,
  FakeVerbsDevice,
  decodeRecvWrChain,
  decodeSendWrChain,
} from '../../../../native/verbs-fake.js';
import { ManualClock } from '../../../../config/base/clock.js';
import type { SharedReceiveQueue } from '../../../../runtime/rowan/srq.js';
import {
  LANDED_ADDRESS_UNKNOWN,
  SenderCq,
  VerbsConnection,
  VerbsReceiverQueue,
  openVerbsFabric,
  senderLayout,
  type ReceiveQueue,
  type VerbsConnectionOptions,
  type VerbsRemote,
} from '../../../../runtime/fabric/verbs-sender.js';
import { ControlChannel, dialVerbs, VERBS_PROTOCOL_VERSION } from '../../../../runtime/fabric/verbs-connect.js';

// The proposed receiver.ts change types its queue as ReceiveQueue: the emulated SRQ must fit it as is.
const emulatedFits = (q: SharedReceiveQueue): ReceiveQueue => q;
void emulatedFits;

const cleanup: (() => void)[] = [];
const fakes: FakeVerbsDevice[] = [];
afterEach(() => {
  for (const f of cleanup.splice(0).reverse()) f();
  for (const f of fakes) assert.deepEqual(f.callbackErrors, [], 'a fake provider callback threw');
  for (const f of fakes.splice(0)) f.close();
});

const REMOTE: VerbsRemote = {
  poolBase: 0x7e00_0000_0000n,
  rkey: 0xbeef,
  dataStart: 4096,
  dataEnd: 4096 + 8 * 65536,
  readOffset: 64,
  bufferBytes: 256,
  strideBytes: 64,
};
const LKEY = 0x51;

/** A VerbsConnection on a fake QP and CQ; every ibv_post_send chain is captured, decoded. */
function sender(o: VerbsConnectionOptions & { autoPoll?: boolean; cqe?: number; sendQueueWrs?: number } = {}) {
  const posts: DecodedSendWr[][] = [];
  const feed = new FakeCompletionFeed();
  let postRc = 0;
  const dev = new FakeVerbsDevice(
    { postSend: (_qp, wr) => (posts.push(decodeSendWrChain(wr)), postRc), pollCq: feed.poll },
    { cqe: o.cqe ?? 256 },
  );
  fakes.push(dev);
  const ctx = verbs.adoptContext(dev.ctx, 'fake0');
  const clock = new ManualClock(1000);
  const cq = new SenderCq(verbs.adoptCq(ctx, dev.cq), { clock, autoPoll: o.autoPoll ?? false });
  const slots = o.slots ?? 4;
  const bulkBytes = o.bulkBytes ?? 1024;
  const memory = NativeBuffer.alloc(senderLayout(REMOTE.bufferBytes, slots, bulkBytes).size);
  const conn = new VerbsConnection(
    { qp: verbs.adoptQp(ctx, dev.qp), cq, memory, lkey: LKEY, remote: REMOTE, sendQueueWrs: o.sendQueueWrs ?? 64 },
    { retryMs: 1, noBufferTimeoutMs: 50, ...o, slots, bulkBytes },
  );
  cleanup.push(() => {
    void conn.close();
    cq.close();
    memory.free();
  });
  const layout = senderLayout(REMOTE.bufferBytes, slots, bulkBytes);
  return { conn, cq, clock, feed, posts, memory, layout, failPosts: (rc: number) => (postRc = rc) };
}

const entry = (len: number, fill: number): Uint8Array => new Uint8Array(len).fill(fill);
const readOk = (wrId: bigint) => ({ wrId, status: abi.IBV_WC_SUCCESS, opcode: abi.IBV_WC_RDMA_READ, byteLen: 1 });

/** Whether `p` has settled, without waiting for it. */
async function settled(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  p.then(() => (done = true), () => (done = true));
  await new Promise((r) => setImmediate(r));
  return done;
}

describe('VerbsConnection.write: SEND + 1-byte READ (paper §5.2)', () => {
  it('posts exactly one SEND+READ chain from the staged entry, with a fresh wr_id', async () => {
    const { conn, posts, memory } = sender();
    const e = entry(192, 0xab);
    conn.write(e).catch(() => {}); // left pending: close() rejects it
    assert.equal(posts.length, 1, 'one ibv_post_send per write');
    const [send, read] = posts[0]! as [DecodedSendWr, DecodedSendWr];
    assert.equal(posts[0]!.length, 2);
    assert.equal(send.opcode, abi.IBV_WR_SEND);
    assert.equal(send.sendFlags & abi.IBV_SEND_SIGNALED, 0, 'SEND unsignaled');
    assert.equal(send.sges.length, 1);
    const sge = send.sges[0]!;
    assert.equal(sge.length, 192);
    assert.equal(sge.lkey, LKEY);
    const at = Number(sge.addr - memory.address);
    assert.ok(at >= 0 && at + 192 <= memory.size, 'SEND reads from the registered staging buffer');
    assert.deepEqual(memory.bytes.subarray(at, at + 192), e, 'the entry was copied into its slot before posting');
    assert.equal(read.opcode, abi.IBV_WR_RDMA_READ);
    assert.equal(read.sendFlags, abi.IBV_SEND_SIGNALED);
    assert.equal(read.wrId, send.wrId, 'READ carries the request context');
    assert.notEqual(read.wrId, 0n);
    assert.equal(read.remoteAddr, REMOTE.poolBase + BigInt(REMOTE.readOffset));
    assert.equal(read.rkey, REMOTE.rkey);
    assert.equal(read.sges[0]!.length, 1);
    assert.equal(read.sges[0]!.lkey, LKEY);

    conn.write(entry(64, 0xcd)).catch(() => {});
    assert.equal(posts.length, 2);
    const [send2] = posts[1]! as [DecodedSendWr];
    assert.notEqual(send2.wrId, send.wrId, 'every write gets a fresh wr_id');
    assert.notEqual(send2.sges[0]!.addr, sge.addr, 'concurrent writes get distinct slots');
  });

  it('resolves only when the CQ returns the READ completion with that wr_id', async () => {
    const { conn, posts, feed } = sender();
    const p = conn.write(entry(128, 1));
    const wrId = posts[0]![1]!.wrId;
    conn.poll();
    assert.equal(await settled(p), false, 'nothing polled yet');
    feed.push(readOk(wrId + 1000n));
    conn.poll();
    assert.equal(await settled(p), false, 'another wr_id is not this write');
    feed.push(readOk(wrId));
    conn.poll();
    assert.equal(await p, LANDED_ADDRESS_UNKNOWN, 'a SEND completion does not say where it landed');
    assert.deepEqual(conn.stats(), { writes: 1, bytes: 128, retries: 0, noBufferWaits: 0 });
  });

  it('re-issues a write not acknowledged within retryMs, with a new wr_id, from the same slot', async () => {
    const { conn, posts, feed, clock, memory } = sender({ slots: 1 });
    const p = conn.write(entry(64, 7));
    const first = posts[0]!;
    clock.advance(0.5);
    conn.poll();
    assert.equal(posts.length, 1, 'not yet due');
    clock.advance(0.6); // 1.1 ms since the post
    conn.poll();
    assert.equal(posts.length, 2, 're-issued');
    const second = posts[1]!;
    assert.notEqual(second[1]!.wrId, first[1]!.wrId, 'a new wr_id');
    assert.equal(second[0]!.sges[0]!.addr, first[0]!.sges[0]!.addr, 'same staged entry');
    assert.equal(second[0]!.sges[0]!.length, 64);
    assert.equal(conn.stats().retries, 1);

    // A second write waits: the only slot is held while any attempt may still read it.
    const q = conn.write(entry(64, 9));
    assert.equal(posts.length, 2);

    feed.push(readOk(first[1]!.wrId)); // the first attempt, 1.1 ms late
    conn.poll();
    assert.equal(await settled(p), false, 'a late completion is not an ack');
    assert.equal(posts.length, 2, 'slot still held by the second attempt');
    feed.push(readOk(second[1]!.wrId));
    conn.poll();
    assert.equal(await p, LANDED_ADDRESS_UNKNOWN);
    assert.equal(conn.verbsStats().late, 1);
    assert.equal(posts.length, 3, 'the waiting write got the freed slot');
    const at = Number(posts[2]![0]!.sges[0]!.addr - memory.address);
    assert.deepEqual(memory.bytes.subarray(at, at + 64), entry(64, 9));
    feed.push(readOk(posts[2]![1]!.wrId));
    conn.poll();
    await q;
  });

  it('an error completion rejects with VERBS and the status name, and fails the connection', async () => {
    const { conn, posts, feed } = sender();
    const p = conn.write(entry(64, 1));
    const other = conn.write(entry(64, 2));
    feed.push({ wrId: posts[0]![0]!.wrId, status: abi.IBV_WC_REM_ACCESS_ERR, opcode: 0, vendorErr: 0x81 });
    conn.poll();
    await assert.rejects(p, (e: unknown) => e instanceof RowanError && e.code === ErrorCodes.VERBS && /IBV_WC_REM_ACCESS_ERR/.test(e.message));
    await assert.rejects(other, (e: unknown) => e instanceof RowanError && e.code === ErrorCodes.VERBS, 'the QP is in error: all its writes fail');
    await assert.rejects(conn.write(entry(64, 3)), /IBV_WC_REM_ACCESS_ERR/);
    assert.equal(posts.length, 2, 'nothing posted on a failed QP');
  });

  it('a receiver that stopped answering (retries exceeded) is PEER_GONE, which callers reconnect on', async () => {
    const { conn, posts, feed } = sender();
    const p = conn.write(entry(64, 1));
    feed.push({ wrId: posts[0]![0]!.wrId, status: abi.IBV_WC_RETRY_EXC_ERR, opcode: 0, vendorErr: 0x81 });
    conn.poll();
    await assert.rejects(p, (e: unknown) => e instanceof RowanError && e.code === ErrorCodes.PEER_GONE && /IBV_WC_RETRY_EXC_ERR/.test(e.message));
    await assert.rejects(conn.write(entry(64, 3)), (e: unknown) => e instanceof RowanError && e.code === ErrorCodes.PEER_GONE);
  });

  it('gives up with WRITE_TIMEOUT after noBufferTimeoutMs of unacknowledged attempts', async () => {
    const { conn, posts, clock } = sender({ noBufferTimeoutMs: 5, slots: 1 });
    const p = conn.write(entry(64, 1));
    const queued = conn.write(entry(64, 2)); // waits for the only slot, which p's attempts hold
    for (let i = 0; i < 8; i++) {
      clock.advance(1.5);
      conn.poll();
    }
    await assert.rejects(p, (e: unknown) => e instanceof RowanError && e.code === ErrorCodes.WRITE_TIMEOUT);
    assert.equal(posts.length, 4, 'posted at 0, re-issued at 1.5, 3, 4.5; gave up at 6');
    await assert.rejects(queued, (e: unknown) => e instanceof RowanError && e.code === ErrorCodes.WRITE_TIMEOUT && /no free staging slot/.test(e.message));
  });

  it('a refused post rejects that write with VERBS (errno named)', async () => {
    const { conn, failPosts } = sender();
    failPosts(osConstants.errno.ENOMEM); // the send queue is full
    await assert.rejects(conn.write(entry(64, 1)), (e: unknown) => e instanceof RowanError && e.code === ErrorCodes.VERBS && /ENOMEM/.test(e.message));
  });

  it('refuses writes that are not whole strides or exceed the receiver’s buffer, before posting', async () => {
    const { conn, posts } = sender();
    await assert.rejects(conn.write(entry(100, 1)), (e: unknown) => e instanceof RowanError && e.code === ErrorCodes.BAD_ARGUMENT);
    await assert.rejects(conn.write(entry(0, 1)), (e: unknown) => e instanceof RowanError && e.code === ErrorCodes.BAD_ARGUMENT);
    await assert.rejects(conn.write(entry(320, 1)), (e: unknown) => e instanceof RowanError && e.code === ErrorCodes.ENTRY_TOO_LARGE && /256 B fixed-size/.test(e.message));
    assert.equal(posts.length, 0);
  });

  it('queues writes beyond the send queue (2 WRs each) and posts them as completions free it', async () => {
    const { conn, posts, feed } = sender({ slots: 8, sendQueueWrs: 4 });
    const ps = [1, 2, 3].map((i) => conn.write(entry(64, i)));
    assert.equal(posts.length, 2, 'two chains fill 4 send WRs');
    assert.equal(conn.verbsStats().queued, 1);
    feed.push(readOk(posts[0]![1]!.wrId));
    conn.poll();
    assert.equal(posts.length, 3);
    feed.push(readOk(posts[1]![1]!.wrId), readOk(posts[2]![1]!.wrId));
    conn.poll();
    assert.deepEqual(await Promise.all(ps), [-1, -1, -1]);
  });

  it('the self-arming poller resolves writes with no one calling poll()', async () => {
    const { conn, posts, feed, cq } = sender({ autoPoll: true });
    const p = conn.write(entry(64, 1));
    feed.push(readOk(posts[0]![1]!.wrId));
    assert.equal(await p, -1);
    await new Promise((r) => setImmediate(r));
    assert.equal(cq.tracked, 0);
    const polls = cq.stats().polls;
    await new Promise((r) => setTimeout(r, 5));
    assert.equal(cq.stats().polls, polls, 'an idle CQ is not polled');
  });

  it('one SenderCq routes completions of two connections by wr_id (shared worker CQ)', async () => {
    const a = sender();
    const memory = NativeBuffer.alloc(senderLayout(REMOTE.bufferBytes, 2, 1024).size);
    const ctx = a.cq.cq.context;
    const b = new VerbsConnection(
      { qp: verbs.adoptQp(ctx, fakes[0]!.qp), cq: a.cq, memory, lkey: 9, remote: REMOTE, sendQueueWrs: 8 },
      { slots: 2, bulkBytes: 1024 },
    );
    cleanup.push(() => (void b.close(), memory.free()));
    const pa = a.conn.write(entry(64, 1));
    const pb = b.write(entry(64, 2));
    const [ida, idb] = [a.posts[0]![1]!.wrId, a.posts[1]![1]!.wrId];
    assert.notEqual(ida, idb);
    a.feed.push(readOk(idb));
    a.conn.poll();
    assert.equal(await settled(pa), false);
    assert.equal(await pb, -1);
    a.feed.push(readOk(ida));
    b.poll();
    assert.equal(await pa, -1);
  });
});

describe('VerbsConnection: one-sided verbs and control path', () => {
  it('writeAt posts RDMA WRITE + signaled 1-byte READ of the written range', async () => {
    const { conn, posts, feed, memory, layout } = sender({ bulkBytes: 1024 });
    const data = entry(1500, 5);
    data[1499] = 6;
    const p = conn.writeAt(REMOTE.dataStart + 640, data);
    await new Promise((r) => setImmediate(r));
    const [w, r] = posts[0]! as [DecodedSendWr, DecodedSendWr];
    assert.equal(w.opcode, abi.IBV_WR_RDMA_WRITE);
    assert.equal(w.sendFlags & abi.IBV_SEND_SIGNALED, 0);
    assert.deepEqual(w.sges, [{ addr: memory.at(layout.bulkAt), length: 1024, lkey: LKEY }]);
    assert.equal(w.remoteAddr, REMOTE.poolBase + BigInt(REMOTE.dataStart + 640));
    assert.equal(w.rkey, REMOTE.rkey);
    assert.equal(r.opcode, abi.IBV_WR_RDMA_READ);
    assert.equal(r.sendFlags, abi.IBV_SEND_SIGNALED);
    assert.equal(r.remoteAddr, w.remoteAddr + 1023n, 'reads the last byte written');
    feed.push(readOk(r.wrId));
    conn.poll();
    await new Promise((res) => setImmediate(res));
    const [w2] = posts[1]! as [DecodedSendWr];
    assert.equal(w2.sges[0]!.length, 476, 'the rest, as a second chunk');
    assert.equal(memory.bytes[layout.bulkAt + 475], 6);
    feed.push(readOk(posts[1]![1]!.wrId));
    conn.poll();
    await p;
    await assert.rejects(conn.writeAt(REMOTE.dataEnd - 10, entry(64, 1)), (e: unknown) => e instanceof RowanError && e.code === ErrorCodes.BAD_ARGUMENT);
  });

  it('read posts one signaled RDMA READ into the bounce area and returns what landed there', async () => {
    const { conn, posts, feed, memory, layout } = sender();
    const p = conn.read(REMOTE.dataStart, 100);
    await new Promise((r) => setImmediate(r));
    const [rd] = posts[0]! as [DecodedSendWr];
    assert.equal(posts[0]!.length, 1);
    assert.equal(rd.opcode, abi.IBV_WR_RDMA_READ);
    assert.equal(rd.remoteAddr, REMOTE.poolBase + BigInt(REMOTE.dataStart));
    assert.deepEqual(rd.sges, [{ addr: memory.at(layout.bulkAt), length: 100, lkey: LKEY }]);
    memory.bytes.fill(0x3c, layout.bulkAt, layout.bulkAt + 100); // what the RNIC would DMA
    feed.push(readOk(rd.wrId));
    conn.poll();
    assert.deepEqual(await p, entry(100, 0x3c));
  });

  it('allocateRegion asks the receiver over the side channel; without one it is unavailable', async () => {
    const { conn } = sender();
    await assert.rejects(conn.allocateRegion(3), (e: unknown) => e instanceof RowanError && e.code === ErrorCodes.FABRIC_UNAVAILABLE);
  });

  it('close rejects pending writes with RECEIVER_CLOSED and later calls too', async () => {
    const { conn } = sender();
    const p = conn.write(entry(64, 1));
    await conn.close();
    await assert.rejects(p, (e: unknown) => e instanceof RowanError && e.code === ErrorCodes.RECEIVER_CLOSED);
    await assert.rejects(conn.write(entry(64, 1)), (e: unknown) => e instanceof RowanError && e.code === ErrorCodes.RECEIVER_CLOSED);
  });
});

describe('verbs side channel (JSON lines, no device needed)', () => {
  async function fakeReceiver(reply: (m: Record<string, unknown>) => Record<string, unknown> | null): Promise<{ server: Server; port: number; seen: Record<string, unknown>[] }> {
    const seen: Record<string, unknown>[] = [];
    const server = createServer((s) => {
      const ch = new ControlChannel(s);
      ch.onMessage = (m) => {
        seen.push(m);
        const r = reply(m);
        if (r) ch.send(r);
      };
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    cleanup.push(() => server.close());
    const addr = server.address();
    return { server, port: typeof addr === 'object' && addr ? addr.port : 0, seen };
  }
  const endpoint = { qpNum: 0x11, lid: 3, gid: '00'.repeat(16), psn: 77, mtu: abi.IBV_MTU_1024, linkLayer: abi.IBV_LINK_LAYER_INFINIBAND };

  it('dialVerbs sends hello with our endpoint and parses the welcome', async () => {
    const rx = await fakeReceiver((m) =>
      m['t'] === 'hello'
        ? {
            t: 'welcome',
            v: VERBS_PROTOCOL_VERSION,
            endpoint: { ...endpoint, qpNum: 0x22 },
            pool: { base: (2n ** 47n + 4096n).toString(), rkey: 5, dataStart: 4096, dataEnd: 8192, readOffset: 0 },
            queue: { bufferBytes: 4096, strideBytes: 64, receiveMode: verbs.receiveMode },
          }
        : m['op'] === 'allocate'
          ? { t: 'res', id: m['id'], ok: true, region: { segment: 1, offset: 8192, length: 4096 } }
          : null,
    );
    const { channel, welcome } = await dialVerbs('127.0.0.1', rx.port, { endpoint, senderId: 4 }, 2000);
    cleanup.push(() => channel.close());
    assert.deepEqual(rx.seen[0], { t: 'hello', v: VERBS_PROTOCOL_VERSION, endpoint, senderId: 4 });
    assert.equal(welcome.endpoint.qpNum, 0x22);
    assert.equal(welcome.pool.base, 2n ** 47n + 4096n, 'the 48-bit base address survives JSON as a decimal string');
    assert.equal(welcome.queue.bufferBytes, 4096);
    const res = await channel.request({ op: 'allocate', ownerId: 2 });
    assert.deepEqual(res['region'], { segment: 1, offset: 8192, length: 4096 });
  });

  it('a receiver error becomes the RowanError it names', async () => {
    const rx = await fakeReceiver(() => ({ t: 'error', error: { code: ErrorCodes.VERBS, message: 'ibv_modify_qp failed' } }));
    await assert.rejects(
      dialVerbs('127.0.0.1', rx.port, { endpoint, senderId: 0 }, 2000),
      (e: unknown) => e instanceof RowanError && e.code === ErrorCodes.VERBS && /ibv_modify_qp/.test(e.message),
    );
  });
});

describe('VerbsReceiverQueue: fixed-size receive buffers on the SRQ (Figure 4a)', () => {
  const SEG = 4096;
  function queue(o: { bufferBytes?: number; maxWr?: number; mode?: verbs.CqMode } = {}) {
    const calls: { srq: bigint; chain: DecodedRecvWr[] }[] = [];
    const feed = new FakeCompletionFeed();
    const dev = new FakeVerbsDevice({ postSrqRecv: (srq, wr) => (calls.push({ srq, chain: decodeRecvWrChain(wr) }), 0), pollCq: feed.poll });
    fakes.push(dev);
    const ctx = verbs.adoptContext(dev.ctx);
    const bytes = new Uint8Array(16 * SEG);
    const q = new VerbsReceiverQueue({
      srq: verbs.adoptSrq(ctx, dev.srq, o.maxWr ?? 64),
      cq: verbs.adoptCq(ctx, dev.cq, o.mode ?? 'cq-ex-ignore-overrun'),
      lkey: 0x77,
      rkey: 0x78,
      poolBase: 0x5000_0000n,
      bytes,
      segmentBytes: SEG,
      bufferBytes: o.bufferBytes ?? 1024,
    });
    return { q, calls, dev, bytes, feed };
  }

  it('posts the segments split into buffers, in increasing address order, in ONE call', () => {
    const { q, calls, dev } = queue();
    q.post([{ offset: SEG, length: SEG }, { offset: 3 * SEG, length: SEG }]);
    assert.equal(calls.length, 1, 'one ibv_post_srq_recv per batch');
    assert.equal(calls[0]!.srq, dev.srq);
    const chain = calls[0]!.chain;
    assert.equal(chain.length, 8, 'two 4 KiB segments = eight 1 KiB receive buffers');
    const want = [SEG, SEG + 1024, SEG + 2048, SEG + 3072, 3 * SEG, 3 * SEG + 1024, 3 * SEG + 2048, 3 * SEG + 3072];
    assert.deepEqual(chain.map((w) => w.sges), want.map((off) => [{ addr: 0x5000_0000n + BigInt(off), length: 1024, lkey: 0x77 }]));
    assert.deepEqual(chain.map((w) => w.wrId), [0n, 1n, 2n, 3n, 4n, 5n, 6n, 7n], 'receive WR i gets wr_id i');
    assert.equal(q.posted(), 2);
    q.post([{ offset: 5 * SEG, length: SEG }]);
    assert.deepEqual(calls[1]!.chain.map((w) => w.wrId), [8n, 9n, 10n, 11n]);
  });

  it('one buffer per segment when bufferBytes is the segment', () => {
    const { q, calls } = queue({ bufferBytes: SEG });
    q.post([{ offset: 0, length: SEG }, { offset: SEG, length: SEG }, { offset: 2 * SEG, length: SEG }]);
    assert.deepEqual(calls[0]!.chain.map((w) => w.sges[0]!.length), [SEG, SEG, SEG]);
    assert.equal(q.postCap, 64, 'SRQ of 64 WRs holds 64 one-buffer segments');
  });

  it('refuses segments out of address order, or not whole buffers, before posting anything', () => {
    const { q, calls } = queue();
    assert.throws(() => q.post([{ offset: 2 * SEG, length: SEG }, { offset: SEG, length: SEG }]), InvariantError);
    assert.throws(() => q.post([{ offset: 0, length: 1000 }]), InvariantError);
    assert.equal(calls.length, 0);
  });

  it('postCap is how many segments the SRQ holds; posting past it is a broken invariant', () => {
    const { q, calls, bytes } = queue({ maxWr: 12 });
    assert.equal(q.postCap, 3, '12 WRs / 4 buffers per segment');
    q.post([0, 1, 2].map((i) => ({ offset: i * SEG, length: SEG })));
    assert.equal(q.outstanding(), 3);
    assert.throws(() => q.post([{ offset: 3 * SEG, length: SEG }]), InvariantError);
    bytes[2 * SEG] = 1; // a write landed at the start of segment 2: segments 0 and 1 are consumed
    assert.equal(q.outstanding(), 1);
    q.post([3, 4].map((i) => ({ offset: i * SEG, length: SEG })));
    assert.equal(calls.length, 2);
    assert.equal(q.outstanding(), 3);
  });

  it('rejects a buffer size that is not a stride multiple dividing the segment', () => {
    assert.throws(() => queue({ bufferBytes: 96 }), (e: unknown) => e instanceof RowanError && e.code === ErrorCodes.BAD_CONFIG);
    assert.throws(() => queue({ bufferBytes: 1024, maxWr: 4 }), /fewer than 2 segments fit/);
  });

  it('without ignore-overrun (cq-legacy) it drains the CQ before each post; a ring CQ is never polled', () => {
    const legacy = queue({ mode: 'cq-legacy' });
    legacy.feed.push({ wrId: 0n, status: abi.IBV_WC_SUCCESS, opcode: abi.IBV_WC_RECV, byteLen: 64 });
    legacy.feed.push({ wrId: 1n, status: abi.IBV_WC_LOC_LEN_ERR, opcode: abi.IBV_WC_RECV });
    legacy.q.post([{ offset: 0, length: SEG }]);
    assert.deepEqual(legacy.feed.calls, [64]);
    assert.equal(legacy.q.stats().drained, 2);
    assert.equal(legacy.q.stats().receiveErrors, 1);
    const ring = queue();
    ring.q.post([{ offset: 0, length: SEG }]);
    assert.deepEqual(ring.feed.calls, []);
    assert.equal(ring.q.stats().cqMode, 'cq-ex-ignore-overrun');
    assert.equal(ring.q.stats().receiveMode, 'fixed-size-buffers');
  });
});

describe('verbs fabric on a machine without an RDMA device', () => {
  it('VerbsConnection.connect rejects with ROWAN_ERR_VERBS_NO_DEVICE before any network traffic', async (t) => {
    if (verbs.listDevices().length > 0) return t.skip('this machine has an RDMA device');
    let dialed = false;
    const server = createServer((s) => ((dialed = true), s.destroy()));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    cleanup.push(() => server.close());
    const addr = server.address();
    const port = typeof addr === 'object' && addr ? addr.port : 0;
    await assert.rejects(VerbsConnection.connect({ host: '127.0.0.1', port }), (e: unknown) => {
      assert.ok(e instanceof RowanError);
      assert.equal(e.code, 'ROWAN_ERR_VERBS_NO_DEVICE');
      assert.match(e.message, /no RDMA device/);
      assert.match(e.message, /use --fabric shm or --fabric tcp/);
      return true;
    });
    assert.equal(dialed, false, 'failed before dialing the receiver');
  });

  it('openVerbsFabric throws the same', (t) => {
    if (verbs.listDevices().length > 0) return t.skip('this machine has an RDMA device');
    assert.throws(() => openVerbsFabric(), (e: unknown) => e instanceof RowanError && e.code === ErrorCodes.VERBS_NO_DEVICE);
  });
});
