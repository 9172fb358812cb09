// Expiry over RESP (issue 27): SET EX/PX/EXAT/PXAT/KEEPTTL, SETEX, PSETEX, GETEX, EXPIRE/PEXPIRE/
// EXPIREAT/PEXPIREAT with NX/XX/GT/LT, TTL/PTTL/EXPIRETIME/PEXPIRETIME, PERSIST, and which commands keep
// or drop a key's TTL, sent to rowan and to a real redis-server 7 and compared byte for byte; then keys
// that really expire (read through either kind of port and ioredis, plain and Cluster).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { Cluster, Redis } from 'ioredis';
import { launchReadyCluster, stopCluster, type LaunchedCluster } from '../fixtures/cluster.js';
import { RespSession, haveRedisServer, startRealRedis, type RealRedis } from '../fixtures/real-redis.js';
import { cli, haveRedisTools, readCluster, respPorts, until, useClusterPassword } from '../fixtures/redis.js';

const skip = haveRedisTools() || haveRedisServer();
const dir = mkdtempSync(join(tmpdir(), 'rowan-redis-expiry-'));
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

const FAR = '4000000000'; // a deadline far ahead, in seconds (2096)
const BIG = '9223372036854775807';

/** Documented behaviour and edge cases whose replies do not depend on the moment they run (TTLs of
 *  100 s round to 100 either way). */
