// The verbs binding without a device, the way librpma tests its verbs usage: fake ibv_contexts whose
// ops (post_send, post_srq_recv, poll_cq, req_notify_cq) and verbs_context.create_cq_ex are JS
// callbacks (native/verbs-fake.ts), with fake ibv_qp / ibv_srq / ibv_cq objects pointing at them.
// Each callback decodes what the binding encoded (with koffi's struct decoding of the gcc-checked
// declarations, not the binding's own offset tables) and the test checks every field afterwards —
// assertions stay out of the callbacks, whose exceptions could not cross the C frame.
import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { constants as osConstants } from 'node:os';
import { ErrorCodes, InvariantError, RowanError } from '../../../config/base/errors.js';
import * as abi from '../../../native/verbs-abi.js';
import * as verbs from '../../../native/verbs.js';
import {
  type DecodedRecvWr,
  type DecodedSendWr,
  type FakeProvider,
  type FakeDeviceOptions,
  FakeVerbsDevice,
  decodeCqInitAttrEx,
  decodeRecvWrChain,
  decodeSendWrChain,
  writePointer,
  writeWorkCompletions,
} from '../../../native/verbs-fake.js';

const ENOMEM = osConstants.errno.ENOMEM;

const fakes: FakeVerbsDevice[] = [];
function fake(provider: FakeProvider, opts?: FakeDeviceOptions): { dev: FakeVerbsDevice; ctx: verbs.VerbsContext } {
  const dev = new FakeVerbsDevice(provider, opts);
  fakes.push(dev);
  return { dev, ctx: verbs.adoptContext(dev.ctx, 'fake0') };
}
afterEach(() => {
  for (const f of fakes) assert.deepEqual(f.callbackErrors, [], 'a fake provider callback threw');
  for (const f of fakes.splice(0)) f.close();
});

function assertVerbsError(fn: () => unknown, code: string, pattern: RegExp): RowanError {
  let caught: unknown;
  assert.throws(fn, (e: unknown) => {
    caught = e;
    return e instanceof RowanError && e.code === code && pattern.test(e.message);
  });
  return caught as RowanError;
}

describe('verbs: no device on this machine', () => {
  it('openDevice() fails with VERBS_NO_DEVICE and says what to use instead', (t) => {
    if (verbs.listDevices().length > 0) return t.skip('this machine has an RDMA device');
    // libibverbs installed: it lists no device; not installed (a bare machine): the package to install.
    const why = verbs.verbsLoadable() ? /ibv_get_device_list returned 0 devices/ : /libibverbs\.so\.1 cannot be loaded -- package libibverbs1: apt-get install libibverbs1/;
    const err = assertVerbsError(() => verbs.openDevice(), ErrorCodes.VERBS_NO_DEVICE, why);
    assert.match(err.message, /use --fabric shm or --fabric tcp/);
    assert.equal(err.code, 'ROWAN_ERR_VERBS_NO_DEVICE');
  });

  it('listDevices() is an empty list, not an error', (t) => {
    const devices = verbs.listDevices();
    if (devices.length > 0) return t.skip('this machine has an RDMA device');
    assert.deepEqual(devices, []);
  });
});

