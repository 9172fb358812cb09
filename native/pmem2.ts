// libpmem2 through koffi: map a pool file and make stores to it persistent (DESIGN §3). This is the only
// module that calls libpmem2 (CONVENTIONS 5); every negative return code becomes a RowanError here,
// with the code's name from <libpmem2/base.h> and pmem2_errormsg()'s text.
//
// Persistence modes (the named switch from the fast path to the slow one, CONVENTIONS 10):
//   dax        real PM on a DAX filesystem (MAP_SYNC): persist = cache-line flush + fence.
//   msync      any file, page granularity: persist = msync. Durable across power loss; slow per call.
//   pagecache  a regular file forced to cache-line granularity: persist = flush + fence on the page
//              cache. Survives a process crash (the kernel owns the dirty pages), not a power loss.
//
// libpmem2 decides the granularity inside pmem2_map_new from the file and from the environment variable
// PMEM2_FORCE_GRANULARITY, which it reads with getenv(3). Each mode therefore sets (or clears) that
// variable through libc's setenv right before mapping: process.env does not reach C in worker_threads.

import koffi, { type LibraryHandle, type TypeObject } from 'koffi';
import { ErrorCodes, RowanError, invariant } from '../config/base/errors.js';
import type { PersistentRegion } from '../config/base/region.js';
import { getenv, reserveAddressRange, setenv, unsetenv, withAddressSpaceLock } from './libc.js';
import { checkPersistRange, withReadWriteFd } from './file-region.js';

export type PersistMode = 'dax' | 'msync' | 'pagecache';
export const PERSIST_MODES: readonly PersistMode[] = ['dax', 'msync', 'pagecache'];

export function isPersistMode(s: string): s is PersistMode {
  return (PERSIST_MODES as readonly string[]).includes(s);
}

/** One line for the start banner: the mode and what a persist survives. */
export function describeMode(mode: PersistMode): string {
  switch (mode) {
    case 'dax':
      return 'persistence: dax (cache-line flush on a DAX mapping; survives power loss)';
    case 'msync':
      return 'persistence: msync (msync of whole pages; survives power loss, slow per call)';
    case 'pagecache':
      return 'persistence: pagecache (cache-line flush on page cache; survives process crash, not power loss)';
  }
}

// ---- constants from <libpmem2/base.h> ------------------------------------------------------------

/** enum pmem2_granularity. */
export const PMEM2_GRANULARITY_BYTE = 0;
export const PMEM2_GRANULARITY_CACHE_LINE = 1;
export const PMEM2_GRANULARITY_PAGE = 2;

export type Granularity = 'byte' | 'cache-line' | 'page';
const GRANULARITY_NAMES: readonly Granularity[] = ['byte', 'cache-line', 'page'];

