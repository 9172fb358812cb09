// MULTI / EXEC / DISCARD / WATCH / UNWATCH (issue 27) with Redis 7's replies and error strings.
//
// Queuing (handler.ts calls queueInMulti for every command of a connection in MULTI other than EXEC,
// DISCARD, MULTI, WATCH, QUIT and RESET): an unknown command or a wrong arity is answered and marks the
// transaction failed (EXEC then answers EXECABORT); keys are checked as they are queued -- on a cluster
// port all in one slot served here (-CROSSSLOT / -MOVED, failing the transaction as Redis Cluster does),
// on a single-endpoint port all in one shard (-CROSSSLOT naming the shards). Anything else is +QUEUED.
//
// EXEC takes the node's key locks of every queued and watched key (context.ts KeyLocks: every RESP write
// of those keys, and every MGET, EXISTS or TOUCH of several of them, waits), compares each watched
// key's state (primary.ts watchState: the version of its indexed entry and whether GET sees a value)
// with what WATCH recorded (any change: a null array), runs the queued commands in order against a
// TxnStore (./txn-store.ts: reads see the transaction's own writes, writes are recorded), then commits
// the recorded writes as one unit (KvWorker.commitTxn, actors/worker/txn-write.ts) and answers the array
// of replies. A command's runtime error is its reply in the array and the others still run. If the
// commit fails, or a command could not run at all (the node reconfiguring), EXEC answers that error
// instead (ERR/TRYAGAIN/OOM: nothing applied; UNKNOWN: all or nothing, not known which).
// On a single-endpoint port a transaction whose shard another node is primary of runs there: EXEC
// forwards the whole block (ROWAN.EXEC, with the watched keys' recorded states), and WATCH asks that
// node for the states (ROWAN.WATCHSTATE).
import type { RespConnection } from '../../../runtime/resp/resp-connection.js';
import { NULL_ARRAY, OK, RespErr, Simple, err, type Reply } from '../../../runtime/resp/reply.js';
import { ErrorCodes } from '../../../config/base/errors.js';
import { keysOf, type Command } from './command-spec.js';
import { HeldLocks, type RespContext } from './context.js';
import { movedOr, SYNTAX } from './keys.js';
import { rowanErrorReply } from './outcome.js';
import { rerouted } from './reroute.js';
import { TxnStore } from './txn-store.js';

const QUEUED = new Simple('QUEUED');
const EXECABORT = err('EXECABORT Transaction discarded because of previous errors.');
const HELD = new HeldLocks();
const CROSSSLOT = "CROSSSLOT Keys in request don't hash to the same slot";

interface Queued {
  cmd: Command;
  args: Buffer[];
}

interface Watched {
  key: Buffer;
  state: string;
}

/** One connection's transaction state: the MULTI block being queued (null outside MULTI) and the
 *  watched keys (kept until EXEC, DISCARD, UNWATCH or RESET). */
class ConnTxn {
  queued: Queued[] | null = null;
  failed = false;
  /** The slot (cluster port) or shard (single-endpoint port) of the block's first key, -1 before. */
  place = -1;
  firstKey: Buffer | null = null;
  readonly watched = new Map<string, Watched>();

  fail(e: RespErr): RespErr {
    this.failed = true;
    return e;
  }

  end(): void {
    this.queued = null;
    this.failed = false;
    this.place = -1;
    this.firstKey = null;
    this.watched.clear();
  }
}

const byConn = new WeakMap<RespConnection, ConnTxn>();

function txnOf(conn: RespConnection): ConnTxn {
  let t = byConn.get(conn);
  if (!t) byConn.set(conn, (t = new ConnTxn()));
  return t;
}

/** The connection's open MULTI block, if any (handler.ts). */
export function inMulti(conn: RespConnection): ConnTxn | null {
  const t = byConn.get(conn);
  return t && t.queued !== null ? t : null;
}

/** Commands that run at once inside MULTI rather than being queued (as in Redis's processCommand). */
export const RUN_IN_MULTI = new Set(['exec', 'discard', 'multi', 'watch', 'quit', 'reset']);

/** Commands a block may not hold (its writes commit within one shard): queuing one fails the block. */
const NOT_IN_MULTI = new Set(['flushdb', 'flushall']);

/** Queue `args` in the open block, or answer the queuing error (which fails the block). */
export function queueInMulti(ctx: RespContext, t: ConnTxn, cmd: Command, args: Buffer[]): Reply {
  if (NOT_IN_MULTI.has(cmd.name)) {
    ctx.stats.errors++;
    return t.fail(err(`ERR ${cmd.name.toUpperCase()} inside MULTI is not supported by rowan (a transaction runs within one shard)`));
  }
  const keys = keysOf(cmd, args);
  for (const k of keys) {
    const e = placeKey(ctx, t, k);
    if (e !== null) {
      ctx.stats.errors++;
      return t.fail(e);
    }
  }
  t.queued!.push({ cmd, args });
  return QUEUED;
}

