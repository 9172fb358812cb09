// The string commands (GET, SET, SETNX, GETDEL, STRLEN, DEL, EXISTS, MGET, MSET) on rowan's KV
// (actors/worker/kv.ts). A key this node is the primary of runs here; otherwise a cluster port answers
// -MOVED and a single-endpoint port forwards the command to the owner's cluster port (one hop).
// A `+OK` to SET means the entry is persistent on every replica (kv.ts replies only then).
import { RespErr, OK, err, type Reply } from '../../../runtime/resp/reply.js';
import type { Live } from '../kv.js';
import type { RespContext } from './context.js';
import { allOrUnknown, checkWrite } from './multi-key.js';
import { deadlineOf, parseStringOpts } from './expiry-args.js';
import type { Route } from './node-view.js';

export const SYNTAX = err('ERR syntax error');

export function movedOr(ctx: RespContext, r: Route & { local: false }, args: Buffer[]): Reply | Promise<Reply> {
  if (r.to === null) return err(`CLUSTERDOWN Hash slot ${r.slot} is served by node ${ctx.view.config().shards[r.shard]!.primary}, which has no RESP port`);
  if (ctx.mode === 'cluster') {
    ctx.stats.moved++;
    return new RespErr(`MOVED ${r.slot} ${r.to.host}:${r.to.port}`);
  }
  ctx.stats.forwarded++;
  return ctx.view.peer(r.to).call(args);
}

function term(ctx: RespContext): number {
  return ctx.worker.term();
}

async function getLocal(ctx: RespContext, key: Buffer): Promise<Uint8Array | null> {
  return (await readLive(ctx, key))?.value ?? null;
}

/** The value and expiry deadline of a local key (null: absent or expired), counted as a hit or miss. */
export async function readLive(ctx: RespContext, key: Buffer): Promise<Live | null> {
  const v = await ctx.worker.getLive(key, term(ctx));
  if (v === null) ctx.stats.misses++;
  else ctx.stats.hits++;
  return v;
}

export function get(ctx: RespContext, args: Buffer[]): Reply | Promise<Reply> {
  const r = ctx.view.route(args[1]!);
  if (!r.local) return movedOr(ctx, r, args);
  return getLocal(ctx, args[1]!);
}

export function strlen(ctx: RespContext, args: Buffer[]): Reply | Promise<Reply> {
  const r = ctx.view.route(args[1]!);
  if (!r.local) return movedOr(ctx, r, args);
  return getLocal(ctx, args[1]!).then((v) => (v === null ? 0 : v.length));
}

export interface SetOpts {
  nx: boolean;
  xx: boolean;
  get: boolean;
  keepTtl?: boolean;
}

/** SET key value [NX|XX] [GET] [EX s|PX ms|EXAT s|PXAT ms|KEEPTTL] (expiry-args.ts parses as Redis). */
export function set(ctx: RespContext, args: Buffer[]): Reply | Promise<Reply> {
  const o = parseStringOpts(args, 3, true);
  if (o instanceof RespErr) return o;
  const r = ctx.view.route(args[1]!);
  if (!r.local) return movedOr(ctx, r, args);
  const at = o.unit === null ? 0 : deadlineOf(o.unit, o.arg!, ctx.worker.wallNow(), 'set');
  if (at instanceof RespErr) return at;
  return setLocal(ctx, args[1]!, args[2]!, o, at);
}

/** Write `value` with deadline `at` (0 = none); a deadline already past deletes the key instead, which
 *  is what a reader of Redis's SET ... EXAT <past> observes (the key is gone). */
export function putUntil(ctx: RespContext, key: Buffer, value: Uint8Array, at: number, t: number): Promise<void> {
  if (at !== 0 && at <= ctx.worker.wallNow()) return ctx.worker.del(key, t);
  return ctx.worker.put(key, value, t, at);
}

/** SET's write: `at` the new deadline (0 = none: a plain SET drops the key's TTL), KEEPTTL keeps it. */
export function setLocal(ctx: RespContext, key: Buffer, value: Buffer, o: SetOpts, at = 0): Promise<Reply> {
  const t = term(ctx);
  if (!o.nx && !o.xx && !o.get && !o.keepTtl) return ctx.locks.run(key, () => putUntil(ctx, key, value, at, t)).then(() => OK);
  return ctx.locks.run(key, async () => {
    const old = await readLive(ctx, key);
    if ((o.nx && old !== null) || (o.xx && old === null)) return o.get ? (old?.value ?? null) : null;
    await putUntil(ctx, key, value, o.keepTtl ? (old?.expiresAt ?? 0) : at, t);
    return o.get ? (old?.value ?? null) : OK;
  });
}

export function setnx(ctx: RespContext, args: Buffer[]): Reply | Promise<Reply> {
  const r = ctx.view.route(args[1]!);
  if (!r.local) return movedOr(ctx, r, args);
  return setLocal(ctx, args[1]!, args[2]!, { nx: true, xx: false, get: false }).then((x) => (x === OK ? 1 : 0));
}

