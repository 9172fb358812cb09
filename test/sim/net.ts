// The simulated fabric: a Transport whose RowanConnections deliver each write after a random delay,
// then play the receiver's RNIC exactly as the shm sender and the tcp nic do (runtime/rowan/land.ts:
// reserve a slot in the receiver's queue, copy, persist, complete; re-issue ABANDONED/LATE attempts;
// back off on NO_BUFFER), and acknowledge after another delay. Faults:
//   - loss of a connection: the write fails with ROWAN_ERR_PEER_GONE and the connection is broken
//     (the worker dials a new one for its next write);
//   - partitions: writes and acknowledgements between two nodes fail the same way while it lasts;
//   - a stalled lander: the RNIC reserves its slot, then stalls for a long time before the copy;
//   - a receiver that crashes: its RNIC dies with it, nothing more lands there;
//   - a duplicate: a write that landed is landed again later, its completion going nowhere -- the
//     paper's sender re-issues any write slower than 1 ms (ROWAN §3.2.2) without knowing the first
//     attempt landed, and the re-issue's lander is descheduled before it reserves and maybe between
//     reserve and copy (fenced: its bytes land in a quarantined buffer, and it is re-issued again).
//     So an acknowledged write's block can land after a DEL of its key was applied and its
//     tombstone dropped: what the tombstone floors refuse (actors/shared/floors.ts).
// A write of a sender that crashed is dropped: its promise never settles (its process is gone).
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import type { RowanConnection, SenderStats } from '../../runtime/fabric/fabric.js';
import type { PeerEndpoint, Transport } from '../../runtime/fabric/transport.js';
import { ABANDONED, LATE, MAX_REISSUES, copyLanding, reserveLanding } from '../../runtime/rowan/land.js';
import { NO_BUFFER, SRQ_CLOSED } from '../../runtime/rowan/srq.js';
import type { EventLoop } from './loop.js';
import type { SharedReceiveQueue } from '../../runtime/rowan/srq.js';
import type { SimRegion } from './region.js';
import { SimCrash } from './region.js';
import type { Rng } from './rng.js';

export interface SimNetOptions {
  /** One-way delay of a write and of its acknowledgement (ms). */
  delayMinMs: number;
  delayMaxMs: number;
  /** Chance that a write finds its connection lost. */
  lossP: number;
  /** Chance that the lander stalls between reserve and copy, and for how long (ms). */
  stallP: number;
  stallMinMs: number;
  stallMaxMs: number;
  /** NO_BUFFER: retry after this long, give up after noBufferTimeoutMs. */
  noBufferRetryMs: number;
  noBufferTimeoutMs: number;
  /** Chance that a write that landed lands again (a duplicate, see the header), after a delay of up to
   *  dupMaxMs before its reservation and a stall of up to dupMaxMs between reservation and copy.
   *  Draws from the seed's stream only when above 0. */
  dupP?: number;
  dupMaxMs?: number;
}

/** A simulated node as the fabric sees it (./node.ts SimHost). */
export interface SimHost {
  readonly id: number;
  readonly up: boolean;
  readonly inc: number;
  /** Where a Rowan write to this node lands now, or null while it is down. */
  landTarget(): { srq: SharedReceiveQueue; region: SimRegion; inc: number } | null;
}

type Target = NonNullable<ReturnType<SimHost['landTarget']>>;

export class SimNet {
  private cuts = new Map<string, number>();
  readonly stats = { writes: 0, landed: 0, stalls: 0, lost: 0, reissues: 0, late: 0, abandoned: 0, strayCopies: 0, duplicates: 0 };

  constructor(
    readonly loop: EventLoop,
    readonly rng: Rng,
    readonly o: SimNetOptions,
    readonly nodes: SimHost[],
  ) {}

  /** Cut the link between a and b for `ms`. */
  partition(a: number, b: number, ms: number): void {
    this.cuts.set(link(a, b), Math.max(this.cuts.get(link(a, b)) ?? 0, this.loop.now() + ms));
  }

  heal(): void {
    this.cuts.clear();
  }

  cut(a: number, b: number): boolean {
    return (this.cuts.get(link(a, b)) ?? -1) > this.loop.now();
  }