/** null if `key` may join the block; else the error (CROSSSLOT, or MOVED on a cluster port). */
function placeKey(ctx: RespContext, t: ConnTxn, key: Buffer): RespErr | null {
  const r = ctx.view.route(key);
  const at = ctx.mode === 'cluster' ? r.slot : r.shard;
  if (t.place === -1) {
    t.place = at;
    t.firstKey = key;
  } else if (at !== t.place) {
    ctx.stats.crossSlot++;
    return err(ctx.mode === 'cluster' ? CROSSSLOT : `CROSSSLOT Keys in request don't hash to the same shard (shards ${t.place} and ${at}: rowan runs a transaction within one shard)`);
  }
  if (ctx.mode === 'cluster' && !r.local) {
    const m = movedOr(ctx, r, []);
    return m instanceof RespErr ? m : err(`MOVED ${r.slot}`);
  }
  return null;
}

export function multi(_ctx: RespContext, _args: Buffer[], conn: RespConnection): Reply {
  const t = txnOf(conn);
  if (t.queued !== null) return err('ERR MULTI calls can not be nested');
  t.queued = [];
  return OK;
}

export function discard(_ctx: RespContext, _args: Buffer[], conn: RespConnection): Reply {
  const t = byConn.get(conn);
  if (!t || t.queued === null) return err('ERR DISCARD without MULTI');
  t.end();
  return OK;
}

export function unwatch(_ctx: RespContext, _args: Buffer[], conn: RespConnection): Reply {
  byConn.get(conn)?.watched.clear();
  return OK;
}

/** RESET leaves MULTI and forgets the watched keys (admin.ts). */
export function resetTxn(conn: RespConnection): void {
  byConn.get(conn)?.end();
}

/** WATCH: record each key's state now (asking its owner on a single-endpoint port). */
export async function watch(ctx: RespContext, args: Buffer[], conn: RespConnection): Promise<Reply> {
  const t = txnOf(conn);
  if (t.queued !== null) return err('ERR WATCH inside MULTI is not allowed');
  const keys = args.slice(1);
  if (ctx.mode === 'cluster') {
    const first = ctx.view.route(keys[0]!);
    if (keys.some((k) => ctx.view.route(k).slot !== first.slot)) return err(CROSSSLOT);
    if (!first.local) return movedOr(ctx, first, args);
  }
  for (const k of keys) {
    const state = await stateOf(ctx, k);
    if (state instanceof RespErr) return state;
    const name = k.toString('latin1');
    if (!t.watched.has(name)) t.watched.set(name, { key: k, state });
  }
  return OK;
}

async function stateOf(ctx: RespContext, key: Buffer): Promise<string | RespErr> {
  const r = ctx.view.route(key);
  if (r.local) return ctx.worker.watchState(key, ctx.worker.term());
  if (r.to === null) return err(`CLUSTERDOWN Hash slot ${r.slot} is served by a node without a RESP port`);
  const rep = await ctx.view.peer(r.to).call([WATCHSTATE, key]);
  if (rep instanceof RespErr) return rep;
  return Buffer.from(rep as Uint8Array).toString('latin1');
}

const WATCHSTATE = Buffer.from('ROWAN.WATCHSTATE');
const EXEC_FWD = Buffer.from('ROWAN.EXEC');

/** ROWAN.WATCHSTATE key: a watched key's state on the node that is its primary (internal). */
export async function watchStateCmd(ctx: RespContext, args: Buffer[]): Promise<Reply> {
  const r = ctx.view.route(args[1]!);
  if (!r.local) return err(`TRYAGAIN ${ErrorCodes.WRONG_SHARD} shard ${r.shard} is no longer served by node ${ctx.view.nodeId} (not applied)`);
  return ctx.worker.watchState(args[1]!, ctx.worker.term());
}

export function exec(ctx: RespContext, _args: Buffer[], conn: RespConnection): Reply | Promise<Reply> {
  const t = byConn.get(conn);
  if (!t || t.queued === null) return err('ERR EXEC without MULTI');
  const queued = t.queued;
  const watched = [...t.watched.values()];
  const failed = t.failed;
  const firstKey = t.firstKey ?? watched[0]?.key ?? null;
  t.end(); // EXEC discards the block and unwatches whatever it answers
  if (failed) return EXECABORT;
  // A block refused by a change of term wrote nothing (its writes commit as one unit, after every read):
  // it runs again on the new view, as a single command does. The watched states compare across a move
  // (a key's version is the same entry's on every replica).
  return rerouted(ctx, () => runBlock(ctx, queued, watched, firstKey, conn));
}

