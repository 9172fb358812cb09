// Parsing of the expiry arguments of SET, GETEX, SETEX/PSETEX and the EXPIRE family, as Redis 7 parses
// them (t_string.c parseExtendedStringArgumentsOrReply / getExpireMillisecondsOrReply, expire.c
// expireGenericCommand), with its error strings. A deadline is absolute Unix ms, decided here on the
// primary from its clock (the worker's wallNow) and stored in the key's log entry (shm/log-layout.ts
// FLAG_EXPIRES), so every replica holds the same deadline; docs/redis.md "Expiry" says why that is safe.
import { RespErr, err } from '../../../runtime/resp/reply.js';
import { NOT_INTEGER, parseInt64 } from './int64.js';

const SYNTAX = err('ERR syntax error');

export type ExpiryUnit = 'EX' | 'PX' | 'EXAT' | 'PXAT';

/** SET's and GETEX's options (Redis's OBJ_SET_* / OBJ_* flags). */
export interface StringOpts {
  nx: boolean;
  xx: boolean;
  get: boolean;
  keepTtl: boolean;
  persist: boolean;
  unit: ExpiryUnit | null;
  arg: Buffer | null;
}

const LLONG_MAX = 2n ** 63n - 1n;
/** The latest deadline a log entry stores (a safe integer of Unix ms, the year 287,396): later ones,
 *  which Redis would keep, are refused with its invalid-expire-time error (docs/redis.md). */
const DEADLINE_MAX = BigInt(Number.MAX_SAFE_INTEGER);

export function invalidExpire(cmd: string): RespErr {
  return err(`ERR invalid expire time in '${cmd}' command`);
}

/** SET (from args[3]) or GETEX (from args[2]) options; Redis's rules: NX/XX exclusive, one of
 *  EX/PX/EXAT/PXAT/KEEPTTL (PERSIST for GETEX), GET and NX/XX/KEEPTTL only for SET, else syntax error. */
export function parseStringOpts(args: Buffer[], from: number, forSet: boolean): StringOpts | RespErr {
  const o: StringOpts = { nx: false, xx: false, get: false, keepTtl: false, persist: false, unit: null, arg: null };
  for (let j = from; j < args.length; j++) {
    const a = args[j]!.toString('latin1').toUpperCase();
    const hasNext = j + 1 < args.length;
    const timed = o.unit !== null;
    if (a === 'NX' && forSet && !o.xx) o.nx = true;
    else if (a === 'XX' && forSet && !o.nx) o.xx = true;
    else if (a === 'GET' && forSet) o.get = true;
    else if (a === 'KEEPTTL' && forSet && !o.persist && !timed) o.keepTtl = true;
    else if (a === 'PERSIST' && !forSet && !timed && !o.keepTtl) o.persist = true;
    else if ((a === 'EX' || a === 'PX' || a === 'EXAT' || a === 'PXAT') && !o.keepTtl && !o.persist && (o.unit === null || o.unit === a) && hasNext) {
      o.unit = a;
      o.arg = args[++j]!;
    } else return SYNTAX;
  }
  return o;
}

/** getExpireMillisecondsOrReply: the absolute deadline (Unix ms) of `unit arg` at `now`, or the error
 *  (not an integer; <= 0, overflowing, or past what an entry stores: invalid expire time). */
export function deadlineOf(unit: ExpiryUnit, arg: Buffer, now: number, cmd: string): number | RespErr {
  let ms = parseInt64(arg);
  if (ms === null) return NOT_INTEGER;
  const seconds = unit === 'EX' || unit === 'EXAT';
  if (ms <= 0n || (seconds && ms > LLONG_MAX / 1000n)) return invalidExpire(cmd);
  if (seconds) ms *= 1000n;
  if (unit === 'EX' || unit === 'PX') ms += BigInt(now);
  if (ms > DEADLINE_MAX) return invalidExpire(cmd);
  return Number(ms);
}

export interface ExpireFlags {
  nx: boolean;
  xx: boolean;
  gt: boolean;
  lt: boolean;
}

/** parseExtendedExpireArgumentsOrReply: NX | XX | GT | LT after the time. */
export function parseExpireFlags(args: Buffer[]): ExpireFlags | RespErr {
  const f: ExpireFlags = { nx: false, xx: false, gt: false, lt: false };
  for (let j = 3; j < args.length; j++) {
    const a = args[j]!.toString('latin1').toLowerCase();
    if (a === 'nx' || a === 'xx' || a === 'gt' || a === 'lt') f[a] = true;
    else return err(`ERR Unsupported option ${args[j]!.toString('latin1')}`);
  }
  if (f.nx && (f.xx || f.gt || f.lt)) return err('ERR NX and XX, GT or LT options at the same time are not compatible');
  if (f.gt && f.lt) return err('ERR GT and LT options at the same time are not compatible');
  return f;
}

/** EXPIRE's time argument as an absolute deadline: `base` (now, or 0 for the -AT forms) + the time,
 *  with Redis's overflow checks; negative results are allowed (they delete the key). */
export function expireWhen(arg: Buffer, seconds: boolean, base: number, cmd: string): number | RespErr {
  let when = parseInt64(arg);
  if (when === null) return NOT_INTEGER;
  if (seconds) {
    if (when > LLONG_MAX / 1000n || when < -LLONG_MAX / 1000n) return invalidExpire(cmd);
    when *= 1000n;
  }
  if (when > LLONG_MAX - BigInt(base)) return invalidExpire(cmd);
  when += BigInt(base);
  if (when > DEADLINE_MAX) return invalidExpire(cmd);
  return when < BigInt(Number.MIN_SAFE_INTEGER) ? Number.MIN_SAFE_INTEGER : Number(when);
}

/** Whether EXPIRE's NX/XX/GT/LT let a key whose deadline is `current` (0 = none, an infinite TTL for
 *  GT and LT) take `when`. */
export function expireAllowed(f: ExpireFlags, current: number, when: number): boolean {
  if (f.nx && current !== 0) return false;
  if (f.xx && current === 0) return false;
  if (f.gt && (current === 0 || when <= current)) return false;
  if (f.lt && current !== 0 && when >= current) return false;
  return true;
}
