// The libibverbs ABI as koffi sees it: struct layouts and enum values of rdma-core 44 on x86_64
// (Debian 12's /usr/include/infiniband/verbs.h, verbs_api.h, ib_user_ioctl_verbs.h), copied by hand.
//
// Every struct here mirrors its C declaration member by member, in order, so that koffi computes the
// same offsets as gcc; test/unit/native/verbs-abi.test.ts pins each size and offset against numbers
// taken from a C program compiled once against those headers. Pointer members are declared `void *`
// (koffi 3 represents pointers as BigInt) with the C type in a comment; the binding never relies on
// koffi to chase them. Anonymous unions of the C source get the names noted at their declaration.
//
// Only the parts the verbs transport touches are declared. Where a struct is only ever produced by
// the library (ibv_qp, ibv_srq, ibv_cq), its trailing members are still declared so that the fake
// contexts of the tests can allocate a whole, correctly sized object.

import koffi, { type TypeObject } from 'koffi';

// ---- enum values (named constants, CONVENTIONS 5) ------------------------------------------------

/** enum ibv_wr_opcode (the ones Rowan uses). */
export const IBV_WR_RDMA_WRITE = 0;
export const IBV_WR_RDMA_WRITE_WITH_IMM = 1;
export const IBV_WR_SEND = 2;
export const IBV_WR_SEND_WITH_IMM = 3;
export const IBV_WR_RDMA_READ = 4;

/** enum ibv_send_flags. */
export const IBV_SEND_FENCE = 1 << 0;
export const IBV_SEND_SIGNALED = 1 << 1;
export const IBV_SEND_SOLICITED = 1 << 2;
export const IBV_SEND_INLINE = 1 << 3;

/** enum ibv_access_flags (+ IBV_ACCESS_OPTIONAL_RANGE from verbs_api.h / ib_user_ioctl_verbs.h). */
export const IBV_ACCESS_LOCAL_WRITE = 1;
export const IBV_ACCESS_REMOTE_WRITE = 1 << 1;
export const IBV_ACCESS_REMOTE_READ = 1 << 2;
export const IBV_ACCESS_REMOTE_ATOMIC = 1 << 3;
export const IBV_ACCESS_RELAXED_ORDERING = 1 << 20; // IB_UVERBS_ACCESS_OPTIONAL_FIRST
/** ~(OPTIONAL_FIRST - 1) & 0x3fffffff: flags only ibv_reg_mr_iova2 understands. */
export const IBV_ACCESS_OPTIONAL_RANGE = 0x3ff00000;

/** enum ibv_qp_type. */
export const IBV_QPT_RC = 2;
export const IBV_QPT_UC = 3;
export const IBV_QPT_UD = 4;

/** enum ibv_qp_state. */
export const IBV_QPS_RESET = 0;
export const IBV_QPS_INIT = 1;
export const IBV_QPS_RTR = 2;
export const IBV_QPS_RTS = 3;
export const IBV_QPS_SQD = 4;
export const IBV_QPS_SQE = 5;
export const IBV_QPS_ERR = 6;

/** enum ibv_qp_attr_mask. */
export const IBV_QP_STATE = 1 << 0;
export const IBV_QP_CUR_STATE = 1 << 1;
export const IBV_QP_ACCESS_FLAGS = 1 << 3;
export const IBV_QP_PKEY_INDEX = 1 << 4;
export const IBV_QP_PORT = 1 << 5;
export const IBV_QP_QKEY = 1 << 6;
export const IBV_QP_AV = 1 << 7;
export const IBV_QP_PATH_MTU = 1 << 8;
export const IBV_QP_TIMEOUT = 1 << 9;
export const IBV_QP_RETRY_CNT = 1 << 10;
export const IBV_QP_RNR_RETRY = 1 << 11;
export const IBV_QP_RQ_PSN = 1 << 12;
export const IBV_QP_MAX_QP_RD_ATOMIC = 1 << 13;
export const IBV_QP_MIN_RNR_TIMER = 1 << 15;
export const IBV_QP_SQ_PSN = 1 << 16;
export const IBV_QP_MAX_DEST_RD_ATOMIC = 1 << 17;
export const IBV_QP_DEST_QPN = 1 << 20;

/** enum ibv_mtu. */
export const IBV_MTU_256 = 1;
export const IBV_MTU_512 = 2;
export const IBV_MTU_1024 = 3;
export const IBV_MTU_2048 = 4;
export const IBV_MTU_4096 = 5;

