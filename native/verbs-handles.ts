// The handle classes of libibverbs objects (context, PD, MR, CQ, SRQ, QP): plain data holding the C
// pointer and, for the data path, the context's decoded ops. Apart from native/verbs.ts (which creates
// them) so the posting code (verbs-post.ts) can take them without an import cycle.

type Ptr = bigint;

// ---- handles -------------------------------------------------------------------------------------

export type PostFn = (obj: Ptr, wr: Ptr, badWr: Ptr) => number;
export type PollFn = (cq: Ptr, n: number, wc: Ptr) => number;
export type NotifyFn = (cq: Ptr, solicitedOnly: number) => number;

/** The data-path entries of ibv_context.ops, decoded once per context. */
export interface DataPathOps {
  postSend: PostFn;
  postRecv: PostFn;
  postSrqRecv: PostFn;
  pollCq: PollFn;
  reqNotifyCq: NotifyFn;
}

export class VerbsContext {
  constructor(
    readonly ptr: Ptr,
    readonly deviceName: string,
    /** @internal decoded from ptr->ops */
    readonly ops: DataPathOps,
  ) {}
}
export class VerbsPd {
  constructor(readonly ptr: Ptr, readonly context: VerbsContext) {}
}
export class VerbsMr {
  constructor(
    readonly ptr: Ptr,
    readonly addr: bigint,
    readonly length: number | bigint,
    readonly lkey: number,
    readonly rkey: number,
  ) {}
}
/** 'cq-ex-ignore-overrun': the CQ may overrun (the ring CQ of §3.2); 'cq-legacy': overrun is fatal. */
export type CqMode = 'cq-ex-ignore-overrun' | 'cq-legacy';
export class VerbsCq {
  constructor(
    readonly ptr: Ptr,
    readonly context: VerbsContext,
    readonly cqe: number,
    readonly mode: CqMode,
    /** Why this mode: which path was taken and, for 'cq-legacy', why create_cq_ex was not used. */
    readonly modeReason: string,
  ) {}
}
export class VerbsSrq {
  constructor(readonly ptr: Ptr, readonly context: VerbsContext, readonly maxWr: number, readonly maxSge: number) {}
}
export class VerbsQp {
  constructor(readonly ptr: Ptr, readonly context: VerbsContext, readonly qpNum: number) {}
}
