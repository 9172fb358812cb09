// The koffi declarations of native/verbs-abi.ts against the C compiler's view of rdma-core 44's
// headers on x86_64. A wrong member type or a missing member shifts every offset after it, and the
// binding would then hand the provider garbage work requests — silently, until a device runs them.
//
// HOW THE NUMBERS WERE OBTAINED: compiled test/fixtures/verbs-layout.c once, on the development machine
// (Debian 12, gcc 12.2.0, rdma-core 44 headers /usr/include/infiniband/verbs.h, x86_64):
//   gcc -Wall -O0 -o /tmp/verbs-layout test/fixtures/verbs-layout.c && /tmp/verbs-layout
// and pasted its three tables below. This test does not need gcc or rdma-core to run; re-run the
// program and update the tables only when the targeted rdma-core changes.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as abi from '../../../native/verbs-abi.js';

/** sizeof(struct X) (and of union ibv_gid, pthread_mutex_t, pthread_cond_t) from gcc. */
const GCC_SIZES: Record<string, number> = {
  'ibv_device': 664,
  'ibv_context_ops': 256,
  'ibv_context': 328,
  'verbs_context': 648,
  'ibv_pd': 16,
  'ibv_mr': 48,
  'ibv_cq': 128,
  'ibv_cq_init_attr_ex': 56,
  'ibv_srq_attr': 12,
  'ibv_srq_init_attr': 24,
  'ibv_srq': 128,
  'ibv_qp_cap': 20,
  'ibv_qp_init_attr': 64,
  'ibv_qp': 160,
  'ibv_global_route': 24,
  'ibv_ah_attr': 32,
  'ibv_qp_attr': 144,
  'ibv_sge': 16,
  'ibv_send_wr': 128,
  'ibv_recv_wr': 32,
  'ibv_wc': 48,
  'ibv_port_attr': 52,
  'ibv_gid': 16,
  'pthread_mutex_t': 40,
  'pthread_cond_t': 48,
};

