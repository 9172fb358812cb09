// libc through koffi: the thread-level calls the actor runtime needs (CONVENTIONS 5: only native/ loads
// koffi). Return codes become RowanErrors here, with errno named, so nothing above sees -1.
// Also the C environment (libpmem2 reads its switches with getenv), posix_fallocate and the address
// guard left behind by a closed PM mapping (used by native/pmem2.ts and shm/pool-file.ts).
//
// Thread vs process: Linux schedules threads, and the scheduler calls take a *thread* id. pid 0 means
// "the calling thread" (sched_setaffinity(2)), so an actor pins itself by calling these from inside its
// own worker_thread; the process's other threads keep their masks. Another thread is addressed by its
// tid (gettid()), never by process.pid, which names only the main thread.
import { openSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isMainThread } from 'node:worker_threads';
import koffi, { type LibraryHandle } from 'koffi';
import { ErrorCodes, RowanError } from '../config/base/errors.js';

let lib: LibraryHandle | undefined;
/** The C library, loaded once per thread (koffi handles are per isolate). */
export function libc(): LibraryHandle {
  if (!lib) {
    try {
      lib = koffi.load('libc.so.6');
    } catch (err) {
      throw new RowanError(ErrorCodes.NATIVE_LIBRARY, `cannot load libc.so.6: ${(err as Error).message}`);
    }
  }
  return lib;
}

/** errno value -> its name (EINVAL, ...), for messages. */
export function errnoName(e: number): string {
  for (const [name, v] of Object.entries(koffi.os.errno)) if (v === e) return name;
  return `errno ${e}`;
}

// ---- affinity and thread identity ------------------------------------------------------------------

/** glibc's cpu_set_t: 1024 bits. The kernel accepts any multiple of the word size; this is the default. */
export const CPU_SET_BYTES = 128;
/** Highest CPU number a mask can name. */
export const CPU_SETSIZE = CPU_SET_BYTES * 8;

type AffinityFns = {
  gettid: () => number;
  setaffinity: (tid: number, size: number, mask: Uint8Array) => number;
  getaffinity: (tid: number, size: number, mask: Uint8Array) => number;
  getcpu: () => number;
};
let aff: AffinityFns | undefined;
function affinityFns(): AffinityFns {
  if (!aff) {
    const c = libc();
    aff = {
      gettid: c.func('int gettid(void)'),
      setaffinity: c.func('int sched_setaffinity(int pid, size_t cpusetsize, const void *mask)'),
      getaffinity: c.func('int sched_getaffinity(int pid, size_t cpusetsize, _Out_ void *mask)'),
      getcpu: c.func('int sched_getcpu(void)'),
    };
  }
  return aff;
}

/** The kernel thread id of the calling thread (what `top -H` and /proc/<pid>/task show). */
export function gettid(): number {
  return affinityFns().gettid();
}

/** CPU numbers -> cpu_set_t bytes. */
export function cpuMask(cpus: readonly number[]): Uint8Array {
  const m = new Uint8Array(CPU_SET_BYTES);
  for (const c of cpus) {
    if (!Number.isInteger(c) || c < 0 || c >= CPU_SETSIZE)
      throw new RowanError(ErrorCodes.AFFINITY, `cpu ${c} is outside 0..${CPU_SETSIZE - 1}`);
    m[c >> 3]! |= 1 << (c & 7);
  }
  return m;
}

/** cpu_set_t bytes -> sorted CPU numbers. */
export function cpusOfMask(m: Uint8Array): number[] {
  const out: number[] = [];
  for (let i = 0; i < m.length * 8; i++) if (m[i >> 3]! & (1 << (i & 7))) out.push(i);
  return out;
}

/**
 * Pin a thread to `cpus`. tid 0 = the calling thread only (not the process: Linux applies
 * sched_setaffinity to one task). Throws ROWAN_ERR_AFFINITY with errno's name (EINVAL when no CPU of
 * the set is allowed, ESRCH for an unknown tid, EPERM for another user's thread).
 */
export function schedSetaffinity(tid: number, cpus: readonly number[]): void {
  if (cpus.length === 0) throw new RowanError(ErrorCodes.AFFINITY, 'cannot pin to an empty CPU set');
  const rc = affinityFns().setaffinity(tid, CPU_SET_BYTES, cpuMask(cpus));
  if (rc !== 0) {
    const e = koffi.errno();
    throw new RowanError(ErrorCodes.AFFINITY, `sched_setaffinity(${tid}, [${cpus.join(',')}]) failed: ${errnoName(e)}`, {
      errno: e,
    });
  }
}