const SAME_AS_REDIS: string[][] = [
  // SET's expiry options
  ['SET', 'e1', 'v', 'EX', '100'], ['TTL', 'e1'], ['SET', 'e1', 'v', 'PX', '100000'], ['TTL', 'e1'],
  ['SET', 'e1', 'v', 'EXAT', FAR], ['EXPIRETIME', 'e1'], ['PEXPIRETIME', 'e1'],
  ['SET', 'e1', 'v', 'PXAT', '4000000000123'], ['PEXPIRETIME', 'e1'], ['EXPIRETIME', 'e1'],
  ['SET', 'e1', 'v2', 'KEEPTTL'], ['PEXPIRETIME', 'e1'], ['GET', 'e1'], ['SET', 'e1', 'v3'], ['TTL', 'e1'], ['PTTL', 'e1'],
  ['SET', 'e1', 'v', 'EX', '0'], ['SET', 'e1', 'v', 'EX', '-1'], ['SET', 'e1', 'v', 'PX', '0'], ['SET', 'e1', 'v', 'EX', 'abc'],
  ['SET', 'e1', 'v', 'EX', '1.5'], ['SET', 'e1', 'v', 'EX', BIG], ['SET', 'e1', 'v', 'PX', BIG], ['SET', 'e1', 'v', 'EXAT', '0'],
  ['SET', 'e1', 'v', 'EX', '10', 'PX', '10'], ['SET', 'e1', 'v', 'KEEPTTL', 'EX', '10'], ['SET', 'e1', 'v', 'EX', '10', 'KEEPTTL'],
  ['SET', 'e1', 'v', 'EX'], ['SET', 'e1', 'v', 'PERSIST'], ['SET', 'e1', 'v', 'EX', '10', 'EX', '100'], ['TTL', 'e1'],
  ['SET', 'e1', 'v', 'EXAT', '1'], ['GET', 'e1'], ['EXISTS', 'e1'], ['TTL', 'e1'],
  ['SET', 'e2', 'v', 'XX', 'EX', '100'], ['SET', 'e2', 'v', 'NX', 'GET', 'EX', '100'], ['SET', 'e2', 'w', 'GET', 'KEEPTTL'], ['TTL', 'e2'],
  ['SET', 'e2', 'x', 'NX', 'EX', '5'], ['TTL', 'e2'], ['SET', 'e2', 'y', 'XX', 'GET'], ['TTL', 'e2'],
  // SETEX, PSETEX
  ['SETEX', 's1', '100', 'v'], ['TTL', 's1'], ['SETEX', 's1', '0', 'v'], ['SETEX', 's1', 'abc', 'v'], ['SETEX', 's1', '-3', 'v'],
  ['PSETEX', 's1', '100000', 'w'], ['TTL', 's1'], ['GET', 's1'], ['PSETEX', 's1', '-5', 'v'], ['SETEX', 's1', '100'],
  // GETEX
  ['GETEX', 'none', 'EX', '10'], ['GETEX', 'none', 'EX', 'abc'], ['GETEX', 's1'], ['GETEX', 's1', 'PERSIST'], ['TTL', 's1'],
  ['GETEX', 's1', 'EX', '100'], ['TTL', 's1'], ['GETEX', 's1', 'PX', '200000'], ['TTL', 's1'], ['GETEX', 's1', 'EXAT', FAR], ['EXPIRETIME', 's1'],
  ['GETEX', 's1', 'EX', '0'], ['GETEX', 's1', 'EX', 'x'], ['GETEX', 's1', 'PX', '100', 'EX', '100'], ['GETEX', 's1', 'PERSIST', 'EX', '10'],
  ['GETEX', 's1', 'KEEPTTL'], ['GETEX', 's1', 'NX'], ['GETEX', 's1', 'EX'], ['GETEX', 's1', 'PXAT', '1'], ['EXISTS', 's1'], ['GETEX'],
  // EXPIRE family
  ['SET', 'k1', 'v'], ['EXPIRE', 'k1', '100'], ['TTL', 'k1'], ['EXPIRE', 'k1', '100', 'NX'], ['EXPIRE', 'k1', '200', 'XX'], ['TTL', 'k1'],
  ['EXPIRE', 'k1', '50', 'GT'], ['EXPIRE', 'k1', '300', 'GT'], ['EXPIRE', 'k1', '400', 'LT'], ['EXPIRE', 'k1', '100', 'LT'], ['TTL', 'k1'],
  ['PERSIST', 'k1'], ['PERSIST', 'k1'], ['PERSIST', 'none'], ['EXPIRE', 'k1', '100', 'XX'], ['EXPIRE', 'k1', '100', 'GT'], ['EXPIRE', 'k1', '100', 'LT'], ['TTL', 'k1'],
  ['EXPIRE', 'k1', '100', 'NX', 'XX'], ['EXPIRE', 'k1', '100', 'NX', 'GT'], ['EXPIRE', 'k1', '100', 'GT', 'LT'], ['EXPIRE', 'k1', '100', 'FOO'],
  ['EXPIRE', 'k1', 'abc'], ['EXPIRE', 'k1', 'abc', 'FOO'], ['EXPIRE', 'none', '100'], ['EXPIRE', 'k1', BIG], ['PEXPIRE', 'k1', BIG], ['EXPIRE', 'k1', '-' + BIG],
  ['EXPIREAT', 'k1', FAR], ['EXPIRETIME', 'k1'], ['PEXPIREAT', 'k1', '4000000000500'], ['EXPIRETIME', 'k1'], ['PEXPIRETIME', 'k1'],
  ['PEXPIRE', 'k1', '100000'], ['TTL', 'k1'], ['EXPIRE', 'k1', '-1'], ['EXISTS', 'k1'], ['TTL', 'k1'], ['PTTL', 'none'], ['EXPIRETIME', 'none'],
  ['SET', 'k2', 'v'], ['EXPIRETIME', 'k2'], ['PEXPIRETIME', 'k2'], ['EXPIREAT', 'k2', '100'], ['GET', 'k2'], ['EXPIRE', 'k2'], ['TTL'],
  // What other commands do to a TTL: INCR/APPEND/SETRANGE/SETBIT/INCRBYFLOAT keep it; SET/GETSET/MSET drop it;
  // RENAME carries it, COPY copies it.
  ['SET', 'c', '10', 'EX', '100'], ['INCR', 'c'], ['TTL', 'c'], ['APPEND', 'c', '1'], ['TTL', 'c'], ['SETRANGE', 'c', '0', '9'], ['TTL', 'c'],
  ['SETBIT', 'c', '1', '1'], ['TTL', 'c'], ['SET', 'c', '1.5', 'EX', '100'], ['INCRBYFLOAT', 'c', '1'], ['TTL', 'c'], ['DECRBY', 'c', '1'],
  ['GETSET', 'c', '5'], ['TTL', 'c'], ['SET', 'c', '1', 'EX', '100'], ['SET', 'c', '2'], ['TTL', 'c'],
  ['SET', '{t}m', 'v', 'EX', '100'], ['MSET', '{t}m', 'w', '{t}n', 'x'], ['TTL', '{t}m'],
  ['SET', '{t}r', 'v', 'EX', '100'], ['RENAME', '{t}r', '{t}r2'], ['TTL', '{t}r2'], ['TTL', '{t}r'], ['COPY', '{t}r2', '{t}r3'], ['TTL', '{t}r3'],
  ['SET', '{t}r4', 'v'], ['RENAME', '{t}r4', '{t}r3'], ['TTL', '{t}r3'], ['SET', '{t}r5', 'v', 'EX', '100'], ['RENAMENX', '{t}r5', '{t}r6'], ['TTL', '{t}r6'],
  ['SETNX', 'sn', 'v'], ['TTL', 'sn'], ['SET', 'gd', 'v', 'EX', '100'], ['GETDEL', 'gd'], ['TTL', 'gd'],
];

