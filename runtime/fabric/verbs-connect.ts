// Connection setup of the `verbs` fabric: the device, and the control path that brings up one RC QP
// per (sender worker, receiver) pair (paper §5.2: "every worker thread builds an RC QP with every
// remote control thread").
//
// RDMA needs each side to learn the other's QP number, LID/GID and starting PSN before either QP can
// leave INIT, and the sender needs the receiver's pool base address and rkey for its READs. These go
// over a small TCP side channel, one JSON object per line (control path only; nothing of a Rowan write
// crosses it):
//
//   sender                                         receiver (listenVerbs)
//   create QP ---- {t:'hello', v, endpoint} ------> create QP on the SRQ + ring CQ, INIT -> RTR -> RTS
//   INIT -> RTR -> RTS <- {t:'welcome', endpoint,   (or {t:'error', error:{code, message}})
//                          pool, queue} ----------
//   allocateRegion --- {t:'req', id, op, ...} ----> pool.allocate   (later, any number of times)
//                 <--- {t:'res', id, ok, ...} ----
//
// The socket stays open for the life of the connection: the receiver destroys the QP when it closes.
import { randomInt } from 'node:crypto';
import { createServer, connect as netConnect, type Server, type Socket } from 'node:net';
import { OwnerRole, type Pool } from '../../shm/pool.js';
import * as verbs from '../../native/verbs.js';
import * as abi from '../../native/verbs-abi.js';
import { ErrorCodes, RowanError, fromRecord, toRecord } from '../../config/base/errors.js';
import type { RemoteRegion } from './fabric.js';
import type { VerbsReceiverQueue } from './verbs-receiver.js';

export const VERBS_PROTOCOL_VERSION = 1;
/** Longest control line accepted (a hello or welcome is a few hundred bytes). */
const LINE_BYTES_MAX = 64 * 1024;
/** READs a QP may have outstanding (ConnectX-4 and later allow 16): each Rowan write carries one. */
export const DEFAULT_RD_ATOMIC = 16;

// ---- the device ------------------------------------------------------------------------------------

export interface VerbsFabricOptions {
  /** RDMA device name (default: the first one). */
  device?: string;
  /** RDMA port number on the device (default 1); not the side channel's TCP port. */
  ibPort?: number;
  /** GID table index for RoCE / routed IB (default 0; RoCE v2 is often 1 or 3). */
  gidIndex?: number;
  /** max_rd_atomic / max_dest_rd_atomic of every QP (default 16). */
  maxRdAtomic?: number;
}

/** One opened device, its protection domain and the port every QP of this thread uses. */
export class VerbsFabric {
  private closed = false;
  constructor(
    readonly ctx: verbs.VerbsContext,
    readonly pd: verbs.VerbsPd,
    readonly portNum: number,
    readonly port: verbs.PortInfo,
    readonly gid: Uint8Array,
    readonly gidIndex: number,
    readonly maxRdAtomic: number,
  ) {}

  close(): void {
    if (this.closed) return;
    this.closed = true;
    verbs.deallocPd(this.pd);
    verbs.closeDevice(this.ctx);
  }
}

/**
 * Open the RDMA device for the `verbs` fabric. Where there is none (this machine), fails at once with
 * ROWAN_ERR_VERBS_NO_DEVICE: "no RDMA device found ...; use --fabric shm or --fabric tcp".
 */
export function openVerbsFabric(o: VerbsFabricOptions = {}): VerbsFabric {
  const ctx = verbs.openDevice(o.device);
  const portNum = o.ibPort ?? 1;
  try {
    const port = verbs.queryPort(ctx, portNum);
    if (!port.active) {
      throw new RowanError(ErrorCodes.VERBS, `port ${portNum} of ${ctx.deviceName} is not active (state ${port.state})`);
    }
    const gidIndex = o.gidIndex ?? 0;
    const needGid = port.linkLayer === abi.IBV_LINK_LAYER_ETHERNET || o.gidIndex !== undefined;
    const gid = needGid ? verbs.queryGid(ctx, portNum, gidIndex) : new Uint8Array(16);
    const pd = verbs.allocPd(ctx);
    return new VerbsFabric(ctx, pd, portNum, port, gid, gidIndex, o.maxRdAtomic ?? DEFAULT_RD_ATOMIC);
  } catch (err) {
    verbs.closeDevice(ctx);
    throw err;
  }
}

// ---- QP endpoints and bring-up ---------------------------------------------------------------------

