// The counter, string-edit and keyspace commands (issue 27) against a real `rowan cluster --workers 2`,
// written from Redis's documented behaviour and checked against a real redis-server 7: the same command
// sequence goes to both and every reply must be the same RESP bytes (types and error strings
// included). Then what only rowan has: the value limit, one-shard RENAME/COPY/MSETNX (CROSSSLOT, and
// keys of one shard but several slots forwarded by a single-endpoint port), KEYS/RANDOMKEY over the
// whole cluster or a cluster port's slots, and ioredis (Redis and Cluster) using them unchanged.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { Cluster, Redis } from 'ioredis';
import type { ClusterConfig } from '../../config/cluster.js';
import { keySlot, shardOfSlot } from '../../config/slots.js';
import { launchReadyCluster, stopCluster, type LaunchedCluster } from '../fixtures/cluster.js';
import { RespSession, haveRedisServer, startRealRedis, type RealRedis } from '../fixtures/real-redis.js';
import { cli, haveRedisTools, readCluster, respPorts, useClusterPassword } from '../fixtures/redis.js';

const skip = haveRedisTools() || haveRedisServer();
const dir = mkdtempSync(join(tmpdir(), 'rowan-redis-commands-'));
let cl: LaunchedCluster | null = null;
let real: RealRedis | null = null;
let password = '';

before(async () => {
  if (skip) return;
  cl = await launchReadyCluster(dir, ['--shards', '12', '--workers', '2']);
  password = useClusterPassword(dir);
  real = await startRealRedis(dir, password);
});

after(async () => {
  await real?.stop();
  if (cl) await stopCluster(cl.child);
  rmSync(dir, { recursive: true, force: true });
});

