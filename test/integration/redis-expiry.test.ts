// Expiry over RESP (issue 27): SET EX/PX/EXAT/PXAT/KEEPTTL, SETEX, PSETEX, GETEX, EXPIRE/PEXPIRE/
// EXPIREAT/PEXPIREAT with NX/XX/GT/LT, TTL/PTTL/EXPIRETIME/PEXPIRETIME, PERSIST, and which commands keep
// or drop a key's TTL, sent to rowan and to a real redis-server 7 and compared byte for byte; then keys
// that really expire (read through either kind of port and ioredis, plain and Cluster).
// Time passes between the two servers' replies, and on a loaded machine a lot of it: TTL and PTTL
// replies are compared within the time the comparison has run (ttlClose), and a check that a key is
// still there counts only when its reply came back before the deadline (else it is redone with a
// window twice as long). Each subtest deletes the keys it wrote, so a failed one leaves nothing behind.
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

/** Every key SAME_AS_REDIS names (deleted after it on both servers). */
const SAME_KEYS = [...new Set(SAME_AS_REDIS.flatMap((cmd) => cmd.slice(1)).filter((a) => /^(e|s|k|c)\d?$|^(sn|gd|none)$|^\{t\}/.test(a)))];

/** Redis's TTL and PTTL of deadline `at` (Unix ms) at moment `now`: TTL rounds to the nearest second. */
function ttlAt(name: string, at: number, now: number): number {
  const ms = Math.max(0, at - now);
  return name === 'PTTL' ? ms : Math.floor((ms + 500) / 1000);
}

/** Whether reply `r` to TTL/PTTL is what deadline `at` gives at some moment of `[from, to]`. */
function fits(name: string, r: number, at: number, [from, to]: [number, number]): boolean {
  return r >= ttlAt(name, at, to) && r <= ttlAt(name, at, from);
}

/**
 * Two TTL or PTTL replies that differ only because time passed between them. Both servers give their
 * own deadline (PEXPIRETIME, which does not move): each reply must be what its deadline gives at a
 * moment of its request's round trip (`rt`, `st`), and the two deadlines, set by the same command sent
 * to one server and then the other, may differ by at most the longest such pair of round trips
 * (`slowest`) -- a tolerance of one command's latency, whatever the whole comparison took.
 */
async function sameTtl(cmd: string[], a: string, b: string, sessions: [RespSession, RespSession], rt: [number, number], st: [number, number], slowest: number): Promise<boolean> {
  const name = cmd[0]!.toUpperCase();
  const [x, y] = [/^:(\d+)\r\n$/.exec(a), /^:(\d+)\r\n$/.exec(b)];
  if ((name !== 'TTL' && name !== 'PTTL') || !x || !y) return false;
  const [ra, sa] = await Promise.all(sessions.map(async (s) => Number((await s.send(['PEXPIRETIME', cmd[1]!])).slice(1))));
  return Math.abs(ra! - sa!) <= slowest && fits(name, Number(x[1]), ra!, rt) && fits(name, Number(y[1]), sa!, st);
}

test('expiry commands: the same replies as redis-server 7, byte for byte (TTLs up to the time passed; single-endpoint port, forwarding included)', { skip }, async () => {
  const c = readCluster(dir);
  const rowan = await RespSession.open({ port: c.nodes[0]!.resp!.ports[1]! }, password);
  const redis = await RespSession.open({ path: real!.socket }, password);
  try {
    let slowest = 0; // the longest a command took from rowan's request to redis-server's reply (ms)
    for (const cmd of SAME_AS_REDIS) {
      const t0 = Date.now();
      const a = await rowan.send(cmd);
      const t1 = Date.now();
      const b = await redis.send(cmd);
      const t2 = Date.now();
      slowest = Math.max(slowest, t2 - t0);
      if (a === b) continue;
      const ok = await sameTtl(cmd, a, b, [rowan, redis], [t0, t1], [t1, t2], slowest);
      assert.ok(ok, `${cmd.join(' ')}: rowan ${JSON.stringify(a)}, redis-server ${JSON.stringify(b)} (within ${t2 - t0} ms, slowest command ${slowest} ms)`);
    }
  } finally {
    await rowan.send(['DEL', ...SAME_KEYS]);
    await redis.send(['FLUSHALL']);
    rowan.close();
    redis.close();
  }
});

/**
 * Write `keys` with one deadline `windowMs` ahead and check what must hold before it (counted, PTTL).
 * A check counts only if its reply came back before the deadline; false when one did not (the machine
 * outlasted the window: the caller tries again with a longer one, on other keys).
 */
