// Blocking TCP over IPv4 through libc, for a thread that has nothing else to do and must not pay for
// an event loop per wakeup (issue 26): socket/connect/accept, read/write, poll(2) on a few sockets and
// clock_nanosleep(2) to an absolute CLOCK_MONOTONIC instant. A thread using it blocks in the kernel,
// so its JavaScript event loop (timers, promises, postMessage) does not run meanwhile.
//
// Today only the idle benchmark's lease-pattern floor uses it (bench/idle/lease-pattern.ts): three
// renewals every renew period and their grants carried this way cost a fraction of what Node's event
// loop and net.Socket spend on the same messages. Errors become RowanErrors (NATIVE_LIBRARY) with
// errno named; EINTR is retried.
import koffi from 'koffi';
import { ErrorCodes, RowanError } from '../config/base/errors.js';
import { errnoName, failErrno as fail, libc, sockaddrIn as sockaddr } from './libc.js';

const AF_INET = 2;
const SOCK_STREAM = 1;
const SOL_SOCKET = 1;
const SO_REUSEADDR = 2;
const IPPROTO_TCP = 6;
const TCP_NODELAY = 1;
const POLLIN = 0x1;
const CLOCK_MONOTONIC = 1;
const TIMER_ABSTIME = 1;
const EINTR = 4;
/** sizeof(struct sockaddr_in), sizeof(struct pollfd). */
const SOCKADDR_IN_BYTES = 16;
const POLLFD_BYTES = 8;

type Fns = {
  socket: (domain: number, type: number, protocol: number) => number;
  connect: (fd: number, addr: Uint8Array, len: number) => number;
  bind: (fd: number, addr: Uint8Array, len: number) => number;
  listen: (fd: number, backlog: number) => number;
  accept: (fd: number, addr: null, len: null) => number;
  setsockopt: (fd: number, level: number, name: number, value: Int32Array, len: number) => number;
  read: (fd: number, buf: Uint8Array, n: number) => number;
  write: (fd: number, buf: Uint8Array, n: number) => number;
  close: (fd: number) => number;
  poll: (fds: Uint8Array, n: number, timeoutMs: number) => number;
  nanosleep: (clock: number, flags: number, ts: BigInt64Array, rem: null) => number;
  gettime: (clock: number, ts: BigInt64Array) => number;
};
let fns: Fns | undefined;
function f(): Fns {
  if (!fns) {
    const c = libc();
    fns = {
      socket: c.func('int socket(int, int, int)'),
      connect: c.func('int connect(int, const uint8_t *addr, uint32_t len)'),
      bind: c.func('int bind(int, const uint8_t *addr, uint32_t len)'),
      listen: c.func('int listen(int, int)'),
      accept: c.func('int accept(int, void *addr, void *len)'),
      setsockopt: c.func('int setsockopt(int, int, int, const int32_t *value, uint32_t len)'),
      read: c.func('long read(int, _Out_ uint8_t *buf, size_t n)'),
      write: c.func('long write(int, const uint8_t *buf, size_t n)'),
      close: c.func('int close(int)'),
      poll: c.func('int poll(_Inout_ uint8_t *fds, unsigned long n, int timeout)'),
      nanosleep: c.func('int clock_nanosleep(int, int, const int64_t *ts, void *rem)'),
      gettime: c.func('int clock_gettime(int, _Out_ int64_t *ts)'),
    } as Fns;
  }
  return fns;
}


function noDelay(fd: number): void {
  if (f().setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, Int32Array.of(1), 4) !== 0) fail('setsockopt(TCP_NODELAY)');
}

/** A connected TCP socket to ipv4:port, TCP_NODELAY. */
export function tcpConnect(ipv4: string, port: number): number {
  const fd = f().socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) fail('socket');
  if (f().connect(fd, sockaddr(ipv4, port), SOCKADDR_IN_BYTES) !== 0) {
    f().close(fd);
    fail(`connect to ${ipv4}:${port}`);
  }
  noDelay(fd);
  return fd;
}