/** offsetof(struct X, member path) from gcc. */
const GCC_OFFSETS: Record<string, number> = {
  'ibv_device._ops': 0,
  'ibv_device.node_type': 16,
  'ibv_device.transport_type': 20,
  'ibv_device.name': 24,
  'ibv_device.dev_name': 88,
  'ibv_device.dev_path': 152,
  'ibv_device.ibdev_path': 408,
  'ibv_context_ops.poll_cq': 88,
  'ibv_context_ops.req_notify_cq': 96,
  'ibv_context_ops.post_srq_recv': 160,
  'ibv_context_ops.post_send': 200,
  'ibv_context_ops.post_recv': 208,
  'ibv_context_ops._compat_async_event': 248,
  'ibv_context.device': 0,
  'ibv_context.ops': 8,
  'ibv_context.cmd_fd': 264,
  'ibv_context.async_fd': 268,
  'ibv_context.num_comp_vectors': 272,
  'ibv_context.mutex': 280,
  'ibv_context.abi_compat': 320,
  'verbs_context.query_port': 0,
  'verbs_context.create_cq_ex': 200,
  'verbs_context.priv': 208,
  'verbs_context.create_qp_ex': 264,
  'verbs_context.close_xrcd': 296,
  'verbs_context._ABI_placeholder3': 304,
  'verbs_context.sz': 312,
  'verbs_context.context': 320,
  'ibv_pd.context': 0,
  'ibv_pd.handle': 8,
  'ibv_mr.context': 0,
  'ibv_mr.pd': 8,
  'ibv_mr.addr': 16,
  'ibv_mr.length': 24,
  'ibv_mr.handle': 32,
  'ibv_mr.lkey': 36,
  'ibv_mr.rkey': 40,
  'ibv_cq.context': 0,
  'ibv_cq.channel': 8,
  'ibv_cq.cq_context': 16,
  'ibv_cq.handle': 24,
  'ibv_cq.cqe': 28,
  'ibv_cq.mutex': 32,
  'ibv_cq.cond': 72,
  'ibv_cq.comp_events_completed': 120,
  'ibv_cq.async_events_completed': 124,
  'ibv_cq_init_attr_ex.cqe': 0,
  'ibv_cq_init_attr_ex.cq_context': 8,
  'ibv_cq_init_attr_ex.channel': 16,
  'ibv_cq_init_attr_ex.comp_vector': 24,
  'ibv_cq_init_attr_ex.wc_flags': 32,
  'ibv_cq_init_attr_ex.comp_mask': 40,
  'ibv_cq_init_attr_ex.flags': 44,
  'ibv_cq_init_attr_ex.parent_domain': 48,
  'ibv_srq_attr.max_wr': 0,
  'ibv_srq_attr.max_sge': 4,
  'ibv_srq_attr.srq_limit': 8,
  'ibv_srq_init_attr.srq_context': 0,
  'ibv_srq_init_attr.attr': 8,
  'ibv_srq.context': 0,
  'ibv_srq.srq_context': 8,
  'ibv_srq.pd': 16,
  'ibv_srq.handle': 24,
  'ibv_srq.mutex': 32,
  'ibv_srq.cond': 72,
  'ibv_srq.events_completed': 120,
  'ibv_qp_cap.max_send_wr': 0,
  'ibv_qp_cap.max_recv_wr': 4,
  'ibv_qp_cap.max_send_sge': 8,
  'ibv_qp_cap.max_recv_sge': 12,
  'ibv_qp_cap.max_inline_data': 16,
  'ibv_qp_init_attr.qp_context': 0,
  'ibv_qp_init_attr.send_cq': 8,
  'ibv_qp_init_attr.recv_cq': 16,
  'ibv_qp_init_attr.srq': 24,
  'ibv_qp_init_attr.cap': 32,
  'ibv_qp_init_attr.qp_type': 52,
  'ibv_qp_init_attr.sq_sig_all': 56,
  'ibv_qp.context': 0,
  'ibv_qp.qp_context': 8,
  'ibv_qp.pd': 16,
  'ibv_qp.send_cq': 24,
  'ibv_qp.recv_cq': 32,
  'ibv_qp.srq': 40,
  'ibv_qp.handle': 48,
  'ibv_qp.qp_num': 52,
  'ibv_qp.state': 56,
  'ibv_qp.qp_type': 60,
  'ibv_qp.mutex': 64,
  'ibv_qp.cond': 104,
  'ibv_qp.events_completed': 152,
  'ibv_global_route.dgid': 0,
  'ibv_global_route.flow_label': 16,
  'ibv_global_route.sgid_index': 20,
  'ibv_global_route.hop_limit': 21,
  'ibv_global_route.traffic_class': 22,
  'ibv_ah_attr.grh': 0,
  'ibv_ah_attr.dlid': 24,
  'ibv_ah_attr.sl': 26,
  'ibv_ah_attr.src_path_bits': 27,
  'ibv_ah_attr.static_rate': 28,
  'ibv_ah_attr.is_global': 29,
  'ibv_ah_attr.port_num': 30,
  'ibv_qp_attr.qp_state': 0,
  'ibv_qp_attr.cur_qp_state': 4,
  'ibv_qp_attr.path_mtu': 8,
  'ibv_qp_attr.path_mig_state': 12,
  'ibv_qp_attr.qkey': 16,
  'ibv_qp_attr.rq_psn': 20,
  'ibv_qp_attr.sq_psn': 24,
  'ibv_qp_attr.dest_qp_num': 28,
  'ibv_qp_attr.qp_access_flags': 32,
  'ibv_qp_attr.cap': 36,
  'ibv_qp_attr.ah_attr': 56,
  'ibv_qp_attr.alt_ah_attr': 88,
  'ibv_qp_attr.pkey_index': 120,
  'ibv_qp_attr.alt_pkey_index': 122,
  'ibv_qp_attr.en_sqd_async_notify': 124,
  'ibv_qp_attr.sq_draining': 125,
  'ibv_qp_attr.max_rd_atomic': 126,
  'ibv_qp_attr.max_dest_rd_atomic': 127,
  'ibv_qp_attr.min_rnr_timer': 128,
  'ibv_qp_attr.port_num': 129,
  'ibv_qp_attr.timeout': 130,
  'ibv_qp_attr.retry_cnt': 131,
  'ibv_qp_attr.rnr_retry': 132,
  'ibv_qp_attr.alt_port_num': 133,
  'ibv_qp_attr.alt_timeout': 134,
  'ibv_qp_attr.rate_limit': 136,
  'ibv_sge.addr': 0,
  'ibv_sge.length': 8,
  'ibv_sge.lkey': 12,
  'ibv_send_wr.wr_id': 0,
  'ibv_send_wr.next': 8,
  'ibv_send_wr.sg_list': 16,
  'ibv_send_wr.num_sge': 24,
  'ibv_send_wr.opcode': 28,
  'ibv_send_wr.send_flags': 32,
  'ibv_send_wr.imm_data': 36,
  'ibv_send_wr.wr': 40,
  'ibv_send_wr.wr.rdma.remote_addr': 40,
  'ibv_send_wr.wr.rdma.rkey': 48,
  'ibv_send_wr.wr.atomic.rkey': 64,
  'ibv_send_wr.wr.ud.remote_qkey': 52,
  'ibv_send_wr.qp_type': 72,
  'ibv_send_wr.bind_mw': 80,
  'ibv_send_wr.tso.mss': 90,
  'ibv_recv_wr.wr_id': 0,
  'ibv_recv_wr.next': 8,
  'ibv_recv_wr.sg_list': 16,
  'ibv_recv_wr.num_sge': 24,
  'ibv_wc.wr_id': 0,
  'ibv_wc.status': 8,
  'ibv_wc.opcode': 12,
  'ibv_wc.vendor_err': 16,
  'ibv_wc.byte_len': 20,
  'ibv_wc.imm_data': 24,
  'ibv_wc.qp_num': 28,
  'ibv_wc.src_qp': 32,
  'ibv_wc.wc_flags': 36,
  'ibv_wc.pkey_index': 40,
  'ibv_wc.slid': 42,
  'ibv_wc.sl': 44,
  'ibv_wc.dlid_path_bits': 45,
  'ibv_port_attr.state': 0,
  'ibv_port_attr.max_mtu': 4,
  'ibv_port_attr.active_mtu': 8,
  'ibv_port_attr.gid_tbl_len': 12,
  'ibv_port_attr.port_cap_flags': 16,
  'ibv_port_attr.max_msg_sz': 20,
  'ibv_port_attr.bad_pkey_cntr': 24,
  'ibv_port_attr.qkey_viol_cntr': 28,
  'ibv_port_attr.pkey_tbl_len': 32,
  'ibv_port_attr.lid': 34,
  'ibv_port_attr.sm_lid': 36,
  'ibv_port_attr.lmc': 38,
  'ibv_port_attr.max_vl_num': 39,
  'ibv_port_attr.sm_sl': 40,
  'ibv_port_attr.subnet_timeout': 41,
  'ibv_port_attr.init_type_reply': 42,
  'ibv_port_attr.active_width': 43,
  'ibv_port_attr.active_speed': 44,
  'ibv_port_attr.phys_state': 45,
  'ibv_port_attr.link_layer': 46,
  'ibv_port_attr.flags': 47,
  'ibv_port_attr.port_cap_flags2': 48,
};

