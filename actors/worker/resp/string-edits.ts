// The string-editing commands with Redis 7's semantics and error strings: GETSET, MSETNX, APPEND,
// GETRANGE/SUBSTR, SETRANGE, SETBIT, GETBIT, BITCOUNT. Writes are read-modify-writes under the key's
// lock (rmw.ts); a value they would grow past rowan's value limit is refused before anything is
// written, with Redis's "string exceeds maximum allowed size" error.
import { err, type Reply } from '../../../runtime/resp/reply.js';
import type { RespContext } from './context.js';
import { SYNTAX } from './keys.js';
import { checkEntries, oneShardCheck, writeInOrder } from './one-shard.js';
import { NOT_INTEGER, editKey, parseInt64, readKey, tooLong } from './rmw.js';

export function getset(ctx: RespContext, args: Buffer[]): Reply | Promise<Reply> {
  return editKey(ctx, args, (old) => ({ reply: old, write: args[2]!, dropTtl: true }));
}

export function append(ctx: RespContext, args: Buffer[]): Reply | Promise<Reply> {
  const add = args[2]!;
  return editKey(ctx, args, (old) => {
    if (old === null) return { reply: add.length, write: add };
    return tooLong(ctx, old.length + add.length) ?? { reply: old.length + add.length, write: Buffer.concat([old, add]) };
  });
}

/** MSETNX: every key set if none exists (1), else nothing (0); all keys in one shard, locked together. */
export function msetnx(ctx: RespContext, args: Buffer[]): Reply | Promise<Reply> {
  if (args.length % 2 !== 1) return err("ERR wrong number of arguments for 'msetnx' command");
  const keys: Buffer[] = [];
  const values: Buffer[] = [];
  for (let i = 1; i < args.length; i += 2) {
    keys.push(args[i]!);
    values.push(args[i + 1]!);
  }
  const where = oneShardCheck(ctx, keys, args);
  if (where !== null) return where;
  const bad = checkEntries(ctx, keys, values);
  if (bad !== null) return bad;
  return ctx.locks.runAll(keys, async () => {
    const t = ctx.worker.term();
    const olds = await Promise.all(keys.map((k) => ctx.worker.get(k, t)));
    if (olds.some((v) => v !== null)) return 0;
    // A key named twice takes its last value, as in Redis.
    const last = new Map(keys.map((k, i) => [k.toString('latin1'), i]));
    await writeInOrder('MSETNX', [...last.values()].map((i) => () => ctx.worker.put(keys[i]!, values[i]!, t)));
    return 1;
  });
}

/** GETRANGE / SUBSTR: Redis's index arithmetic (negative from the end, clamped, empty when crossed). */
export function getrange(ctx: RespContext, args: Buffer[]): Reply | Promise<Reply> {
  const start = parseInt64(args[2]!);
  const end = parseInt64(args[3]!);
  if (start === null || end === null) return NOT_INTEGER;
  return readKey(ctx, args, (v) => {
    if (v === null) return '';
    const len = BigInt(v.length);
    if (start < 0n && end < 0n && start > end) return '';
    let s = start < 0n ? len + start : start;
    let e = end < 0n ? len + end : end;
    if (s < 0n) s = 0n;
    if (e < 0n) e = 0n;
    if (e >= len) e = len - 1n;
    return s > e || len === 0n ? '' : Buffer.from(v.subarray(Number(s), Number(e) + 1));
  });
}

export function setrange(ctx: RespContext, args: Buffer[]): Reply | Promise<Reply> {
  const offset = parseInt64(args[2]!);
  if (offset === null) return NOT_INTEGER;
  if (offset < 0n) return err('ERR offset is out of range');
  const value = args[3]!;
  return editKey(ctx, args, (old) => {
    const len = old?.length ?? 0;
    if (value.length === 0) return { reply: len }; // nothing to write, not even a missing key created
    const tooBig = tooLong(ctx, Number(offset) + value.length);
    if (tooBig) return tooBig;
    const out = Buffer.alloc(Math.max(len, Number(offset) + value.length));
    if (old) out.set(old);
    out.set(value, Number(offset));
    return { reply: out.length, write: out };
  });
}