/** enum ibv_port_state (the one we test for) and the link layers. */
export const IBV_PORT_ACTIVE = 4;
export const IBV_LINK_LAYER_UNSPECIFIED = 0;
export const IBV_LINK_LAYER_INFINIBAND = 1;
export const IBV_LINK_LAYER_ETHERNET = 2;

/** enum ibv_wc_status, index = value. */
export const IBV_WC_STATUS_NAMES: readonly string[] = [
  'IBV_WC_SUCCESS',
  'IBV_WC_LOC_LEN_ERR',
  'IBV_WC_LOC_QP_OP_ERR',
  'IBV_WC_LOC_EEC_OP_ERR',
  'IBV_WC_LOC_PROT_ERR',
  'IBV_WC_WR_FLUSH_ERR',
  'IBV_WC_MW_BIND_ERR',
  'IBV_WC_BAD_RESP_ERR',
  'IBV_WC_LOC_ACCESS_ERR',
  'IBV_WC_REM_INV_REQ_ERR',
  'IBV_WC_REM_ACCESS_ERR',
  'IBV_WC_REM_OP_ERR',
  'IBV_WC_RETRY_EXC_ERR',
  'IBV_WC_RNR_RETRY_EXC_ERR',
  'IBV_WC_LOC_RDD_VIOL_ERR',
  'IBV_WC_REM_INV_RD_REQ_ERR',
  'IBV_WC_REM_ABORT_ERR',
  'IBV_WC_INV_EECN_ERR',
  'IBV_WC_INV_EEC_STATE_ERR',
  'IBV_WC_FATAL_ERR',
  'IBV_WC_RESP_TIMEOUT_ERR',
  'IBV_WC_GENERAL_ERR',
  'IBV_WC_TM_ERR',
  'IBV_WC_TM_RNDV_INCOMPLETE',
];
export const IBV_WC_SUCCESS = 0;
export const IBV_WC_LOC_LEN_ERR = 1;
export const IBV_WC_WR_FLUSH_ERR = 5;
export const IBV_WC_REM_ACCESS_ERR = 10;
export const IBV_WC_RETRY_EXC_ERR = 12;
export const IBV_WC_RNR_RETRY_EXC_ERR = 13;

/** enum ibv_wc_opcode. A receive completion has IBV_WC_RECV set (opcode & IBV_WC_RECV). */
export const IBV_WC_SEND = 0;
export const IBV_WC_RDMA_WRITE = 1;
export const IBV_WC_RDMA_READ = 2;
export const IBV_WC_RECV = 1 << 7;
export const IBV_WC_RECV_RDMA_WITH_IMM = IBV_WC_RECV + 1;

/** enum ibv_create_cq_wc_flags, ibv_cq_init_attr_mask, ibv_create_cq_attr_flags. */
export const IBV_WC_EX_WITH_BYTE_LEN = 1 << 0;
export const IBV_WC_STANDARD_FLAGS = 0x7f;
export const IBV_CQ_INIT_ATTR_MASK_FLAGS = 1 << 0;
export const IBV_CQ_INIT_ATTR_MASK_PD = 1 << 1;
export const IBV_CREATE_CQ_ATTR_SINGLE_THREADED = 1 << 0;
/** The CQ may overrun: the RNIC overwrites old entries instead of moving QPs to error (the ring CQ). */
export const IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN = 1 << 1;

/** verbs.h: `#define __VERBS_ABI_IS_EXTENDED ((void *)UINTPTR_MAX)`, stored in ibv_context.abi_compat. */
export const VERBS_ABI_IS_EXTENDED = 0xffffffffffffffffn;

export const IBV_SYSFS_NAME_MAX = 64;
export const IBV_SYSFS_PATH_MAX = 256;

// ---- structs ----------------------------------------------------------------------------------

const ptr = 'void *';

/** glibc x86_64: 40 bytes, 8-aligned (the binding never touches these, they only hold places). */
export const pthread_mutex_t = koffi.struct('verbs_pthread_mutex_t', { __size: koffi.array('uint64_t', 5) });
/** glibc x86_64: 48 bytes, 8-aligned. */
export const pthread_cond_t = koffi.struct('verbs_pthread_cond_t', { __size: koffi.array('uint64_t', 6) });