/** What one side tells the other about its QP. */
export interface QpEndpoint {
  qpNum: number;
  lid: number;
  /** 16-byte GID, hex. */
  gid: string;
  /** Starting packet sequence number of this side's send queue (24 bits). */
  psn: number;
  /** IBV_MTU_* of the port. */
  mtu: number;
  linkLayer: number;
}

export function localEndpoint(f: VerbsFabric, qp: verbs.VerbsQp): QpEndpoint {
  return {
    qpNum: qp.qpNum,
    lid: f.port.lid,
    gid: Buffer.from(f.gid).toString('hex'),
    psn: randomInt(0, 1 << 24),
    mtu: f.port.activeMtu,
    linkLayer: f.port.linkLayer,
  };
}

/**
 * RESET -> INIT -> RTR -> RTS against `remote` (RoCE, or a peer without a LID, goes through the GRH).
 * `access` is what the QP grants its peer (default: remote READ and WRITE, the receiver's case).
 */
export function bringUpQp(f: VerbsFabric, qp: verbs.VerbsQp, local: QpEndpoint, remote: QpEndpoint, access?: number): void {
  const global = local.linkLayer === abi.IBV_LINK_LAYER_ETHERNET || remote.lid === 0;
  verbs.modifyQpToInit(qp, access === undefined ? { port: f.portNum } : { port: f.portNum, accessFlags: access });
  verbs.modifyQpToRtr(qp, {
    destQpNum: remote.qpNum,
    rqPsn: remote.psn,
    pathMtu: Math.min(local.mtu, remote.mtu),
    dlid: remote.lid,
    port: f.portNum,
    maxDestRdAtomic: f.maxRdAtomic,
    ...(global ? { dgid: Uint8Array.from(Buffer.from(remote.gid, 'hex')), sgidIndex: f.gidIndex } : {}),
  });
  verbs.modifyQpToRts(qp, { sqPsn: local.psn, maxRdAtomic: f.maxRdAtomic });
}

function parseEndpoint(v: unknown): QpEndpoint {
  const e = v as Partial<QpEndpoint> | null;
  const int = (x: unknown): boolean => Number.isInteger(x);
  if (!e || !int(e.qpNum) || !int(e.lid) || !int(e.psn) || !int(e.mtu) || !int(e.linkLayer) ||
      typeof e.gid !== 'string' || !/^[0-9a-f]{32}$/.test(e.gid)) {
    throw new RowanError(ErrorCodes.BAD_FRAME, `verbs setup: malformed QP endpoint ${JSON.stringify(v)}`);
  }
  return e as QpEndpoint;
}

// ---- the side channel ------------------------------------------------------------------------------

export type ControlMessage = Record<string, unknown>;

/** The part of the side channel a sender's connection uses after setup. */
export interface ControlRequester {
  request(msg: ControlMessage): Promise<ControlMessage>;
  close(): void;
}

/** JSON lines over a TCP socket, with request/response ids for the control requests. */
export class ControlChannel implements ControlRequester {
  private buf = '';
  private nextId = 1;
  private readonly waiting = new Map<number, { resolve: (m: ControlMessage) => void; reject: (e: unknown) => void }>();
  private gone: RowanError | null = null;
  onMessage: (m: ControlMessage) => void = () => {};
  onClose: (err: RowanError) => void = () => {};

  constructor(readonly socket: Socket) {
    socket.setEncoding('utf8');
    socket.setNoDelay(true);
    socket.on('data', (chunk: string) => this.receive(chunk));
    socket.on('error', (err) => this.end(new RowanError(ErrorCodes.PEER_GONE, `verbs side channel: ${err.message}`)));
    socket.on('close', () => this.end(new RowanError(ErrorCodes.PEER_GONE, 'verbs side channel closed by the peer')));
  }

  /** Queue one line; false (and nothing sent) once the channel is gone. */
  send(msg: ControlMessage): boolean {
    if (this.gone) return false;
    this.socket.write(`${JSON.stringify(msg)}\n`);
    return true;
  }

