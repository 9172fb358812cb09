// A key command refused for where it was sent, before anything was written (not applied):
// - a change of term caught it: a move or a failover committed a new configuration between the port
//   routing it and the primary path admitting it (ROWAN_ERR_STALE_TERM, ROWAN_ERR_WRONG_SHARD);
// - on a single-endpoint port, the owner it was forwarded to no longer owns the key (-MOVED,
//   -TRYAGAIN), or could not be connected to (ROWAN_ERR_PEER_UNREACHABLE: dead, its failover not
//   committed yet; nothing was sent).
// The port runs it again on the node's new view, for at most REROUTE_MS: it then runs here, is
// forwarded to the new owner (single-endpoint port) or answered -MOVED (cluster port; the client
// follows). A standalone Redis client, which knows neither TRYAGAIN nor MOVED, so never sees a move,
// nor a failover that commits within the bound; past it the last refusal is the reply (still "not
// applied"). Outcome-unknown failures are never run again.
import { ErrorCodes, RowanError } from '../../../config/base/errors.js';
import { RespErr, type Reply } from '../../../runtime/resp/reply.js';
import type { RespContext } from './context.js';

/** How long a refused command keeps being run again: the primary path's own wait for a pending term
 *  (config/timings.ts admitWaitMs) is as long. */
export const REROUTE_MS = 2000;
/** Longest wait for the view to change before running again (a forwarded -MOVED from an owner ahead
 *  of this node wakes on this node's change; one behind answers the same until it catches up). */
const WAIT_MS = 50;

const ROUTING = new Set<string>([ErrorCodes.STALE_TERM, ErrorCodes.WRONG_SHARD, ErrorCodes.PEER_UNREACHABLE]);

function refusedError(e: unknown): boolean {
  return e instanceof RowanError && ROUTING.has(e.code);
}

function refusedReply(ctx: RespContext, r: Reply): boolean {
  if (!(r instanceof RespErr)) return false;
  const s = r.s;
  if (s.startsWith('TRYAGAIN ')) return s.startsWith(`TRYAGAIN ${ErrorCodes.STALE_TERM} `) || s.startsWith(`TRYAGAIN ${ErrorCodes.WRONG_SHARD} `);
  return ctx.mode === 'single' && s.startsWith('MOVED '); // a single-endpoint port answers MOVED only as a forwarded reply
}

type Outcome = { reply: Reply } | { error: unknown };

/** `run`'s reply, run again while it is refused for routing (see above). */
export function rerouted(ctx: RespContext, run: () => Reply | Promise<Reply>): Reply | Promise<Reply> {
  const term = ctx.worker.term();
  let r: Reply | Promise<Reply>;
  try {
    r = run();
  } catch (e) {
    if (!refusedError(e)) throw e;
    return again(ctx, run, term, { error: e });
  }
  if (!(r instanceof Promise)) return refusedReply(ctx, r) ? again(ctx, run, term, { reply: r }) : r;
  return r.then(
    (v) => (refusedReply(ctx, v) ? again(ctx, run, term, { reply: v }) : v),
    (e: unknown) => (refusedError(e) ? again(ctx, run, term, { error: e }) : Promise.reject(e)),
  );
}

async function again(ctx: RespContext, run: () => Reply | Promise<Reply>, term: number, first: Outcome): Promise<Reply> {
  const end = ctx.worker.now() + REROUTE_MS;
  let last = first;
  for (;;) {
    const left = end - ctx.worker.now();
    if (left <= 0) break;
    if (ctx.worker.term() === term) await ctx.worker.configChanged(Math.min(left, WAIT_MS));
    term = ctx.worker.term();
    ctx.stats.rerouted++;
    try {
      const r = await run();
      if (!refusedReply(ctx, r)) return r;
      last = { reply: r };
    } catch (e) {
      if (!refusedError(e)) throw e;
      last = { error: e };
    }
  }
  if ('error' in last) throw last.error;
  return last.reply;
}