/** Redis's documented examples and edge cases; every multi-key command names one slot ({t}). */
const SAME_AS_REDIS: string[][] = [
  ['SET', 'mykey', '10'], ['INCR', 'mykey'], ['GET', 'mykey'], ['DECR', 'mykey'], ['INCRBY', 'mykey', '5'], ['DECRBY', 'mykey', '3'],
  ['INCR', 'fresh'], ['DECR', 'fresh2'], ['INCRBY', 'fresh3', '-7'],
  ['SET', 'big', '9223372036854775807'], ['INCR', 'big'], ['DECRBY', 'big', '-1'], ['INCRBY', 'big', '-9223372036854775807'], ['GET', 'big'],
  ['SET', 'small', '-9223372036854775808'], ['DECR', 'small'], ['DECRBY', 'x', '-9223372036854775808'], ['INCRBY', 'x', '9223372036854775808'],
  ['SET', 'notint', 'abc'], ['INCR', 'notint'], ['INCRBY', 'mykey', 'abc'], ['INCRBY', 'mykey', '1.5'],
  ['SET', 'z', '-0'], ['INCR', 'z'], ['SET', 'z', '01'], ['INCR', 'z'], ['SET', 'z', ' 1'], ['INCR', 'z'], ['SET', 'z', '+1'], ['INCR', 'z'],
  ['SET', 'f', '10.50'], ['INCRBYFLOAT', 'f', '0.1'], ['INCRBYFLOAT', 'f', '-5'], ['SET', 'f', '5.0e3'], ['INCRBYFLOAT', 'f', '2.0e2'],
  ['INCRBYFLOAT', 'f2', '0.1'], ['INCRBYFLOAT', 'f2', '0.2'], ['INCRBYFLOAT', 'f3', '123456789.123456789'], ['INCRBYFLOAT', 'f4', '1e400'],
  ['INCRBYFLOAT', 'f5', '1.5e-7'], ['INCRBYFLOAT', 'f5', '0x10'], ['INCRBYFLOAT', 'f5', '.5'], ['INCRBYFLOAT', 'f6', '3'],
  ['INCRBYFLOAT', 'f7', 'inf'], ['INCRBYFLOAT', 'f7', 'nan'], ['INCRBYFLOAT', 'f7', ' 1'], ['INCRBYFLOAT', 'f7', '1e5000'], ['INCRBYFLOAT', 'notint', '1'],
  ['INCR', 'f'], ['GET', 'f3'],
  ['SET', 's', 'This is a string'], ['GETRANGE', 's', '0', '3'], ['GETRANGE', 's', '-3', '-1'], ['GETRANGE', 's', '0', '-1'], ['GETRANGE', 's', '10', '100'],
  ['GETRANGE', 's', '5', '3'], ['GETRANGE', 's', '-100', '-50'], ['GETRANGE', 's', '-1', '-5'], ['GETRANGE', 'none', '0', '-1'], ['GETRANGE', 's', 'a', '1'], ['SUBSTR', 's', '0', '3'],
  ['SET', 'key1', 'Hello World'], ['SETRANGE', 'key1', '6', 'Redis'], ['GET', 'key1'], ['SETRANGE', 'key2', '6', 'Redis'], ['GET', 'key2'],
  ['SETRANGE', 'key2', '-1', 'x'], ['SETRANGE', 'key3', '10', ''], ['EXISTS', 'key3'], ['SETRANGE', 'key2', '0', ''], ['SETRANGE', 'key2', 'a', 'x'],
  ['APPEND', 'ap', 'Hello'], ['APPEND', 'ap', ' World'], ['GET', 'ap'], ['STRLEN', 'ap'],
  ['SETBIT', 'bits', '7', '1'], ['SETBIT', 'bits', '7', '0'], ['SETBIT', 'bits', '100', '1'], ['GET', 'bits'], ['GETBIT', 'bits', '100'], ['GETBIT', 'bits', '101'],
  ['GETBIT', 'bits', '999999'], ['GETBIT', 'none', '3'], ['SETBIT', 'bits', '7', '2'], ['SETBIT', 'bits', '-1', '1'], ['SETBIT', 'bits', 'a', '1'], ['GETBIT', 'bits', '-1'],
  ['SET', 'mk', 'foobar'], ['BITCOUNT', 'mk'], ['BITCOUNT', 'mk', '0', '0'], ['BITCOUNT', 'mk', '1', '1'], ['BITCOUNT', 'mk', '1', '1', 'BYTE'], ['BITCOUNT', 'mk', '5', '30', 'BIT'],
  ['BITCOUNT', 'mk', '-2', '-1'], ['BITCOUNT', 'mk', '0', '-1', 'bit'], ['BITCOUNT', 'mk', '0'], ['BITCOUNT', 'mk', '0', '1', 'foo'], ['BITCOUNT', 'mk', 'a', 'b'],
  ['BITCOUNT', 'none'], ['BITCOUNT', 'none', '0'],
  ['GETSET', 'mk', 'new'], ['GETSET', 'gs', 'v'], ['GET', 'gs'],
  ['MSETNX', '{t}a', '1', '{t}b', '2'], ['MSETNX', '{t}a', '1', '{t}c', '3'], ['MGET', '{t}a', '{t}b', '{t}c'], ['MSETNX', '{t}a', '1', '{t}b'],
  ['RENAME', '{t}none', '{t}x'], ['RENAME', '{t}a', '{t}a'], ['RENAME', '{t}a', '{t}a2'], ['GET', '{t}a'], ['GET', '{t}a2'], ['RENAME', '{t}a2', '{t}b'], ['GET', '{t}b'],
  ['RENAMENX', '{t}b', '{t}b'], ['RENAMENX', '{t}none', '{t}none'], ['SET', '{t}c', 'c'], ['RENAMENX', '{t}b', '{t}c'], ['RENAMENX', '{t}b', '{t}d'], ['MGET', '{t}b', '{t}d'],
  ['COPY', '{t}d', '{t}d'], ['COPY', '{t}none', '{t}e'], ['COPY', '{t}d', '{t}e'], ['COPY', '{t}d', '{t}e'], ['COPY', '{t}c', '{t}e', 'REPLACE'], ['GET', '{t}e'],
  ['COPY', '{t}d', '{t}e', 'DB', 'x'], ['COPY', '{t}d', '{t}e', 'foo'], ['COPY', '{t}d', '{t}e', 'DB'], ['COPY', '{t}d', '{t}f', 'REPLACE', 'DB', '0'],
  ['TYPE', '{t}d'], ['TYPE', 'none'], ['TOUCH', '{t}d', '{t}none', '{t}d'], ['UNLINK', '{t}f', '{t}none'], ['EXISTS', '{t}f'],
  ['SET', 'n', '12345'], ['OBJECT', 'ENCODING', 'n'], ['OBJECT', 'ENCODING', 's'], ['SET', 'long', 'x'.repeat(45)], ['OBJECT', 'ENCODING', 'long'],
  ['OBJECT', 'ENCODING', 'none'], ['OBJECT', 'ENCODING', 'n', 'extra'], ['OBJECT', 'REFCOUNT', 's'], ['OBJECT', 'FREQ', 's'], ['OBJECT', 'HELP'], ['OBJECT', 'foo'], ['OBJECT'],
  // 64-bit replies beyond 2^53, also through the forwarding hop (the keys land on every node).
  ...['h1', 'h2', 'h3', 'h4'].flatMap((k) => [['SET', k, '9007199254740993'], ['INCR', k], ['DECRBY', k, '-9223372036854775000']]),
  ['INCR'], ['GETRANGE', 's', '0'], ['KEYS'], ['RANDOMKEY', 'x'], ['TIME', 'x'],
];