/** The CPUs thread `tid` may run on (0 = the calling thread), read back from the kernel. */
export function schedGetaffinity(tid = 0): number[] {
  const m = new Uint8Array(CPU_SET_BYTES);
  const rc = affinityFns().getaffinity(tid, CPU_SET_BYTES, m);
  if (rc !== 0) {
    const e = koffi.errno();
    throw new RowanError(ErrorCodes.AFFINITY, `sched_getaffinity(${tid}) failed: ${errnoName(e)}`, { errno: e });
  }
  return cpusOfMask(m);
}

/** The CPU the calling thread is running on right now (a snapshot: it may move within its mask). */
export function schedGetcpu(): number {
  const cpu = affinityFns().getcpu();
  if (cpu < 0) throw new RowanError(ErrorCodes.AFFINITY, `sched_getcpu failed: ${errnoName(koffi.errno())}`);
  return cpu;
}

/** CLOCK_THREAD_CPUTIME_ID (linux/time.h). */
const CLOCK_THREAD_CPUTIME_ID = 3;
let clockGettime: ((clock: number, ts: BigInt64Array) => number) | undefined;
const timespec = new BigInt64Array(2);

/** CPU time the calling thread has used, in microseconds (clock_gettime(CLOCK_THREAD_CPUTIME_ID)):
 *  unlike wall time it does not count the time the thread was descheduled. */
export function threadCpuMicros(): number {
  clockGettime ??= libc().func('int clock_gettime(int clk, _Out_ int64_t *ts)') as (clock: number, ts: BigInt64Array) => number;
  if (clockGettime(CLOCK_THREAD_CPUTIME_ID, timespec) !== 0) {
    throw new RowanError(ErrorCodes.NATIVE_LIBRARY, `clock_gettime failed: ${errnoName(koffi.errno())}`);
  }
  return Number(timespec[0]!) * 1e6 + Number(timespec[1]!) / 1000;
}

/** prctl(2) option: the signal this process gets when its parent (the thread that forked it) exits. */
const PR_SET_PDEATHSIG = 1;
type Prctl = (option: number, arg2: number, arg3: number, arg4: number, arg5: number) => number;
let prctl: Prctl | undefined;

/**
 * Ask the kernel to send `signal` to this process when its parent dies (prctl PR_SET_PDEATHSIG), so a
 * node started by a launcher goes down with it instead of living on under PID 1. The caller checks
 * getppid() afterwards: a parent that died before this call is not caught by it.
 */
export function setParentDeathSignal(signal: number): void {
  prctl ??= libc().func('int prctl(int option, unsigned long arg2, unsigned long arg3, unsigned long arg4, unsigned long arg5)') as unknown as Prctl;
  if (prctl(PR_SET_PDEATHSIG, signal, 0, 0, 0) !== 0) {
    throw new RowanError(ErrorCodes.NATIVE_LIBRARY, `prctl(PR_SET_PDEATHSIG) failed: ${errnoName(koffi.errno())}`);
  }
}

/** The kernel keeps 15 bytes of a thread's name (16 with the NUL). */
export const THREAD_NAME_BYTES_MAX = 15;
let setname: ((thread: bigint | number, name: string) => number) | undefined;
let self: (() => bigint | number) | undefined;

/**
 * Name the calling thread (what `top -H`, `ps -L` and /proc/<pid>/task/<tid>/comm show), cut to 15
 * bytes. Cosmetic: a failure is ignored, since nothing depends on the name.
 */
export function setThreadName(name: string): void {
  if (!setname || !self) {
    const c = libc();
    self = c.func('unsigned long pthread_self(void)');
    setname = c.func('int pthread_setname_np(unsigned long thread, const char *name)');
  }
  setname(self(), Buffer.from(name).subarray(0, THREAD_NAME_BYTES_MAX).toString());
}

// ---- scheduling priority ---------------------------------------------------------------------------

/** sched.h / sys/resource.h constants. */
export const SCHED_OTHER = 0;
export const SCHED_FIFO = 1;
export const PRIO_PROCESS = 0;

