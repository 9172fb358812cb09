// The command table of rowan's Redis front end: arity, flags and key positions as Redis 7 declares them
// (COMMAND / COMMAND DOCS / COMMAND COUNT serve them, so redis-cli's hints and cluster clients' key
// extraction work), the implementation, and how a request orders within a pipelined connection.
import type { RequestOrder } from '../../../runtime/resp/resp-connection.js';
import { keysOf, type Command, type Run } from './command-spec.js';
import { RMap, RSet, Simple, err, type Reply } from '../../../runtime/resp/reply.js';
import * as admin from './admin.js';
import * as counters from './counters.js';
import * as edits from './string-edits.js';
import * as exp from './expiry.js';
import * as ks from './keyspace-cmds.js';
import { cluster } from './cluster-cmds.js';
import { info } from './info.js';
import * as tx from './transaction.js';
import * as keys from './keys.js';
import { wait } from './wait.js';
import { dbsize, nodeDbsize, scan, scanShardCmd } from './scan.js';
import { flush, nodeFlush } from './flush-cmds.js';

export type { Command } from './command-spec.js';
export { keysOf } from './command-spec.js';

const c = (name: string, arity: number, flags: string, k: [number, number, number], group: string, order: Command['order'], summary: string, run: Run, internal = false): Command => ({
  name, arity, flags: flags ? flags.split(' ') : [], firstKey: k[0], lastKey: k[1], step: k[2], group, summary, order, run, internal,
});
const NK: [number, number, number] = [0, 0, 0];