export const ibv_device = koffi.struct('ibv_device', {
  _ops: koffi.struct('_ibv_device_ops', { _dummy1: ptr, _dummy2: ptr }),
  node_type: 'int', // enum ibv_node_type
  transport_type: 'int', // enum ibv_transport_type
  name: koffi.array('char', IBV_SYSFS_NAME_MAX),
  dev_name: koffi.array('char', IBV_SYSFS_NAME_MAX),
  dev_path: koffi.array('char', IBV_SYSFS_PATH_MAX),
  ibdev_path: koffi.array('char', IBV_SYSFS_PATH_MAX),
});

/**
 * struct ibv_context_ops: the provider's function table. ibv_post_send, ibv_post_recv,
 * ibv_post_srq_recv, ibv_poll_cq and ibv_req_notify_cq are static inline in verbs.h and call these
 * pointers; they are not exported symbols, so the binding decodes them from here.
 */
export const ibv_context_ops = koffi.struct('ibv_context_ops', {
  _compat_query_device: ptr,
  _compat_query_port: ptr,
  _compat_alloc_pd: ptr,
  _compat_dealloc_pd: ptr,
  _compat_reg_mr: ptr,
  _compat_rereg_mr: ptr,
  _compat_dereg_mr: ptr,
  alloc_mw: ptr,
  bind_mw: ptr,
  dealloc_mw: ptr,
  _compat_create_cq: ptr,
  poll_cq: ptr, // int (*)(struct ibv_cq *, int num_entries, struct ibv_wc *)
  req_notify_cq: ptr, // int (*)(struct ibv_cq *, int solicited_only)
  _compat_cq_event: ptr,
  _compat_resize_cq: ptr,
  _compat_destroy_cq: ptr,
  _compat_create_srq: ptr,
  _compat_modify_srq: ptr,
  _compat_query_srq: ptr,
  _compat_destroy_srq: ptr,
  post_srq_recv: ptr, // int (*)(struct ibv_srq *, struct ibv_recv_wr *, struct ibv_recv_wr **bad)
  _compat_create_qp: ptr,
  _compat_query_qp: ptr,
  _compat_modify_qp: ptr,
  _compat_destroy_qp: ptr,
  post_send: ptr, // int (*)(struct ibv_qp *, struct ibv_send_wr *, struct ibv_send_wr **bad)
  post_recv: ptr, // int (*)(struct ibv_qp *, struct ibv_recv_wr *, struct ibv_recv_wr **bad)
  _compat_create_ah: ptr,
  _compat_destroy_ah: ptr,
  _compat_attach_mcast: ptr,
  _compat_detach_mcast: ptr,
  _compat_async_event: ptr,
});

export const ibv_context = koffi.struct('ibv_context', {
  device: ptr, // struct ibv_device *
  ops: ibv_context_ops,
  cmd_fd: 'int',
  async_fd: 'int',
  num_comp_vectors: 'int',
  mutex: pthread_mutex_t,
  abi_compat: ptr, // VERBS_ABI_IS_EXTENDED when a verbs_context surrounds this context
});

/**
 * struct verbs_context: the extended context that ends with (and so sits just before) the
 * ibv_context. ibv_create_cq_ex and ibv_query_port are static inline and reach create_cq_ex and
 * query_port through it (verbs_get_ctx_op), so the binding does the same.
 */
export const verbs_context = koffi.struct('verbs_context', {
  query_port: ptr,
  advise_mr: ptr,
  alloc_null_mr: ptr,
  read_counters: ptr,
  attach_counters_point_flow: ptr,
  create_counters: ptr,
  destroy_counters: ptr,
  reg_dm_mr: ptr,
  alloc_dm: ptr,
  free_dm: ptr,
  modify_flow_action_esp: ptr,
  destroy_flow_action: ptr,
  create_flow_action_esp: ptr,
  modify_qp_rate_limit: ptr,
  alloc_parent_domain: ptr,
  dealloc_td: ptr,
  alloc_td: ptr,
  modify_cq: ptr,
  post_srq_ops: ptr,
  destroy_rwq_ind_table: ptr,
  create_rwq_ind_table: ptr,
  destroy_wq: ptr,
  modify_wq: ptr,
  create_wq: ptr,
  query_rt_values: ptr,
  create_cq_ex: ptr, // struct ibv_cq_ex *(*)(struct ibv_context *, struct ibv_cq_init_attr_ex *)
  priv: ptr,
  query_device_ex: ptr,
  ibv_destroy_flow: ptr,
  ABI_placeholder2: ptr,
  ibv_create_flow: ptr,
  ABI_placeholder1: ptr,
  open_qp: ptr,
  create_qp_ex: ptr,
  get_srq_num: ptr,
  create_srq_ex: ptr,
  open_xrcd: ptr,
  close_xrcd: ptr,
  _ABI_placeholder3: 'uint64_t',
  sz: 'size_t', // must be immediately before the context
  context: ibv_context,
});