/** The PMEM2_E_* error codes, by name. libpmem2 also returns plain negative errno values. */
export const Pmem2Error = {
  PMEM2_E_UNKNOWN: -100000,
  PMEM2_E_NOSUPP: -100001,
  PMEM2_E_FILE_HANDLE_NOT_SET: -100003,
  PMEM2_E_INVALID_FILE_HANDLE: -100004,
  PMEM2_E_INVALID_FILE_TYPE: -100005,
  PMEM2_E_MAP_RANGE: -100006,
  PMEM2_E_MAPPING_EXISTS: -100007,
  PMEM2_E_GRANULARITY_NOT_SET: -100008,
  PMEM2_E_GRANULARITY_NOT_SUPPORTED: -100009,
  PMEM2_E_OFFSET_OUT_OF_RANGE: -100010,
  PMEM2_E_OFFSET_UNALIGNED: -100011,
  PMEM2_E_INVALID_ALIGNMENT_FORMAT: -100012,
  PMEM2_E_INVALID_ALIGNMENT_VALUE: -100013,
  PMEM2_E_INVALID_SIZE_FORMAT: -100014,
  PMEM2_E_LENGTH_UNALIGNED: -100015,
  PMEM2_E_MAPPING_NOT_FOUND: -100016,
  PMEM2_E_BUFFER_TOO_SMALL: -100017,
  PMEM2_E_SOURCE_EMPTY: -100018,
  PMEM2_E_INVALID_SHARING_VALUE: -100019,
  PMEM2_E_SRC_DEVDAX_PRIVATE: -100020,
  PMEM2_E_INVALID_ADDRESS_REQUEST_TYPE: -100021,
  PMEM2_E_ADDRESS_UNALIGNED: -100022,
  PMEM2_E_ADDRESS_NULL: -100023,
  PMEM2_E_DEEP_FLUSH_RANGE: -100024,
  PMEM2_E_INVALID_REGION_FORMAT: -100025,
  PMEM2_E_DAX_REGION_NOT_FOUND: -100026,
  PMEM2_E_INVALID_DEV_FORMAT: -100027,
  PMEM2_E_CANNOT_READ_BOUNDS: -100028,
  PMEM2_E_NO_BAD_BLOCK_FOUND: -100029,
  PMEM2_E_LENGTH_OUT_OF_RANGE: -100030,
  PMEM2_E_INVALID_PROT_FLAG: -100031,
  PMEM2_E_NO_ACCESS: -100032,
  PMEM2_E_VM_RESERVATION_NOT_EMPTY: -100033,
  PMEM2_E_MAP_EXISTS: -100034,
  PMEM2_E_FILE_DESCRIPTOR_NOT_SET: -100035,
  PMEM2_E_SOURCE_TYPE_NOT_SUPPORTED: -100036,
  PMEM2_E_IO_FAIL: -100037,
} as const;

/** The environment variable libpmem2 reads in pmem2_map_new to override the detected granularity. */
export const PMEM2_FORCE_GRANULARITY = 'PMEM2_FORCE_GRANULARITY';

/**
 * koffi.view builds an ArrayBuffer, and V8 caps an ArrayBuffer at 4 GiB; asking for more aborts the
 * process inside N-API. Larger mappings would need one view per window.
 */
export const VIEW_BYTES_MAX = 2 ** 32;

/** A libpmem2 return code -> its header name (or errno name for -errno). */
export function pmem2CodeName(code: number): string {
  for (const [name, v] of Object.entries(Pmem2Error)) if (v === code) return name;
  for (const [name, v] of Object.entries(koffi.os.errno)) if (v === -code) return `-${name}`;
  return `code ${code}`;
}

// ---- the binding ----------------------------------------------------------------------------------

type Fn<A extends unknown[], R> = (...args: A) => R;
type Out = [bigint | null];

interface Pmem2Lib {
  configNew: Fn<[Out], number>;
  configSetRequiredStoreGranularity: Fn<[bigint, number], number>;
  configSetLength: Fn<[bigint, number], number>;
  configDelete: Fn<[Out], number>;
  sourceFromFd: Fn<[Out, number], number>;
  sourceDelete: Fn<[Out], number>;
  mapNew: Fn<[Out, bigint, bigint], number>;
  mapDelete: Fn<[Out], number>;
  mapGetAddress: Fn<[bigint], bigint>;
  mapGetSize: Fn<[bigint], number>;
  mapGetStoreGranularity: Fn<[bigint], number>;
  getPersistFn: Fn<[bigint], bigint>;
  getFlushFn: Fn<[bigint], bigint>;
  getDrainFn: Fn<[bigint], bigint>;
  errormsg: Fn<[], string>;
}