test('expiry commands: the same replies as redis-server 7, byte for byte (single-endpoint port, forwarding included)', { skip }, async () => {
  const c = readCluster(dir);
  const rowan = await RespSession.open({ port: c.nodes[0]!.resp!.ports[1]! }, password);
  const redis = await RespSession.open({ path: real!.socket }, password);
  for (const cmd of SAME_AS_REDIS) {
    const [a, b] = [await rowan.send(cmd), await redis.send(cmd)];
    assert.equal(a, b, `${cmd.join(' ')}: rowan ${JSON.stringify(a)}, redis-server ${JSON.stringify(b)}`);
  }
  rowan.close();
  redis.close();
});

test('a key expires at its deadline: invisible to GET, EXISTS, TTL, DBSIZE, KEYS and SCAN at once, not before', { skip }, async () => {
  const c = readCluster(dir);
  const single = c.nodes[1]!.resp!.ports[0]!;
  const s = await RespSession.open({ port: single }, password);
  const keys = Array.from({ length: 12 }, (_, i) => `soon:${i}`);
  const before = Number((await s.send(['DBSIZE'])).slice(1));
  const deadline = Date.now() + 1500; // one deadline for all (the nodes share this host's clock)
  for (const k of keys) assert.equal(await s.send(['SET', k, 'v', 'PXAT', String(deadline)]), '+OK\r\n');
  assert.equal(await s.send(['DBSIZE']), `:${before + keys.length}\r\n`);
  const pttl = Number((await s.send(['PTTL', keys[0]!])).slice(1));
  assert.ok(pttl > 0 && pttl <= 1500, `PTTL ${pttl}`);
  await until(async () => (await s.send(['GET', keys[0]!])) === '$-1\r\n', 'the key to expire', 100, 50);
  assert.ok(Date.now() >= deadline, 'not before its deadline');
  for (const k of keys) {
    assert.equal(await s.send(['GET', k]), '$-1\r\n');
    assert.equal(await s.send(['EXISTS', k]), ':0\r\n');
    assert.equal(await s.send(['TTL', k]), ':-2\r\n');
  }
  assert.equal(await s.send(['DBSIZE']), `:${before}\r\n`);
  assert.equal(await s.send(['KEYS', 'soon:*']), '*0\r\n');
  assert.equal(await cli(single, '--scan', '--pattern', 'soon:*'), '');
  // An expired key is absent for conditional writes too.
  assert.equal(await s.send(['SET', keys[1]!, 'again', 'NX']), '+OK\r\n');
  assert.equal(await s.send(['TTL', keys[1]!]), ':-1\r\n');
  assert.equal(await s.send(['INCR', keys[2]!]), ':1\r\n');
  s.close();
});

test('ioredis: set(k, v, "EX", 10), setex, expire, ttl, persist, getex unchanged; plain and Cluster', { skip }, async () => {
  const c = readCluster(dir);
  const io = new Redis({ port: respPorts(c).single[1]!, password });
  assert.equal(await io.set('io:a', 'v', 'EX', 10), 'OK');
  assert.equal(await io.ttl('io:a'), 10);
  assert.equal(await io.setex('io:b', 20, 'v'), 'OK');
  assert.equal(await io.expire('io:b', 30, 'GT'), 1);
  assert.equal(await io.ttl('io:b'), 30);
  assert.equal(await io.persist('io:b'), 1);
  assert.equal(await io.ttl('io:b'), -1);
  assert.equal(await io.getex('io:b', 'PX', 5000), 'v');
  const p = await io.pttl('io:b');
  assert.ok(p > 4000 && p <= 5000, `PTTL ${p}`);
  assert.equal(await io.set('io:c', 'v', 'PX', 200), 'OK');
  await until(async () => (await io.get('io:c')) === null, 'io:c to expire', 100, 50);
  await assert.rejects(io.set('io:d', 'v', 'EX', 0), /ERR invalid expire time in 'set' command/);
  io.disconnect();

  const cluster = new Cluster(respPorts(c).cluster.map((port) => ({ host: '127.0.0.1', port })), { redisOptions: { password } });
  await new Promise((resolve) => cluster.once('ready', resolve));
  assert.equal(await cluster.set('io:e', 'v', 'EX', 10), 'OK');
  assert.equal(await cluster.ttl('io:e'), 10);
  assert.equal(await cluster.expireat('io:e', Number(FAR)), 1);
  assert.equal(await cluster.expiretime('io:e'), Number(FAR));
  assert.equal(await cluster.set('io:f', 'v', 'PX', 200), 'OK');
  await until(async () => (await cluster.exists('io:f')) === 0, 'io:f to expire', 100, 50);
  cluster.disconnect();
});
