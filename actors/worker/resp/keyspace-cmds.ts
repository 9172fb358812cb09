// Keyspace commands with Redis 7's replies and error strings: TYPE, KEYS, RANDOMKEY, RENAME, RENAMENX,
// COPY, OBJECT (ENCODING FREQ IDLETIME REFCOUNT HELP), TIME, and the node-internal ROWAN.KEYS,
// ROWAN.RANDOMKEY and ROWAN.INSHARD (multi-key.ts). KEYS and RANDOMKEY see what SCAN sees (scan.ts): the
// slots a cluster port serves, the whole cluster on a single-endpoint port. RENAME and COPY run under
// both keys' locks within one shard; RENAME is two log entries (the destination written, then the
// source deleted) until transactions exist: docs/redis.md says what a crash between them leaves.
import { ErrorCodes } from '../../../config/base/errors.js';
import { RespErr, OK, Simple, err, type Reply } from '../../../runtime/resp/reply.js';
import type { RespContext } from './context.js';
import { globMatcher } from './keyspace.js';
import { SYNTAX } from './keys.js';
import { checkEntries, oneShardCheck, writeInOrder } from './one-shard.js';
import { NOT_INTEGER, parseInt64, readKey } from './rmw.js';
import { msetnx } from './string-edits.js';

export function type(ctx: RespContext, args: Buffer[]): Reply | Promise<Reply> {
  return readKey(ctx, args, (v) => new Simple(v === null ? 'none' : 'string'));
}

/** Every key of these local shards matching `pattern` (a full walk of their indexes, as KEYS is in Redis). */
function keysHere(ctx: RespContext, shards: number[], pattern: string): Buffer[] {
  const match = pattern === '*' ? null : globMatcher(pattern);
  const out: Buffer[] = [];
  for (const s of shards) for (let b = 0; b >= 0; ) b = ctx.keyspace.scanShard(s, b, 4096, match, out);
  return out;
}

/** The other nodes' answers to an internal command (their first worker's cluster port), in node order. */
function askOthers(ctx: RespContext, cmd: (string | Buffer)[]): Promise<Reply[]> {
  const others = ctx.view.slots().endpoints.filter((e) => e.nodeId !== ctx.view.nodeId && e.worker === 0);
  ctx.stats.forwarded += others.length;
  return Promise.all(others.map((e) => ctx.view.peer(e).call(cmd)));
}

export function keys(ctx: RespContext, args: Buffer[]): Reply | Promise<Reply> {
  const pattern = args[1]!.toString('latin1');
  if (ctx.mode === 'cluster') return keysHere(ctx, ctx.view.ownShards(true), pattern);
  const here = keysHere(ctx, ctx.view.ownShards(false), pattern);
  return askOthers(ctx, ['ROWAN.KEYS', args[1]!]).then((rs) => {
    const all: Reply[] = [...here];
    for (const r of rs) {
      if (!Array.isArray(r)) return r instanceof RespErr ? r : err('ERR ROWAN.KEYS: unexpected reply from a peer');
      all.push(...r);
    }
    return all;
  });
}

/** ROWAN.KEYS pattern: the matching keys of every shard this node is the primary of. */
export function nodeKeys(ctx: RespContext, args: Buffer[]): Reply {
  return keysHere(ctx, ctx.view.ownShards(false), args[1]!.toString('latin1'));
}

function shuffled<T>(xs: T[]): T[] {
  const a = [...xs];
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [a[i], a[j]] = [a[j]!, a[i]!];
  }
  return a;
}

/** A key of these local shards: shards in random order, each walked from a random home bucket. */
function randomKeyHere(ctx: RespContext, shards: number[]): Buffer | null {
  const out: Buffer[] = [];
  for (const s of shuffled(shards)) {
    const from = Math.floor(Math.random() * ctx.keyspace.bucketCount(s));
    for (let b = from; b >= 0 && out.length === 0; ) b = ctx.keyspace.scanShard(s, b, 1, null, out);
    for (let b = 0; b >= 0 && out.length === 0; ) b = ctx.keyspace.scanShard(s, b, 1, null, out);
    if (out.length > 0) return out[Math.floor(Math.random() * out.length)]!;
  }
  return null;
}

/** RANDOMKEY: a cluster port picks among its slots, a single-endpoint port among every node's (this
 *  node's first, then the others' in random order: not uniform over keys, as Redis's is not quite). */
export function randomkey(ctx: RespContext): Reply | Promise<Reply> {
  if (ctx.mode === 'cluster') return randomKeyHere(ctx, ctx.view.ownShards(true));
  const here = randomKeyHere(ctx, ctx.view.ownShards(false));
  if (here !== null) return here;
  return askOthers(ctx, ['ROWAN.RANDOMKEY']).then((rs) => shuffled(rs).find((r) => r instanceof Uint8Array) ?? null);
}

/** ROWAN.RANDOMKEY: a key of the shards this node is the primary of, or nil. */
export function nodeRandomkey(ctx: RespContext): Reply {
  return randomKeyHere(ctx, ctx.view.ownShards(false));
}

/** A two-key command (RENAME, COPY) that may run here: one shard, both keys valid; `body` runs with both
 *  keys locked. Otherwise the redirect, forward or error reply. */
function withPair(ctx: RespContext, args: Buffer[], src: Buffer, dst: Buffer, body: () => Promise<Reply>): Reply | Promise<Reply> {
  const where = oneShardCheck(ctx, [src, dst], args);
  if (where !== null) return where;
  const bad = checkEntries(ctx, [src, dst], []);
  if (bad !== null) return bad;
  return ctx.locks.runAll([src, dst], body);
}