/** Enum values from gcc. */
const GCC_CONSTANTS: Record<string, number> = {
  IBV_WR_RDMA_WRITE: 0,
  IBV_WR_SEND: 2,
  IBV_WR_RDMA_READ: 4,
  IBV_SEND_FENCE: 1,
  IBV_SEND_SIGNALED: 2,
  IBV_SEND_SOLICITED: 4,
  IBV_SEND_INLINE: 8,
  IBV_ACCESS_LOCAL_WRITE: 1,
  IBV_ACCESS_REMOTE_WRITE: 2,
  IBV_ACCESS_REMOTE_READ: 4,
  IBV_ACCESS_REMOTE_ATOMIC: 8,
  IBV_ACCESS_RELAXED_ORDERING: 1048576,
  IBV_ACCESS_OPTIONAL_RANGE: 1072693248,
  IBV_QPT_RC: 2,
  IBV_QPT_UD: 4,
  IBV_QPS_RESET: 0,
  IBV_QPS_INIT: 1,
  IBV_QPS_RTR: 2,
  IBV_QPS_RTS: 3,
  IBV_QPS_ERR: 6,
  IBV_QP_STATE: 1,
  IBV_QP_ACCESS_FLAGS: 8,
  IBV_QP_PKEY_INDEX: 16,
  IBV_QP_PORT: 32,
  IBV_QP_AV: 128,
  IBV_QP_PATH_MTU: 256,
  IBV_QP_TIMEOUT: 512,
  IBV_QP_RETRY_CNT: 1024,
  IBV_QP_RNR_RETRY: 2048,
  IBV_QP_RQ_PSN: 4096,
  IBV_QP_MAX_QP_RD_ATOMIC: 8192,
  IBV_QP_MIN_RNR_TIMER: 32768,
  IBV_QP_SQ_PSN: 65536,
  IBV_QP_MAX_DEST_RD_ATOMIC: 131072,
  IBV_QP_DEST_QPN: 1048576,
  IBV_WC_SUCCESS: 0,
  IBV_WC_LOC_LEN_ERR: 1,
  IBV_WC_WR_FLUSH_ERR: 5,
  IBV_WC_REM_ACCESS_ERR: 10,
  IBV_WC_RETRY_EXC_ERR: 12,
  IBV_WC_RNR_RETRY_EXC_ERR: 13,
  IBV_WC_GENERAL_ERR: 21,
  IBV_WC_TM_RNDV_INCOMPLETE: 23,
  IBV_WC_SEND: 0,
  IBV_WC_RDMA_WRITE: 1,
  IBV_WC_RDMA_READ: 2,
  IBV_WC_RECV: 128,
  IBV_WC_RECV_RDMA_WITH_IMM: 129,
  IBV_WC_EX_WITH_BYTE_LEN: 1,
  IBV_WC_STANDARD_FLAGS: 127,
  IBV_CQ_INIT_ATTR_MASK_FLAGS: 1,
  IBV_CQ_INIT_ATTR_MASK_PD: 2,
  IBV_CREATE_CQ_ATTR_SINGLE_THREADED: 1,
  IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN: 2,
  IBV_MTU_256: 1,
  IBV_MTU_1024: 3,
  IBV_MTU_4096: 5,
  IBV_PORT_ACTIVE: 4,
  IBV_LINK_LAYER_INFINIBAND: 1,
  IBV_LINK_LAYER_ETHERNET: 2,
};

