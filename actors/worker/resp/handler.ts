// The RespHandler of a worker's RESP port: command lookup and arity (Redis 7's error strings), and the
// mapping of rowan's errors onto Redis error replies. The first word of an error reply says what the
// client may assume:
//   ERR / OOM / TRYAGAIN   not applied: nothing changed (TRYAGAIN: retry, the cluster is reconfiguring;
//                          OOM: the pool is full of live data)
//   UNKNOWN                outcome unknown: the write may or may not be on the replicas (a backup or the
//                          forwarding link failed mid-request); SET/DEL may be retried, conditional
//                          commands (NX, XX, GETDEL) must be checked first
//   MOVED / CROSSSLOT / CLUSTERDOWN   Redis Cluster routing, not applied
import type { RespConnection, RespHandler, RequestOrder } from '../../../runtime/resp/resp-connection.js';
import { ErrorCodes, RowanError } from '../../../config/base/errors.js';
import { RespErr, err, type Reply } from '../../../runtime/resp/reply.js';
import { COMMAND_BY_NAME, orderOf } from './commands.js';
import type { RespContext } from './context.js';

const NOT_APPLIED = new Set<string>([ErrorCodes.KEY_TOO_LARGE, ErrorCodes.KEY_EMPTY, ErrorCodes.VALUE_TOO_LARGE, ErrorCodes.BAD_ARGUMENT, ErrorCodes.ENTRY_TOO_LARGE]);
const RETRY = new Set<string>([ErrorCodes.NODE_NOT_RUNNING, ErrorCodes.STALE_TERM, ErrorCodes.WRONG_SHARD]);

export function rowanErrorReply(e: unknown): RespErr {
  if (e instanceof RespErr) return e;
  if (e instanceof RowanError) {
    if (NOT_APPLIED.has(e.code)) return err(`ERR ${e.code} ${e.message}`);
    if (RETRY.has(e.code)) return err(`TRYAGAIN ${e.code} ${e.message} (not applied)`);
    if (e.code === ErrorCodes.PM_FULL || e.code === ErrorCodes.QUOTA) return err(`OOM ${e.code} ${e.message}`);
    return err(`UNKNOWN ${e.code} ${e.message} (outcome unknown)`);
  }
  return err(`UNKNOWN ${ErrorCodes.INTERNAL} ${(e as Error)?.message ?? String(e)} (outcome unknown)`);
}

function unknownCommand(args: Buffer[]): RespErr {
  let rest = '';
  for (let i = 1; i < args.length && rest.length < 128; i++) rest += `'${args[i]!.toString().slice(0, 128 - rest.length)}' `;
  return err(`ERR unknown command '${args[0]!.toString().slice(0, 128)}', with args beginning with: ${rest}`);
}

const NOAUTH = err('NOAUTH Authentication required.');

export class KvRespHandler implements RespHandler {
  constructor(private readonly ctx: RespContext) {}

  order(args: Buffer[]): RequestOrder {
    return orderOf(COMMAND_BY_NAME.get(args[0]!.toString('latin1').toLowerCase()), args);
  }

  execute(args: Buffer[], conn: RespConnection): Reply | Promise<Reply> {
    const name = args[0]!.toString('latin1').toLowerCase();
    const cmd = COMMAND_BY_NAME.get(name);
    conn.lastCommand = name.slice(0, 32);
    // requirepass: before AUTH only the commands Redis flags no_auth run (AUTH, HELLO, QUIT, RESET).
    if (this.ctx.password !== null && !conn.authenticated && !cmd?.flags.includes('no_auth')) return this.counted(NOAUTH);
    if (!cmd) return this.counted(unknownCommand(args));
    if (cmd.arity > 0 ? args.length !== cmd.arity : args.length < -cmd.arity) return this.counted(err(`ERR wrong number of arguments for '${name}' command`));
    const r = cmd.run(this.ctx, args, conn);
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