async function writeBeforeDeadline(s: RespSession, keys: string[], windowMs: number): Promise<{ deadline: number; before: number } | false> {
  const before = Number((await s.send(['DBSIZE'])).slice(1));
  const deadline = Date.now() + windowMs; // one deadline for all (the nodes share this host's clock)
  for (const k of keys) assert.equal(await s.send(['SET', k, 'v', 'PXAT', String(deadline)]), '+OK\r\n');
  const size = await s.send(['DBSIZE']);
  const pttl = Number((await s.send(['PTTL', keys[0]!])).slice(1));
  if (Date.now() >= deadline) return false;
  assert.equal(size, `:${before + keys.length}\r\n`, 'every key counted before its deadline');
  assert.ok(pttl > 0 && pttl <= windowMs, `PTTL ${pttl} before the deadline`);
  return { deadline, before };
}

test('a key expires at its deadline: invisible to GET, EXISTS, TTL, DBSIZE, KEYS and SCAN at once, not before', { skip }, async () => {
  const c = readCluster(dir);
  const single = c.nodes[1]!.resp!.ports[0]!;
  const s = await RespSession.open({ port: single }, password);
  let keys: string[] = [];
  try {
    let w: { deadline: number; before: number } | false = false;
    for (let round = 0, windowMs = 1500; !w; round++, windowMs *= 2) {
      assert.ok(round < 5, 'the machine outlasted a 24 s window five times');
      keys = Array.from({ length: 12 }, (_, i) => `soon${round}:${i}`);
      w = await writeBeforeDeadline(s, keys, windowMs);
      if (!w) await until(async () => (await s.send(['EXISTS', ...keys])) === ':0\r\n', 'the keys of a window too short to expire', 200, 50);
    }
    const { deadline, before } = w;
    await until(async () => (await s.send(['GET', keys[0]!])) === '$-1\r\n', 'the key to expire', 200, 50);
    assert.ok(Date.now() >= deadline, 'not before its deadline');
    for (const k of keys) {
      assert.equal(await s.send(['GET', k]), '$-1\r\n');
      assert.equal(await s.send(['EXISTS', k]), ':0\r\n');
      assert.equal(await s.send(['TTL', k]), ':-2\r\n');
    }
    assert.equal(await s.send(['DBSIZE']), `:${before}\r\n`);
    assert.equal(await s.send(['KEYS', 'soon*']), '*0\r\n');
    assert.equal(await cli(single, '--scan', '--pattern', 'soon*'), '');
    // An expired key is absent for conditional writes too.
    assert.equal(await s.send(['SET', keys[1]!, 'again', 'NX']), '+OK\r\n');
    assert.equal(await s.send(['TTL', keys[1]!]), ':-1\r\n');
    assert.equal(await s.send(['INCR', keys[2]!]), ':1\r\n');
  } finally {
    if (keys.length > 0) await s.send(['DEL', ...keys]);
    s.close();
  }
});

/** TTL reply `t` of a key given `seconds` at `setAt` (Date.now() before the write was sent): what
 *  Redis's rounding gives from then until now. */
function assertTtl(t: number, seconds: number, setAt: number, what: string): void {
  const low = Math.floor((seconds * 1000 - (Date.now() - setAt) + 500) / 1000);
  assert.ok(t >= low && t <= seconds, `${what}: TTL ${t}, expected ${low}..${seconds}`);
}