describe('verbs: postRowanWrite through ops.post_send', () => {
  const W = {
    localAddr: 0x7f00_1234_5000n,
    length: 192,
    lkey: 0x1111,
    wrId: 0x8000_0000_0000_0005n, // a context id above 2^63: wr_id is 64-bit
    readAddr: 0x7e00_0000_0040n,
    readRkey: 0x2222,
    readLocalAddr: 0x7f00_0000_0100n,
    readLkey: 0x3333,
  };

  function capture() {
    const calls: { qp: bigint; bad: bigint; chain: DecodedSendWr[] }[] = [];
    const f = fake({
      postSend: (qp, wr, bad) => {
        calls.push({ qp, bad, chain: decodeSendWrChain(wr) });
        return 0;
      },
    });
    return { ...f, calls, qp: verbs.adoptQp(f.ctx, f.dev.qp) };
  }

  it('posts one chain: an unsignaled SEND of the entry, then a signaled 1-byte RDMA READ', () => {
    const { dev, qp, calls } = capture();
    verbs.postRowanWrite(qp, W);
    assert.equal(calls.length, 1, 'SEND and READ go in ONE ibv_post_send call (paper §5.2)');
    const { qp: qpArg, bad, chain } = calls[0]!;
    assert.equal(qpArg, dev.qp);
    assert.notEqual(bad, 0n, 'bad_wr must point somewhere');
    assert.equal(chain.length, 2);
    const [send, read] = chain as [DecodedSendWr, DecodedSendWr];

    assert.equal(send.opcode, abi.IBV_WR_SEND);
    assert.equal(send.sendFlags & abi.IBV_SEND_SIGNALED, 0, 'SEND is unsignaled');
    assert.equal(send.sendFlags, 0);
    assert.equal(send.next, read.self, 'SEND chains to the READ via next');
    assert.equal(send.numSge, 1);
    assert.deepEqual(send.sges, [{ addr: W.localAddr, length: W.length, lkey: W.lkey }]);
    assert.equal(send.wrId, W.wrId, 'an unsignaled WR still reports its wr_id if it fails');

    assert.equal(read.opcode, abi.IBV_WR_RDMA_READ);
    assert.equal(read.sendFlags, abi.IBV_SEND_SIGNALED, 'READ is signaled: its completion is the ack');
    assert.equal(read.wrId, W.wrId, 'READ carries the request context');
    assert.equal(read.next, 0n, 'the chain ends at the READ');
    assert.equal(read.numSge, 1);
    assert.deepEqual(read.sges, [{ addr: W.readLocalAddr, length: 1, lkey: W.readLkey }]);
    assert.equal(read.remoteAddr, W.readAddr);
    assert.equal(read.rkey, W.readRkey);
  });

  it('re-encodes every field on each call (the native block is reused, nothing stale survives)', () => {
    const { qp, calls } = capture();
    verbs.postRowanWrite(qp, W);
    const second = { ...W, localAddr: 0x1000n, length: 64, lkey: 7, wrId: 42, readAddr: 0x2000n, readRkey: 8, readLocalAddr: 0x3000n, readLkey: 9 };
    verbs.postRowanWrite(qp, second);
    assert.equal(calls.length, 2);
    const first = calls[0]!.chain;
    const [send, read] = calls[1]!.chain as [DecodedSendWr, DecodedSendWr];
    assert.equal(send.self, first[0]!.self, 'same preallocated WR memory');
    assert.deepEqual(send.sges, [{ addr: 0x1000n, length: 64, lkey: 7 }]);
    assert.equal(send.wrId, 42n);
    assert.equal(read.wrId, 42n);
    assert.deepEqual(read.sges, [{ addr: 0x3000n, length: 1, lkey: 9 }]);
    assert.equal(read.remoteAddr, 0x2000n);
    assert.equal(read.rkey, 8);
  });

  it('a refused post becomes RowanError(VERBS) naming errno and the bad work request', () => {
    const f = fake({
      postSend: (_qp, wr, bad) => {
        writePointer(bad, decodeSendWrChain(wr)[1]!.self); // the READ did not fit
        return ENOMEM;
      },
    });
    const qp = verbs.adoptQp(f.ctx, f.dev.qp);
    const err = assertVerbsError(() => verbs.postRowanWrite(qp, W), ErrorCodes.VERBS, /ENOMEM \(\d+\)/);
    assert.match(err.message, /work request 1 \(RDMA_READ\)/);
    assert.equal(err.details?.['badWrIndex'], 1);
    assert.equal(err.details?.['errno'], ENOMEM);
  });

  it('a zero-length entry is a caller bug, caught before the provider sees it', () => {
    const { qp, calls } = capture();
    assert.throws(() => verbs.postRowanWrite(qp, { ...W, length: 0 }), InvariantError);
    assert.equal(calls.length, 0);
  });

  it('a context whose provider has no post_send reports it', () => {
    const f = fake({});
    const qp = verbs.adoptQp(f.ctx, f.dev.qp);
    assertVerbsError(() => verbs.postRowanWrite(qp, W), ErrorCodes.VERBS, /no ibv_context\.ops\.post_send/);
  });
});