export const COMMANDS: Command[] = [
  c('get', 2, 'readonly fast', [1, 1, 1], 'string', 'keys', 'Returns the string value of a key.', keys.get),
  c('set', -3, 'write denyoom', [1, 1, 1], 'string', 'keys', 'Sets the string value of a key (acknowledged once persistent on every replica).', keys.set),
  c('setnx', 3, 'write denyoom fast', [1, 1, 1], 'string', 'keys', 'Set the string value of a key only when the key does not exist.', keys.setnx),
  c('getdel', 2, 'write fast', [1, 1, 1], 'string', 'keys', 'Returns the string value of a key after deleting the key.', keys.getdel),
  c('strlen', 2, 'readonly fast', [1, 1, 1], 'string', 'keys', 'Returns the length of a string value.', keys.strlen),
  c('del', -2, 'write', [1, -1, 1], 'keyspace', 'keys', 'Deletes one or more keys.', keys.del),
  c('exists', -2, 'readonly fast', [1, -1, 1], 'keyspace', 'keys', 'Determines whether one or more keys exist.', keys.exists),
  c('mget', -2, 'readonly fast', [1, -1, 1], 'string', 'keys', 'Atomically returns the string values of one or more keys.', keys.mget),
  c('mset', -3, 'write denyoom', [1, -1, 2], 'string', 'keys', 'Sets the string values of one or more keys (each persistent on every replica).', keys.mset),
  c('incr', 2, 'write denyoom fast', [1, 1, 1], 'string', 'keys', 'Increments the integer value of a key by one.', counters.incr),
  c('decr', 2, 'write denyoom fast', [1, 1, 1], 'string', 'keys', 'Decrements the integer value of a key by one.', counters.decr),
  c('incrby', 3, 'write denyoom fast', [1, 1, 1], 'string', 'keys', 'Increments the integer value of a key by a number.', counters.incrby),
  c('decrby', 3, 'write denyoom fast', [1, 1, 1], 'string', 'keys', 'Decrements the integer value of a key by a number.', counters.decrby),
  c('incrbyfloat', 3, 'write denyoom fast', [1, 1, 1], 'string', 'keys', 'Increment the floating point value of a key by a number (long double, as Redis on x86-64).', counters.incrbyfloat),
  c('getset', 3, 'write denyoom fast', [1, 1, 1], 'string', 'keys', 'Returns the previous string value of a key after setting it to a new value.', edits.getset),
  c('msetnx', -3, 'write denyoom', [1, -1, 2], 'string', 'keys', 'Sets the string values of keys of one shard only when none of the keys exist.', edits.msetnx),
  c('append', 3, 'write denyoom fast', [1, 1, 1], 'string', 'keys', 'Appends a string to the value of a key. Creates the key if it does not exist.', edits.append),
  c('getrange', 4, 'readonly', [1, 1, 1], 'string', 'keys', 'Returns a substring of the string stored at a key.', edits.getrange),
  c('substr', 4, 'readonly', [1, 1, 1], 'string', 'keys', 'Returns a substring from a string value.', edits.getrange),
  c('setrange', 4, 'write denyoom', [1, 1, 1], 'string', 'keys', 'Overwrites a part of a string value with another by an offset.', edits.setrange),
  c('setbit', 4, 'write denyoom', [1, 1, 1], 'bitmap', 'keys', 'Sets or clears the bit at offset of the string value.', edits.setbit),
  c('getbit', 3, 'readonly fast', [1, 1, 1], 'bitmap', 'keys', 'Returns a bit value by offset.', edits.getbit),
  c('bitcount', -2, 'readonly', [1, 1, 1], 'bitmap', 'keys', 'Counts the number of set bits (population counting) in a string.', edits.bitcount),
  c('setex', 4, 'write denyoom', [1, 1, 1], 'string', 'keys', 'Sets the string value and expiration time of a key.', exp.setex),
  c('psetex', 4, 'write denyoom', [1, 1, 1], 'string', 'keys', 'Sets both string value and expiration time in milliseconds of a key.', exp.psetex),
  c('getex', -2, 'write fast', [1, 1, 1], 'string', 'keys', 'Returns the string value of a key after setting its expiration time.', exp.getex),
  c('expire', -3, 'write fast', [1, 1, 1], 'keyspace', 'keys', 'Sets the expiration time of a key in seconds.', exp.expire),
  c('pexpire', -3, 'write fast', [1, 1, 1], 'keyspace', 'keys', 'Sets the expiration time of a key in milliseconds.', exp.pexpire),
  c('expireat', -3, 'write fast', [1, 1, 1], 'keyspace', 'keys', 'Sets the expiration time of a key to a Unix timestamp.', exp.expireat),
  c('pexpireat', -3, 'write fast', [1, 1, 1], 'keyspace', 'keys', 'Sets the expiration time of a key to a Unix milliseconds timestamp.', exp.pexpireat),
  c('ttl', 2, 'readonly fast', [1, 1, 1], 'keyspace', 'keys', 'Returns the expiration time in seconds of a key.', exp.ttl),
  c('pttl', 2, 'readonly fast', [1, 1, 1], 'keyspace', 'keys', 'Returns the expiration time in milliseconds of a key.', exp.pttl),
  c('expiretime', 2, 'readonly fast', [1, 1, 1], 'keyspace', 'keys', 'Returns the expiration time of a key as a Unix timestamp.', exp.expiretime),
  c('pexpiretime', 2, 'readonly fast', [1, 1, 1], 'keyspace', 'keys', 'Returns the expiration time of a key as a Unix milliseconds timestamp.', exp.pexpiretime),
  c('persist', 2, 'write fast', [1, 1, 1], 'keyspace', 'keys', 'Removes the expiration time of a key.', exp.persist),
  c('type', 2, 'readonly fast', [1, 1, 1], 'generic', 'keys', 'Determines the type of value stored at a key (string or none).', ks.type),
  c('keys', 2, 'readonly', NK, 'generic', 'barrier', 'Returns all key names that match a pattern.', ks.keys),
  c('randomkey', 1, 'readonly', NK, 'generic', 'barrier', 'Returns a random key name from the database.', ks.randomkey),
  c('unlink', -2, 'write fast', [1, -1, 1], 'keyspace', 'keys', 'Deletes one or more keys (as DEL: rowan frees space in its GC anyway).', keys.del),
  c('touch', -2, 'readonly fast', [1, -1, 1], 'keyspace', 'keys', 'Returns the number of existing keys out of those specified.', keys.exists),
  c('rename', 3, 'write', [1, 2, 1], 'generic', 'keys', 'Renames a key within one shard and overwrites the destination.', ks.rename),
  c('renamenx', 3, 'write fast', [1, 2, 1], 'generic', 'keys', 'Renames a key within one shard only when the target key name does not exist.', ks.renamenx),
  c('copy', -3, 'write denyoom', [1, 2, 1], 'generic', 'keys', 'Copies the value of a key to a new key of the same shard.', ks.copy),
  c('object', -2, 'readonly', [2, 2, 1], 'generic', 'keys', 'OBJECT ENCODING | REFCOUNT | FREQ | IDLETIME | HELP.', ks.object),
  c('time', 1, 'loading stale fast', NK, 'server', 'free', 'Returns the server time.', ks.time),
  c('scan', -2, 'readonly', NK, 'keyspace', 'barrier', 'Iterates over the key names in the database.', scan),
  c('dbsize', 1, 'readonly fast', NK, 'server', 'barrier', 'Returns the number of keys in the database.', dbsize),
  c('flushdb', -1, 'write', NK, 'server', 'barrier', 'Removes all keys (of the whole cluster on a single-endpoint port, of the slots it serves on a cluster port).', flush),
  c('flushall', -1, 'write', NK, 'server', 'barrier', 'Removes all keys (as FLUSHDB: rowan has one database).', flush),
  c('wait', 3, '', NK, 'generic', 'barrier', 'Blocks until the connection\'s writes are on numreplicas backups; answers how many hold them.', wait),
  c('multi', 1, 'noscript loading stale fast allow_busy', NK, 'transactions', 'barrier', 'Starts a transaction (its commands run at EXEC, atomically within one slot or shard).', tx.multi),
  c('exec', 1, 'noscript loading stale skip_slowlog', NK, 'transactions', 'exclusive', 'Executes all commands in a transaction, durable on every replica as one unit.', tx.exec),
  c('discard', 1, 'noscript loading stale fast allow_busy', NK, 'transactions', 'barrier', 'Discards a transaction.', tx.discard),
  c('watch', -2, 'noscript loading stale fast allow_busy', [1, -1, 1], 'transactions', 'exclusive', 'Monitors changes to keys to determine the execution of a transaction.', tx.watch),
  c('unwatch', 1, 'noscript loading stale fast allow_busy', NK, 'transactions', 'barrier', 'Forgets about watched keys of a transaction.', tx.unwatch),
  c('ping', -1, 'fast', NK, 'connection', 'free', 'Returns the server\'s liveliness response.', admin.ping),
  c('echo', 2, 'fast', NK, 'connection', 'free', 'Returns the given string.', (_x, a) => a[1]!),
  c('hello', -1, 'noscript loading stale fast no_auth', NK, 'connection', 'barrier', 'Handshakes with the Redis server.', admin.hello),
  c('auth', -2, 'noscript loading stale fast no_auth', NK, 'connection', 'barrier', 'Authenticates the connection.', admin.auth),
  c('select', 2, 'loading stale fast', NK, 'connection', 'barrier', 'Changes the selected database (only 0 exists).', admin.select),
  c('quit', -1, 'noscript loading stale fast no_auth', NK, 'connection', 'barrier', 'Closes the connection.', admin.quit),
  c('reset', 1, 'noscript loading stale fast no_auth', NK, 'connection', 'barrier', 'Resets the connection.', admin.reset),
  c('client', -2, 'noscript loading stale', NK, 'connection', 'barrier', 'CLIENT ID | SETNAME | GETNAME | INFO | LIST | SETINFO.', admin.client),
  c('info', -1, 'loading stale', NK, 'server', 'barrier', 'Returns information and statistics about the server.', info),
  c('config', -2, 'admin noscript loading stale', NK, 'server', 'free', 'CONFIG GET for the settings that exist.', admin.config),
  c('command', -1, 'loading stale', NK, 'server', 'free', 'Returns detailed information about all commands.', (_x, a) => command(a)),
  c('cluster', -2, '', NK, 'cluster', 'free', 'CLUSTER SLOTS | SHARDS | NODES | INFO | MYID | KEYSLOT.', cluster),
  c('readonly', 1, 'loading stale fast', NK, 'cluster', 'free', 'Enables read-only queries (a no-op: reads go to primaries).', () => new Simple('OK')),
  c('readwrite', 1, 'loading stale fast', NK, 'cluster', 'free', 'Enables read-write queries.', () => new Simple('OK')),
  c('asking', 1, 'fast', NK, 'cluster', 'free', 'A no-op: rowan never answers -ASK.', () => new Simple('OK')),
  c('rowan.scanshard', -4, 'readonly', NK, 'rowan', 'barrier', 'Internal: one SCAN step of a shard this node is the primary of.', (x, a) => scanShardCmd(x, a), true),
  c('rowan.dbsize', -1, 'readonly', NK, 'rowan', 'barrier', 'Internal: live keys of the shards this node is the primary of (EXPIRES: with those that have a deadline).', nodeDbsize, true),
  c('rowan.keys', 2, 'readonly', NK, 'rowan', 'barrier', 'Internal: KEYS over the shards this node is the primary of.', ks.nodeKeys, true),
  c('rowan.randomkey', 1, 'readonly', NK, 'rowan', 'barrier', 'Internal: RANDOMKEY over the shards this node is the primary of.', ks.nodeRandomkey, true),
  c('rowan.inshard', -4, 'write', NK, 'rowan', 'barrier', 'Internal: a multi-key command of one shard (not one slot) forwarded by a single-endpoint port.', ks.inShard, true),
  c('rowan.exec', -3, 'write', NK, 'rowan', 'exclusive', 'Internal: a transaction of a single-endpoint port, run on its shard\'s primary.', (x, a, conn) => tx.execForwarded(x, a, conn, (n) => COMMAND_BY_NAME.get(n)), true),
  c('rowan.flush', 1, 'write', NK, 'rowan', 'barrier', 'Internal: flush every shard this node is the primary of (a single-endpoint port\'s FLUSHALL).', nodeFlush, true),
  c('rowan.watchstate', 2, 'readonly', NK, 'rowan', 'barrier', 'Internal: what WATCH records of a key, on its primary.', tx.watchStateCmd, true),
];