  request(msg: ControlMessage): Promise<ControlMessage> {
    if (this.gone) return Promise.reject(this.gone);
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.send({ ...msg, t: 'req', id });
    });
  }

  close(): void {
    this.end(new RowanError(ErrorCodes.PEER_GONE, 'verbs side channel closed'));
  }

  private receive(chunk: string): void {
    this.buf += chunk;
    for (let nl = this.buf.indexOf('\n'); nl >= 0; nl = this.buf.indexOf('\n')) {
      const line = this.buf.slice(0, nl);
      this.buf = this.buf.slice(nl + 1);
      let msg: ControlMessage;
      try {
        msg = JSON.parse(line) as ControlMessage;
        if (typeof msg !== 'object' || msg === null) throw new Error('not an object');
      } catch (err) {
        return this.end(new RowanError(ErrorCodes.BAD_FRAME, `verbs side channel: bad line (${(err as Error).message})`));
      }
      if (msg['t'] === 'res' && typeof msg['id'] === 'number') this.settle(msg);
      else this.onMessage(msg);
      if (this.gone) return;
    }
    if (this.buf.length > LINE_BYTES_MAX) {
      this.end(new RowanError(ErrorCodes.BAD_FRAME, `verbs side channel: line longer than ${LINE_BYTES_MAX} B`));
    }
  }

  private settle(msg: ControlMessage): void {
    const w = this.waiting.get(msg['id'] as number);
    if (!w) return;
    this.waiting.delete(msg['id'] as number);
    if (msg['ok'] === true) w.resolve(msg);
    else w.reject(fromRecord((msg['error'] as { code: string; message: string }) ?? { code: 'ROWAN_ERR_BAD_FRAME', message: 'no error' }));
  }

  private end(err: RowanError): void {
    if (this.gone) return;
    this.gone = err;
    for (const w of this.waiting.values()) w.reject(err);
    this.waiting.clear();
    this.socket.destroy();
    this.onClose(err);
  }
}

// ---- sender side: dial and hello -------------------------------------------------------------------

/** What the receiver's welcome tells a sender. */
export interface VerbsWelcome {
  endpoint: QpEndpoint;
  pool: { base: bigint; rkey: number; dataStart: number; dataEnd: number; readOffset: number };
  queue: { bufferBytes: number; strideBytes: number; receiveMode: string };
}

/** Connect the side channel, send our endpoint, wait for the receiver's welcome. */
export async function dialVerbs(
  host: string,
  port: number,
  hello: { endpoint: QpEndpoint; senderId: number },
  timeoutMs: number,
): Promise<{ channel: ControlChannel; welcome: VerbsWelcome }> {
  const socket = netConnect({ host, port });
  const channel = new ControlChannel(socket);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      channel.close();
      reject(new RowanError(ErrorCodes.PEER_GONE, `verbs setup with ${host}:${port} timed out after ${timeoutMs} ms`));
    }, timeoutMs);
    const done = (err: unknown, w?: VerbsWelcome): void => {
      clearTimeout(timer);
      channel.onMessage = () => {};
      channel.onClose = () => {};
      if (err) {
        channel.close();
        reject(err);
      } else resolve({ channel, welcome: w! });
    };
    channel.onClose = (err) => done(new RowanError(ErrorCodes.PEER_GONE, `verbs setup with ${host}:${port}: ${err.message}`));
    channel.onMessage = (m) => {
      try {
        if (m['t'] === 'error') return done(fromRecord(m['error'] as { code: string; message: string }));
        if (m['t'] !== 'welcome') throw new RowanError(ErrorCodes.BAD_FRAME, `verbs setup: expected a welcome, got ${String(m['t'])}`);
        done(null, parseWelcome(m));
      } catch (err) {
        done(err);
      }
    };
    socket.once('connect', () => channel.send({ t: 'hello', v: VERBS_PROTOCOL_VERSION, ...hello }));
  });
}

function parseWelcome(m: ControlMessage): VerbsWelcome {
  const pool = m['pool'] as Record<string, unknown> | undefined;
  const queue = m['queue'] as Record<string, unknown> | undefined;
  const ints = (o: Record<string, unknown> | undefined, keys: string[]): boolean => !!o && keys.every((k) => Number.isInteger(o[k]));
  if (m['v'] !== VERBS_PROTOCOL_VERSION || !ints(pool, ['rkey', 'dataStart', 'dataEnd', 'readOffset']) ||
      typeof pool!['base'] !== 'string' || !/^[0-9]+$/.test(pool!['base']) || !ints(queue, ['bufferBytes', 'strideBytes'])) {
    throw new RowanError(ErrorCodes.BAD_FRAME, `verbs setup: malformed welcome ${JSON.stringify(m)}`);
  }
  return {
    endpoint: parseEndpoint(m['endpoint']),
    pool: {
      base: BigInt(pool!['base'] as string),
      rkey: pool!['rkey'] as number,
      dataStart: pool!['dataStart'] as number,
      dataEnd: pool!['dataEnd'] as number,
      readOffset: pool!['readOffset'] as number,
    },
    queue: {
      bufferBytes: queue!['bufferBytes'] as number,
      strideBytes: queue!['strideBytes'] as number,
      receiveMode: String(queue!['receiveMode']),
    },
  };
}

// ---- receiver side: listen -------------------------------------------------------------------------