describe('verbs: postSend (general chains)', () => {
  it('encodes opcode, flags, all sges, rdma fields and imm_data of each WR, linked in order', () => {
    const seen: DecodedSendWr[][] = [];
    const f = fake({ postSend: (_qp, wr) => (seen.push(decodeSendWrChain(wr)), 0) });
    const qp = verbs.adoptQp(f.ctx, f.dev.qp);
    verbs.postSend(qp, [
      {
        wrId: 1,
        opcode: abi.IBV_WR_RDMA_WRITE,
        sendFlags: abi.IBV_SEND_SIGNALED,
        sges: [
          { addr: 0xa000n, length: 100, lkey: 1 },
          { addr: 0xb000n, length: 28, lkey: 2 },
        ],
        remoteAddr: 0xdead_b000n,
        rkey: 77,
      },
      { wrId: 2n, opcode: abi.IBV_WR_SEND_WITH_IMM, sendFlags: abi.IBV_SEND_INLINE, sges: [{ addr: 0xc000n, length: 16, lkey: 3 }], immData: 0x01020304 },
      { wrId: 3n, opcode: abi.IBV_WR_SEND, sges: [] },
    ]);
    assert.equal(seen.length, 1);
    const [a, b, c] = seen[0]! as [DecodedSendWr, DecodedSendWr, DecodedSendWr];
    assert.equal(seen[0]!.length, 3);
    assert.equal(a.next, b.self);
    assert.equal(b.next, c.self);
    assert.equal(c.next, 0n);
    assert.deepEqual([a.wrId, b.wrId, c.wrId], [1n, 2n, 3n]);
    assert.deepEqual([a.opcode, b.opcode, c.opcode], [abi.IBV_WR_RDMA_WRITE, abi.IBV_WR_SEND_WITH_IMM, abi.IBV_WR_SEND]);
    assert.deepEqual([a.sendFlags, b.sendFlags, c.sendFlags], [abi.IBV_SEND_SIGNALED, abi.IBV_SEND_INLINE, 0]);
    assert.equal(a.numSge, 2);
    assert.deepEqual(a.sges, [
      { addr: 0xa000n, length: 100, lkey: 1 },
      { addr: 0xb000n, length: 28, lkey: 2 },
    ]);
    assert.equal(a.remoteAddr, 0xdead_b000n);
    assert.equal(a.rkey, 77);
    assert.equal(b.immData, 0x01020304);
    assert.deepEqual(b.sges, [{ addr: 0xc000n, length: 16, lkey: 3 }]);
    assert.equal(c.numSge, 0);
    assert.equal(c.sgList, 0n);
  });
});

