// What one command of the Redis front end's table is (./commands.ts): arity, flags and key positions as
// Redis 7 declares them, its implementation and how it orders within a pipelined connection; and the
// keys a request names by those positions. Apart from the table so that what runs commands from the
// table (./transaction.ts) does not import the table it is part of.
import type { RespConnection } from '../../../runtime/resp/resp-connection.js';
import type { Reply } from '../../../runtime/resp/reply.js';
import type { RespContext } from './context.js';

export type Run = (ctx: RespContext, args: Buffer[], conn: RespConnection) => Reply | Promise<Reply>;

export interface Command {
  name: string;
  /** Redis arity: n = exactly n arguments (name included), -n = at least n. */
  arity: number;
  flags: string[];
  firstKey: number;
  lastKey: number;
  step: number;
  group: string;
  summary: string;
  /** keys: waits for earlier requests of the connection on the same keys; barrier: for all of them;
   *  exclusive: for all of them, and all later ones wait for it. */
  order: 'free' | 'barrier' | 'exclusive' | 'keys';
  run: Run;
  /** Internal (node to node): not listed by COMMAND. */
  internal?: boolean;
}

/** The keys a request names (by the table's key positions). */
export function keysOf(cmd: Command, args: Buffer[]): Buffer[] {
  const out: Buffer[] = [];
  forEachKey(cmd, args, pushKey, out);
  return out;
}

const pushKey = (k: Buffer, out: Buffer[]): void => void out.push(k);

/** keysOf without the array: `f(key, t)` with each key a request names (no closure per request). */
export function forEachKey<T>(cmd: Command, args: Buffer[], f: (key: Buffer, t: T) => void, t: T): void {
  if (cmd.firstKey === 0) return;
  const last = cmd.lastKey < 0 ? args.length + cmd.lastKey : cmd.lastKey;
  for (let i = cmd.firstKey; i <= last && i < args.length; i += cmd.step) f(args[i]!, t);
}
