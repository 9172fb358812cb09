// The simulated control-plane connections: a node's lease client to the configuration manager, as a
// pair of SimSockets with TCP's guarantees -- lines arrive in order, each after a random delay; while
// a partition cuts the two ends the bytes wait (retransmission) and flow again after the heal; a close
// (FIN, or the kernel's RST when a process dies) travels behind the data. A dial to a manager that is
// down is refused after a delay; a dial across a partition is never answered (the lease client's own
// connect timeout gives up on it). Each socket belongs to one incarnation of its process: when that
// process crashes, its sockets close and it hears nothing more.
import { EventEmitter } from 'node:events';
import type { LeaseSocket } from '../../actors/node/lease-client.js';
import type { SimNet } from './net.js';

/** The manager's address on the simulated network (partitions between it and a node use it). */
export const MANAGER_ID = 63;

interface Item {
  at: number;
  line: string | Uint8Array | null; // a JSON line, a binary frame (actors/shared/manager-frames.ts); null: the close
}

/** One direction of a connection: FIFO, delayed, held while the link is cut. */
class Pipe {
  private q: Item[] = [];
  private pumping = false;
  private last = 0;

  constructor(
    private readonly net: SimNet,
    private readonly from: number,
    private readonly to: SimSocket,
  ) {}

  push(line: string | Uint8Array | null): void {
    const at = Math.max(this.last, this.net.loop.now() + this.net.delay());
    this.last = at;
    this.q.push({ at, line });
    if (!this.pumping) this.pump();
  }

  private pump(): void {
    const head = this.q[0];
    if (!head) return void (this.pumping = false);
    this.pumping = true;
    this.net.loop.at(head.at - this.net.loop.now(), ['wire', this.from, this.to.self], () => {
      if (this.net.cut(this.from, this.to.self)) {
        head.at = this.net.loop.now() + 1; // retransmitted after the heal
        return this.pump();
      }
      this.q.shift();
      this.to.receive(head.line);
      this.pump();
    }, true);
  }
}

export class SimSocket extends EventEmitter implements LeaseSocket {
  closed = false;
  private out: Pipe | null = null;

  constructor(
    private readonly net: SimNet,
    /** This end's address (a node id or MANAGER_ID). */
    readonly self: number,
    /** Whether the process owning this end still runs (this incarnation). */
    readonly alive: () => boolean,
  ) {
    super();
  }

  /** Join two ends. */
  static pair(a: SimSocket, b: SimSocket): void {
    a.out = new Pipe(a.net, a.self, b);
    b.out = new Pipe(b.net, b.self, a);
  }

  write(line: string | Uint8Array): boolean {
    if (!this.closed && this.alive()) this.out?.push(line);
    return true;
  }

  destroy(): void {
    if (this.closed) return;
    this.closed = true;
    this.out?.push(null);
    this.net.loop.at(0, ['close', this.self], () => this.alive() && this.emit('close'), true);
  }

  /** The owning process died: the peer sees the close (its kernel answers), this end nothing more. */
  kill(): void {
    if (this.closed) return;
    this.closed = true;
    this.out?.push(null);
  }

  receive(line: string | Uint8Array | null): void {
    if (this.closed || !this.alive()) return;
    if (line !== null) return void this.emit('data', line);
    this.closed = true;
    this.emit('close');
  }

  /** A dial that failed (refused): the dialer sees only the close. */
  refuse(): void {
    this.closed = true;
    if (this.alive()) this.emit('close');
  }
}