export const ibv_pd = koffi.struct('ibv_pd', {
  context: ptr,
  handle: 'uint32_t',
});

export const ibv_mr = koffi.struct('ibv_mr', {
  context: ptr,
  pd: ptr,
  addr: ptr,
  length: 'size_t',
  handle: 'uint32_t',
  lkey: 'uint32_t',
  rkey: 'uint32_t',
});

export const ibv_cq = koffi.struct('ibv_cq', {
  context: ptr,
  channel: ptr, // struct ibv_comp_channel *
  cq_context: ptr,
  handle: 'uint32_t',
  cqe: 'int',
  mutex: pthread_mutex_t,
  cond: pthread_cond_t,
  comp_events_completed: 'uint32_t',
  async_events_completed: 'uint32_t',
});

export const ibv_cq_init_attr_ex = koffi.struct('ibv_cq_init_attr_ex', {
  cqe: 'uint32_t',
  cq_context: ptr,
  channel: ptr,
  comp_vector: 'uint32_t',
  wc_flags: 'uint64_t',
  comp_mask: 'uint32_t',
  flags: 'uint32_t',
  parent_domain: ptr,
});

export const ibv_srq_attr = koffi.struct('ibv_srq_attr', {
  max_wr: 'uint32_t',
  max_sge: 'uint32_t',
  srq_limit: 'uint32_t',
});

export const ibv_srq_init_attr = koffi.struct('ibv_srq_init_attr', {
  srq_context: ptr,
  attr: ibv_srq_attr,
});

export const ibv_srq = koffi.struct('ibv_srq', {
  context: ptr,
  srq_context: ptr,
  pd: ptr,
  handle: 'uint32_t',
  mutex: pthread_mutex_t,
  cond: pthread_cond_t,
  events_completed: 'uint32_t',
});

export const ibv_qp_cap = koffi.struct('ibv_qp_cap', {
  max_send_wr: 'uint32_t',
  max_recv_wr: 'uint32_t',
  max_send_sge: 'uint32_t',
  max_recv_sge: 'uint32_t',
  max_inline_data: 'uint32_t',
});

export const ibv_qp_init_attr = koffi.struct('ibv_qp_init_attr', {
  qp_context: ptr,
  send_cq: ptr,
  recv_cq: ptr,
  srq: ptr,
  cap: ibv_qp_cap,
  qp_type: 'int', // enum ibv_qp_type
  sq_sig_all: 'int',
});

export const ibv_qp = koffi.struct('ibv_qp', {
  context: ptr,
  qp_context: ptr,
  pd: ptr,
  send_cq: ptr,
  recv_cq: ptr,
  srq: ptr,
  handle: 'uint32_t',
  qp_num: 'uint32_t',
  state: 'int', // enum ibv_qp_state
  qp_type: 'int', // enum ibv_qp_type
  mutex: pthread_mutex_t,
  cond: pthread_cond_t,
  events_completed: 'uint32_t',
});

export const ibv_gid = koffi.union('ibv_gid', {
  raw: koffi.array('uint8_t', 16),
  global: koffi.struct('ibv_gid_global', { subnet_prefix: 'uint64_t', interface_id: 'uint64_t' }),
});

export const ibv_global_route = koffi.struct('ibv_global_route', {
  dgid: ibv_gid,
  flow_label: 'uint32_t',
  sgid_index: 'uint8_t',
  hop_limit: 'uint8_t',
  traffic_class: 'uint8_t',
});

export const ibv_ah_attr = koffi.struct('ibv_ah_attr', {
  grh: ibv_global_route,
  dlid: 'uint16_t',
  sl: 'uint8_t',
  src_path_bits: 'uint8_t',
  static_rate: 'uint8_t',
  is_global: 'uint8_t',
  port_num: 'uint8_t',
});