describe('verbs: postReceiveBuffers through ops.post_srq_recv', () => {
  const SEG = 4 * 1024 * 1024;
  const BASE = 0x7f40_0000_0000n;

  function capture(rc = 0, badIndex = -1) {
    const calls: { srq: bigint; chain: DecodedRecvWr[] }[] = [];
    const f = fake({
      postSrqRecv: (srq, wr, bad) => {
        const chain = decodeRecvWrChain(wr);
        calls.push({ srq, chain });
        if (badIndex >= 0) writePointer(bad, chain[badIndex]!.self);
        return rc;
      },
    });
    return { ...f, calls, srq: verbs.adoptSrq(f.ctx, f.dev.srq, 512) };
  }

  it('is fixed-size-buffer mode (no multi-packet SRQ upstream)', () => {
    assert.equal(verbs.receiveMode, 'fixed-size-buffers');
    assert.equal(verbs.RECEIVE_STRIDE_BYTES, 64);
  });

  it('posts all segments in ONE call, as a list in increasing address order', () => {
    const { dev, srq, calls } = capture();
    // Free segments need not be adjacent; they must ascend.
    const segments = [0, 1, 3, 4, 9].map((i) => ({ addr: BASE + BigInt(i * SEG), length: SEG, lkey: 0x55 }));
    verbs.postReceiveBuffers(srq, segments, 1000n);
    assert.equal(calls.length, 1);
    assert.equal(calls[0]!.srq, dev.srq);
    const chain = calls[0]!.chain;
    assert.equal(chain.length, segments.length);
    chain.forEach((wr, i) => {
      assert.equal(wr.wrId, 1000n + BigInt(i), `wr ${i} wr_id`);
      assert.equal(wr.numSge, 1, `wr ${i} num_sge`);
      assert.deepEqual(wr.sges, [segments[i]], `wr ${i} sge`);
      if (i > 0) {
        assert.equal(chain[i - 1]!.next, wr.self, `wr ${i - 1} links to wr ${i}`);
        assert.ok(wr.sges[0]!.addr > chain[i - 1]!.sges[0]!.addr, 'increasing address order');
      }
    });
    assert.equal(chain.at(-1)!.next, 0n);
  });

  it('stride-sized buffers (Figure 4a) and batches larger than the initial scratch', () => {
    const { srq, calls } = capture();
    const n = 3000; // 3000 * (32 + 16) B > the 4 KiB first allocation: the scratch must grow
    const segments = Array.from({ length: n }, (_, i) => ({ addr: BASE + BigInt(i * 64), length: 64, lkey: 9 }));
    verbs.postReceiveBuffers(srq, segments, 0);
    const chain = calls[0]!.chain;
    assert.equal(chain.length, n);
    for (let i = 0; i < n; i++) {
      assert.equal(chain[i]!.wrId, BigInt(i));
      assert.deepEqual(chain[i]!.sges, [segments[i]]);
    }
  });

  it('refuses out-of-order, overlapping or non-stride buffers before posting anything', () => {
    const { srq, calls } = capture();
    const a = { addr: BASE, length: SEG, lkey: 1 };
    assert.throws(() => verbs.postReceiveBuffers(srq, [{ ...a, addr: BASE + BigInt(SEG) }, a], 0), InvariantError);
    assert.throws(() => verbs.postReceiveBuffers(srq, [a, { ...a, addr: BASE + 64n }], 0), InvariantError);
    assert.throws(() => verbs.postReceiveBuffers(srq, [{ ...a, length: 100 }], 0), InvariantError);
    assert.equal(calls.length, 0);
  });

  it('posting nothing calls nothing', () => {
    const { srq, calls } = capture();
    verbs.postReceiveBuffers(srq, [], 0);
    assert.equal(calls.length, 0);
  });

  it('a refused post names the buffer the provider stopped at', () => {
    const { srq } = capture(ENOMEM, 2);
    const segments = [0, 1, 2, 3].map((i) => ({ addr: BASE + BigInt(i * SEG), length: SEG, lkey: 1 }));
    const err = assertVerbsError(() => verbs.postReceiveBuffers(srq, segments, 0), ErrorCodes.VERBS, /ENOMEM/);
    assert.equal(err.details?.['badWrIndex'], 2);
    assert.match(err.message, new RegExp(`buffer 0x${(BASE + BigInt(2 * SEG)).toString(16)}`));
  });

  it('postSrqRecv posts general receive WRs the same way', () => {
    const { srq, calls } = capture();
    verbs.postSrqRecv(srq, [
      { wrId: 5, sges: [{ addr: 0x100n, length: 64, lkey: 1 }, { addr: 0x200n, length: 64, lkey: 2 }] },
      { wrId: 6, sges: [{ addr: 0x300n, length: 128, lkey: 3 }] },
    ]);
    const [a, b] = calls[0]!.chain as [DecodedRecvWr, DecodedRecvWr];
    assert.equal(a.next, b.self);
    assert.equal(a.numSge, 2);
    assert.deepEqual(a.sges.map((s) => s.lkey), [1, 2]);
    assert.equal(b.wrId, 6n);
    assert.deepEqual(b.sges, [{ addr: 0x300n, length: 128, lkey: 3 }]);
  });
});