test('INCR..BITCOUNT, GETSET, MSETNX, RENAME, COPY, TYPE, TOUCH, UNLINK, OBJECT: the same replies as redis-server 7, byte for byte', { skip }, async () => {
  const c = readCluster(dir);
  // Node 0's second worker: keys of the other nodes are forwarded, those of node 0 run on worker 1.
  const rowan = await RespSession.open({ port: c.nodes[0]!.resp!.ports[1]! }, password);
  const redis = await RespSession.open({ path: real!.socket }, password);
  for (const cmd of SAME_AS_REDIS) {
    const [a, b] = [await rowan.send(cmd), await redis.send(cmd)];
    assert.equal(a, b, `${cmd.join(' ')}: rowan ${JSON.stringify(a)}, redis-server ${JSON.stringify(b)}`);
  }
  rowan.close();
  redis.close();
});

/** Two keys of one shard served by `node` whose slots differ. */
function oneShardTwoSlots(c: ClusterConfig, node: number): [string, string] {
  const seen = new Map<number, { key: string; slot: number }>();
  for (let i = 0; ; i++) {
    const key = `os:${i}`;
    const slot = keySlot(Buffer.from(key));
    const shard = shardOfSlot(slot, c.shardCount);
    if (c.shards[shard]!.primary !== node) continue;
    const prev = seen.get(shard);
    if (prev && prev.slot !== slot) return [prev.key, key];
    seen.set(shard, { key, slot });
  }
}

