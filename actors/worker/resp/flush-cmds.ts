// FLUSHDB and FLUSHALL (issue 27; rowan has one database, so they are the same command). Each shard is
// flushed by its primary with one replicated FLUSH entry (../flush.ts), not a DEL per key:
//   cluster port         the shards this port serves, as a Redis Cluster master flushes only its own
//                        slots (a cluster client sends FLUSHALL to every master to empty the cluster:
//                        ioredis `Promise.all(cluster.nodes('master').map((n) => n.flushall()))`);
//   single-endpoint port every shard of the cluster: this node's, and the other nodes' through the
//                        internal ROWAN.FLUSH on their first worker's cluster port.
// `+OK` only once every shard's flush is on all of its replicas. If some shards flushed and others did
// not (a node died on the way), or any shard's outcome is unknown: `-UNKNOWN ... (outcome unknown)`;
// if every shard refused before anything was written: that refusal (not applied).
// ASYNC and SYNC are both accepted and answered alike: the reply comes once the flush is durable and
// every flushed key is invisible; the space is reclaimed later by GC either way (Redis's ASYNC frees
// memory in the background too).
import { ErrorCodes, RowanError } from '../../../config/base/errors.js';
import { OK, RespErr, type Reply } from '../../../runtime/resp/reply.js';
import type { RespContext } from './context.js';
import { SYNTAX } from './keys.js';
import { isNotApplied, rowanErrorReply } from './outcome.js';

/** FLUSHDB|FLUSHALL [ASYNC|SYNC] */
export function flush(ctx: RespContext, args: Buffer[]): Reply | Promise<Reply> {
  if (!validMode(args)) return SYNTAX;
  const mine = flushHere(ctx, ctx.view.ownShards(ctx.mode === 'cluster'));
  if (ctx.mode === 'cluster') return settle(mine);
  const others = ctx.view.slots().endpoints.filter((e) => e.nodeId !== ctx.view.nodeId && e.worker === 0);
  ctx.stats.forwarded += others.length;
  const remote = others.map((e) =>
    ctx.view
      .peer(e)
      .call(['ROWAN.FLUSH'])
      .then((r) => {
        if (r instanceof RespErr) throw r;
        return 1;
      }),
  );
  return settle([...mine, ...remote]);
}

/** ROWAN.FLUSH: flush every shard this node is the primary of (a single-endpoint port's FLUSHALL). */
export function nodeFlush(ctx: RespContext): Promise<Reply> {
  return settle(flushHere(ctx, ctx.view.ownShards(false)));
}

function validMode(args: Buffer[]): boolean {
  if (args.length === 1) return true;
  if (args.length > 2) return false;
  const m = args[1]!.toString('latin1').toUpperCase();
  return m === 'ASYNC' || m === 'SYNC';
}

function flushHere(ctx: RespContext, shards: number[]): Promise<number>[] {
  const term = ctx.worker.term();
  return shards.map((s) => ctx.worker.flushShard(s, term));
}

/** +OK when every part flushed; the refusal when every part refused before writing; else UNKNOWN. */
async function settle(parts: Promise<number>[]): Promise<Reply> {
  const rs = await Promise.allSettled(parts);
  const failed = rs.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed.length === 0) return OK;
  const first = failed[0]!.reason as unknown;
  if (failed.length === rs.length && failed.every((r) => isNotApplied(r.reason))) return rowanErrorReply(first);
  const done = rs.length - failed.length;
  return rowanErrorReply(
    new RowanError(
      ErrorCodes.OUTCOME_UNKNOWN,
      `FLUSH: ${done} of ${rs.length} parts flushed, then one failed (${rowanErrorReply(first).s}); the others may or may not be flushed`,
    ),
  );
}

