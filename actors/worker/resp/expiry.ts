// The expiry commands with Redis 7's replies and errors: SETEX, PSETEX, GETEX, EXPIRE, PEXPIRE, EXPIREAT,
// PEXPIREAT (NX XX GT LT), TTL, PTTL, EXPIRETIME, PEXPIRETIME, PERSIST. A key's deadline lives in its
// log entry (shm/log-layout.ts FLAG_EXPIRES), so changing it writes the key's entry again (value and new
// deadline) under the key's lock, replicated like any SET; a deadline already past deletes the key (a
// DEL entry), as Redis's EXPIRE does. Reads treat a key whose deadline has come as absent at once
// (primary.ts lookup); the clean actor's expiry sweep deletes it later (actors/clean/expiry.ts).
import { RespErr, type Reply } from '../../../runtime/resp/reply.js';
import type { RespContext } from './context.js';
import { deadlineOf, expireAllowed, expireWhen, parseExpireFlags, parseStringOpts, type ExpiryUnit } from './expiry-args.js';
import { movedOr, putUntil, setLocal } from './keys.js';
import { readLive } from './rmw.js';

function setWithUnit(ctx: RespContext, args: Buffer[], unit: ExpiryUnit, cmd: string): Reply | Promise<Reply> {
  const r = ctx.view.route(args[1]!);
  if (!r.local) return movedOr(ctx, r, args);
  const at = deadlineOf(unit, args[2]!, ctx.worker.wallNow(), cmd);
  if (at instanceof RespErr) return at;
  return setLocal(ctx, args[1]!, args[3]!, { nx: false, xx: false, get: false }, at);
}

/** SETEX key seconds value */
export function setex(ctx: RespContext, args: Buffer[]): Reply | Promise<Reply> {
  return setWithUnit(ctx, args, 'EX', 'setex');
}

/** PSETEX key milliseconds value */
export function psetex(ctx: RespContext, args: Buffer[]): Reply | Promise<Reply> {
  return setWithUnit(ctx, args, 'PX', 'psetex');
}

/** GETEX key [EX s | PX ms | EXAT s | PXAT ms | PERSIST]: the value, and the deadline changed. */
export function getex(ctx: RespContext, args: Buffer[]): Reply | Promise<Reply> {
  const o = parseStringOpts(args, 2, false);
  if (o instanceof RespErr) return o;
  const key = args[1]!;
  const r = ctx.view.route(key);
  if (!r.local) return movedOr(ctx, r, args);
  if (o.unit === null && !o.persist) return readLive(ctx, key).then((l) => l?.value ?? null);
  return ctx.locks.run(key, async () => {
    const old = await readLive(ctx, key);
    if (old === null) return null; // before the time is looked at, as in Redis
    const t = ctx.worker.term();
    if (o.persist) {
      if (old.expiresAt !== 0) await ctx.worker.put(key, old.value, t, 0);
      return old.value;
    }
    const at = deadlineOf(o.unit!, o.arg!, ctx.worker.wallNow(), 'getex');
    if (at instanceof RespErr) return at;
    await putUntil(ctx, key, old.value, at, t);
    return old.value;
  });
}

function expireGeneric(ctx: RespContext, args: Buffer[], seconds: boolean, absolute: boolean, cmd: string): Reply | Promise<Reply> {
  const f = parseExpireFlags(args);
  if (f instanceof RespErr) return f;
  const key = args[1]!;
  const r = ctx.view.route(key);
  if (!r.local) return movedOr(ctx, r, args);
  const when = expireWhen(args[2]!, seconds, absolute ? 0 : ctx.worker.wallNow(), cmd);
  if (when instanceof RespErr) return when;
  return ctx.locks.run(key, async () => {
    const old = await readLive(ctx, key);
    if (old === null || !expireAllowed(f, old.expiresAt, when)) return 0;
    const t = ctx.worker.term();
    if (when <= ctx.worker.wallNow()) await ctx.worker.del(key, t); // already expired: deleted
    else await ctx.worker.put(key, old.value, t, when);
    return 1;
  });
}

export const expire = (ctx: RespContext, args: Buffer[]) => expireGeneric(ctx, args, true, false, 'expire');
export const pexpire = (ctx: RespContext, args: Buffer[]) => expireGeneric(ctx, args, false, false, 'pexpire');
export const expireat = (ctx: RespContext, args: Buffer[]) => expireGeneric(ctx, args, true, true, 'expireat');
export const pexpireat = (ctx: RespContext, args: Buffer[]) => expireGeneric(ctx, args, false, true, 'pexpireat');

/** TTL family: -2 no key, -1 no deadline; else the time left (or the deadline) in s (rounded) or ms. */
function ttlGeneric(ctx: RespContext, args: Buffer[], ms: boolean, absolute: boolean): Reply | Promise<Reply> {
  const key = args[1]!;
  const r = ctx.view.route(key);
  if (!r.local) return movedOr(ctx, r, args);
  return readLive(ctx, key).then((l) => {
    if (l === null) return -2;
    if (l.expiresAt === 0) return -1;
    const v = Math.max(0, absolute ? l.expiresAt : l.expiresAt - ctx.worker.wallNow());
    return ms ? v : Math.floor((v + 500) / 1000);
  });
}

export const ttl = (ctx: RespContext, args: Buffer[]) => ttlGeneric(ctx, args, false, false);
export const pttl = (ctx: RespContext, args: Buffer[]) => ttlGeneric(ctx, args, true, false);
export const expiretime = (ctx: RespContext, args: Buffer[]) => ttlGeneric(ctx, args, false, true);
export const pexpiretime = (ctx: RespContext, args: Buffer[]) => ttlGeneric(ctx, args, true, true);

/** PERSIST key: 1 if the key had a deadline and now has none, else 0. */
export function persist(ctx: RespContext, args: Buffer[]): Reply | Promise<Reply> {
  const key = args[1]!;
  const r = ctx.view.route(key);
  if (!r.local) return movedOr(ctx, r, args);
  return ctx.locks.run(key, async () => {
    const old = await readLive(ctx, key);
    if (old === null || old.expiresAt === 0) return 0;
    await ctx.worker.put(key, old.value, ctx.worker.term(), 0);
    return 1;
  });
}