type PriorityFns = {
  setscheduler: (tid: number, policy: number, param: Int32Array) => number;
  getscheduler: (tid: number) => number;
  setpriority: (which: number, who: number, prio: number) => number;
};
let prio: PriorityFns | undefined;
function priorityFns(): PriorityFns {
  if (!prio) {
    const c = libc();
    prio = {
      // struct sched_param is one int (sched_priority).
      setscheduler: c.func('int sched_setscheduler(int pid, int policy, const int *param)'),
      getscheduler: c.func('int sched_getscheduler(int pid)'),
      setpriority: c.func('int setpriority(int which, unsigned int who, int prio)'),
    };
  }
  return prio;
}

/** SCHED_FIFO priority of the main thread while it follows a round: ahead of every ordinary thread,
 *  behind the lease threads and the manager's (LEASE_PRIORITY; actors/node/config-follower.ts). */
export const ROUND_PRIORITY = 1;
/** SCHED_FIFO priority of a node's lease thread and of the manager's thread: above ROUND_PRIORITY, so
 *  that a round's work -- a promotion's scan takes 25-140 ms of CPU on the busy machine, and SCHED_FIFO
 *  threads of one priority never preempt each other -- in this node or any other on the host never
 *  holds up a renewal or a grant. */
export const LEASE_PRIORITY = 2;

/** What raiseThreadPriority obtained for the calling thread. */
export interface ThreadPriority {
  /** 'fifo': SCHED_FIFO at `level`; 'nice': SCHED_OTHER at nice `level`; 'none': unchanged. */
  kind: 'fifo' | 'nice' | 'none';
  level: number;
  /** Why a stronger one was refused (errno names), for the log and status. */
  refused: string[];
}

/**
 * Raise the calling thread's scheduling priority, for a thread that must wake on time on a busy
 * machine (a lease renewal): first SCHED_FIFO at `fifo` (woken ahead of every ordinary thread; needs
 * CAP_SYS_NICE or an RLIMIT_RTPRIO), else nice `nice` (negative needs CAP_SYS_NICE or RLIMIT_NICE),
 * else nothing. Never throws: a refusal is an answer, reported in `refused`. Thread-level: tid 0 and
 * gettid() address the calling thread only (see the header).
 */
export function raiseThreadPriority(fifo: number, nice: number): ThreadPriority {
  const f = priorityFns();
  const refused: string[] = [];
  if (f.setscheduler(0, SCHED_FIFO, Int32Array.of(fifo)) === 0 && f.getscheduler(0) === SCHED_FIFO) return { kind: 'fifo', level: fifo, refused };
  refused.push(`SCHED_FIFO ${fifo}: ${errnoName(koffi.errno())}`);
  if (f.setpriority(PRIO_PROCESS, gettid(), nice) === 0) return { kind: 'nice', level: nice, refused };
  refused.push(`nice ${nice}: ${errnoName(koffi.errno())}`);
  return { kind: 'none', level: 0, refused };
}

/**
 * Run the calling thread (`tid` 0), or thread `tid` of this process, under SCHED_FIFO at `level` for a
 * while (true), or back under SCHED_OTHER (`level` ignored). False when the kernel refused (no
 * CAP_SYS_NICE nor RLIMIT_RTPRIO): the thread runs unraised.
 */
export function setThreadRealtime(on: boolean, level = 1, tid = 0): boolean {
  const f = priorityFns();
  return f.setscheduler(tid, on ? SCHED_FIFO : SCHED_OTHER, Int32Array.of(on ? level : 0)) === 0;
}

/** Whether thread `tid` of this process (0: the calling one) runs under SCHED_FIFO. */
export function threadIsRealtime(tid = 0): boolean {
  return priorityFns().getscheduler(tid) === SCHED_FIFO;
}

// ---- environment -----------------------------------------------------------------------------------
//
// C libraries (libpmem2) read their switches with getenv(3). `process.env.X = ...` reaches the C
// environment only on the main thread: a worker_thread gets its own copy of process.env, so an actor
// that configures libpmem2 must go through libc's setenv. setenv is not thread-safe against a
// concurrent getenv in another thread; callers change a variable only when its value differs, so a
// node whose actors all use the same setting writes it once.

type EnvFns = {
  setenv: (name: string, value: string, overwrite: number) => number;
  unsetenv: (name: string) => number;
  getenv: (name: string) => string | null;
};
let env: EnvFns | undefined;
function envFns(): EnvFns {
  if (!env) {
    const c = libc();
    env = {
      setenv: c.func('int setenv(const char *name, const char *value, int overwrite)'),
      unsetenv: c.func('int unsetenv(const char *name)'),
      getenv: c.func('const char *getenv(const char *name)'),
    };
  }
  return env;
}

