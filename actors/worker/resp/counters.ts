// INCR, DECR, INCRBY, DECRBY and INCRBYFLOAT with Redis 7's parsing, overflow checks, replies and
// error strings, each a read-modify-write under the key's lock (rmw.ts): no increment acknowledged to
// one client is lost to another's, whichever worker or port either came through.
import { err, type Reply } from '../../../runtime/resp/reply.js';
import type { RespContext } from './context.js';
import { addLongDouble, formatLongDouble, isFinite, parseLongDouble } from './long-double.js';
import { INT64_MIN, NOT_INTEGER, editKey, inInt64, intReply, parseInt64 } from './rmw.js';

const OVERFLOW = err('ERR increment or decrement would overflow');
const NOT_FLOAT = err('ERR value is not a valid float');

function incrBy(ctx: RespContext, args: Buffer[], by: bigint): Reply | Promise<Reply> {
  return editKey(ctx, args, (old) => {
    const cur = old === null ? 0n : parseInt64(old);
    if (cur === null) return NOT_INTEGER;
    const next = cur + by;
    if (!inInt64(next)) return OVERFLOW;
    return { reply: intReply(next), write: Buffer.from(next.toString(), 'latin1') };
  });
}

export function incr(ctx: RespContext, args: Buffer[]): Reply | Promise<Reply> {
  return incrBy(ctx, args, 1n);
}

export function decr(ctx: RespContext, args: Buffer[]): Reply | Promise<Reply> {
  return incrBy(ctx, args, -1n);
}

export function incrby(ctx: RespContext, args: Buffer[]): Reply | Promise<Reply> {
  const by = parseInt64(args[2]!);
  return by === null ? NOT_INTEGER : incrBy(ctx, args, by);
}

export function decrby(ctx: RespContext, args: Buffer[]): Reply | Promise<Reply> {
  const by = parseInt64(args[2]!);
  if (by === null) return NOT_INTEGER;
  if (by === INT64_MIN) return err('ERR decrement would overflow');
  return incrBy(ctx, args, -by);
}

/** INCRBYFLOAT: long double arithmetic and "%.17Lf" formatting, as Redis on x86-64 (long-double.ts);
 *  the value written is the reply's text. */
export function incrbyfloat(ctx: RespContext, args: Buffer[]): Reply | Promise<Reply> {
  return editKey(ctx, args, (old) => {
    const cur = old === null ? parseLongDouble('0') : parseLongDouble(Buffer.from(old).toString('latin1'));
    const by = parseLongDouble(args[2]!.toString('latin1'));
    if (cur === null || by === null) return NOT_FLOAT;
    const next = addLongDouble(cur, by);
    if (next === null || !isFinite(next)) return err('ERR increment would produce NaN or Infinity');
    const text = Buffer.from(formatLongDouble(next), 'latin1');
    return { reply: text, write: text };
  });
}