let pmem2: Pmem2Lib | undefined;
/** Load libpmem2 on first use, so that importing this module never fails on a machine without it. */
function lib(): Pmem2Lib {
  if (pmem2) return pmem2;
  let l: LibraryHandle;
  try {
    l = koffi.load('libpmem2.so.1');
  } catch (err) {
    throw new RowanError(ErrorCodes.NATIVE_LIBRARY, `cannot load libpmem2.so.1 (package libpmem2: apt-get install libpmem2): ${(err as Error).message}`);
  }
  // Anonymous opaque pointer types: named koffi types are process-global and could clash.
  const obj = koffi.pointer(koffi.opaque());
  const out = koffi.out(koffi.pointer(obj));
  const inout = koffi.inout(koffi.pointer(obj));
  pmem2 = {
    configNew: l.func('pmem2_config_new', 'int', [out]),
    configSetRequiredStoreGranularity: l.func('pmem2_config_set_required_store_granularity', 'int', [obj, 'int']),
    configSetLength: l.func('pmem2_config_set_length', 'int', [obj, 'size_t']),
    configDelete: l.func('pmem2_config_delete', 'int', [inout]),
    sourceFromFd: l.func('pmem2_source_from_fd', 'int', [out, 'int']),
    sourceDelete: l.func('pmem2_source_delete', 'int', [inout]),
    mapNew: l.func('pmem2_map_new', 'int', [out, obj, obj]),
    mapDelete: l.func('pmem2_map_delete', 'int', [inout]),
    mapGetAddress: l.func('pmem2_map_get_address', 'void *', [obj]),
    mapGetSize: l.func('pmem2_map_get_size', 'size_t', [obj]),
    mapGetStoreGranularity: l.func('pmem2_map_get_store_granularity', 'int', [obj]),
    getPersistFn: l.func('pmem2_get_persist_fn', 'void *', [obj]),
    getFlushFn: l.func('pmem2_get_flush_fn', 'void *', [obj]),
    getDrainFn: l.func('pmem2_get_drain_fn', 'void *', [obj]),
    errormsg: l.func('pmem2_errormsg', 'const char *', []),
  };
  return pmem2;
}

/** Whether libpmem2 loads in this process (native/mapping.ts maps through libc when it does not). */
export function pmem2Loadable(): boolean {
  try {
    lib();
    return true;
  } catch {
    return false;
  }
}

/**
 * The persist/flush prototypes take the address as uintptr_t rather than `const void *`: a JS number
 * (base + offset) then crosses into C without building a BigInt per call. User-space addresses on
 * x86_64 are below 2^47, well inside a double's exact range.
 */
let protos: { range: TypeObject; drain: TypeObject } | undefined;
function fnProtos(): { range: TypeObject; drain: TypeObject } {
  protos ??= { range: koffi.proto('void', ['uintptr_t', 'size_t']), drain: koffi.proto('void', []) };
  return protos;
}

function pmem2Failure(call: string, rc: number, context: string): RowanError {
  const name = pmem2CodeName(rc);
  const text = lib().errormsg() || '(no message)';
  return new RowanError(ErrorCodes.PMEM2, `${call} failed for ${context}: ${name}: ${text}`, {
    pmem2Code: rc,
    pmem2Name: name,
    call,
  });
}

function check(call: string, rc: number, context: string): void {
  if (rc < 0) throw pmem2Failure(call, rc, context);
}

// ---- modes ------------------------------------------------------------------------------------------

/** The store granularity each mode asks libpmem2 for (the coarsest it accepts). */
const REQUIRED_GRANULARITY: Record<PersistMode, number> = {
  dax: PMEM2_GRANULARITY_CACHE_LINE,
  msync: PMEM2_GRANULARITY_PAGE,
  pagecache: PMEM2_GRANULARITY_CACHE_LINE,
};

/**
 * The PMEM2_FORCE_GRANULARITY value each mode needs: pagecache forces cache lines on a regular file;
 * msync forces pages so that persist is msync even on a DAX file; dax must see the real device.
 */
const FORCED_GRANULARITY: Record<PersistMode, string | null> = {
  dax: null,
  msync: 'PAGE',
  pagecache: 'CACHE_LINE',
};

function applyGranularityOverride(mode: PersistMode): void {
  const want = FORCED_GRANULARITY[mode];
  if (getenv(PMEM2_FORCE_GRANULARITY) === want) return;
  if (want === null) unsetenv(PMEM2_FORCE_GRANULARITY);
  else setenv(PMEM2_FORCE_GRANULARITY, want);
}

/** Whether a mapping's effective granularity is what `mode` promises. */
function granularityFits(mode: PersistMode, g: number): boolean {
  if (mode === 'msync') return g === PMEM2_GRANULARITY_PAGE;
  if (mode === 'pagecache') return g === PMEM2_GRANULARITY_CACHE_LINE;
  return g === PMEM2_GRANULARITY_BYTE || g === PMEM2_GRANULARITY_CACHE_LINE;
}