/** The C environment's value of `name` (what a C library sees), or null when unset. */
export function getenv(name: string): string | null {
  return envFns().getenv(name);
}

/** Set `name` in the C environment of the whole process (all threads see it). */
export function setenv(name: string, value: string): void {
  if (envFns().setenv(name, value, 1) !== 0) {
    const e = koffi.errno();
    throw new RowanError(ErrorCodes.NATIVE_LIBRARY, `setenv(${name}) failed: ${errnoName(e)}`, { errno: e });
  }
}

/** Remove `name` from the C environment of the whole process. */
export function unsetenv(name: string): void {
  if (envFns().unsetenv(name) !== 0) {
    const e = koffi.errno();
    throw new RowanError(ErrorCodes.NATIVE_LIBRARY, `unsetenv(${name}) failed: ${errnoName(e)}`, { errno: e });
  }
}

// ---- files and address space -----------------------------------------------------------------------

/** <sys/mman.h> values on Linux x86_64. */
export const PROT_NONE = 0;
export const MAP_PRIVATE = 0x02;
export const MAP_ANONYMOUS = 0x20;
export const MAP_NORESERVE = 0x4000;
/** Like MAP_FIXED but fails with EEXIST instead of replacing a mapping (Linux >= 4.17). */
export const MAP_FIXED_NOREPLACE = 0x100000;
/** (void *)-1 as koffi 3 returns it (pointers are BigInt). */
const MAP_FAILED = (1n << 64n) - 1n;

type FileFns = {
  posixFallocate: (fd: number, offset: number, length: number) => number;
  mmap: (addr: bigint, length: number, prot: number, flags: number, fd: number, offset: number) => bigint;
  munmap: (addr: bigint, length: number) => number;
  flock: (fd: number, operation: number) => number;
  msync: (addr: number, length: number, flags: number) => number;
};
let files: FileFns | undefined;
function fileFns(): FileFns {
  if (!files) {
    const c = libc();
    files = {
      posixFallocate: c.func('int posix_fallocate(int fd, int64_t offset, int64_t len)'),
      mmap: c.func('void *mmap(void *addr, size_t length, int prot, int flags, int fd, int64_t offset)'),
      munmap: c.func('int munmap(void *addr, size_t length)'),
      flock: c.func('int flock(int fd, int operation)'),
      // The address as uintptr_t: a JS number crosses without a BigInt per persist (cf. native/pmem2.ts).
      msync: c.func('int msync(uintptr_t addr, size_t length, int flags)'),
    };
  }
  return files;
}

const LOCK_EX = 2;
const LOCK_UN = 8;
let mapLockFd = -1;

/**
 * Run `f` holding this process's address-space lock: an flock on DIR/rowan-map-<pid>.lock, which every
 * thread opens for itself (flock excludes other open file descriptions, so threads of one process
 * exclude each other). libpmem2 picks a mapping's address from /proc/self/maps before mapping it, so
 * two threads mapping or unmapping at once can interfere: an EEXIST, and under a stress of many
 * threads mapping and unmapping in a loop, a mapping gone from under a thread (SIGSEGV). The lock file
 * is removed when the main thread exits.
 */
function removeStaleMapLocks(): void {
  for (const name of readdirSync(tmpdir())) {
    const m = /^rowan-map-(\d+)\.lock$/.exec(name);
    if (!m || Number(m[1]) === process.pid) continue;
    try {
      process.kill(Number(m[1]), 0);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ESRCH') rmSync(join(tmpdir(), name), { force: true });
    }
  }
}

export function withAddressSpaceLock<T>(f: () => T): T {
  if (mapLockFd < 0) {
    const path = join(tmpdir(), `rowan-map-${process.pid}.lock`);
    mapLockFd = openSync(path, 'a');
    if (isMainThread) {
      process.once('exit', () => rmSync(path, { force: true }));
      removeStaleMapLocks(); // of processes that were killed, or whose main thread never mapped
    }
  }
  const fns = fileFns();
  if (fns.flock(mapLockFd, LOCK_EX) !== 0) throw new RowanError(ErrorCodes.NATIVE_LIBRARY, `flock failed: ${errnoName(koffi.errno())}`);
  try {
    return f();
  } finally {
    fns.flock(mapLockFd, LOCK_UN);
  }
}

