// Connection and server commands: PING ECHO HELLO AUTH SELECT QUIT RESET CLIENT CONFIG READONLY
// READWRITE ASKING (WAIT: ./wait.ts), with Redis 7's replies and error strings. The password
// (requirepass) is the client password, never the cluster secret (docs/security.md): until AUTH
// <password> (or AUTH default <password>, or HELLO 3 AUTH default <password>) succeeds, other commands
// get -NOAUTH (./handler.ts); RESET makes the connection unauthenticated again. A node started with
// --no-auth answers AUTH as Redis does without one.
import { defaultLimits } from '../../../config/limits.js';
import type { RespConnection } from '../../../runtime/resp/resp-connection.js';
import { OK, RMap, Simple, Verbatim, err, type Reply } from '../../../runtime/resp/reply.js';
import type { RespContext } from './context.js';
import { passwordMatches } from '../../../config/base/secret.js';
import { resetTxn } from './transaction.js';

export const REDIS_COMPAT_VERSION = '7.0.0';
const NOT_INT = err('ERR value is not an integer or out of range');

export function ping(_ctx: RespContext, args: Buffer[]): Reply {
  if (args.length > 2) return err("ERR wrong number of arguments for 'ping' command");
  return args.length === 2 ? args[1]! : new Simple('PONG');
}

const WRONGPASS = err('WRONGPASS invalid username-password pair or user is disabled.');

export function auth(ctx: RespContext, args: Buffer[], conn: RespConnection): Reply {
  if (ctx.password !== null) {
    if (args.length !== 2 && args.length !== 3) return err('ERR syntax error');
    if (args.length === 3 && args[1]!.toString() !== 'default') return WRONGPASS;
    if (!passwordMatches(ctx.password, args[args.length - 1]!)) return WRONGPASS;
    conn.authenticated = true;
    return OK;
  }
  if (args.length === 2) {
    return err('ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?');
  }
  if (args.length === 3) return args[1]!.toString() === 'default' ? OK : err('WRONGPASS invalid username-password pair or user is disabled.');
  return err('ERR syntax error');
}

export function hello(ctx: RespContext, args: Buffer[], conn: RespConnection): Reply {
  let proto = conn.proto;
  let name: string | null | undefined;
  if (args.length >= 2) {
    const v = Number(args[1]!.toString('latin1'));
    if (!Number.isInteger(v)) return err('ERR Protocol version is not an integer or out of range');
    if (v !== 2 && v !== 3) return err('NOPROTO unsupported protocol version');
    proto = v;
    for (let i = 2; i < args.length; i++) {
      const opt = args[i]!.toString('latin1').toUpperCase();
      if (opt === 'AUTH' && i + 2 < args.length) {
        const r = auth(ctx, ['AUTH', args[i + 1]!, args[i + 2]!].map((x) => Buffer.from(x)), conn);
        if (r !== OK) return r;
        i += 2;
      } else if (opt === 'SETNAME' && i + 1 < args.length) {
        const n = args[++i]!.toString();
        if (!validName(n)) return err('ERR Client names cannot contain spaces, newlines or special characters.');
        name = n;
      } else return err(`ERR Syntax error in HELLO option '${args[i]!.toString().slice(0, 128)}'`);
    }
  }
  if (ctx.password !== null && !conn.authenticated)
    return err('NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time');
  conn.proto = proto;
  if (name !== undefined) conn.name = name;
  return new RMap([
    ['server', 'redis'],
    ['version', REDIS_COMPAT_VERSION],
    ['proto', proto],
    ['id', conn.id],
    ['mode', redisMode(ctx)],
    ['role', 'master'],
    ['modules', []],
  ]);
}

/** What a port presents itself as: the single-endpoint port is a standalone Redis (it forwards what
 *  it does not own; a client sees one server), the cluster port a Redis Cluster node. */
export function redisMode(ctx: RespContext): 'standalone' | 'cluster' {
  return ctx.mode === 'cluster' ? 'cluster' : 'standalone';
}

export function select(_ctx: RespContext, args: Buffer[]): Reply {
  const s = args[1]!.toString('latin1');
  if (!/^-?\d{1,18}$/.test(s)) return NOT_INT;
  return Number(s) === 0 ? OK : err('ERR DB index is out of range');
}