test('rowan beyond Redis: the value limit, one-shard multi-key commands, DB other than 0, TIME', { skip }, async () => {
  const c = readCluster(dir);
  const single = c.nodes[0]!.resp!.ports[0]!;
  const clusterPort = c.nodes[0]!.resp!.clusterPorts[0]!;
  // The value limit (limits.valueBytesMax) bounds what SETRANGE, APPEND and SETBIT may build.
  const over = await cli(single, 'SETRANGE', 'lim', String(64 << 20), 'x');
  const m = /^ERR string exceeds maximum allowed size \(rowan's value limit, (\d+) bytes\)$/.exec(over);
  assert.ok(m, over);
  const limit = Number(m[1]);
  assert.equal(await cli(single, 'SETRANGE', 'lim', String(limit), 'x'), over);
  assert.equal(await cli(single, 'SETRANGE', 'lim', '1000', 'x'), '1001');
  const s = await RespSession.open({ port: single }, password);
  assert.equal(await s.send(['APPEND', 'lim', Buffer.alloc(limit, 'y')]), `-${over}\r\n`);
  s.close();
  assert.equal(await cli(single, 'STRLEN', 'lim'), '1001');
  assert.equal(await cli(single, 'SETBIT', 'lim2', String(limit * 8), '1'), 'ERR bit offset is not an integer or out of range');
  assert.equal(await cli(single, 'SETBIT', 'lim2', '8000', '1'), '0');
  // Keys of two shards: CROSSSLOT on both kinds of port (a single-endpoint port names the shards).
  assert.match(await cli(single, 'RENAME', 'a1', 'a2'), /^CROSSSLOT Keys in request don't hash to the same shard \(shards \d+ and \d+: rowan runs this command atomically within one shard\)$/);
  assert.equal(await cli(clusterPort, 'MSETNX', 'a1', 'x', 'a2', 'y'), "CROSSSLOT Keys in request don't hash to the same slot");
  // One shard of node 1, two slots: fine on a single-endpoint port of node 0 (forwarded as one
  // command), CROSSSLOT on a cluster port as in Redis Cluster.
  const [k1, k2] = oneShardTwoSlots(c, 1);
  assert.equal(await cli(single, 'MSETNX', k1, 'one', k2, 'two'), '1');
  assert.equal(await cli(single, 'RENAME', k1, k2), 'OK');
  assert.equal(await cli(single, 'MGET', k1, k2), '\none');
  assert.equal(await cli(single, 'COPY', k2, k1), '1');
  assert.equal(await cli(single, 'RENAMENX', k2, k1), '0');
  assert.equal(await cli(single, 'SET', '{t}lk', 'v'), 'OK');
  assert.equal(await cli(single, 'RENAME', '{t}lk', `{t}${'x'.repeat(2000)}`), 'ERR ROWAN_ERR_KEY_TOO_LARGE key of 2003 bytes (1..1024)');
  assert.equal(await cli(single, 'GET', '{t}lk'), 'v');
  assert.equal(await cli(c.nodes[1]!.resp!.clusterPorts[0]!, '-c', 'RENAME', k1, k2), "CROSSSLOT Keys in request don't hash to the same slot");
  assert.equal(await cli(single, 'COPY', k1, 'dst', 'DB', '1'), 'ERR DB index is out of range');
  assert.equal(await cli(clusterPort, 'COPY', '{t}1', '{t}2', 'DB', '1'), 'ERR Copying to another database is not allowed in cluster mode');
  // A 64-bit integer reply beyond 2^53 crosses the forwarding hop exact (node 1's key via node 0).
  let far = 'far:0';
  for (let i = 1; c.shards[shardOfSlot(keySlot(Buffer.from(far)), c.shardCount)]!.primary === 0; i++) far = `far:${i}`;
  assert.equal(await cli(single, 'SET', far, '9007199254740993'), 'OK');
  assert.equal(await cli(single, 'INCRBY', far, '9007199254740993'), '18014398509481986');
  const [sec, us] = (await cli(single, 'TIME')).split('\n').map(Number);
  assert.ok(Number.isInteger(sec) && Number.isInteger(us) && us! >= 0 && us! < 1e6, `${sec} ${us}`);
  assert.ok(Math.abs(sec! - Date.now() / 1000) < 3600, `TIME ${sec} is the node's wall clock`);
});

test('KEYS and RANDOMKEY: the whole cluster on a single-endpoint port, its own slots on a cluster port; ioredis Redis and Cluster', { skip }, async () => {
  const c = readCluster(dir);
  const io = new Redis({ port: respPorts(c).single[2]!, password });
  const names = Array.from({ length: 40 }, (_, i) => `ks:${i}`);
  for (const k of names) assert.equal(await io.set(k, k), 'OK');
  assert.deepEqual((await io.keys('ks:*')).sort(), [...names].sort());
  assert.deepEqual((await io.keys('ks:[1-2]?')).sort(), names.filter((k) => /^ks:[12]\d$/.test(k)).sort());
  const r = await io.randomkey();
  assert.ok(r !== null && (await io.exists(r)) === 1, `RANDOMKEY ${r}`);
  assert.equal(await io.type('ks:1'), 'string');
  assert.equal(await io.type('ks:none'), 'none');
  assert.equal(await io.incr('ks:counter'), 1);
  assert.equal(await io.incrbyfloat('ks:float', '2.5'), '2.5');
  assert.equal(await io.append('ks:1', '!'), 5);
  assert.equal(await io.getrange('ks:1', 0, 2), 'ks:');
  io.disconnect();

  const cluster = new Cluster(respPorts(c).cluster.map((port) => ({ host: '127.0.0.1', port })), { redisOptions: { password } });
  await new Promise((resolve) => cluster.once('ready', resolve)); // nodes('master') is empty before
  assert.equal(cluster.nodes('master').length, 6, 'three nodes of two workers: six Redis masters');
  const perMaster = await Promise.all(cluster.nodes('master').map((n) => n.keys('ks:*')));
  const all = perMaster.flat();
  assert.equal(new Set(all).size, all.length, 'every key on one cluster port only');
  assert.deepEqual(all.filter((k) => k.startsWith('ks:') && !k.includes('counter') && !k.includes('float')).sort(), [...names].sort());
  for (const n of cluster.nodes('master')) {
    const k = await n.randomkey();
    if (k !== null) assert.equal(await n.exists(k), 1, `${k} is served by the port that returned it`);
  }
  assert.equal(await cluster.incrby('{c}n', 5), 5);
  assert.equal(await cluster.decrby('{c}n', 7), -2);
  assert.equal(await cluster.getset('{c}n', 'x'), '-2');
  assert.equal(await cluster.msetnx('{c}a', '1', '{c}b', '2'), 1);
  assert.equal(await cluster.rename('{c}a', '{c}z'), 'OK');
  assert.equal(await cluster.copy('{c}z', '{c}y'), 1);
  assert.deepEqual(await cluster.mget('{c}a', '{c}z', '{c}y'), [null, '1', '1']);
  assert.equal(await cluster.setbit('{c}bits', 9, 1), 0);
  assert.equal(await cluster.bitcount('{c}bits'), 1);
  assert.equal(await cluster.unlink('{c}y', '{c}z'), 2);
  await assert.rejects(cluster.incrby('{c}n', 1), /ERR value is not an integer or out of range/);
  cluster.disconnect();
});