export interface ListenVerbsOptions {
  fabric: VerbsFabric;
  queue: VerbsReceiverQueue;
  pool: Pool;
  /** Side-channel address (default 127.0.0.1; a node binds its host address). */
  host?: string;
  /** Default 0: an ephemeral port, reported by the listener. */
  port?: number;
  /** Pool offset the senders' 1-byte persistence READs read (default 0). */
  readOffset?: number;
  /** Serve allocateRegion (default: a pool segment owned by this control actor). */
  allocateRegion?: (ownerId: number) => RemoteRegion;
  /** Owner id for the default allocateRegion. */
  ownerId?: number;
}

export interface VerbsListener {
  readonly host: string;
  readonly port: number;
  /** Connected senders (live QPs). */
  connections(): number;
  close(): Promise<void>;
}

/** Accept senders: one RC QP each on the queue's SRQ and ring CQ. */
export async function listenVerbs(o: ListenVerbsOptions): Promise<VerbsListener> {
  const host = o.host ?? '127.0.0.1';
  const live = new Set<ControlChannel>();
  const alloc = o.allocateRegion ?? ((owner: number): RemoteRegion => {
    const segment = o.pool.allocate(OwnerRole.Remote, o.ownerId ?? owner);
    return { segment, offset: o.pool.segmentOffset(segment), length: o.pool.segmentBytes };
  });
  const server: Server = createServer((socket) => {
    const ch = new ControlChannel(socket);
    live.add(ch);
    let qp: verbs.VerbsQp | null = null;
    ch.onClose = () => {
      live.delete(ch);
      if (qp) verbs.destroyQp(qp);
      qp = null;
    };
    ch.onMessage = (m) => {
      try {
        if (m['t'] === 'hello' && !qp) {
          qp = acceptSender(o, m);
          return;
        }
        if (m['t'] === 'req' && qp) return serveRequest(ch, m, alloc);
        throw new RowanError(ErrorCodes.BAD_FRAME, `verbs side channel: unexpected ${String(m['t'])}`);
      } catch (err) {
        if (!qp) ch.send({ t: 'error', error: toRecord(err) });
        ch.close();
      }
    };
    function acceptSender(lo: ListenVerbsOptions, hello: ControlMessage): verbs.VerbsQp {
      if (hello['v'] !== VERBS_PROTOCOL_VERSION) {
        throw new RowanError(ErrorCodes.BAD_FRAME, `verbs setup: protocol ${String(hello['v'])}, this receiver speaks ${VERBS_PROTOCOL_VERSION}`);
      }
      const remote = parseEndpoint(hello['endpoint']);
      const q = lo.queue;
      // The receiver never posts sends (READ responses use no send WRs): one send WR is plenty.
      const created = verbs.createRcQp(lo.fabric.pd, { sendCq: q.cq, recvCq: q.cq, srq: q.srq, maxSendWr: 1 });
      try {
        const local = localEndpoint(lo.fabric, created);
        bringUpQp(lo.fabric, created, local, remote);
        const dataStart = lo.pool.segmentOffset(0);
        ch.send({
          t: 'welcome',
          v: VERBS_PROTOCOL_VERSION,
          endpoint: local,
          pool: {
            base: q.poolBase.toString(),
            rkey: q.rkey,
            dataStart,
            dataEnd: dataStart + lo.pool.segmentCount * lo.pool.segmentBytes,
            readOffset: lo.readOffset ?? 0,
          },
          queue: { bufferBytes: q.bufferBytes, strideBytes: q.strideBytes, receiveMode: q.receiveMode },
        });
        return created;
      } catch (err) {
        verbs.destroyQp(created);
        throw err;
      }
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port ?? 0, host, () => resolve());
  });
  const addr = server.address();
  const port = typeof addr === 'object' && addr ? addr.port : (o.port ?? 0);
  return {
    host,
    port,
    connections: () => live.size,
    close: () =>
      new Promise<void>((resolve) => {
        for (const ch of [...live]) ch.close();
        server.close(() => resolve());
      }),
  };
}

function serveRequest(ch: ControlChannel, m: ControlMessage, alloc: (ownerId: number) => RemoteRegion): void {
  const id = m['id'];
  try {
    if (m['op'] !== 'allocate' || !Number.isInteger(m['ownerId'])) {
      throw new RowanError(ErrorCodes.BAD_FRAME, `verbs side channel: unknown request ${String(m['op'])}`);
    }
    ch.send({ t: 'res', id, ok: true, region: alloc(m['ownerId'] as number) });
  } catch (err) {
    ch.send({ t: 'res', id, ok: false, error: toRecord(err) });
  }
}