const BAD_OFFSET = err('ERR bit offset is not an integer or out of range');

/** A bit offset: a non-negative integer whose byte fits in a value (Redis: proto-max-bulk-len). */
function bitOffset(ctx: RespContext, b: Buffer): number | null {
  const n = parseInt64(b);
  if (n === null || n < 0n || n >> 3n >= BigInt(ctx.keyspace.limits.valueBytesMax)) return null;
  return Number(n);
}

export function setbit(ctx: RespContext, args: Buffer[]): Reply | Promise<Reply> {
  const off = bitOffset(ctx, args[2]!);
  if (off === null) return BAD_OFFSET;
  const on = parseInt64(args[3]!);
  if (on === null || (on !== 0n && on !== 1n)) return err('ERR bit is not an integer or out of range');
  return editKey(ctx, args, (old) => {
    const byte = off >> 3;
    const mask = 1 << (7 - (off & 7));
    const out = Buffer.alloc(Math.max(old?.length ?? 0, byte + 1));
    if (old) out.set(old);
    const was = (out[byte]! & mask) !== 0 ? 1 : 0;
    out[byte] = on === 1n ? out[byte]! | mask : out[byte]! & ~mask;
    return { reply: was, write: out };
  });
}

export function getbit(ctx: RespContext, args: Buffer[]): Reply | Promise<Reply> {
  const off = bitOffset(ctx, args[2]!);
  if (off === null) return BAD_OFFSET;
  return readKey(ctx, args, (v) => {
    const byte = off >> 3;
    return v === null || byte >= v.length ? 0 : (v[byte]! >> (7 - (off & 7))) & 1;
  });
}

function popcount8(b: number): number {
  let n = 0;
  for (let x = b; x !== 0; x &= x - 1) n++;
  return n;
}

/** BITCOUNT key [start end [BYTE|BIT]]: as Redis 7.0, a missing key answers 0 before the range is read. */
export function bitcount(ctx: RespContext, args: Buffer[]): Reply | Promise<Reply> {
  if (args.length !== 2 && args.length !== 4 && args.length !== 5) return readKey(ctx, args, (v) => (v === null ? 0 : SYNTAX));
  return readKey(ctx, args, (v) => {
    if (v === null) return 0;
    if (args.length === 2) return countBits(v, 0, v.length * 8 - 1);
    const start = parseInt64(args[2]!);
    const end = parseInt64(args[3]!);
    if (start === null || end === null) return NOT_INTEGER;
    const unit = args[4]?.toString('latin1').toLowerCase() ?? 'byte';
    if (unit !== 'byte' && unit !== 'bit') return SYNTAX;
    const total = BigInt(unit === 'bit' ? v.length * 8 : v.length);
    let s = start < 0n ? total + start : start;
    let e = end < 0n ? total + end : end;
    if (s < 0n) s = 0n;
    if (e < 0n) e = 0n;
    if (e >= total) e = total - 1n;
    if (s > e) return 0;
    return unit === 'bit' ? countBits(v, Number(s), Number(e)) : countBits(v, Number(s) * 8, Number(e) * 8 + 7);
  });
}

/** Set bits of v from bit `first` to bit `last`, inclusive (bit 0 = the first byte's high bit). */
function countBits(v: Uint8Array, first: number, last: number): number {
  let n = 0;
  for (let bit = first; bit <= last; ) {
    if ((bit & 7) === 0 && bit + 7 <= last) {
      n += popcount8(v[bit >> 3]!);
      bit += 8;
    } else {
      n += (v[bit >> 3]! >> (7 - (bit & 7))) & 1;
      bit++;
    }
  }
  return n;
}