/** A listening TCP socket on ipv4:port. */
export function tcpListen(ipv4: string, port: number): number {
  const fd = f().socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) fail('socket');
  f().setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, Int32Array.of(1), 4);
  if (f().bind(fd, sockaddr(ipv4, port), SOCKADDR_IN_BYTES) !== 0 || f().listen(fd, 16) !== 0) {
    f().close(fd);
    fail(`listen on ${ipv4}:${port}`);
  }
  return fd;
}

/** The next connection on a listening socket, TCP_NODELAY (blocks until one comes). */
export function tcpAccept(listening: number): number {
  for (;;) {
    const fd = f().accept(listening, null, null);
    if (fd >= 0) {
      noDelay(fd);
      return fd;
    }
    if (koffi.errno() !== EINTR) fail('accept');
  }
}

/** Bytes read into `buf` (0: the peer closed; blocks until some come). */
export function readSome(fd: number, buf: Uint8Array): number {
  for (;;) {
    const n = f().read(fd, buf, buf.length);
    if (n >= 0) return n;
    if (koffi.errno() !== EINTR) fail('read');
  }
}

/** Write all of `buf` (blocks while the socket's buffer is full). */
export function writeAll(fd: number, buf: Uint8Array): void {
  for (let off = 0; off < buf.length; ) {
    const n = f().write(fd, off === 0 ? buf : buf.subarray(off), buf.length - off);
    if (n >= 0) off += n;
    else if (koffi.errno() !== EINTR) fail('write');
  }
}

export function closeFd(fd: number): void {
  f().close(fd);
}

/** Poll set over a fixed list of sockets, for readability; reused across calls (no allocation). */
export class ReadablePoll {
  private readonly fds: Uint8Array;
  private readonly view: DataView;

  constructor(readonly sockets: number[]) {
    this.fds = new Uint8Array(POLLFD_BYTES * sockets.length);
    this.view = new DataView(this.fds.buffer);
    sockets.forEach((fd, i) => this.view.setInt32(i * POLLFD_BYTES, fd, true));
  }

  /** Wait up to `timeoutMs` (-1: forever) for readable sockets; calls `ready(fd)` for each. */
  wait(timeoutMs: number, ready: (fd: number) => void): void {
    for (let i = 0; i < this.sockets.length; i++) {
      this.view.setInt16(i * POLLFD_BYTES + 4, POLLIN, true); // events
      this.view.setInt16(i * POLLFD_BYTES + 6, 0, true); // revents
    }
    const n = f().poll(this.fds, this.sockets.length, timeoutMs);
    if (n < 0) {
      if (koffi.errno() === EINTR) return;
      fail('poll');
    }
    for (let i = 0; n > 0 && i < this.sockets.length; i++) if (this.view.getInt16(i * POLLFD_BYTES + 6, true) !== 0) ready(this.sockets[i]!);
  }
}

/** Sleeps on CLOCK_MONOTONIC to absolute instants `periodMs` apart (clock_nanosleep TIMER_ABSTIME:
 *  no drift, no allocation per period). */
export class PeriodicSleep {
  private readonly ts = new BigInt64Array(2);
  private readonly stepNs: bigint;

  constructor(periodMs: number) {
    this.stepNs = BigInt(Math.round(periodMs * 1e6));
    if (f().gettime(CLOCK_MONOTONIC, this.ts) !== 0) fail('clock_gettime');
  }

  next(): void {
    const ns = this.ts[1]! + this.stepNs;
    this.ts[0] = this.ts[0]! + ns / 1_000_000_000n;
    this.ts[1] = ns % 1_000_000_000n;
    for (;;) {
      const r = f().nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, this.ts, null);
      if (r === 0) return;
      if (r !== EINTR) throw new RowanError(ErrorCodes.NATIVE_LIBRARY, `clock_nanosleep failed: ${errnoName(r)}`);
    }
  }
}