/** Members that are anonymous in C carry a name in the koffi declaration (see verbs-abi.ts). */
const KOFFI_PATH: Record<string, string> = {
  'ibv_send_wr.bind_mw': 'bind_mw_or_tso.bind_mw',
  'ibv_send_wr.tso.mss': 'bind_mw_or_tso.tso.mss',
};

/** The C spelling of a koffi member that stands for an anonymous union. */
const ANONYMOUS_IN_C: Record<string, string> = { 'ibv_send_wr.bind_mw_or_tso': 'ibv_send_wr.bind_mw' };

type Declared = Parameters<typeof abi.sizeOf>[0];
function declared(name: string): Declared {
  const t = (abi as unknown as Record<string, unknown>)[name];
  assert.ok(t && typeof t === 'object' && 'size' in t, `verbs-abi.ts exports no type ${name}`);
  return t as Declared;
}

describe('verbs-abi: koffi layouts match gcc on rdma-core 44 / x86_64', () => {
  it('sizeof of every declared struct', () => {
    for (const [name, size] of Object.entries(GCC_SIZES)) {
      assert.equal(abi.sizeOf(declared(name)), size, `sizeof(${name})`);
    }
  });

  it('offsetof of every checked member', () => {
    for (const [key, offset] of Object.entries(GCC_OFFSETS)) {
      const dot = key.indexOf('.');
      const struct = key.slice(0, dot);
      const path = KOFFI_PATH[key] ?? key.slice(dot + 1);
      assert.equal(abi.offsetOf(declared(struct), path), offset, `offsetof(${key})`);
    }
  });

  it('checks every member of the structs the data path encodes or decodes', () => {
    // ibv_send_wr, ibv_recv_wr, ibv_sge and ibv_wc are written and read byte by byte: all their
    // top-level members must be in the gcc table, not just a sample.
    for (const name of ['ibv_send_wr', 'ibv_recv_wr', 'ibv_sge', 'ibv_wc', 'ibv_cq_init_attr_ex', 'ibv_qp_attr']) {
      const members = Object.keys(declared(name).members ?? {});
      assert.ok(members.length > 0);
      for (const m of members) {
        const key = ANONYMOUS_IN_C[`${name}.${m}`] ?? `${name}.${m}`;
        assert.ok(key in GCC_OFFSETS, `${name}.${m} has no gcc offset`);
      }
    }
  });

  it('the hot-path offset tables agree with the struct declarations', () => {
    assert.equal(abi.SEND_WR.size, GCC_SIZES['ibv_send_wr']);
    assert.equal(abi.SEND_WR.rdma_remote_addr, GCC_OFFSETS['ibv_send_wr.wr.rdma.remote_addr']);
    assert.equal(abi.SEND_WR.rdma_rkey, GCC_OFFSETS['ibv_send_wr.wr.rdma.rkey']);
    for (const f of ['wr_id', 'next', 'sg_list', 'num_sge', 'opcode', 'send_flags', 'imm_data'] as const) {
      assert.equal(abi.SEND_WR[f], GCC_OFFSETS[`ibv_send_wr.${f}`], `SEND_WR.${f}`);
    }
    assert.equal(abi.RECV_WR.size, GCC_SIZES['ibv_recv_wr']);
    for (const f of ['wr_id', 'next', 'sg_list', 'num_sge'] as const) {
      assert.equal(abi.RECV_WR[f], GCC_OFFSETS[`ibv_recv_wr.${f}`], `RECV_WR.${f}`);
    }
    assert.equal(abi.SGE.size, GCC_SIZES['ibv_sge']);
    for (const f of ['addr', 'length', 'lkey'] as const) assert.equal(abi.SGE[f], GCC_OFFSETS[`ibv_sge.${f}`]);
    assert.equal(abi.WC.size, GCC_SIZES['ibv_wc']);
    for (const f of ['wr_id', 'status', 'opcode', 'vendor_err', 'byte_len', 'imm_data', 'qp_num', 'src_qp', 'wc_flags'] as const) {
      assert.equal(abi.WC[f], GCC_OFFSETS[`ibv_wc.${f}`], `WC.${f}`);
    }
    assert.equal(abi.VERBS_CONTEXT_CONTEXT_OFFSET, GCC_OFFSETS['verbs_context.context']);
    // verbs_get_ctx(): the context is the last member of verbs_context.
    assert.equal(GCC_OFFSETS['verbs_context.context']! + GCC_SIZES['ibv_context']!, GCC_SIZES['verbs_context']);
  });

  it('enum values copied from the headers', () => {
    const exported = abi as unknown as Record<string, unknown>;
    for (const [name, value] of Object.entries(GCC_CONSTANTS)) {
      if (name in exported) assert.equal(exported[name], value, name);
      else assert.equal(abi.IBV_WC_STATUS_NAMES.indexOf(name), value, `${name} in IBV_WC_STATUS_NAMES`);
    }
    // enum ibv_wc_status runs 0..IBV_WC_TM_RNDV_INCOMPLETE without gaps.
    assert.equal(abi.IBV_WC_STATUS_NAMES.length, GCC_CONSTANTS['IBV_WC_TM_RNDV_INCOMPLETE']! + 1);
    assert.equal(abi.VERBS_ABI_IS_EXTENDED, 2n ** 64n - 1n);
  });
});
