// Multi-key writes (MSET, DEL of several keys) that never answer "not applied" after applying some keys
// (issue 27). Every key and value is checked against the limits before the first write, so a bad one
// refuses the whole command with nothing written; a failure once writes are under way (a backup gone, a
// full pool, a forwarding link cut) after another key was or may have been written answers the
// outcome-unknown error instead of that key's own "not applied" error.
import { ErrorCodes, RowanError } from '../../../config/base/errors.js';
import type { Limits } from '../../../config/limits.js';
import { encodedSize } from '../../../shm/log.js';
import { isNotApplied, rowanErrorReply } from './outcome.js';

/** Throws what a write of this key (and value; none for a DEL) would be refused with before anything
 *  is persisted: KEY_EMPTY, KEY_TOO_LARGE, VALUE_TOO_LARGE, ENTRY_TOO_LARGE (all "not applied"). */
export function checkWrite(limits: Limits, key: Uint8Array, value: Uint8Array | null, expiresAt = 0): void {
  if (key.length === 0) throw new RowanError(ErrorCodes.KEY_EMPTY, `the key is empty (1..${limits.keyBytesMax} bytes)`);
  encodedSize(key.length, value?.length ?? 0, limits, expiresAt > 0);
}

/**
 * The results of a multi-key command's per-key writes, all of them settled. All succeeded: their
 * values. All refused with "not applied" errors: the first of them (nothing changed). Otherwise -- some
 * written and some not, or one whose outcome is unknown -- OUTCOME_UNKNOWN naming the first failure.
 */
export async function allOrUnknown<T>(command: string, writes: Promise<T>[]): Promise<T[]> {
  const rs = await Promise.allSettled(writes);
  const failed = rs.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed.length === 0) return rs.map((r) => (r as PromiseFulfilledResult<T>).value);
  const first = failed[0]!.reason as unknown;
  if (failed.length === rs.length && failed.every((r) => isNotApplied(r.reason))) throw first;
  const done = rs.length - failed.length;
  throw new RowanError(
    ErrorCodes.OUTCOME_UNKNOWN,
    `${command}: ${done} of ${rs.length} keys written, then a key failed (${rowanErrorReply(first).s}); the others may or may not be written`,
  );
}
