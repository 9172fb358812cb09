// What both back ends of a mapped pool file share (native/pmem2.ts, native/libc-mapping.ts): opening the
// file for the map, and the checks every persist makes before it reaches C.
import { closeSync, openSync } from 'node:fs';
import { ErrorCodes, RowanError, invariant } from '../config/base/errors.js';

/** Run `f` on `path` opened read-write (DATA_DIR when it cannot be); the descriptor is closed after. */
export function withReadWriteFd<T>(path: string, f: (fd: number) => T): T {
  let fd: number;
  try {
    fd = openSync(path, 'r+');
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    throw new RowanError(ErrorCodes.DATA_DIR, `cannot open ${path} read-write: ${e.code ?? e.message}`, { errno: e.errno });
  }
  try {
    return f(fd);
  } finally {
    closeSync(fd);
  }
}

/** A use after close, or a range outside the mapping (it would fault in C), is the caller's bug. */
export function checkPersistRange(label: string, mapped: boolean, size: number, offset: number, length: number): void {
  // On every persist: build the messages only when a check fails.
  if (!mapped) invariant(false, `${label}: mapping used after close`);
  if (!(offset >= 0 && length >= 0 && offset + length <= size)) {
    invariant(false, `${label}: persist range [${offset}, +${length}) outside the ${size}-byte mapping`);
  }
}