  delay(): number {
    return this.o.delayMinMs + this.rng.float() * (this.o.delayMaxMs - this.o.delayMinMs);
  }

  /** The Transport node `from` gets (CONVENTIONS 9): its connections are tied to its incarnation. */
  transportFor(from: SimHost): Transport {
    const inc = from.inc;
    return {
      connect: async (peer: PeerEndpoint): Promise<RowanConnection> => new SimConnection(this, from, inc, this.nodes[peer.id]!),
    };
  }
}

export class SimConnection implements RowanConnection {
  readonly kind = 'shm' as const;
  broken = false;
  private readonly s: SenderStats = { writes: 0, bytes: 0, retries: 0, noBufferWaits: 0 };

  constructor(
    private readonly net: SimNet,
    private readonly from: SimHost,
    private readonly fromInc: number,
    private readonly to: SimHost,
  ) {}

  private get senderAlive(): boolean {
    return this.from.up && this.from.inc === this.fromInc;
  }

  write(bytes: Uint8Array): Promise<number> {
    if (this.broken) return Promise.reject(gone(`connection to node ${this.to.id} is broken`));
    const data = bytes.slice();
    this.net.stats.writes++;
    return new Promise<number>((resolve, reject) => {
      const w: Pending = { data, resolve, reject, reissues: 0, waitStart: -1 };
      this.net.loop.at(this.net.delay(), ['send', this.from.id, this.to.id, data.length], () => this.deliver(w), true);
    });
  }

  private deliver(w: Pending): void {
    if (!this.senderAlive && !w.dup) return;
    if (this.net.cut(this.from.id, this.to.id) || this.net.rng.chance(this.net.o.lossP)) return this.fail(w, 'connection lost');
    const t = this.to.landTarget();
    if (!t) return this.fail(w, `node ${this.to.id} is down`);
    this.attempt(w, t);
  }

  /** One landing attempt on the receiver's current queue (re-issues come back here). */
  private attempt(w: Pending, t: Target): void {
    const net = this.net;
    if (!this.stillTarget(t)) return this.fail(w, `node ${this.to.id} restarted`);
    let at: number;
    try {
      at = reserveLanding(t.srq, w.data.length);
    } catch (err) {
      return this.settle(w, err as Error);
    }
    if (at === ABANDONED) {
      net.stats.abandoned++;
      return this.reissue(w, t);
    }
    if (at === SRQ_CLOSED) return this.fail(w, `receiver of node ${this.to.id} closed`);
    if (at === NO_BUFFER) {
      const now = net.loop.now();
      this.s.noBufferWaits++;
      if (w.waitStart < 0) w.waitStart = now;
      else if (now - w.waitStart > net.o.noBufferTimeoutMs) {
        const code = t.srq.starved() ? ErrorCodes.PM_FULL : ErrorCodes.WRITE_TIMEOUT;
        return this.settle(w, new RowanError(code, `no receive buffer posted at node ${this.to.id}`));
      }
      net.loop.at(net.o.noBufferRetryMs, ['nobuf', this.from.id, this.to.id], () => this.attempt(w, t), true);
      return;
    }
    const seq = t.srq.lastSeq;
    const cq = t.srq.claimCompletion();
    if (w.dup && w.reissues === 0 && net.rng.chance(0.5)) {
      // The duplicate's lander is descheduled between reserve and copy too.
      net.loop.at(net.rng.float() * (net.o.dupMaxMs ?? 0), ['dup-stalled-copy', this.from.id, this.to.id, at], () => this.copy(w, t, at, seq, cq), true);
      return;
    }
    if (net.o.stallP > 0 && net.rng.chance(net.o.stallP)) {
      const ms = net.o.stallMinMs + net.rng.float() * (net.o.stallMaxMs - net.o.stallMinMs);
      net.stats.stalls++;
      net.loop.at(ms, ['stalled-copy', this.from.id, this.to.id, at], () => this.copy(w, t, at, seq, cq), true);
      return;
    }
    this.copy(w, t, at, seq, cq);
  }

