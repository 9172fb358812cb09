// The node's lease thread without Node's event loop (issue 26: an idle node's renewals cost what a
// wakeup of the event loop costs -- libuv, V8, the stream machinery -- not rowan's code). The lease
// client (./lease-client.ts) and its connection (./manager-link.ts) run unchanged on this reactor's
// seams: `timers` (Timers) and `dial` (DialManager, plain TCP over IPv4 through libc,
// ../../native/nonblocking-tcp.ts). run() is one blocking poll(2) loop whose timeout is the next
// timer (the next renewal): a wakeup is the kernel's and a few koffi calls.
//
// The thread's other input, the main thread's messages, arrives through an eventfd in the same poll
// set: the main thread signals it after each postMessage (./lease-thread-link.ts) and the loop takes
// the messages with receiveMessageOnPort. Messages to the main thread go out with postMessage as
// before (it needs no event loop on this side). TLS keeps Node's event loop (./lease-thread.ts).
import { isIPv4 } from 'node:net';
import type { Clock, TimerHandle, Timers } from '../../config/base/clock.js';
import {
  closeFd, connectError, drainEventFd, EAGAIN, EINPROGRESS, POLLERR, POLLHUP, POLLIN, POLLOUT, PollSet, readNow, startConnect, writeNow,
} from '../../native/nonblocking-tcp.js';
import type { DialManager, LeaseSocket } from './manager-link.js';

/** What one read may bring at most (a round's configuration line may take several). */
const READ_BYTES = 16 * 1024;

class ReactorTimer implements TimerHandle {
  constructor(
    public at: number,
    readonly fn: () => void,
    /** > 0: an interval of that period. */
    readonly every: number,
  ) {}
  live = true;
  unref(): TimerHandle {
    return this; // the loop runs until stopped, not while timers are pending
  }
}

/** A connection of the reactor: the LeaseSocket the manager link expects (events connect, data,
 *  error, close), over a non-blocking fd. */
export class ReactorSocket implements LeaseSocket {
  private readonly handlers = new Map<string, ((...args: any[]) => void)[]>(); // eslint-disable-line @typescript-eslint/no-explicit-any
  /** Bytes the kernel did not take yet, in order (copied: callers reuse their buffers). */
  private pending: Uint8Array[] = [];
  private pendingBytes = 0;
  connecting = true;
  closed = false;

  constructor(
    readonly fd: number,
    private readonly reactor: LeaseReactor,
  ) {}

  on(event: string, fn: (...args: any[]) => void): unknown { // eslint-disable-line @typescript-eslint/no-explicit-any
    const list = this.handlers.get(event);
    if (list) list.push(fn);
    else this.handlers.set(event, [fn]);
    return this;
  }

  emit(event: string, arg?: unknown): void {
    for (const fn of this.handlers.get(event) ?? []) fn(arg);
  }

  get writableLength(): number {
    return this.pendingBytes;
  }

  /** Poll events this socket waits for. */
  get events(): number {
    return this.connecting || this.pendingBytes > 0 ? POLLIN | POLLOUT : POLLIN;
  }

  write(data: string | Uint8Array): unknown {
    if (this.closed) return false;
    const b = typeof data === 'string' ? Buffer.from(data) : data;
    if (this.connecting || this.pendingBytes > 0) return this.queue(b);
    const n = writeNow(this.fd, b);
    if (n === b.length) return true;
    if (n < 0 && n !== -EAGAIN) return this.fail(n);
    return this.queue(b.subarray(Math.max(n, 0)));
  }

  private queue(b: Uint8Array): boolean {
    this.pending.push(Uint8Array.from(b));
    this.pendingBytes += b.length;
    return false;
  }

  /** POLLOUT: the connect ended, or the kernel takes more of what is pending. */
  writable(): void {
    if (this.connecting) {
      const e = connectError(this.fd);
      if (e !== 0) return void this.fail(-e);
      this.connecting = false;
      this.emit('connect');
    }
    while (!this.closed && this.pending.length > 0) {
      const b = this.pending[0]!;
      const n = writeNow(this.fd, b);
      if (n < 0) return void (n === -EAGAIN ? undefined : this.fail(n));
      this.pendingBytes -= n;
      if (n < b.length) return void (this.pending[0] = b.subarray(n));
      this.pending.shift();
    }
  }

  /** POLLIN (or HUP/ERR): read what is there into the reactor's buffer. */
  readable(buf: Buffer): void {
    const n = readNow(this.fd, buf);
    if (n === -EAGAIN) return;
    if (n < 0) return void this.fail(n);
    if (n === 0) return void this.destroy();
    this.emit('data', buf.subarray(0, n));
  }

  fail(negErrno: number): boolean {
    if (this.closed) return false;
    this.emit('error', new Error(`lease socket: errno ${-negErrno}`));
    this.destroy();
    return false;
  }