export function quit(_ctx: RespContext, _args: Buffer[], conn: RespConnection): Reply {
  conn.closeAfterReply = true;
  return OK;
}

export function reset(_ctx: RespContext, _args: Buffer[], conn: RespConnection): Reply {
  resetTxn(conn); // leaves MULTI, unwatches
  conn.authenticated = false; // on a port without a password a connection stays authenticated
  conn.proto = 2;
  conn.name = null;
  return new Simple('RESET');
}

function validName(n: string): boolean {
  return /^[\x21-\x7e]*$/.test(n);
}

export function clientInfoLine(ctx: RespContext, c: RespConnection): string {
  const s = c.socket;
  const age = Math.floor((ctx.clock.now() - c.createdMs) / 1000);
  return `id=${c.id} addr=${s.remoteAddress}:${s.remotePort} laddr=${s.localAddress}:${s.localPort} fd=-1 name=${c.name ?? ''} age=${age} idle=0 flags=N db=0 sub=0 psub=0 ssub=0 multi=-1 qbuf=${c.bufferedBytes} qbuf-free=0 argv-mem=0 multi-mem=0 obl=0 oll=${c.pendingReplies} omem=${s.writableLength} tot-mem=0 events=r cmd=${c.lastCommand} user=default redir=-1 resp=${c.proto} rowan-port=${ctx.mode}\n`;
}

export function client(ctx: RespContext, args: Buffer[], conn: RespConnection): Reply {
  const sub = args[1]!.toString('latin1').toLowerCase();
  const wrong = err(`ERR wrong number of arguments for 'client|${sub}' command`);
  switch (sub) {
    case 'id':
      return args.length === 2 ? conn.id : wrong;
    case 'getname':
      return args.length === 2 ? conn.name : wrong;
    case 'setname': {
      if (args.length !== 3) return wrong;
      const n = args[2]!.toString();
      if (!validName(n)) return err('ERR Client names cannot contain spaces, newlines or special characters.');
      conn.name = n === '' ? null : n;
      return OK;
    }
    case 'setinfo':
      return args.length === 4 ? OK : wrong;
    case 'info':
      return args.length === 2 ? new Verbatim(clientInfoLine(ctx, conn)) : wrong;
    case 'list':
      return new Verbatim(ctx.servers.flatMap((s) => [...s.connections]).map((c) => clientInfoLine(ctx, c)).join(''));
    default:
      return err(`ERR unknown subcommand '${args[1]!.toString('latin1').slice(0, 128)}'. Try CLIENT HELP.`);
  }
}

/** CONFIG GET for the settings that exist (or that tools ask for, answered as rowan behaves). */
function configValues(ctx: RespContext): [string, string][] {
  const c = ctx.view.config();
  return [
    ['appendonly', 'no'],
    ['save', ''],
    ['appendfsync', 'always'],
    ['databases', '1'],
    ['maxmemory', '0'],
    ['maxclients', '10000'],
    ['port', String(ctx.port)],
    ['cluster-enabled', ctx.mode === 'cluster' ? 'yes' : 'no'],
    ['proto-max-bulk-len', String(defaultLimits.valueBytesMax)],
    ['timeout', '0'],
    ['rowan-replication-factor', String(c.replicationFactor)],
    ['rowan-replication-mode', c.replication],
    ['rowan-shard-count', String(c.shardCount)],
    ['rowan-persistence', ctx.info.persistence],
    ['rowan-data-dir', ctx.info.dataDir],
  ];
}

export function config(ctx: RespContext, args: Buffer[]): Reply {
  const sub = args[1]!.toString('latin1').toLowerCase();
  if (sub === 'get') {
    if (args.length < 3) return err("ERR wrong number of arguments for 'config|get' command");
    const pats = args.slice(2).map((a) => globRx(a.toString('latin1').toLowerCase()));
    return new RMap(configValues(ctx).filter(([k]) => pats.some((p) => p.test(k))));
  }
  if (sub === 'set') return err('ERR rowan settings are fixed at start (CONFIG SET is not supported)');
  if (sub === 'resetstat') return OK;
  return err(`ERR unknown subcommand '${args[1]!.toString('latin1').slice(0, 128)}'. Try CONFIG HELP.`);
}

function globRx(p: string): RegExp {
  return new RegExp('^' + p.replace(/[.+^${}()|\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.') + '$');
}