test('ioredis: set(k, v, "EX", 10), setex, expire, ttl, persist, getex unchanged; plain and Cluster', { skip }, async () => {
  const c = readCluster(dir);
  const io = new Redis({ port: respPorts(c).single[1]!, password });
  const cluster = new Cluster(respPorts(c).cluster.map((port) => ({ host: '127.0.0.1', port })), { redisOptions: { password } });
  const clusterReady = new Promise((resolve) => cluster.once('ready', resolve));
  try {
    let at = Date.now();
    assert.equal(await io.set('io:a', 'v', 'EX', 10), 'OK');
    assertTtl(await io.ttl('io:a'), 10, at, 'io:a');
    assert.equal(await io.setex('io:b', 20, 'v'), 'OK');
    at = Date.now();
    assert.equal(await io.expire('io:b', 30, 'GT'), 1);
    assertTtl(await io.ttl('io:b'), 30, at, 'io:b');
    assert.equal(await io.persist('io:b'), 1);
    assert.equal(await io.ttl('io:b'), -1);
    at = Date.now();
    assert.equal(await io.getex('io:b', 'PX', 5000), 'v');
    const p = await io.pttl('io:b');
    assert.ok(p >= 5000 - (Date.now() - at) && p <= 5000, `PTTL ${p}`);
    assert.equal(await io.set('io:c', 'v', 'PX', 200), 'OK');
    await until(async () => (await io.get('io:c')) === null, 'io:c to expire', 200, 50);
    await assert.rejects(io.set('io:d', 'v', 'EX', 0), /ERR invalid expire time in 'set' command/);

    await clusterReady;
    at = Date.now();
    assert.equal(await cluster.set('io:e', 'v', 'EX', 10), 'OK');
    assertTtl(await cluster.ttl('io:e'), 10, at, 'io:e');
    assert.equal(await cluster.expireat('io:e', Number(FAR)), 1);
    assert.equal(await cluster.expiretime('io:e'), Number(FAR));
    assert.equal(await cluster.set('io:f', 'v', 'PX', 200), 'OK');
    await until(async () => (await cluster.exists('io:f')) === 0, 'io:f to expire', 200, 50);
  } finally {
    await io.del('io:a', 'io:b', 'io:c', 'io:d', 'io:e', 'io:f');
    io.disconnect();
    cluster.disconnect();
  }
});

/** INFO keyspace's db0 line as numbers ({0, 0, 0} when there is none: Redis leaves an empty db out). */
function db0(info: string): { keys: number; expires: number; avgTtl: number } {
  const m = /db0:keys=(\d+),expires=(\d+),avg_ttl=(\d+)/.exec(info);
  return m ? { keys: Number(m[1]), expires: Number(m[2]), avgTtl: Number(m[3]) } : { keys: 0, expires: 0, avgTtl: 0 };
}

test('INFO keyspace counts the keys with a deadline (expires) and their mean TTL (avg_ttl, ms), over the cluster on a single-endpoint port, per slot range on a cluster port', { skip }, async () => {
  const c = readCluster(dir);
  const s = await RespSession.open({ port: respPorts(c).single[0]! }, password);
  const clusterPorts = c.nodes.flatMap((n) => n.resp!.clusterPorts); // one per worker, each its own shards
  const withTtl = Array.from({ length: 30 }, (_, i) => `ks:ttl:${i}`);
  const without = Array.from({ length: 20 }, (_, i) => `ks:plain:${i}`);
  try {
    const before = db0(await s.send(['INFO', 'keyspace']));
    const beforeAt = Date.now();
    const deadline = beforeAt + 1_000_000;
    for (const k of withTtl) assert.equal(await s.send(['SET', k, 'v', 'PXAT', String(deadline)]), '+OK\r\n');
    for (const k of without) assert.equal(await s.send(['SET', k, 'v']), '+OK\r\n');
    const asked = Date.now();
    const now = db0(await s.send(['INFO', 'keyspace']));
    assert.equal(now.keys, before.keys + withTtl.length + without.length, 'keys');
    assert.equal(now.expires, before.expires + withTtl.length, 'expires');
    // The mean of the TTLs the keys had when INFO walked them (after `asked`), with whatever was there before.
    // (The keys there before lost at most the time since `beforeAt`; each node rounds its mean.)
    const mean = (ttl: number, older: number) => (older * before.expires + ttl * withTtl.length) / now.expires;
    const low = mean(deadline - Date.now(), Math.max(0, before.avgTtl - (Date.now() - beforeAt)));
    const high = mean(deadline - asked, before.avgTtl);
    assert.ok(now.avgTtl >= Math.floor(low) - 1 && now.avgTtl <= Math.ceil(high) + 1, `avg_ttl ${now.avgTtl}, expected ${Math.round(low)}..${Math.round(high)}`);
    // A cluster port counts its own slots: the ports together count every key once.
    let expires = 0;
    for (const port of clusterPorts) {
      const p = await RespSession.open({ port }, password);
      expires += db0(await p.send(['INFO', 'keyspace'])).expires;
      p.close();
    }
    assert.equal(expires, now.expires, 'the cluster ports together');
    // PERSIST takes a key out of expires; DEL out of both.
    assert.equal(await s.send(['PERSIST', withTtl[0]!]), ':1\r\n');
    assert.equal(await s.send(['DEL', withTtl[1]!, without[0]!]), ':2\r\n');
    const after = db0(await s.send(['INFO', 'keyspace']));
    assert.deepEqual([after.keys, after.expires], [now.keys - 2, now.expires - 2]);
  } finally {
    await s.send(['DEL', ...withTtl, ...without]);
    s.close();
  }
});