  destroy(): unknown {
    if (this.closed) return this;
    this.closed = true;
    this.pending = [];
    this.pendingBytes = 0;
    closeFd(this.fd);
    this.reactor.forget(this);
    this.reactor.setImmediate(() => this.emit('close')); // as Node: after the current callback
    return this;
  }
}

/** Whether the reactor can carry connections to these managers (plain TCP to IPv4 addresses). */
export function reactorCanDial(managers: { host: string }[], tls: unknown): boolean {
  return tls === null && managers.every((m) => isIPv4(m.host));
}

export class LeaseReactor implements Timers {
  private readonly timers = new Set<ReactorTimer>();
  private immediates: (() => void)[] = [];
  private readonly sockets = new Set<ReactorSocket>();
  private readonly poll = new PollSet();
  private readonly readBuf = Buffer.allocUnsafe(READ_BYTES);
  private stopped = false;
  /** The sockets of the current poll set, in their slots' order (reused). */
  private readonly order: ReactorSocket[] = [];

  constructor(
    private readonly clock: Clock,
    /** The main thread signals it after each message it posts. */
    private readonly wakeFd: number,
    /** Takes the main thread's waiting messages (receiveMessageOnPort). */
    private readonly onWake: () => void,
  ) {}

  readonly dial: DialManager = (to) => {
    const { fd, connected } = startConnect(to.host, to.port);
    const s = new ReactorSocket(fd, this);
    this.sockets.add(s);
    // Refused at once: 'error' and 'close' after the caller's on(), as Node's; else POLLOUT says.
    if (connected < 0 && connected !== EINPROGRESS) this.setImmediate(() => s.fail(connected));
    return { socket: s, ready: 'connect' };
  };

  forget(s: ReactorSocket): void {
    this.sockets.delete(s);
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    return this.add(new ReactorTimer(this.clock.now() + ms, fn, 0));
  }

  setInterval(fn: () => void, ms: number): TimerHandle {
    return this.add(new ReactorTimer(this.clock.now() + ms, fn, Math.max(ms, 1)));
  }

  clearTimeout(t: TimerHandle | undefined): void {
    if (t instanceof ReactorTimer) {
      t.live = false;
      this.timers.delete(t);
    }
  }

  clearInterval(t: TimerHandle | undefined): void {
    this.clearTimeout(t);
  }

  setImmediate(fn: () => void): void {
    this.immediates.push(fn);
  }

  private add(t: ReactorTimer): TimerHandle {
    this.timers.add(t);
    return t;
  }

  stop(): void {
    this.stopped = true;
  }

  /** The loop, until stop(): wait for the sockets, the wake fd or the next timer, then run what is due. */
  run(): void {
    while (!this.stopped) {
      this.waitOnce();
      this.runImmediates();
      this.runTimers();
    }
  }

  private waitOnce(): void {
    const p = this.poll;
    p.clear();
    p.add(this.wakeFd, POLLIN);
    const order = this.order;
    order.length = 0;
    for (const s of this.sockets) {
      p.add(s.fd, s.events);
      order.push(s);
    }
    const ready = p.wait(this.timeoutMs());
    if (ready <= 0) return;
    if (p.revents(0) !== 0) {
      drainEventFd(this.wakeFd);
      this.onWake();
    }
    for (let i = 0; i < order.length; i++) {
      const s = order[i]!;
      const r = p.revents(i + 1);
      if (r === 0 || s.closed) continue;
      if ((r & POLLOUT) !== 0 || (s.connecting && (r & (POLLERR | POLLHUP)) !== 0)) s.writable();
      if (!s.closed && !s.connecting && (r & (POLLIN | POLLERR | POLLHUP)) !== 0) s.readable(this.readBuf);
    }
  }

  /** Until the next timer, whole ms rounded up (a wait never ends before it); 0 with immediates. */
  private timeoutMs(): number {
    if (this.immediates.length > 0 || this.stopped) return 0;
    let next = Infinity;
    for (const t of this.timers) if (t.at < next) next = t.at;
    if (next === Infinity) return -1;
    return Math.max(0, Math.ceil(next - this.clock.now()));
  }

  private runImmediates(): void {
    if (this.immediates.length === 0) return;
    const now = this.immediates;
    this.immediates = [];
    for (const fn of now) fn();
  }

  private runTimers(): void {
    const now = this.clock.now();
    for (const t of this.timers) {
      if (!t.live || t.at > now) continue;
      // A late tick is not made up for; the next keeps the interval's phase (the lease client starts
      // its renewals on a grid shared by the host's nodes, ./lease-client.ts renewGridDelayMs).
      if (t.every > 0) t.at += t.every * (Math.floor((now - t.at) / t.every) + 1);
      else this.timers.delete(t);
      t.fn();
    }
  }
}