/** Where the block runs: here, on its shard's primary (single-endpoint port), or -MOVED. */
function runBlock(ctx: RespContext, queued: Queued[], watched: Watched[], firstKey: Buffer | null, conn: RespConnection): Reply | Promise<Reply> {
  if (firstKey === null) return execHere(ctx, queued, watched, conn);
  const r = ctx.view.route(firstKey);
  if (r.local) return execHere(ctx, queued, watched, conn);
  if (ctx.mode === 'cluster' || r.to === null) return movedOr(ctx, r, []);
  ctx.stats.forwarded++;
  return ctx.view.peer(r.to).call(encodeForward(queued, watched));
}

/** Run the block on this node, under the locks of every key it names or watches. */
function execHere(ctx: RespContext, queued: Queued[], watched: Watched[], conn: RespConnection): Promise<Reply> {
  const keys: Buffer[] = watched.map((w) => w.key);
  for (const q of queued) keys.push(...keysOf(q.cmd, q.args));
  for (const k of keys) {
    const r = ctx.view.route(k);
    if (!r.local) {
      return Promise.resolve(err(`TRYAGAIN ${ErrorCodes.WRONG_SHARD} shard ${r.shard} of a key of the transaction is not served by node ${ctx.view.nodeId} (not applied)`));
    }
  }
  const run = async (): Promise<Reply> => {
    const term = ctx.worker.term();
    for (const w of watched) if ((await ctx.worker.watchState(w.key, term)) !== w.state) return NULL_ARRAY;
    const store = new TxnStore(ctx.worker, ctx.limits);
    const inner: RespContext = { ...ctx, worker: store.asWorker(), locks: HELD };
    const out: Reply[] = [];
    for (const q of queued) out.push(await runQueued(inner, q, conn));
    await ctx.worker.commitTxn(store.writes(), term);
    return out;
  };
  return keys.length > 0 ? ctx.locks.runAll(keys, run) : run();
}

/** One queued command's reply. A refusal of the command itself (`ERR`: a key or value over the limits)
 *  is its reply and the block goes on, as a runtime error in Redis; anything else thrown (TRYAGAIN:
 *  the node is reconfiguring, a read could not run) ends the whole EXEC with that error, nothing of
 *  the block applied -- a block whose INCR could not read its counter must not commit the others. */
async function runQueued(ctx: RespContext, q: Queued, conn: RespConnection): Promise<Reply> {
  let r: Reply;
  try {
    r = await q.cmd.run(ctx, q.args, conn);
  } catch (e) {
    const refused = rowanErrorReply(e);
    if (!refused.s.startsWith('ERR ')) throw e;
    r = refused;
  }
  if (r instanceof RespErr) ctx.stats.errors++;
  return r;
}

/** ROWAN.EXEC nwatched [key state]... ncommands [argc arg...]... */
function encodeForward(queued: Queued[], watched: Watched[]): Buffer[] {
  const out: Buffer[] = [EXEC_FWD, Buffer.from(String(watched.length))];
  for (const w of watched) out.push(w.key, Buffer.from(w.state, 'latin1'));
  out.push(Buffer.from(String(queued.length)));
  for (const q of queued) out.push(Buffer.from(String(q.args.length)), ...q.args);
  return out;
}

/** ROWAN.EXEC: a single-endpoint port's transaction forwarded to the node that is its shard's primary
 *  (internal); runs with the single-endpoint port's rules, never forwarded again. */
export function execForwarded(ctx: RespContext, args: Buffer[], conn: RespConnection, lookup: (name: string) => Command | undefined): Reply | Promise<Reply> {
  let at = 1;
  const num = (): number => {
    const n = Number(args[at++]?.toString('latin1'));
    return Number.isInteger(n) && n >= 0 ? n : -1;
  };
  const watched: Watched[] = [];
  const nw = num();
  for (let i = 0; i < nw && at + 1 < args.length; i++, at += 2) watched.push({ key: args[at]!, state: args[at + 1]!.toString('latin1') });
  const nq = num();
  const queued: Queued[] = [];
  for (let i = 0; i < nq; i++) {
    const argc = num();
    if (argc < 1 || at + argc > args.length) return SYNTAX;
    const cmd = lookup(args[at]!.toString('latin1').toLowerCase());
    if (!cmd) return SYNTAX;
    queued.push({ cmd, args: args.slice(at, at + argc) });
    at += argc;
  }
  if (nw < 0 || nq < 0 || watched.length !== nw || at !== args.length) return SYNTAX;
  return execHere({ ...ctx, mode: 'single' }, queued, watched, conn);
}