export const ibv_qp_attr = koffi.struct('ibv_qp_attr', {
  qp_state: 'int',
  cur_qp_state: 'int',
  path_mtu: 'int', // enum ibv_mtu
  path_mig_state: 'int',
  qkey: 'uint32_t',
  rq_psn: 'uint32_t',
  sq_psn: 'uint32_t',
  dest_qp_num: 'uint32_t',
  qp_access_flags: 'uint32_t',
  cap: ibv_qp_cap,
  ah_attr: ibv_ah_attr,
  alt_ah_attr: ibv_ah_attr,
  pkey_index: 'uint16_t',
  alt_pkey_index: 'uint16_t',
  en_sqd_async_notify: 'uint8_t',
  sq_draining: 'uint8_t',
  max_rd_atomic: 'uint8_t',
  max_dest_rd_atomic: 'uint8_t',
  min_rnr_timer: 'uint8_t',
  port_num: 'uint8_t',
  timeout: 'uint8_t',
  retry_cnt: 'uint8_t',
  rnr_retry: 'uint8_t',
  alt_port_num: 'uint8_t',
  alt_timeout: 'uint8_t',
  rate_limit: 'uint32_t',
});

export const ibv_sge = koffi.struct('ibv_sge', {
  addr: 'uint64_t',
  length: 'uint32_t',
  lkey: 'uint32_t',
});

const ibv_mw_bind_info = koffi.struct('ibv_mw_bind_info', {
  mr: ptr,
  addr: 'uint64_t',
  length: 'uint64_t',
  mw_access_flags: 'uint32_t',
});

/** The `wr` union of ibv_send_wr; Rowan uses `rdma` (the READ's remote address and rkey). */
export const ibv_send_wr_wr = koffi.union('ibv_send_wr_wr', {
  rdma: koffi.struct('ibv_send_wr_rdma', { remote_addr: 'uint64_t', rkey: 'uint32_t' }),
  atomic: koffi.struct('ibv_send_wr_atomic', {
    remote_addr: 'uint64_t',
    compare_add: 'uint64_t',
    swap: 'uint64_t',
    rkey: 'uint32_t',
  }),
  ud: koffi.struct('ibv_send_wr_ud', { ah: ptr, remote_qpn: 'uint32_t', remote_qkey: 'uint32_t' }),
});

export const ibv_send_wr = koffi.struct('ibv_send_wr', {
  wr_id: 'uint64_t',
  next: ptr, // struct ibv_send_wr *
  sg_list: ptr, // struct ibv_sge *
  num_sge: 'int',
  opcode: 'int', // enum ibv_wr_opcode
  send_flags: 'uint32_t',
  imm_data: 'uint32_t', // anonymous union { __be32 imm_data; uint32_t invalidate_rkey; }
  wr: ibv_send_wr_wr,
  qp_type: koffi.union('ibv_send_wr_qp_type', { xrc: koffi.struct({ remote_srqn: 'uint32_t' }) }),
  // anonymous union { bind_mw; tso; } in C
  bind_mw_or_tso: koffi.union('ibv_send_wr_bind_mw_or_tso', {
    bind_mw: koffi.struct('ibv_send_wr_bind_mw', { mw: ptr, rkey: 'uint32_t', bind_info: ibv_mw_bind_info }),
    tso: koffi.struct('ibv_send_wr_tso', { hdr: ptr, hdr_sz: 'uint16_t', mss: 'uint16_t' }),
  }),
});

export const ibv_recv_wr = koffi.struct('ibv_recv_wr', {
  wr_id: 'uint64_t',
  next: ptr, // struct ibv_recv_wr *
  sg_list: ptr, // struct ibv_sge *
  num_sge: 'int',
});

export const ibv_wc = koffi.struct('ibv_wc', {
  wr_id: 'uint64_t',
  status: 'int', // enum ibv_wc_status
  opcode: 'int', // enum ibv_wc_opcode
  vendor_err: 'uint32_t',
  byte_len: 'uint32_t',
  imm_data: 'uint32_t', // anonymous union { __be32 imm_data; uint32_t invalidated_rkey; }
  qp_num: 'uint32_t',
  src_qp: 'uint32_t',
  wc_flags: 'uint32_t',
  pkey_index: 'uint16_t',
  slid: 'uint16_t',
  sl: 'uint8_t',
  dlid_path_bits: 'uint8_t',
});

export const ibv_port_attr = koffi.struct('ibv_port_attr', {
  state: 'int', // enum ibv_port_state
  max_mtu: 'int', // enum ibv_mtu
  active_mtu: 'int',
  gid_tbl_len: 'int',
  port_cap_flags: 'uint32_t',
  max_msg_sz: 'uint32_t',
  bad_pkey_cntr: 'uint32_t',
  qkey_viol_cntr: 'uint32_t',
  pkey_tbl_len: 'uint16_t',
  lid: 'uint16_t',
  sm_lid: 'uint16_t',
  lmc: 'uint8_t',
  max_vl_num: 'uint8_t',
  sm_sl: 'uint8_t',
  subnet_timeout: 'uint8_t',
  init_type_reply: 'uint8_t',
  active_width: 'uint8_t',
  active_speed: 'uint8_t',
  phys_state: 'uint8_t',
  link_layer: 'uint8_t',
  flags: 'uint8_t',
  port_cap_flags2: 'uint16_t',
});

