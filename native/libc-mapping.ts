// A file mapped through libc alone (mmap/msync/munmap via koffi, native/libc.ts): the back end of the
// `msync` and `pagecache` persistence modes on a machine without libpmem2 (native/mapping.ts picks it).
// The same guarantees as libpmem2 gives those modes on a regular file:
//   msync      persist = msync(MS_SYNC) of the covering pages: on the file's storage, survives power loss.
//   pagecache  a MAP_SHARED store is in the kernel's page cache the moment it retires, so it survives
//              the process's crash with no call at all (libpmem2's cache-line flush there adds no
//              durability: nothing below the page cache sees it); not a power loss.
// `dax` is not offered: without libpmem2 there is no MAP_SYNC mapping nor user-space flush of real PM.
import { fstatSync } from 'node:fs';
import koffi from 'koffi';
import { ErrorCodes, RowanError, invariant } from '../config/base/errors.js';
import type { PoolRegion } from '../config/base/region.js';
import { mmapShared, msyncPages, munmapGuarded } from './libc.js';
import { checkPersistRange, withReadWriteFd } from './file-region.js';
import { VIEW_BYTES_MAX, type Granularity, type MapOptions } from './pmem2.js';

export class LibcMapping implements PoolRegion {
  readonly backend = 'libc' as const;
  readonly mode: 'msync' | 'pagecache';
  readonly granularity: Granularity;
  readonly size: number;
  readonly address: bigint;
  private readonly label: string;
  private readonly view: Uint8Array;
  private readonly base: number;
  private mapped = true;

  /** Map the file at `path` (opened read-write; the descriptor is closed again before returning). */
  static map(path: string, o: MapOptions): LibcMapping {
    return withReadWriteFd(path, (fd) => LibcMapping.fromFd(fd, { ...o, label: o.label ?? path }));
  }

  /** Map an open read-write descriptor. The mapping does not keep `fd`; the caller closes it. */
  static fromFd(fd: number, o: MapOptions): LibcMapping {
    const label = o.label ?? `fd ${fd}`;
    if (o.mode === 'dax') {
      throw new RowanError(ErrorCodes.NATIVE_LIBRARY, `--persistence dax needs libpmem2 (${label}): install it (apt-get install libpmem2) or use --persistence msync or pagecache`, { mode: 'dax' });
    }
    const size = o.length ?? fstatSync(fd).size;
    if (size > VIEW_BYTES_MAX) throw new RowanError(ErrorCodes.BAD_ARGUMENT, `cannot map ${size} bytes of ${label}: one view is at most 4 GiB`);
    if (size <= 0) throw new RowanError(ErrorCodes.BAD_ARGUMENT, `cannot map ${label}: it is empty`);
    return new LibcMapping(mmapShared(fd, size, label), size, o.mode, label);
  }

  private constructor(address: bigint, size: number, mode: 'msync' | 'pagecache', label: string) {
    this.address = address;
    this.size = size;
    this.mode = mode;
    this.label = label;
    this.granularity = mode === 'msync' ? 'page' : 'cache-line';
    this.base = Number(address);
    this.view = new Uint8Array(koffi.view(address, size));
  }

  get closed(): boolean {
    return !this.mapped;
  }

  /** The mapped bytes. Do not keep views of them past close(). */
  get bytes(): Uint8Array {
    if (!this.mapped) invariant(false, `${this.label}: mapping used after close`);
    return this.view;
  }

  persist(offset: number, length: number): void {
    this.checkRange(offset, length);
    if (this.mode === 'msync' && length > 0) msyncPages(this.base + offset, length, this.label);
  }

  /** msync has no separate flush and fence: a flush is the whole persist (as libpmem2's page granularity). */
  flush(offset: number, length: number): void {
    this.persist(offset, length);
  }

  drain(): void {
    if (!this.mapped) invariant(false, `${this.label}: mapping used after close`);
  }

  /** Unmap (the range then holds an inaccessible guard). Idempotent. */
  close(): void {
    if (!this.mapped) return;
    this.mapped = false;
    munmapGuarded(this.address, this.size, this.label);
  }

  private checkRange(offset: number, length: number): void {
    checkPersistRange(this.label, this.mapped, this.size, offset, length);
  }
}