export function getdel(ctx: RespContext, args: Buffer[]): Reply | Promise<Reply> {
  const key = args[1]!;
  const r = ctx.view.route(key);
  if (!r.local) return movedOr(ctx, r, args);
  return ctx.locks.run(key, async () => {
    const old = await getLocal(ctx, key);
    if (old !== null) await ctx.worker.del(key, term(ctx));
    return old;
  });
}

/** DEL of one local key: 1 if it existed. No tombstone is written for a key that is absent. */
function delLocal(ctx: RespContext, key: Buffer): Promise<number> {
  return ctx.locks.run(key, async () => {
    const old = await ctx.worker.get(key, term(ctx));
    if (old === null) return 0;
    await ctx.worker.del(key, term(ctx));
    return 1;
  });
}

/**
 * Keys of a multi-key command, checked per Redis Cluster rules on a cluster port (all in one slot,
 * else -CROSSSLOT; that slot owned here, else -MOVED). Returns null when every key may run here,
 * else the reply to give.
 */
function multiKeyCheck(ctx: RespContext, keys: Buffer[], args: Buffer[]): Reply | Promise<Reply> | null {
  if (ctx.mode !== 'cluster') return null;
  const first = ctx.view.route(keys[0]!);
  for (let i = 1; i < keys.length; i++) {
    if (ctx.view.route(keys[i]!).slot !== first.slot) {
      ctx.stats.crossSlot++;
      return err("CROSSSLOT Keys in request don't hash to the same slot");
    }
  }
  return first.local ? null : movedOr(ctx, first, args);
}

/** One key of a multi-key command on a single-endpoint port: here, or forwarded as a one-key command. */
function perKey<T>(ctx: RespContext, key: Buffer, local: () => Promise<T>, remote: Buffer[], fromReply: (r: Reply) => T): Promise<T> {
  const r = ctx.view.route(key);
  if (r.local) return local();
  return Promise.resolve(movedOr(ctx, r, remote)).then((rep) => {
    if (rep instanceof RespErr) throw rep;
    return fromReply(rep);
  });
}

const DEL = Buffer.from('DEL');
const EXISTS = Buffer.from('EXISTS');
const GET = Buffer.from('GET');
const SET = Buffer.from('SET');

export function del(ctx: RespContext, args: Buffer[]): Reply | Promise<Reply> {
  const keys = args.slice(1);
  const chk = multiKeyCheck(ctx, keys, args);
  if (chk !== null) return chk;
  for (const k of keys) checkWrite(ctx.limits, k, null); // every key before the first write
  const one = (k: Buffer) => perKey(ctx, k, () => delLocal(ctx, k), [DEL, k], (r) => r as number);
  if (keys.length === 1) return one(keys[0]!);
  return allOrUnknown('DEL', keys.map(one)).then((n) => n.reduce((a, b) => a + b, 0));
}

export function exists(ctx: RespContext, args: Buffer[]): Reply | Promise<Reply> {
  const keys = args.slice(1);
  const chk = multiKeyCheck(ctx, keys, args);
  if (chk !== null) return chk;
  const one = (k: Buffer) => perKey(ctx, k, () => getLocal(ctx, k).then((v) => (v === null ? 0 : 1)), [EXISTS, k], (r) => r as number);
  return underLocalLocks(ctx, keys, () => Promise.all(keys.map(one)).then((n) => n.reduce((a, b) => a + b, 0)));
}

/** A read of several keys under the locks of those this node is primary of: a transaction
 *  (transaction.ts) indexes its writes while holding the locks of all its keys, so the read sees all
 *  of one transaction or none of it. One key needs no lock (it is one index item). */
function underLocalLocks<T>(ctx: RespContext, keys: Buffer[], read: () => Promise<T>): Promise<T> {
  const local = keys.length > 1 ? keys.filter((k) => ctx.view.route(k).local) : [];
  return local.length > 1 ? ctx.locks.runAll(local, read) : read();
}

export function mget(ctx: RespContext, args: Buffer[]): Reply | Promise<Reply> {
  const keys = args.slice(1);
  const chk = multiKeyCheck(ctx, keys, args);
  if (chk !== null) return chk;
  return underLocalLocks(ctx, keys, () => Promise.all(keys.map((k) => perKey<Reply>(ctx, k, () => getLocal(ctx, k), [GET, k], (r) => r))));
}

export function mset(ctx: RespContext, args: Buffer[]): Reply | Promise<Reply> {
  if (args.length % 2 !== 1) return err("ERR wrong number of arguments for 'mset' command");
  const keys: Buffer[] = [];
  for (let i = 1; i < args.length; i += 2) keys.push(args[i]!);
  const chk = multiKeyCheck(ctx, keys, args);
  if (chk !== null) return chk;
  for (let i = 1; i < args.length; i += 2) checkWrite(ctx.limits, args[i]!, args[i + 1]!); // all before the first write
  const t = term(ctx);
  const one = (i: number) => {
    const k = args[i]!;
    const v = args[i + 1]!;
    return perKey(ctx, k, () => ctx.locks.run(k, () => ctx.worker.put(k, v, t)).then(() => OK), [SET, k, v], (r) => r);
  };
  const all: Promise<Reply>[] = [];
  for (let i = 1; i < args.length; i += 2) all.push(one(i));
  return allOrUnknown('MSET', all).then(() => OK);
}