function daxUnavailable(context: string, detail: string): RowanError {
  return new RowanError(
    ErrorCodes.PMEM2_MODE_UNAVAILABLE,
    `${context} is not on a DAX filesystem (or the kernel lacks MAP_SYNC), so --persistence dax is ` +
      `unavailable; use --persistence pagecache (survives process crash) or --persistence msync ` +
      `(survives power loss, slower). libpmem2: ${detail}`,
    { mode: 'dax', pmem2Code: Pmem2Error.PMEM2_E_GRANULARITY_NOT_SUPPORTED },
  );
}

// ---- mapping ----------------------------------------------------------------------------------------

export interface MapOptions {
  mode: PersistMode;
  /** Bytes to map from offset 0; default: the whole file. */
  length?: number;
  /** Named in error messages (the path, when mapping by fd). */
  label?: string;
}

/** pmem2_map_new's -errno when its MAP_FIXED_NOREPLACE lost a race with another thread's mapping. */
const NEG_EEXIST = -17;
/** Attempts before the race is reported, with a growing pause between them (0.05 ms doubling to 5 ms,
 *  at most ~0.15 s in all): back-to-back retries kept losing when several threads mapped at once. */
const MAP_RACE_RETRIES = 40;
const MAP_RACE_PAUSE_MAX_MS = 5;
/** Atomics.wait on this (never notified) is a synchronous pause, allowed on every Node thread. */
const pauseCell = new Int32Array(new SharedArrayBuffer(4));

/** Create the pmem2 mapping: config + source are only needed during pmem2_map_new. */
function newMap(fd: number, o: MapOptions, context: string): bigint {
  const p = lib();
  const cfg: Out = [null];
  const src: Out = [null];
  try {
    check('pmem2_config_new', p.configNew(cfg), context);
    check(
      'pmem2_config_set_required_store_granularity',
      p.configSetRequiredStoreGranularity(cfg[0]!, REQUIRED_GRANULARITY[o.mode]),
      context,
    );
    if (o.length !== undefined) check('pmem2_config_set_length', p.configSetLength(cfg[0]!, o.length), context);
    check('pmem2_source_from_fd', p.sourceFromFd(src, fd), context);
    applyGranularityOverride(o.mode);
    const map: Out = [null];
    // libpmem2 picks the address from /proc/self/maps, then maps it MAP_FIXED_NOREPLACE: two threads of
    // one process mapping at once can pick the same hole. Our own maps and unmaps take the process's
    // address-space lock (native/libc.ts); V8 and other libraries still map without it, so a lost race
    // (-EEXIST) is asked again, with a growing pause, picking a fresh hole each time.
    let rc = withAddressSpaceLock(() => p.mapNew(map, cfg[0]!, src[0]!));
    for (let attempt = 1; rc === NEG_EEXIST && attempt < MAP_RACE_RETRIES; attempt++) {
      Atomics.wait(pauseCell, 0, 0, Math.min(MAP_RACE_PAUSE_MAX_MS, 0.05 * 2 ** attempt));
      rc = withAddressSpaceLock(() => p.mapNew(map, cfg[0]!, src[0]!));
    }
    if (rc === Pmem2Error.PMEM2_E_GRANULARITY_NOT_SUPPORTED && o.mode === 'dax')
      throw daxUnavailable(context, p.errormsg());
    check('pmem2_map_new', rc, context);
    return map[0]!;
  } finally {
    if (src[0]) p.sourceDelete(src);
    if (cfg[0]) p.configDelete(cfg);
  }
}

/**
 * A file mapped with libpmem2. Implements PersistentRegion over the whole mapping; offsets are byte
 * offsets from the start of the file. persist/flush/drain call libpmem2's own functions for this
 * mapping, decoded once into JS functions.
 *
 * After close() the mapping is gone: bytes/persist/flush/drain are invariant errors, and the address
 * range is held by an inaccessible guard mapping so that a stale view faults instead of writing into
 * whatever would be mapped there next.
 */
