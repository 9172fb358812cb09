// What an error reply tells the client about its request: the mapping of rowan's errors onto Redis
// error replies, whose first word says what the client may assume (docs/redis.md, "Errors"):
//   ERR / OOM / TRYAGAIN   not applied: nothing changed (TRYAGAIN: retry, the cluster is reconfiguring;
//                          OOM: the pool is full of live data, or a shard's index of keys)
//   UNKNOWN                outcome unknown: the write may or may not be on the replicas (a backup or the
//                          forwarding link failed mid-request, or a multi-key write failed after some of
//                          its keys were written); SET/DEL may be retried, conditional commands (NX, XX,
//                          GETDEL) must be checked first
//   MOVED / CROSSSLOT / CLUSTERDOWN   Redis Cluster routing, not applied
import { ErrorCodes, RowanError } from '../../../config/base/errors.js';
import { RespErr, err } from '../../../runtime/resp/reply.js';

const NOT_APPLIED = new Set<string>([ErrorCodes.KEY_TOO_LARGE, ErrorCodes.KEY_EMPTY, ErrorCodes.VALUE_TOO_LARGE, ErrorCodes.BAD_ARGUMENT, ErrorCodes.ENTRY_TOO_LARGE]);
const RETRY = new Set<string>([ErrorCodes.NODE_NOT_RUNNING, ErrorCodes.STALE_TERM, ErrorCodes.WRONG_SHARD, ErrorCodes.PEER_UNREACHABLE]);
const NOT_APPLIED_WORDS = new Set(['ERR', 'OOM', 'TRYAGAIN', 'MOVED', 'CROSSSLOT', 'CLUSTERDOWN', 'NOAUTH', 'WRONGPASS']);

export function rowanErrorReply(e: unknown): RespErr {
  if (e instanceof RespErr) return e;
  if (e instanceof RowanError) {
    if (NOT_APPLIED.has(e.code)) return err(`ERR ${e.code} ${e.message}`);
    if (RETRY.has(e.code)) return err(`TRYAGAIN ${e.code} ${e.message} (not applied)`);
    // A full pool or quota; a full index refuses a new key before a version is claimed (primary.ts).
    if (e.code === ErrorCodes.PM_FULL || e.code === ErrorCodes.QUOTA || e.code === ErrorCodes.INDEX_FULL) return err(`OOM ${e.code} ${e.message}`);
    return err(`UNKNOWN ${e.code} ${e.message} (outcome unknown)`);
  }
  return err(`UNKNOWN ${ErrorCodes.INTERNAL} ${(e as Error)?.message ?? String(e)} (outcome unknown)`);
}

/** Whether the reply for this failure says "not applied" (by its first word). */
export function isNotApplied(e: unknown): boolean {
  const word = /^\S*/.exec(rowanErrorReply(e).s)![0];
  return NOT_APPLIED_WORDS.has(word);
}