/**
 * Allocate the blocks of [offset, offset+length) of `fd` now. A file that is written through a mapping
 * must not be sparse: a store into a hole on a full filesystem is a SIGBUS, not an error code.
 * posix_fallocate returns the error number itself (it does not set errno).
 */
export function posixFallocate(fd: number, offset: number, length: number): void {
  const rc = fileFns().posixFallocate(fd, offset, length);
  if (rc !== 0) {
    throw new RowanError(ErrorCodes.NATIVE_LIBRARY, `posix_fallocate(${length} bytes) failed: ${errnoName(rc)}`, {
      errno: rc,
    });
  }
}

/**
 * Occupy [address, address+length) with an inaccessible, unbacked mapping, if the range is free. Used
 * after a PM mapping is deleted: JS views of it may outlive it, and without a guard a later mapping
 * could land at the same address and take their stray stores silently. With the guard a stray access
 * is a loud SIGSEGV. Costs address space only. Returns false when the range is (partly) taken.
 */
export function reserveAddressRange(address: bigint, length: number): boolean {
  const f = fileFns();
  const flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE;
  const got = f.mmap(address, length, PROT_NONE, flags, -1, 0);
  if (got === MAP_FAILED) return false;
  // Kernels before 4.17 ignore MAP_FIXED_NOREPLACE and treat the address as a hint.
  if (got !== address) {
    f.munmap(got, length);
    return false;
  }
  return true;
}

export const PROT_READ = 1;
export const PROT_WRITE = 2;
export const MAP_SHARED = 0x01;
export const MS_SYNC = 4;

/**
 * Map [0, length) of `fd` shared, read-write, at an address the kernel picks (under the address-space
 * lock: see withAddressSpaceLock). The mapping outlives `fd`.
 */
export function mmapShared(fd: number, length: number, label: string): bigint {
  const f = fileFns();
  const got = withAddressSpaceLock(() => f.mmap(0n, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
  if (got === MAP_FAILED) {
    const e = koffi.errno();
    throw new RowanError(ErrorCodes.NATIVE_LIBRARY, `mmap of ${length} bytes of ${label} failed: ${errnoName(e)}`, { errno: e });
  }
  return got;
}

/** Unmap [address, +length) and leave the guard of reserveAddressRange in its place. */
export function munmapGuarded(address: bigint, length: number, label: string): void {
  const f = fileFns();
  withAddressSpaceLock(() => {
    if (f.munmap(address, length) !== 0) {
      const e = koffi.errno();
      throw new RowanError(ErrorCodes.NATIVE_LIBRARY, `munmap of ${label} failed: ${errnoName(e)}`, { errno: e });
    }
    reserveAddressRange(address, length);
  });
}

/** msync(MS_SYNC) of the pages covering [address, +length): written back to the file's storage. */
export function msyncPages(address: number, length: number, label: string): void {
  const page = 4096;
  const start = address - (address % page);
  const rc = fileFns().msync(start, length + (address - start), MS_SYNC);
  if (rc !== 0) {
    const e = koffi.errno();
    throw new RowanError(ErrorCodes.NATIVE_LIBRARY, `msync of ${label} failed: ${errnoName(e)}`, { errno: e });
  }
}

/** Throw NATIVE_LIBRARY for a libc call that failed, errno named (call right after it). */
export function failErrno(what: string): never {
  throw new RowanError(ErrorCodes.NATIVE_LIBRARY, `${what} failed: ${errnoName(koffi.errno())}`);
}

const AF_INET = 2;
const SOCKADDR_IN_BYTES = 16;

/** A struct sockaddr_in for ipv4:port (BAD_ARGUMENT for anything but a dotted IPv4 address). */
export function sockaddrIn(ipv4: string, port: number): Uint8Array {
  const parts = ipv4.split('.').map(Number);
  if (parts.length !== 4 || parts.some((p) => !Number.isInteger(p) || p < 0 || p > 255)) throw new RowanError(ErrorCodes.BAD_ARGUMENT, `not an IPv4 address: ${ipv4}`);
  const a = new Uint8Array(SOCKADDR_IN_BYTES);
  const v = new DataView(a.buffer);
  v.setUint16(0, AF_INET, true); // sin_family, host order
  v.setUint16(2, port, false); // sin_port, network order
  a.set(parts, 4);
  return a;
}