describe('verbs: pollCq through ops.poll_cq', () => {
  function capture(fill: (wc: bigint, n: number) => number) {
    const calls: { cq: bigint; n: number }[] = [];
    const f = fake({ pollCq: (cq, n, wc) => (calls.push({ cq, n }), fill(wc, n)) });
    return { ...f, calls, cq: verbs.adoptCq(f.ctx, f.dev.cq) };
  }

  it('decodes the ibv_wc array the provider filled', () => {
    const { dev, cq, calls } = capture((wc) =>
      writeWorkCompletions(wc, [
        { wrId: 0xffff_ffff_ffff_fff0n, status: abi.IBV_WC_SUCCESS, opcode: abi.IBV_WC_RDMA_READ, byteLen: 1, qpNum: 0x1234 },
        { wrId: 17n, status: abi.IBV_WC_SUCCESS, opcode: abi.IBV_WC_RECV, byteLen: 192, qpNum: 0x99 },
      ]),
    );
    const wcs = verbs.pollCq(cq, 16);
    assert.deepEqual(calls, [{ cq: dev.cq, n: 16 }]);
    assert.equal(wcs.length, 2);
    const [read, recv] = wcs as [verbs.WorkCompletion, verbs.WorkCompletion];
    assert.equal(read.wrId, 0xffff_ffff_ffff_fff0n);
    assert.equal(read.status, abi.IBV_WC_SUCCESS);
    assert.equal(read.statusName, 'IBV_WC_SUCCESS');
    assert.equal(read.opcode, abi.IBV_WC_RDMA_READ);
    assert.equal(read.byteLen, 1);
    assert.equal(read.qpNum, 0x1234);
    assert.equal(read.error, null);
    assert.equal(verbs.isReceiveCompletion(read), false);
    assert.equal(recv.wrId, 17n);
    assert.equal(recv.opcode, abi.IBV_WC_RECV);
    assert.equal(recv.byteLen, 192);
    assert.equal(verbs.isReceiveCompletion(recv), true);
  });

  it('maps an error status to RowanError(VERBS) with the status name, keeping the good ones', () => {
    const { cq } = capture((wc) =>
      writeWorkCompletions(wc, [
        { wrId: 1n, status: abi.IBV_WC_SUCCESS, opcode: abi.IBV_WC_RDMA_READ, byteLen: 1 },
        { wrId: 2n, status: abi.IBV_WC_REM_ACCESS_ERR, opcode: 0, vendorErr: 0x88, qpNum: 7 },
        { wrId: 3n, status: abi.IBV_WC_RETRY_EXC_ERR, opcode: 0 },
        { wrId: 4n, status: abi.IBV_WC_WR_FLUSH_ERR, opcode: 0 },
      ]),
    );
    const wcs = verbs.pollCq(cq, 4);
    assert.equal(wcs[0]!.error, null);
    const names = ['IBV_WC_REM_ACCESS_ERR', 'IBV_WC_RETRY_EXC_ERR', 'IBV_WC_WR_FLUSH_ERR'];
    wcs.slice(1).forEach((wc, i) => {
      assert.equal(wc.statusName, names[i]);
      assert.ok(wc.error instanceof RowanError);
      assert.equal(wc.error.code, ErrorCodes.VERBS);
      assert.match(wc.error.message, new RegExp(names[i]!));
      assert.equal(wc.error.details?.['statusName'], names[i]);
    });
    assert.match(wcs[1]!.error!.message, /wr_id 2, qp 7, vendor_err 0x88/);
  });

  it('an empty CQ is an empty array; a negative return is RowanError(VERBS)', () => {
    assert.deepEqual(verbs.pollCq(capture(() => 0).cq, 8), []);
    assertVerbsError(() => verbs.pollCq(capture(() => -1).cq, 8), ErrorCodes.VERBS, /ibv_poll_cq failed/);
  });

  it('reqNotifyCq passes solicited_only through ops.req_notify_cq', () => {
    const calls: [bigint, number][] = [];
    const f = fake({ reqNotifyCq: (cq, s) => (calls.push([cq, s]), 0) });
    const cq = verbs.adoptCq(f.ctx, f.dev.cq);
    verbs.reqNotifyCq(cq);
    verbs.reqNotifyCq(cq, true);
    assert.deepEqual(calls, [
      [f.dev.cq, 0],
      [f.dev.cq, 1],
    ]);
  });
});

