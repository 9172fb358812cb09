// The RC QP state machine's attributes: RESET -> INIT -> RTR -> RTS, as ibv_qp_attr values plus the
// attr mask each transition must carry (ibv_modify_qp(3)). Pure functions, so the masks and values
// are testable without a device; native/verbs.ts encodes them and calls ibv_modify_qp.
//
// Rowan needs RDMA READ on the sender (the 1-byte persistence READ): the sender's RTS sets
// max_rd_atomic >= 1 and the receiver's RTR max_dest_rd_atomic >= 1, and the receiver's QPs grant
// IBV_ACCESS_REMOTE_READ.

import * as abi from './verbs-abi.js';

export interface QpInitOptions {
  port?: number;
  pkeyIndex?: number;
  /** Remote access the QP grants (default LOCAL_WRITE | REMOTE_READ | REMOTE_WRITE). */
  accessFlags?: number;
}

export interface QpRtrOptions {
  destQpNum: number;
  rqPsn: number;
  /** IBV_MTU_* (default IBV_MTU_1024). */
  pathMtu?: number;
  /** The peer's LID (InfiniBand); 0 on RoCE. */
  dlid?: number;
  port?: number;
  sl?: number;
  /** The peer's GID: set for RoCE (or routed IB); makes the address vector global. */
  dgid?: Uint8Array;
  sgidIndex?: number;
  hopLimit?: number;
  maxDestRdAtomic?: number;
  minRnrTimer?: number;
}

export interface QpRtsOptions {
  sqPsn: number;
  timeout?: number;
  retryCnt?: number;
  rnrRetry?: number;
  maxRdAtomic?: number;
}

export interface QpTransition {
  /** An object koffi encodes as struct ibv_qp_attr (absent members are zero). */
  attr: Record<string, unknown>;
  mask: number;
}

export const DEFAULT_QP_ACCESS =
  abi.IBV_ACCESS_LOCAL_WRITE | abi.IBV_ACCESS_REMOTE_READ | abi.IBV_ACCESS_REMOTE_WRITE;

export function qpInitAttr(o: QpInitOptions = {}): QpTransition {
  return {
    attr: {
      qp_state: abi.IBV_QPS_INIT,
      pkey_index: o.pkeyIndex ?? 0,
      port_num: o.port ?? 1,
      qp_access_flags: o.accessFlags ?? DEFAULT_QP_ACCESS,
    },
    mask: abi.IBV_QP_STATE | abi.IBV_QP_PKEY_INDEX | abi.IBV_QP_PORT | abi.IBV_QP_ACCESS_FLAGS,
  };
}

export function qpRtrAttr(o: QpRtrOptions): QpTransition {
  const global = o.dgid !== undefined;
  if (global && o.dgid!.length !== 16) throw new RangeError('qpRtrAttr: dgid must be 16 bytes');
  return {
    attr: {
      qp_state: abi.IBV_QPS_RTR,
      path_mtu: o.pathMtu ?? abi.IBV_MTU_1024,
      dest_qp_num: o.destQpNum,
      rq_psn: o.rqPsn,
      max_dest_rd_atomic: o.maxDestRdAtomic ?? 1,
      min_rnr_timer: o.minRnrTimer ?? 12,
      ah_attr: {
        grh: {
          dgid: { raw: global ? o.dgid : new Uint8Array(16) },
          flow_label: 0,
          sgid_index: o.sgidIndex ?? 0,
          hop_limit: global ? (o.hopLimit ?? 1) : 0,
          traffic_class: 0,
        },
        dlid: o.dlid ?? 0,
        sl: o.sl ?? 0,
        src_path_bits: 0,
        static_rate: 0,
        is_global: global ? 1 : 0,
        port_num: o.port ?? 1,
      },
    },
    mask:
      abi.IBV_QP_STATE |
      abi.IBV_QP_AV |
      abi.IBV_QP_PATH_MTU |
      abi.IBV_QP_DEST_QPN |
      abi.IBV_QP_RQ_PSN |
      abi.IBV_QP_MAX_DEST_RD_ATOMIC |
      abi.IBV_QP_MIN_RNR_TIMER,
  };
}

export function qpRtsAttr(o: QpRtsOptions): QpTransition {
  return {
    attr: {
      qp_state: abi.IBV_QPS_RTS,
      sq_psn: o.sqPsn,
      timeout: o.timeout ?? 14,
      retry_cnt: o.retryCnt ?? 7,
      rnr_retry: o.rnrRetry ?? 7,
      max_rd_atomic: o.maxRdAtomic ?? 1,
    },
    mask:
      abi.IBV_QP_STATE |
      abi.IBV_QP_TIMEOUT |
      abi.IBV_QP_RETRY_CNT |
      abi.IBV_QP_RNR_RETRY |
      abi.IBV_QP_SQ_PSN |
      abi.IBV_QP_MAX_QP_RD_ATOMIC,
  };
}