// ---- function pointer prototypes (the ops the binding calls through pointers) ------------------

export const post_send_fn = koffi.proto('int rowan_post_send_fn(void *qp, void *wr, void *bad_wr)');
export const post_recv_fn = koffi.proto('int rowan_post_recv_fn(void *qp, void *wr, void *bad_wr)');
export const post_srq_recv_fn = koffi.proto('int rowan_post_srq_recv_fn(void *srq, void *wr, void *bad_wr)');
export const poll_cq_fn = koffi.proto('int rowan_poll_cq_fn(void *cq, int num_entries, void *wc)');
export const req_notify_cq_fn = koffi.proto('int rowan_req_notify_cq_fn(void *cq, int solicited_only)');
export const create_cq_ex_fn = koffi.proto('void *rowan_create_cq_ex_fn(void *context, void *cq_attr)');
export const query_port_fn = koffi.proto(
  'int rowan_query_port_fn(void *context, uint8_t port_num, void *port_attr, size_t port_attr_len)',
);

// ---- offsets the hot-path encoders and decoders use (computed once from the declarations) -------

function off(type: TypeObject, member: string): number {
  return koffi.offsetof(type, member);
}

const wrUnion = off(ibv_send_wr, 'wr');
const rdma = ibv_send_wr_wr.members!['rdma']!.type;

export const SEND_WR = {
  size: koffi.sizeof(ibv_send_wr),
  wr_id: off(ibv_send_wr, 'wr_id'),
  next: off(ibv_send_wr, 'next'),
  sg_list: off(ibv_send_wr, 'sg_list'),
  num_sge: off(ibv_send_wr, 'num_sge'),
  opcode: off(ibv_send_wr, 'opcode'),
  send_flags: off(ibv_send_wr, 'send_flags'),
  imm_data: off(ibv_send_wr, 'imm_data'),
  rdma_remote_addr: wrUnion + off(rdma, 'remote_addr'),
  rdma_rkey: wrUnion + off(rdma, 'rkey'),
} as const;

export const RECV_WR = {
  size: koffi.sizeof(ibv_recv_wr),
  wr_id: off(ibv_recv_wr, 'wr_id'),
  next: off(ibv_recv_wr, 'next'),
  sg_list: off(ibv_recv_wr, 'sg_list'),
  num_sge: off(ibv_recv_wr, 'num_sge'),
} as const;

export const SGE = {
  size: koffi.sizeof(ibv_sge),
  addr: off(ibv_sge, 'addr'),
  length: off(ibv_sge, 'length'),
  lkey: off(ibv_sge, 'lkey'),
} as const;

export const WC = {
  size: koffi.sizeof(ibv_wc),
  wr_id: off(ibv_wc, 'wr_id'),
  status: off(ibv_wc, 'status'),
  opcode: off(ibv_wc, 'opcode'),
  vendor_err: off(ibv_wc, 'vendor_err'),
  byte_len: off(ibv_wc, 'byte_len'),
  imm_data: off(ibv_wc, 'imm_data'),
  qp_num: off(ibv_wc, 'qp_num'),
  src_qp: off(ibv_wc, 'src_qp'),
  wc_flags: off(ibv_wc, 'wc_flags'),
} as const;

/** Where ibv_context sits inside verbs_context: verbs_get_ctx() subtracts this from the context. */
export const VERBS_CONTEXT_CONTEXT_OFFSET = off(verbs_context, 'context');


// ---- layout introspection (for the ABI test, which may not import koffi itself) -----------------

/** koffi.sizeof of a declared type. */
export function sizeOf(type: TypeObject): number {
  return koffi.sizeof(type);
}

/** koffi.offsetof along a dotted member path ('wr.rdma.remote_addr'), summed over the nesting. */
export function offsetOf(type: TypeObject, path: string): number {
  let t = type;
  let total = 0;
  for (const member of path.split('.')) {
    const m = t.members?.[member];
    if (!m) throw new Error(`verbs-abi: ${t.name} has no member ${member}`);
    // koffi.offsetof takes records only; a union's members all sit at its start (m.offset is 0).
    total += t.primitive === 'Union' ? m.offset : koffi.offsetof(t, member);
    t = m.type;
  }
  return total;
}