describe('verbs: createCq through verbs_context.create_cq_ex', () => {
  it('asks for IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN and reports the ring-CQ mode', () => {
    const attrs: ReturnType<typeof decodeCqInitAttrEx>[] = [];
    const contexts: bigint[] = [];
    const f = fake({
      createCqEx: (context, attr) => {
        contexts.push(context);
        attrs.push(decodeCqInitAttrEx(attr));
        return f.dev.allocCq(4096);
      },
    });
    const cq = verbs.createCq(f.ctx, 4000);
    assert.deepEqual(contexts, [f.dev.ctx]);
    assert.equal(attrs.length, 1);
    const a = attrs[0]!;
    assert.equal(a.cqe, 4000);
    assert.equal(a.flags, abi.IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN);
    assert.equal(a.compMask & abi.IBV_CQ_INIT_ATTR_MASK_FLAGS, abi.IBV_CQ_INIT_ATTR_MASK_FLAGS, 'flags are only read under comp_mask');
    assert.equal(a.wcFlags & BigInt(abi.IBV_WC_EX_WITH_BYTE_LEN), BigInt(abi.IBV_WC_EX_WITH_BYTE_LEN));
    assert.equal(a.channel, 0n);
    assert.equal(a.parentDomain, 0n);
    assert.equal(cq.mode, 'cq-ex-ignore-overrun');
    assert.equal(cq.cqe, 4096, 'the provider may round up; the binding reads ibv_cq.cqe');
    assert.equal(cq.context, f.ctx);
  });

  it('says why create_cq_ex cannot be used on a context (the fallback is ibv_create_cq)', () => {
    const plain = fake({}, { extended: false });
    assert.equal(verbs.extendedOp(plain.ctx, 'create_cq_ex').fn, null);
    assert.match(verbs.extendedOp(plain.ctx, 'create_cq_ex').reason, /not an extended verbs_context/);

    const old = fake({ createCqEx: () => null }, { verbsContextSize: 100 });
    assert.equal(verbs.extendedOp(old.ctx, 'create_cq_ex').fn, null);
    assert.match(verbs.extendedOp(old.ctx, 'create_cq_ex').reason, /sz 100\) predates create_cq_ex/);

    const none = fake({});
    assert.match(verbs.extendedOp(none.ctx, 'create_cq_ex').reason, /does not implement create_cq_ex/);

    const full = fake({ createCqEx: () => null });
    assert.notEqual(verbs.extendedOp(full.ctx, 'create_cq_ex').fn, null);
  });
});

