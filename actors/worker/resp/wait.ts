// WAIT numreplicas timeout: how many backups hold every write of this connection (docs/redis.md, "WAIT").
//
// What the store guarantees: a write is acknowledged only once it is persistent on the primary and on
// every backup of its shard's placement (actors/worker/primary.ts); a backup that died meanwhile is
// outlived -- the write is acknowledged once the configuration no longer lists it. So after an
// acknowledgement the write is on every backup the current configuration lists for its shard, except one
// still catching up (re-replication, §4.5 phase 3), which holds all of the shard only once the manager
// removes its mark (config/cluster.ts fullReplicas). WAIT therefore answers the fewest such backups over
// the shards of the slots this connection wrote to (over every shard if it wrote nothing). A backup that
// died is counted until the manager fails it over (its lease plus margin): the count is the
// configuration's, not a probe. Fewer than numreplicas: WAIT re-reads the configuration until enough
// backups hold the writes (a re-replication finishing) or the timeout passes (0: no timeout, as in Redis).
import { fullReplicas, type ClusterConfig } from '../../../config/cluster.js';
import { shardOfSlot } from '../../../config/slots.js';
import type { RespConnection } from '../../../runtime/resp/resp-connection.js';
import { err, type Reply } from '../../../runtime/resp/reply.js';
import type { RespContext } from './context.js';

/** How often a blocked WAIT re-reads the configuration. */
const WAIT_RECHECK_MS = 50;
const NOT_INT = err('ERR value is not an integer or out of range');

/** The fewest backups holding all of a shard, over the shards of `slots` (all shards if none). */
export function backupsHolding(c: ClusterConfig, slots: Iterable<number> & { readonly size: number }): number {
  const shards = slots.size === 0 ? c.shards.map((s) => s.id) : [...new Set([...slots].map((s) => shardOfSlot(s, c.shardCount)))];
  let n = Infinity;
  for (const s of shards) n = Math.min(n, fullReplicas(c, s).length - 1);
  return n === Infinity ? 0 : n;
}

export function wait(ctx: RespContext, args: Buffer[], conn: RespConnection): Reply | Promise<Reply> {
  const want = Number(args[1]!.toString('latin1'));
  const timeoutMs = Number(args[2]!.toString('latin1'));
  if (!Number.isInteger(want) || !Number.isInteger(timeoutMs)) return NOT_INT;
  if (timeoutMs < 0) return err('ERR timeout is negative');
  const count = () => backupsHolding(ctx.view.config(), conn.wroteSlots);
  const now = count();
  if (now >= want) return now;
  const deadline = timeoutMs === 0 ? Infinity : ctx.clock.now() + timeoutMs;
  return new Promise<Reply>((resolve) => {
    const check = () => {
      const n = count();
      const left = deadline - ctx.clock.now();
      if (n >= want || left <= 0 || conn.closed) resolve(n);
      else setTimeout(check, Math.min(WAIT_RECHECK_MS, left));
    };
    setTimeout(check, Math.min(WAIT_RECHECK_MS, deadline - ctx.clock.now()));
  });
}
