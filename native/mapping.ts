// Which library maps a file region: libpmem2 (native/pmem2.ts) or libc alone (native/libc-mapping.ts).
// `dax` needs libpmem2; `msync` and `pagecache` need only a mapped file and msync, so where libpmem2
// does not load (a machine without the Debian package) they map through libc, with the same crash
// guarantees. ROWAN_PM_BACKEND=libpmem2|libc|auto (default auto: libpmem2 when it loads) pins one, for
// the tests and benchmarks that compare the two.
import { ErrorCodes, RowanError } from '../config/base/errors.js';
import { LibcMapping } from './libc-mapping.js';
import { PmemMapping, pmem2Loadable, type MapOptions, type PersistMode } from './pmem2.js';

export type PmBackend = 'libpmem2' | 'libc';
export type FileMapping = PmemMapping | LibcMapping;
export const PM_BACKEND_ENV = 'ROWAN_PM_BACKEND';

/** The back end `mode` maps through here (ROWAN_PM_BACKEND, else libpmem2 when it loads). */
export function backendFor(mode: PersistMode): PmBackend {
  const want = process.env[PM_BACKEND_ENV] ?? 'auto';
  if (want === 'libpmem2' || want === 'libc') return want;
  if (want !== 'auto') throw new RowanError(ErrorCodes.BAD_CONFIG, `${PM_BACKEND_ENV}=${want}: expected libpmem2, libc or auto`);
  return mode === 'dax' || pmem2Loadable() ? 'libpmem2' : 'libc';
}

/** Map an open read-write descriptor through the back end `o.mode` uses here. */
export function mapFd(fd: number, o: MapOptions): FileMapping {
  return backendFor(o.mode) === 'libpmem2' ? PmemMapping.fromFd(fd, o) : LibcMapping.fromFd(fd, o);
}

/** Map the file at `path` through the back end `o.mode` uses here. */
export function mapFile(path: string, o: MapOptions): FileMapping {
  return backendFor(o.mode) === 'libpmem2' ? PmemMapping.map(path, o) : LibcMapping.map(path, o);
}
