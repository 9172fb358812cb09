// SCAN, DBSIZE and their node-internal helpers. A cluster port walks the shards it advertises (like one
// Redis Cluster node); a single-endpoint port walks every shard of the cluster, asking the owner's
// cluster port for shards this node is not the primary of (ROWAN.SCANSHARD / ROWAN.DBSIZE, internal).
import { RespErr, err, type Reply } from '../../../runtime/resp/reply.js';
import type { RespContext } from './context.js';
import { cursorOf, globMatcher, splitCursor, type KeyTally } from './keyspace.js';
import { SYNTAX } from './keys.js';

interface ScanArgs {
  cursor: number;
  count: number;
  match: string | null;
  typeOk: boolean;
}

function parseScan(args: Buffer[], from: number): ScanArgs | RespErr {
  const c = args[1]!.toString('latin1');
  if (!/^\d{1,16}$/.test(c)) return err('ERR invalid cursor');
  const o: ScanArgs = { cursor: Number(c), count: 10, match: null, typeOk: true };
  for (let i = from; i < args.length; i++) {
    const opt = args[i]!.toString('latin1').toUpperCase();
    const v = args[i + 1];
    if (v === undefined) return SYNTAX;
    if (opt === 'COUNT') {
      const n = Number(v.toString('latin1'));
      if (!Number.isInteger(n)) return err('ERR value is not an integer or out of range');
      if (n < 1) return SYNTAX;
      o.count = Math.min(n, 1 << 20);
    } else if (opt === 'MATCH') o.match = v.toString('latin1');
    else if (opt === 'TYPE') o.typeOk = v.toString('latin1').toLowerCase() === 'string';
    else return SYNTAX;
    i++;
  }
  return o;
}

/** Scan one step of shard `shard` here: [next bucket or -1, keys]. */
function scanHere(ctx: RespContext, shard: number, bucket: number, o: ScanArgs): [number, Buffer[]] {
  const keys: Buffer[] = [];
  const next = ctx.keyspace.scanShard(shard, bucket, o.count, o.match === null ? null : globMatcher(o.match), keys);
  return [next, o.typeOk ? keys : []];
}

export function scan(ctx: RespContext, args: Buffer[]): Reply | Promise<Reply> {
  const o = parseScan(args, 2);
  if (o instanceof RespErr) return o;
  const c = ctx.view.config();
  const eligible = ctx.mode === 'cluster' ? ctx.view.ownShards(true) : c.shards.map((s) => s.id);
  let { shard, bucket } = splitCursor(o.cursor);
  const at = eligible.findIndex((s) => s >= shard);
  if (at < 0) return ['0', []];
  if (eligible[at] !== shard) bucket = 0;
  shard = eligible[at]!;
  const after = (next: number): string => {
    if (next >= 0) return String(cursorOf(shard, next));
    const s2 = eligible[at + 1];
    return s2 === undefined ? '0' : String(cursorOf(s2, 0));
  };
  if (c.shards[shard]!.primary === ctx.view.nodeId) {
    const [next, keys] = scanHere(ctx, shard, bucket, o);
    return [after(next), keys];
  }
  const to = ctx.view.slots().endpoints[ctx.view.slots().byShard[shard]!];
  if (!to) return err(`CLUSTERDOWN shard ${shard} has no RESP endpoint`);
  const fwd: (Buffer | string)[] = ['ROWAN.SCANSHARD', String(shard), String(bucket), String(o.count)];
  if (o.match !== null) fwd.push(Buffer.from(o.match, 'latin1'));
  ctx.stats.forwarded++;
  return ctx.view.peer(to).call(fwd).then((r) => {
    if (!Array.isArray(r)) return r;
    return [after(Number(r[0])), o.typeOk ? r[1]! : []];
  });
}

/** ROWAN.SCANSHARD shard bucket count [pattern]: one step of a shard this node is the primary of. */
export function scanShardCmd(ctx: RespContext, args: Buffer[]): Reply {
  const [shard, bucket, count] = args.slice(1, 4).map((a) => Number(a.toString('latin1')));
  const c = ctx.view.config();
  if (!Number.isInteger(shard) || !c.shards[shard!] || !Number.isInteger(bucket) || !Number.isInteger(count) || count! < 1) return SYNTAX;
  if (c.shards[shard!]!.primary !== ctx.view.nodeId) return err(`ERR ROWAN_ERR_WRONG_SHARD node ${ctx.view.nodeId} is not the primary of shard ${shard}`);
  const o: ScanArgs = { cursor: 0, count: count!, match: args[4]?.toString('latin1') ?? null, typeOk: true };
  const [next, keys] = scanHere(ctx, shard!, bucket!, o);
  return [next, keys];
}

export function dbsize(ctx: RespContext): Reply | Promise<Reply> {
  if (ctx.mode === 'cluster') return ctx.keyspace.count(ctx.view.ownShards(true));
  const here = ctx.keyspace.count(ctx.view.ownShards(false));
  const others = ctx.view.slots().endpoints.filter((e) => e.nodeId !== ctx.view.nodeId && e.worker === 0);
  ctx.stats.forwarded += others.length;
  return Promise.all(others.map((e) => ctx.view.peer(e).call(['ROWAN.DBSIZE']))).then((rs) => {
    let n = here;
    for (const r of rs) {
      if (typeof r !== 'number') return r instanceof RespErr ? r : err('ERR ROWAN.DBSIZE: unexpected reply from a peer');
      n += r;
    }
    return n;
  });
}

/**
 * What INFO keyspace counts on this port: the keys DBSIZE counts, those with a deadline and their mean
 * TTL, from the same walk (a single-endpoint port adds every other node's, the mean weighted by their
 * deadlines). A reply when a peer could not be counted.
 */
export function keyspaceTally(ctx: RespContext): KeyTally | RespErr | Promise<KeyTally | RespErr> {
  if (ctx.mode === 'cluster') return ctx.keyspace.tally(ctx.view.ownShards(true));
  const here = ctx.keyspace.tally(ctx.view.ownShards(false));
  const others = ctx.view.slots().endpoints.filter((e) => e.nodeId !== ctx.view.nodeId && e.worker === 0);
  ctx.stats.forwarded += others.length;
  return Promise.all(others.map((e) => ctx.view.peer(e).call(['ROWAN.DBSIZE', 'EXPIRES']))).then((rs) => {
    let { keys, expires } = here;
    let ttlMs = here.avgTtlMs * here.expires;
    for (const r of rs) {
      if (!Array.isArray(r) || r.length !== 3 || !r.every((x) => typeof x === 'number')) return r instanceof RespErr ? r : err('ERR ROWAN.DBSIZE: unexpected reply from a peer');
      const [k, x, avg] = r as number[];
      keys += k!;
      expires += x!;
      ttlMs += avg! * x!;
    }
    return { keys, expires, avgTtlMs: expires > 0 ? Math.round(ttlMs / expires) : 0 };
  });
}

/** ROWAN.DBSIZE [EXPIRES]: live keys of every shard this node is the primary of; with EXPIRES
 *  [keys, keys with a deadline, their mean TTL in ms] (INFO keyspace). */
export function nodeDbsize(ctx: RespContext, args: Buffer[]): Reply {
  if (args.length === 1) return ctx.keyspace.count(ctx.view.ownShards(false));
  if (args.length > 2 || args[1]!.toString('latin1').toUpperCase() !== 'EXPIRES') return SYNTAX;
  const t = ctx.keyspace.tally(ctx.view.ownShards(false));
  return [t.keys, t.expires, t.avgTtlMs];
}
