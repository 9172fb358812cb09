// Read-modify-write of string values for the counter and string-edit commands (counters.ts,
// string-edits.ts): route the key (a cluster port answers -MOVED, a single-endpoint port forwards to
// the owner), then, under the key's lock (context.ts KeyLocks: every RESP write of the key through
// any worker of the node waits), read the value, compute, and write the result. The reply is sent
// only after the write is persistent on every replica (kv.ts), so an acknowledged increment is never
// lost; a write that fails mid-replication answers UNKNOWN (handler.ts), one refused before anything
// was persisted answers ERR.
import { RespErr, err, type Reply } from '../../../runtime/resp/reply.js';
import type { RespContext } from './context.js';
import { movedOr } from './keys.js';

/** What an edit decided: the reply, and the value to write first (undefined: write nothing). */
export interface Edit {
  reply: Reply;
  write?: Uint8Array;
}

export type Editor = (old: Uint8Array | null) => Edit | RespErr;

/** The value of a local key, read inside its lock (or by a read-only command). */
export function readLocal(ctx: RespContext, key: Buffer): Promise<Uint8Array | null> {
  return ctx.worker.get(key, ctx.worker.term()).then((v) => {
    if (v === null) ctx.stats.misses++;
    else ctx.stats.hits++;
    return v;
  });
}

/** Run `edit` on the key at args[1] where it lives. */
export function editKey(ctx: RespContext, args: Buffer[], edit: Editor): Reply | Promise<Reply> {
  const key = args[1]!;
  const r = ctx.view.route(key);
  if (!r.local) return movedOr(ctx, r, args);
  return ctx.locks.run(key, async () => {
    const t = ctx.worker.term();
    const old = await ctx.worker.get(key, t);
    const e = edit(old);
    if (e instanceof RespErr) return e;
    if (e.write !== undefined) await ctx.worker.put(key, e.write, t);
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

const INT64 = /^(0|-?[1-9][0-9]{0,18})$/;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
export const NOT_INTEGER = err('ERR value is not an integer or out of range');

/** Redis's string2ll: a signed 64-bit decimal, no sign '+', no leading zeros or spaces, no "-0". */
export function parseInt64(b: Uint8Array): bigint | null {
  if (b.length === 0 || b.length > 20) return null;
  const s = Buffer.from(b.buffer, b.byteOffset, b.length).toString('latin1');
  if (!INT64.test(s)) return null;
  const n = BigInt(s);
  return n < INT64_MIN || n > INT64_MAX ? null : n;
}

export function inInt64(n: bigint): boolean {
  return n >= INT64_MIN && n <= INT64_MAX;
}

export { INT64_MIN };

/** An integer reply: a number where exact, else a bigint (RESP encodes both as `:n`). */
export function intReply(n: bigint): number | bigint {
  return n >= BigInt(Number.MIN_SAFE_INTEGER) && n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : n;
}

/** Redis's checkStringLength against rowan's value limit: the longest value one log entry holds. */
export function tooLong(ctx: RespContext, bytes: number): RespErr | null {
  const max = ctx.keyspace.limits.valueBytesMax;
  return bytes > max ? err(`ERR string exceeds maximum allowed size (rowan's value limit, ${max} bytes)`) : null;
}