describe('verbs: handles and QP state transitions', () => {
  it('adopting an object of another context is a broken invariant', () => {
    const a = fake({});
    const b = fake({});
    assert.throws(() => verbs.adoptQp(a.ctx, b.dev.qp), InvariantError);
    assert.equal(verbs.adoptQp(a.ctx, a.dev.qp).qpNum, 0x1234);
  });

  it('INIT, RTR and RTS carry the masks ibv_modify_qp(3) requires for RC, and READ credits', () => {
    const init = verbs.qpInitAttr({ port: 2 });
    assert.equal(init.mask, abi.IBV_QP_STATE | abi.IBV_QP_PKEY_INDEX | abi.IBV_QP_PORT | abi.IBV_QP_ACCESS_FLAGS);
    assert.equal(init.attr['qp_state'], abi.IBV_QPS_INIT);
    assert.equal(init.attr['port_num'], 2);
    assert.ok(((init.attr['qp_access_flags'] as number) & abi.IBV_ACCESS_REMOTE_READ) !== 0, 'the 1-byte READ needs REMOTE_READ');

    const rtr = verbs.qpRtrAttr({ destQpNum: 0x42, rqPsn: 7, dgid: new Uint8Array(16).fill(0xfe), sgidIndex: 3 });
    const rtrMask = abi.IBV_QP_STATE | abi.IBV_QP_AV | abi.IBV_QP_PATH_MTU | abi.IBV_QP_DEST_QPN |
      abi.IBV_QP_RQ_PSN | abi.IBV_QP_MAX_DEST_RD_ATOMIC | abi.IBV_QP_MIN_RNR_TIMER;
    assert.equal(rtr.mask, rtrMask);
    assert.equal(rtr.attr['qp_state'], abi.IBV_QPS_RTR);
    assert.equal(rtr.attr['dest_qp_num'], 0x42);
    assert.ok((rtr.attr['max_dest_rd_atomic'] as number) >= 1);
    const ah = rtr.attr['ah_attr'] as Record<string, unknown>;
    assert.equal(ah['is_global'], 1, 'a GID makes the address vector global (RoCE)');
    assert.equal((ah['grh'] as Record<string, unknown>)['sgid_index'], 3);

    const rts = verbs.qpRtsAttr({ sqPsn: 9 });
    assert.equal(rts.mask, abi.IBV_QP_STATE | abi.IBV_QP_TIMEOUT | abi.IBV_QP_RETRY_CNT | abi.IBV_QP_RNR_RETRY |
      abi.IBV_QP_SQ_PSN | abi.IBV_QP_MAX_QP_RD_ATOMIC);
    assert.ok((rts.attr['max_rd_atomic'] as number) >= 1, 'the sender issues READs');

    // Every key is a member of struct ibv_qp_attr (koffi would silently drop a misspelt one).
    const members = new Set(Object.keys(abi.ibv_qp_attr.members ?? {}));
    for (const t of [init, rtr, rts]) for (const k of Object.keys(t.attr)) assert.ok(members.has(k), `ibv_qp_attr.${k}`);
    const ahMembers = new Set(Object.keys(abi.ibv_ah_attr.members ?? {}));
    for (const k of Object.keys(ah)) assert.ok(ahMembers.has(k), `ibv_ah_attr.${k}`);
  });

  it('the RTR attr reaches ibv_modify_qp with every field at its gcc offset (nested ah_attr, dgid union)', () => {
    // Offsets from test/fixtures/verbs-layout.c (see verbs-abi.test.ts): ibv_qp_attr.ah_attr = 56,
    // ibv_ah_attr.{dlid 24, sl 26, is_global 29, port_num 30}, ibv_global_route.{dgid 0, sgid_index 20, hop_limit 21}.
    const gid = Uint8Array.from({ length: 16 }, (_, i) => 0xa0 + i);
    const bytes = verbs.encodeQpAttr(
      verbs.qpRtrAttr({ destQpNum: 0xabcdef, rqPsn: 0x123456, pathMtu: abi.IBV_MTU_4096, dlid: 0x77, port: 2, sl: 3, dgid: gid, sgidIndex: 5, hopLimit: 9, maxDestRdAtomic: 4, minRnrTimer: 13 }),
    );
    const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    assert.equal(bytes.length, 144);
    assert.equal(dv.getInt32(0, true), abi.IBV_QPS_RTR);
    assert.equal(dv.getInt32(8, true), abi.IBV_MTU_4096);
    assert.equal(dv.getUint32(20, true), 0x123456);
    assert.equal(dv.getUint32(28, true), 0xabcdef);
    assert.deepEqual(bytes.subarray(56, 72), gid);
    assert.equal(bytes[56 + 20], 5);
    assert.equal(bytes[56 + 21], 9);
    assert.equal(dv.getUint16(56 + 24, true), 0x77);
    assert.equal(bytes[56 + 26], 3);
    assert.equal(bytes[56 + 29], 1);
    assert.equal(bytes[56 + 30], 2);
    assert.equal(bytes[127], 4);
    assert.equal(bytes[128], 13);
    assert.equal(bytes.subarray(88, 120).every((b) => b === 0), true, 'alt_ah_attr untouched');

    const rts = new DataView(verbs.encodeQpAttr(verbs.qpRtsAttr({ sqPsn: 0x42, timeout: 17, retryCnt: 6, rnrRetry: 5, maxRdAtomic: 2 })).buffer);
    assert.equal(rts.getInt32(0, true), abi.IBV_QPS_RTS);
    assert.equal(rts.getUint32(24, true), 0x42);
    assert.deepEqual([126, 130, 131, 132].map((o) => rts.getUint8(o)), [2, 17, 6, 5]);
  });
});