export class PmemMapping implements PersistentRegion {
  readonly backend = 'libpmem2' as const;
  readonly mode: PersistMode;
  readonly granularity: Granularity;
  readonly size: number;
  /** Start of the mapping in this process (e.g. for registering it with an RNIC). */
  readonly address: bigint;
  private readonly label: string;
  private readonly view: Uint8Array;
  private readonly base: number;
  private readonly persistFn: (addr: number, len: number) => void;
  private readonly flushFn: (addr: number, len: number) => void;
  private readonly drainFn: () => void;
  private map: bigint | null;

  /** Map the file at `path` (opened read-write; the descriptor is closed again before returning). */
  static map(path: string, o: MapOptions): PmemMapping {
    return withReadWriteFd(path, (fd) => PmemMapping.fromFd(fd, { ...o, label: o.label ?? path }));
  }

  /** Map an open read-write descriptor. The mapping does not keep `fd`; the caller closes it. */
  static fromFd(fd: number, o: MapOptions): PmemMapping {
    const context = o.label ?? `fd ${fd}`;
    if (o.length !== undefined && o.length > VIEW_BYTES_MAX)
      throw new RowanError(ErrorCodes.BAD_ARGUMENT, `cannot map ${o.length} bytes of ${context}: one view is at most 4 GiB`);
    const map = newMap(fd, o, context);
    try {
      return new PmemMapping(map, o.mode, context);
    } catch (err) {
      lib().mapDelete([map]);
      throw err;
    }
  }

  private constructor(map: bigint, mode: PersistMode, label: string) {
    const p = lib();
    this.map = map;
    this.mode = mode;
    this.label = label;
    const g = p.mapGetStoreGranularity(map);
    if (!granularityFits(mode, g)) {
      throw new RowanError(
        ErrorCodes.PMEM2,
        `${label}: libpmem2 mapped it with ${GRANULARITY_NAMES[g] ?? g} granularity, not what --persistence ` +
          `${mode} needs (was ${PMEM2_FORCE_GRANULARITY} changed concurrently by another thread?)`,
        { granularity: g },
      );
    }
    this.granularity = GRANULARITY_NAMES[g]!;
    this.size = p.mapGetSize(map);
    if (this.size > VIEW_BYTES_MAX)
      throw new RowanError(ErrorCodes.BAD_ARGUMENT, `${label}: ${this.size} bytes do not fit one 4 GiB view`);
    this.address = p.mapGetAddress(map);
    this.base = Number(this.address);
    this.view = new Uint8Array(koffi.view(this.address, this.size));
    const { range, drain } = fnProtos();
    this.persistFn = koffi.decode(p.getPersistFn(map), range);
    this.flushFn = koffi.decode(p.getFlushFn(map), range);
    this.drainFn = koffi.decode(p.getDrainFn(map), drain);
  }

  get closed(): boolean {
    return this.map === null;
  }

  /** The mapped bytes. Do not keep views of them past close(). */
  get bytes(): Uint8Array {
    if (this.map === null) invariant(false, `${this.label}: mapping used after close`);
    return this.view;
  }

  persist(offset: number, length: number): void {
    this.checkRange(offset, length);
    this.persistFn(this.base + offset, length);
  }

  flush(offset: number, length: number): void {
    this.checkRange(offset, length);
    this.flushFn(this.base + offset, length);
  }

  drain(): void {
    if (this.map === null) invariant(false, `${this.label}: mapping used after close`);
    this.drainFn();
  }

  /** Unmap. Idempotent. Stores not yet persisted may or may not have reached the file. */
  close(): void {
    if (this.map === null) return;
    const cell: Out = [this.map];
    this.map = null;
    // Unmap and put the guard in place under the address-space lock, so no map of ours lands in between.
    withAddressSpaceLock(() => {
      check('pmem2_map_delete', lib().mapDelete(cell), this.label);
      // Best effort: if something else mapped there in between, there is nothing to guard.
      reserveAddressRange(this.address, this.size);
    });
  }

  /** A flush outside the mapping would fault in C; catch it here as the bug it is. */
  private checkRange(offset: number, length: number): void {
    checkPersistRange(this.label, this.map !== null, this.size, offset, length);
  }
}
