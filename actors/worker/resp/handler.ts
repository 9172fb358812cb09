// The RespHandler of a worker's RESP port: command lookup and arity (Redis 7's error strings), the
// requirepass gate, and rowan's errors as Redis error replies (./outcome.ts says which mean "not applied"
// and which "outcome unknown").
import type { RespConnection, RespHandler, RequestOrder } from '../../../runtime/resp/resp-connection.js';
import { RespErr, err, type Reply } from '../../../runtime/resp/reply.js';
import { keySlot } from '../../../config/slots.js';
import { COMMAND_BY_NAME, orderOf } from './commands.js';
import { forEachKey, type Command } from './command-spec.js';
import type { RespContext } from './context.js';
import { rowanErrorReply } from './outcome.js';
import { rerouted } from './reroute.js';
import { RUN_IN_MULTI, inMulti, queueInMulti } from './transaction.js';
import type { SlotBits } from '../../../runtime/resp/slot-bits.js';

/** A write's key, for WAIT: its slot noted on the connection. */
const noteSlot = (key: Buffer, slots: SlotBits): void => slots.add(keySlot(key));

function unknownCommand(args: Buffer[]): RespErr {
  let rest = '';
  for (let i = 1; i < args.length && rest.length < 128; i++) rest += `'${args[i]!.toString().slice(0, 128 - rest.length)}' `;
  return err(`ERR unknown command '${args[0]!.toString().slice(0, 128)}', with args beginning with: ${rest}`);
}

const NOAUTH = err('NOAUTH Authentication required.');

/** Key commands a change of term may refuse are run again on the new view (./reroute.ts), WATCH among
 *  them (EXEC runs its block again itself: ./transaction.ts); not the internal node-to-node ones (the
 *  forwarding node runs its command again). */
function reroutable(cmd: Command, name: string): boolean {
  return cmd.firstKey !== 0 && cmd.internal !== true && (name === 'watch' || !RUN_IN_MULTI.has(name));
}

export class KvRespHandler implements RespHandler {
  /** The request order() and execute() last looked up (the connection calls both for each request):
   *  its command name is decoded once. */
  private lastArgs: Buffer[] | null = null;
  private lastName = '';
  private lastCmd: Command | undefined = undefined;

  constructor(private readonly ctx: RespContext) {}

  private lookup(args: Buffer[]): Command | undefined {
    if (args !== this.lastArgs) {
      this.lastArgs = args;
      this.lastName = args[0]!.toString('latin1').toLowerCase();
      this.lastCmd = COMMAND_BY_NAME.get(this.lastName);
    }
    return this.lastCmd;
  }

  order(args: Buffer[]): RequestOrder {
    return orderOf(this.lookup(args), args);
  }

  execute(args: Buffer[], conn: RespConnection): Reply | Promise<Reply> {
    const cmd = this.lookup(args);
    const name = this.lastName;
    this.lastArgs = null; // holds no request's buffers past its run
    conn.lastCommand = name.slice(0, 32);
    // requirepass: before AUTH only the commands Redis flags no_auth run (AUTH, HELLO, QUIT, RESET).
    if (this.ctx.password !== null && !conn.authenticated && !cmd?.flags.includes('no_auth')) return this.counted(NOAUTH);
    // Inside MULTI a queuing error (unknown command, wrong arity) fails the block (EXEC: EXECABORT).
    const block = inMulti(conn);
    if (!cmd) return this.counted(block ? block.fail(unknownCommand(args)) : unknownCommand(args));
    if (cmd.arity > 0 ? args.length !== cmd.arity : args.length < -cmd.arity) {
      const e = err(`ERR wrong number of arguments for '${name}' command`);
      return this.counted(block ? block.fail(e) : e);
    }
    if (cmd.flags.includes('write')) forEachKey(cmd, args, noteSlot, conn.wroteSlots); // for WAIT
    if (block && !RUN_IN_MULTI.has(name)) return queueInMulti(this.ctx, block, cmd, args);
    const r = reroutable(cmd, name) ? rerouted(this.ctx, () => cmd.run(this.ctx, args, conn)) : cmd.run(this.ctx, args, conn);
    if (r instanceof RespErr) this.ctx.stats.errors++;
    return r;
  }

  private counted(e: RespErr): RespErr {
    this.ctx.stats.errors++;
    return e;
  }

  errorReply(e: unknown): Reply {
    this.ctx.stats.errors++;
    return rowanErrorReply(e);
  }
}
