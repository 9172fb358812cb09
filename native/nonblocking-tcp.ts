// Non-blocking TCP over IPv4 and an eventfd through libc, for a thread that runs its own poll(2) loop
// instead of Node's event loop (issue 26: the node's lease thread, actors/node/lease-reactor.ts): a
// wakeup there is the kernel's and a few koffi calls, not libuv, V8's microtasks and a stream.
// Sockets are O_NONBLOCK from their creation (a connect that does not complete is timed out by its
// caller, not hung in the kernel for minutes: a partition drops the SYN). Calls that may fail for a
// reason the caller handles (connect, read, write) return -errno; the rest throw RowanErrors
// (NATIVE_LIBRARY) with errno named. EINTR is retried.
import koffi from 'koffi';
import { failErrno as fail, libc, sockaddrIn as sockaddr } from './libc.js';

const AF_INET = 2;
const SOCK_STREAM = 1;
const SOCK_NONBLOCK = 0o4000;
const SOCK_CLOEXEC = 0o2000000;
const EFD_NONBLOCK = 0o4000;
const EFD_CLOEXEC = 0o2000000;
const SOL_SOCKET = 1;
const SO_ERROR = 4;
const IPPROTO_TCP = 6;
const TCP_NODELAY = 1;
export const EINTR = 4;
export const EAGAIN = 11;
export const EINPROGRESS = 115;
export const POLLIN = 0x1;
export const POLLOUT = 0x4;
export const POLLERR = 0x8;
export const POLLHUP = 0x10;
/** sizeof(struct sockaddr_in), sizeof(struct pollfd). */
const SOCKADDR_IN_BYTES = 16;
const POLLFD_BYTES = 8;

type Fns = {
  socket: (domain: number, type: number, protocol: number) => number;
  connect: (fd: number, addr: Uint8Array, len: number) => number;
  setsockopt: (fd: number, level: number, name: number, value: Int32Array, len: number) => number;
  getsockopt: (fd: number, level: number, name: number, value: Int32Array, len: Uint32Array) => number;
  read: (fd: number, buf: Uint8Array, n: number) => number;
  write: (fd: number, buf: Uint8Array, n: number) => number;
  close: (fd: number) => number;
  poll: (fds: Uint8Array, n: number, timeoutMs: number) => number;
  eventfd: (initval: number, flags: number) => number;
};
let fns: Fns | undefined;
function f(): Fns {
  if (!fns) {
    const c = libc();
    fns = {
      socket: c.func('int socket(int, int, int)'),
      connect: c.func('int connect(int, const uint8_t *addr, uint32_t len)'),
      setsockopt: c.func('int setsockopt(int, int, int, const int32_t *value, uint32_t len)'),
      getsockopt: c.func('int getsockopt(int, int, int, _Out_ int32_t *value, _Inout_ uint32_t *len)'),
      read: c.func('long read(int, _Out_ uint8_t *buf, size_t n)'),
      write: c.func('long write(int, const uint8_t *buf, size_t n)'),
      close: c.func('int close(int)'),
      poll: c.func('int poll(_Inout_ uint8_t *fds, unsigned long n, int timeout)'),
      eventfd: c.func('int eventfd(unsigned int, int)'),
    } as Fns;
  }
  return fns;
}


/** A non-blocking TCP socket (TCP_NODELAY) whose connect to ipv4:port has begun: poll it for POLLOUT,
 *  then connectError() says how it ended. `connected` is -errno when the connect failed at once. */
export function startConnect(ipv4: string, port: number): { fd: number; connected: number } {
  const addr = sockaddr(ipv4, port);
  const fd = f().socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) fail('socket');
  f().setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, Int32Array.of(1), 4);
  if (f().connect(fd, addr, SOCKADDR_IN_BYTES) === 0) return { fd, connected: 0 };
  const e = koffi.errno();
  return { fd, connected: e === EINPROGRESS || e === EINTR ? EINPROGRESS : -e };
}

/** How a connect begun by startConnect ended (SO_ERROR): 0, or the errno. */
export function connectError(fd: number): number {
  const v = new Int32Array(1);
  if (f().getsockopt(fd, SOL_SOCKET, SO_ERROR, v, Uint32Array.of(4)) !== 0) return koffi.errno();
  return v[0]!;
}

/** read(2) into buf: bytes read (0: the peer closed), or -errno (-EAGAIN: nothing there). */
export function readNow(fd: number, buf: Uint8Array): number {
  for (;;) {
    const n = f().read(fd, buf, buf.length);
    if (n >= 0) return n;
    const e = koffi.errno();
    if (e !== EINTR) return -e;
  }
}

/** write(2) of buf: bytes taken (maybe fewer), or -errno (-EAGAIN: the socket's buffer is full). */
export function writeNow(fd: number, buf: Uint8Array): number {
  for (;;) {
    const n = f().write(fd, buf, buf.length);
    if (n >= 0) return n;
    const e = koffi.errno();
    if (e !== EINTR) return -e;
  }
}

export function closeFd(fd: number): void {
  f().close(fd);
}

/** An eventfd (non-blocking): another thread's signalEventFd() makes it readable for poll. */
export function openEventFd(): number {
  const fd = f().eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (fd < 0) fail('eventfd');
  return fd;
}

const ONE = new Uint8Array(new BigUint64Array([1n]).buffer);
/** Make the eventfd readable (from any thread of the process). */
export function signalEventFd(fd: number): void {
  writeNow(fd, ONE);
}

const drained = new Uint8Array(8);
/** Reset the eventfd's count (it is readable no more until the next signal). */
export function drainEventFd(fd: number): void {
  readNow(fd, drained);
}

/** A poll(2) set rebuilt before each wait, from one reused array (no allocation per wait). */
export class PollSet {
  private fds: Uint8Array;
  private view: DataView;
  private n = 0;

  constructor(capacity = 8) {
    this.fds = new Uint8Array(POLLFD_BYTES * capacity);
    this.view = new DataView(this.fds.buffer);
  }

  clear(): void {
    this.n = 0;
  }

  /** Watch fd for `events` (POLLIN | POLLOUT); returns its slot for revents(). */
  add(fd: number, events: number): number {
    if ((this.n + 1) * POLLFD_BYTES > this.fds.length) {
      const more = new Uint8Array(this.fds.length * 2);
      more.set(this.fds);
      this.fds = more;
      this.view = new DataView(more.buffer);
    }
    const at = this.n * POLLFD_BYTES;
    this.view.setInt32(at, fd, true);
    this.view.setInt16(at + 4, events, true);
    this.view.setInt16(at + 6, 0, true);
    return this.n++;
  }

  /** Wait up to timeoutMs (-1: forever); the number of ready fds (0 also when interrupted). */
  wait(timeoutMs: number): number {
    const r = f().poll(this.fds, this.n, timeoutMs);
    if (r >= 0) return r;
    if (koffi.errno() === EINTR) return 0;
    fail('poll');
  }

  revents(slot: number): number {
    return this.view.getInt16(slot * POLLFD_BYTES + 6, true);
  }
}