/** RENAME / RENAMENX: the destination is written, then the source deleted, both keys locked. */
function renameWith(ctx: RespContext, args: Buffer[], nx: boolean): Reply | Promise<Reply> {
  const [src, dst] = [args[1]!, args[2]!];
  return withPair(ctx, args, src, dst, async () => {
    const t = ctx.worker.term();
    const v = await ctx.worker.getLive(src, t);
    if (v === null) return err('ERR no such key');
    if (src.equals(dst)) return nx ? 0 : OK;
    if (nx && (await ctx.worker.get(dst, t)) !== null) return 0;
    // The destination takes the source's expiry deadline with its value (as Redis's RENAME).
    await writeInOrder(nx ? 'RENAMENX' : 'RENAME', [() => ctx.worker.put(dst, v.value, t, v.expiresAt), () => ctx.worker.del(src, t)]);
    return nx ? 1 : OK;
  });
}

export function rename(ctx: RespContext, args: Buffer[]): Reply | Promise<Reply> {
  return renameWith(ctx, args, false);
}

export function renamenx(ctx: RespContext, args: Buffer[]): Reply | Promise<Reply> {
  return renameWith(ctx, args, true);
}

/** COPY source destination [DB 0] [REPLACE]: only database 0 exists. */
export function copy(ctx: RespContext, args: Buffer[]): Reply | Promise<Reply> {
  let replace = false;
  for (let j = 3; j < args.length; j++) {
    const o = args[j]!.toString('latin1').toLowerCase();
    if (o === 'replace') replace = true;
    else if (o === 'db' && j + 1 < args.length) {
      const db = parseInt64(args[++j]!);
      if (db === null || db < -(2n ** 31n) || db >= 2n ** 31n) return NOT_INTEGER;
      if (db !== 0n) return err(ctx.mode === 'cluster' ? 'ERR Copying to another database is not allowed in cluster mode' : 'ERR DB index is out of range');
    } else return SYNTAX;
  }
  const [src, dst] = [args[1]!, args[2]!];
  if (src.equals(dst)) return err('ERR source and destination objects are the same');
  return withPair(ctx, args, src, dst, async () => {
    const t = ctx.worker.term();
    const v = await ctx.worker.getLive(src, t);
    if (v === null) return 0;
    if (!replace && (await ctx.worker.get(dst, t)) !== null) return 0;
    await ctx.worker.put(dst, v.value, t, v.expiresAt); // the copy has the source's deadline too
    return 1;
  });
}

const IN_SHARD: Record<string, { run: (ctx: RespContext, args: Buffer[]) => Reply | Promise<Reply>; ok: (n: number) => boolean }> = {
  msetnx: { run: msetnx, ok: (n) => n >= 3 },
  rename: { run: rename, ok: (n) => n === 3 },
  renamenx: { run: renamenx, ok: (n) => n === 3 },
  copy: { run: copy, ok: (n) => n >= 3 },
};

/** ROWAN.INSHARD command args...: a multi-key command whose keys share a shard this node is the
 *  primary of (but not a slot), sent by another node's single-endpoint port (multi-key.ts). */
export function inShard(ctx: RespContext, args: Buffer[]): Reply | Promise<Reply> {
  const inner = args.slice(1);
  const cmd = IN_SHARD[inner[0]!.toString('latin1').toLowerCase()];
  if (!cmd || !cmd.ok(inner.length)) return SYNTAX;
  const r = ctx.view.route(inner[1]!);
  if (!r.local) return err(`TRYAGAIN ${ErrorCodes.WRONG_SHARD} shard ${r.shard} is no longer served by node ${ctx.view.nodeId} (not applied)`);
  return cmd.run({ ...ctx, mode: 'single' }, inner);
}

/** The encoding Redis would report for this value as SET stores it (tryObjectEncoding). */
function encodingOf(v: Uint8Array): string {
  if (v.length <= 20 && parseInt64(Buffer.from(v)) !== null) return 'int';
  return v.length <= 44 ? 'embstr' : 'raw';
}

const OBJECT_HELP = [
  'OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:',
  'ENCODING <key>',
  '    Return the kind of internal representation used in order to store the value',
  '    associated with a <key>.',
  'FREQ <key>',
  '    Return the access frequency index of the <key>. The returned integer is',
  '    proportional to the logarithm of the recent access frequency of the key.',
  'IDLETIME <key>',
  '    Return the idle time of the <key>, that is the approximated number of',
  '    seconds elapsed since the last access to the key.',
  'REFCOUNT <key>',
  '    Return the number of references of the value associated with the specified',
  '    <key>.',
  'HELP',
  '    Prints this help.',
].map((s) => new Simple(s));

export function object(ctx: RespContext, args: Buffer[]): Reply | Promise<Reply> {
  const sub = args[1]!.toString('latin1').toLowerCase();
  const wrongArity = err(`ERR wrong number of arguments for 'object|${sub}' command`);
  if (sub === 'help') return args.length === 2 ? OBJECT_HELP : wrongArity;
  if (!['encoding', 'freq', 'idletime', 'refcount'].includes(sub)) return err(`ERR unknown subcommand '${args[1]!.toString('latin1').slice(0, 128)}'. Try OBJECT HELP.`);
  if (args.length !== 3) return wrongArity;
  return readKey(ctx, args, (v) => {
    if (v === null) return null;
    if (sub === 'encoding') return encodingOf(v);
    if (sub === 'refcount') return 1;
    if (sub === 'freq') return err('ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.');
    return err('ERR rowan does not track when a key was last accessed (OBJECT IDLETIME)');
  }, args[2]!);
}

/** TIME: [unix seconds, microseconds] of the node's wall clock (millisecond resolution). */
export function time(ctx: RespContext): Reply {
  const us = Math.floor(ctx.clock.now() * 1000);
  return [String(Math.floor(us / 1e6)), String(us % 1e6)];
}
