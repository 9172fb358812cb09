// Where an atomic multi-key command (MSETNX, RENAME, RENAMENX, COPY) may run. Its keys are locked
// together (context.ts KeyLocks.runAll) on the node that is their shard's primary, so they must share
// a shard: on a cluster port all keys in one slot (Redis Cluster's rule: -CROSSSLOT otherwise, -MOVED
// for a slot served elsewhere); on a single-endpoint port all keys in one shard (-CROSSSLOT naming the
// shards otherwise), forwarded to the shard's owner when it is another node. Keys of one shard but of
// several slots cannot go to the owner's cluster port as they are (it would answer -CROSSSLOT), so they
// travel wrapped in the internal ROWAN.INSHARD command (keyspace-cmds.ts), which the owner runs with
// the single-endpoint port's one-shard rule but never forwards again.
import { RowanError, ErrorCodes } from '../../../config/base/errors.js';
import { err, type RespErr, type Reply } from '../../../runtime/resp/reply.js';
import type { RespContext } from './context.js';
import { movedOr } from './keys.js';

const CROSSSLOT = "CROSSSLOT Keys in request don't hash to the same slot";

/** null when every key may run here now; else the reply to give (an error, or the owner's answer). */
export function oneShardCheck(ctx: RespContext, keys: Buffer[], args: Buffer[]): Reply | Promise<Reply> | null {
  const first = ctx.view.route(keys[0]!);
  let sameSlot = true;
  for (let i = 1; i < keys.length; i++) {
    const r = ctx.view.route(keys[i]!);
    if (r.slot !== first.slot) sameSlot = false;
    if (ctx.mode === 'cluster' ? !sameSlot : r.shard !== first.shard) {
      ctx.stats.crossSlot++;
      return err(ctx.mode === 'cluster' ? CROSSSLOT : `CROSSSLOT Keys in request don't hash to the same shard (shards ${first.shard} and ${r.shard}: rowan runs this command atomically within one shard)`);
    }
  }
  if (first.local) return null;
  if (ctx.mode === 'cluster' || sameSlot || first.to === null) return movedOr(ctx, first, args);
  ctx.stats.forwarded++;
  return ctx.view.peer(first.to).call([Buffer.from('ROWAN.INSHARD'), ...args]);
}

/** Every key and value a multi-key write would write, checked before the first write (the limits the
 *  write path enforces, with its error codes): null, or the not-applied error. */
export function checkEntries(ctx: RespContext, keys: Buffer[], values: Uint8Array[]): RespErr | null {
  const l = ctx.keyspace.limits;
  for (const k of keys) {
    if (k.length === 0) return err(`ERR ${ErrorCodes.KEY_EMPTY} the key is empty (1..${l.keyBytesMax} bytes)`);
    if (k.length > l.keyBytesMax) return err(`ERR ${ErrorCodes.KEY_TOO_LARGE} key of ${k.length} bytes (1..${l.keyBytesMax})`);
  }
  for (const v of values) {
    if (v.length > l.valueBytesMax) return err(`ERR ${ErrorCodes.VALUE_TOO_LARGE} value of ${v.length} bytes (at most ${l.valueBytesMax})`);
  }
  return null;
}

/** Writes of one multi-key command, one after another: a failure after the first write was applied
 *  is outcome-unknown whatever its own code (the command is half-applied until transactions exist). */
export async function writeInOrder(what: string, writes: (() => Promise<void>)[]): Promise<void> {
  for (let i = 0; i < writes.length; i++) {
    try {
      await writes[i]!();
    } catch (e) {
      if (i === 0) throw e;
      const why = e instanceof Error ? `${(e as RowanError).code ?? ''} ${e.message}` : String(e);
      throw new RowanError(ErrorCodes.OUTCOME_UNKNOWN, `${what}: write ${i + 1} of ${writes.length} failed after the earlier ones were applied (${why.trim()})`);
    }
  }
}