export const COMMAND_BY_NAME = new Map(COMMANDS.map((x) => [x.name, x]));
const PUBLIC = COMMANDS.filter((x) => !x.internal);

export function orderOf(cmd: Command | undefined, args: Buffer[]): RequestOrder {
  if (!cmd || cmd.order === 'free') return 'free';
  if (cmd.order === 'barrier' || cmd.order === 'exclusive') return cmd.order;
  return keysOf(cmd, args);
}

function commandInfo(x: Command): Reply {
  return [x.name, x.arity, new RSet(x.flags.map((f) => new Simple(f))), x.firstKey, x.lastKey, x.step, new RSet([]), [], [], []];
}

function commandDocs(x: Command): Reply {
  return new RMap([
    ['summary', x.summary],
    ['since', '1.0.0'],
    ['group', x.group],
    ['complexity', x.firstKey ? 'O(1) per key' : 'O(1)'],
  ]);
}

function command(args: Buffer[]): Reply {
  if (args.length === 1) return PUBLIC.map(commandInfo);
  const sub = args[1]!.toString('latin1').toLowerCase();
  const named = args.slice(2).map((a) => a.toString('latin1').toLowerCase());
  switch (sub) {
    case 'count':
      return PUBLIC.length;
    case 'info':
      return named.map((n) => (COMMAND_BY_NAME.has(n) && !COMMAND_BY_NAME.get(n)!.internal ? commandInfo(COMMAND_BY_NAME.get(n)!) : null));
    case 'docs': {
      const list = named.length === 0 ? PUBLIC : PUBLIC.filter((x) => named.includes(x.name));
      return new RMap(list.map((x) => [x.name, commandDocs(x)]));
    }
    case 'list':
      return PUBLIC.map((x) => x.name);
    case 'getkeys': {
      const cmd = COMMAND_BY_NAME.get(args[2]?.toString('latin1').toLowerCase() ?? '');
      if (!cmd) return err('ERR Invalid command specified');
      const ks = keysOf(cmd, args.slice(2));
      return ks.length > 0 ? ks : err('ERR The command has no key arguments');
    }
    default:
      return err(`ERR unknown subcommand '${args[1]!.toString('latin1').slice(0, 128)}'. Try COMMAND HELP.`);
  }
}
