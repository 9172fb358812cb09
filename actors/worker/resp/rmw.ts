// Read-modify-write of string values for the counter and string-edit commands (counters.ts,
// string-edits.ts): route the key (a cluster port answers -MOVED, a single-endpoint port forwards to
// the owner), then, under the key's lock (context.ts KeyLocks: every RESP write of the key through
// any worker of the node waits), read the value, compute, and write the result. The reply is sent
// only after the write is persistent on every replica (kv.ts), so an acknowledged increment is never
// lost; a write that fails mid-replication answers UNKNOWN (handler.ts), one refused before anything
// was persisted answers ERR.
import { RespErr, err, type Reply } from '../../../runtime/resp/reply.js';
import type { RespContext } from './context.js';
import { movedOr, readLive } from './keys.js';
import { INT64_MIN, NOT_INTEGER, inInt64, parseInt64 } from './int64.js';

/** What an edit decided: the reply, and the value to write first (undefined: write nothing). The
 *  key keeps its expiry deadline (as Redis's INCR, APPEND, SETRANGE, SETBIT do) unless `dropTtl`
 *  (GETSET, which Redis implements as a SET). */
export interface Edit {
  reply: Reply;
  write?: Uint8Array;
  dropTtl?: boolean;
}

export type Editor = (old: Uint8Array | null) => Edit | RespErr;

/** The value of a local key, read inside its lock (or by a read-only command). */
export function readLocal(ctx: RespContext, key: Buffer): Promise<Uint8Array | null> {
  return readLive(ctx, key).then((l) => l?.value ?? null);
}

export { readLive };

/** Run `edit` on the key at args[1] where it lives. */
export function editKey(ctx: RespContext, args: Buffer[], edit: Editor): Reply | Promise<Reply> {
  const key = args[1]!;
  const r = ctx.view.route(key);
  if (!r.local) return movedOr(ctx, r, args);
  return ctx.locks.run(key, async () => {
    const t = ctx.worker.term();
    const old = await ctx.worker.getLive(key, t);
    const e = edit(old?.value ?? null);
    if (e instanceof RespErr) return e;
    if (e.write !== undefined) await ctx.worker.put(key, e.write, t, e.dropTtl ? 0 : (old?.expiresAt ?? 0));
    return e.reply;
  });
}

/** Run a read-only `look` on `key` (args[1] unless given) where it lives, forwarding the whole request
 *  (no lock: a read sees the last acknowledged write, or one being acknowledged). */
export function readKey(ctx: RespContext, args: Buffer[], look: (v: Uint8Array | null) => Reply, key = args[1]!): Reply | Promise<Reply> {
  const r = ctx.view.route(key);
  if (!r.local) return movedOr(ctx, r, args);
  return readLocal(ctx, key).then(look);
}

export { INT64_MIN, NOT_INTEGER, inInt64, parseInt64 };

/** An integer reply: a number where exact, else a bigint (RESP encodes both as `:n`). */
export function intReply(n: bigint): number | bigint {
  return n >= BigInt(Number.MIN_SAFE_INTEGER) && n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : n;
}

/** Redis's checkStringLength against rowan's value limit: the longest value one log entry holds. */
export function tooLong(ctx: RespContext, bytes: number): RespErr | null {
  const max = ctx.keyspace.limits.valueBytesMax;
  return bytes > max ? err(`ERR string exceeds maximum allowed size (rowan's value limit, ${max} bytes)`) : null;
}