  private copy(w: Pending, t: Target, at: number, seq: number, cq: number): void {
    // The receiver's RNIC died with it: nothing lands in a node that crashed since the reservation.
    if (!this.stillTarget(t)) return this.fail(w, `node ${this.to.id} crashed`);
    // A copy into a buffer the receiver has already declared Used (it may be digested, freed and
    // reused by now): the hazard of issue 10, counted so a failing seed shows it.
    if (t.srq.usedBelow() > seq) this.net.stats.strayCopies++;
    let r: number;
    try {
      r = copyLanding(t.srq, t.region, w.data, at, seq, cq, this.from.id);
    } catch (err) {
      if (err instanceof SimCrash) return this.fail(w, `node ${this.to.id} crashed`);
      return this.settle(w, err as Error);
    }
    if (r === LATE) {
      this.net.stats.late++;
      return this.reissue(w, t);
    }
    this.net.stats.landed++;
    if (w.dup) return; // its completion goes nowhere: the sender has the first one's
    const dupP = this.net.o.dupP ?? 0;
    if (dupP > 0 && this.net.rng.chance(dupP)) this.duplicate(w.data);
    this.net.loop.at(this.net.delay(), ['ack', this.from.id, this.to.id], () => {
      if (!this.senderAlive) return;
      if (this.net.cut(this.from.id, this.to.id)) return this.fail(w, 'acknowledgement lost');
      this.s.writes++;
      this.s.bytes += w.data.length;
      w.resolve(r);
    }, true);
  }

  /** Land `data` once more, later (see the header): nobody waits for it, and its failure is nobody's. */
  private duplicate(data: Uint8Array): void {
    const net = this.net;
    net.stats.duplicates++;
    const w: Pending = { data, resolve: () => {}, reject: () => {}, reissues: 0, waitStart: -1, dup: true };
    const inc = this.to.inc; // a receiver that restarted meanwhile has a new queue pair: nothing lands
    net.loop.at(net.delay() + net.rng.float() * (net.o.dupMaxMs ?? 0), ['dup', this.from.id, this.to.id, data.length], () => this.to.inc === inc && this.deliver(w), true);
  }

  private reissue(w: Pending, t: Target): void {
    this.net.stats.reissues++;
    this.s.retries++;
    if (++w.reissues > MAX_REISSUES) return this.settle(w, new RowanError(ErrorCodes.WRITE_TIMEOUT, `write re-issued ${MAX_REISSUES} times`));
    this.attempt(w, t);
  }

  private stillTarget(t: Target): boolean {
    return this.to.up && this.to.inc === t.inc;
  }

  /** The connection is lost: this write fails with PEER_GONE (after the way back), and so do later ones. */
  private fail(w: Pending, why: string): void {
    if (w.dup) return;
    this.broken = true;
    this.net.stats.lost++;
    this.settle(w, gone(`${why} (node ${this.from.id} -> ${this.to.id})`));
  }

  private settle(w: Pending, err: Error): void {
    if (w.dup) return;
    this.net.loop.at(this.net.delay(), ['fail', this.from.id, this.to.id, (err as RowanError).code ?? 'error'], () => {
      if (this.senderAlive) w.reject(err);
    }, true);
  }

  async writeAt(): Promise<void> {
    throw new RowanError(ErrorCodes.FABRIC_UNAVAILABLE, 'the simulated fabric carries Rowan writes only');
  }

  async read(): Promise<Uint8Array> {
    throw new RowanError(ErrorCodes.FABRIC_UNAVAILABLE, 'the simulated fabric carries Rowan writes only');
  }

  async allocateRegion(): Promise<never> {
    throw new RowanError(ErrorCodes.FABRIC_UNAVAILABLE, 'the simulated fabric carries Rowan writes only');
  }

  stats(): SenderStats {
    return { ...this.s };
  }

  async close(): Promise<void> {
    this.broken = true;
  }
}

interface Pending {
  data: Uint8Array;
  resolve: (at: number) => void;
  reject: (err: Error) => void;
  reissues: number;
  waitStart: number;
  /** A duplicate landing (see the header). */
  dup?: boolean;
}

function link(a: number, b: number): string {
  return a < b ? `${a}-${b}` : `${b}-${a}`;
}

function gone(msg: string): RowanError {
  return new RowanError(ErrorCodes.PEER_GONE, msg);
}
