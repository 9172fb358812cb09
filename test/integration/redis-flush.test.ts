// FLUSHDB / FLUSHALL on the Redis front end (issue 27), against a real rowan cluster: redis-cli and
// ioredis (plain and Cluster) unchanged, Redis 7's replies and errors (checked against redis-server
// 7.0), DBSIZE and INFO keyspace at 0 afterwards on every port, keys written after a flush kept, a
// watched key that a flush removed aborting EXEC, and the cluster port flushing only the slots it
// serves (as a Redis Cluster master does).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { Cluster, Redis } from 'ioredis';
import { launchReadyCluster, stopCluster, type LaunchedCluster } from '../fixtures/cluster.js';
import { cli, haveRedisTools, raw, readCluster, respPorts, useClusterPassword } from '../fixtures/redis.js';

const skip = haveRedisTools();
const dir = mkdtempSync(join(tmpdir(), 'rowan-redis-flush-'));
let cl: LaunchedCluster | null = null;
let password = '';

before(async () => {
  if (skip) return;
  cl = await launchReadyCluster(dir, ['--shards', '6', '--workers', '2']);
  password = useClusterPassword(dir);
});

after(async () => {
  if (cl) await stopCluster(cl.child);
  rmSync(dir, { recursive: true, force: true });
});

/** The replies to `cmds` (inline commands) on a fresh connection, QUIT's +OK stripped. */
async function replies(port: number, cmds: string[]): Promise<string> {
  const r = await raw(port, [cmds.map((x) => `${x}\r\n`).join('') + 'QUIT\r\n'], 20_000);
  assert.ok(r.text.endsWith('+OK\r\n'), `QUIT answered: ${JSON.stringify(r.text)}`);
  return r.text.slice(0, -5);
}

async function writeKeys(r: Redis, prefix: string, n: number): Promise<string[]> {
  const keys = Array.from({ length: n }, (_, i) => `${prefix}:${i}`);
  const p = r.pipeline();
  for (const k of keys) p.set(k, `v-${k}`);
  const rs = await p.exec();
  for (const [e, v] of rs!) assert.equal(e === null ? v : e, 'OK');
  return keys;
}

/** DBSIZE on every single-endpoint port (each counts the whole cluster). */
async function dbsizes(): Promise<number[]> {
  return Promise.all(respPorts(readCluster(dir)).single.map(async (port) => Number(await cli(port, 'DBSIZE'))));
}

test('FLUSHALL and FLUSHDB on a single-endpoint port (redis-cli) empty the whole cluster; later writes stay', { skip }, async () => {
  const ports = respPorts(readCluster(dir)).single;
  const r = new Redis({ port: ports[0], password });
  const old = await writeKeys(r, 'fa', 120);
  assert.deepEqual(await dbsizes(), ports.map(() => 120));
  assert.equal(await cli(ports[1]!, 'FLUSHALL'), 'OK');
  assert.deepEqual(await dbsizes(), ports.map(() => 0), 'DBSIZE 0 on every port after FLUSHALL');
  for (const k of old.slice(0, 20)) assert.equal(await r.get(k), null, `${k} flushed`);
  assert.equal(await r.exists(...old), 0);
  assert.deepEqual(await r.keys('fa:*'), []);
  const info = await cli(ports[2]!, 'INFO', 'keyspace');
  assert.ok(!/db0:/.test(info), `INFO keyspace after FLUSHALL: ${info}`);
  // Written after the flush: kept, counted, readable; and a second flush (FLUSHDB ASYNC) takes them too.
  const fresh = await writeKeys(r, 'fb', 30);
  assert.deepEqual(await dbsizes(), ports.map(() => 30));
  for (const k of fresh) assert.equal(await r.get(k), `v-${k}`);
  assert.match(await cli(ports[0]!, 'INFO', 'keyspace'), /db0:keys=30,expires=0/);
  assert.equal(await cli(ports[0]!, 'FLUSHDB', 'ASYNC'), 'OK');
  assert.deepEqual(await dbsizes(), ports.map(() => 0));
  assert.equal(await cli(ports[0]!, 'FLUSHALL', 'SYNC'), 'OK', 'a flush of an empty cluster');
  r.disconnect();
});

test('Redis 7 replies and errors (as redis-server 7.0 answers them)', { skip }, async () => {
  const c = readCluster(dir);
  for (const port of [respPorts(c).single[0]!, respPorts(c).cluster[0]!]) {
    assert.equal(
      await replies(port, ['FLUSHALL', 'FLUSHALL ASYNC', 'FLUSHALL sync', 'FLUSHALL foo', 'FLUSHALL ASYNC SYNC', 'FLUSHDB', 'FLUSHDB async', 'FLUSHDB x', 'FLUSHDB SYNC SYNC']),
      '+OK\r\n+OK\r\n+OK\r\n-ERR syntax error\r\n-ERR syntax error\r\n+OK\r\n+OK\r\n-ERR syntax error\r\n-ERR syntax error\r\n',
    );
    // rowan runs a transaction within one shard: FLUSHALL cannot be queued (Redis would run it).
    assert.equal(
      await replies(port, ['MULTI', 'FLUSHALL', 'EXEC']),
      '+OK\r\n-ERR FLUSHALL inside MULTI is not supported by rowan (a transaction runs within one shard)\r\n-EXECABORT Transaction discarded because of previous errors.\r\n',
    );
  }
});

test('a watched key that a flush removed aborts EXEC; one that did not exist does not (as in Redis)', { skip }, async () => {
  const c = readCluster(dir);
  for (const port of [respPorts(c).single[0]!, respPorts(c).cluster[0]!]) {
    const admin = new Redis({ port: respPorts(c).single[1], password });
    const k = port === respPorts(c).single[0] ? 'w:single' : await keyServedBy(port);
    const a = new Redis({ port, password });
    assert.equal(await a.set(k, '1'), 'OK');
    assert.equal(await a.watch(k), 'OK');
    assert.equal(await admin.flushall(), 'OK');
    assert.equal(await a.multi().set(k, '2').exec(), null, 'EXEC aborted: the flush changed the watched key');
    assert.equal(await a.get(k), null);
    assert.equal(await a.watch(k), 'OK'); // absent now, and still absent after the next flush
    assert.equal(await admin.flushdb(), 'OK');
    assert.deepEqual(await a.multi().set(k, '3').exec(), [[null, 'OK']]);
    assert.equal(await a.get(k), '3');
    assert.equal(await admin.flushall(), 'OK');
    a.disconnect();
    admin.disconnect();
  }
});

/** A key whose slot the cluster port `port` serves. */
async function keyServedBy(port: number): Promise<string> {
  const r = new Redis({ port, password });
  try {
    for (let i = 0; ; i++) {
      const k = `w:cluster:${i}`;
      const reply = await r.get(k).then(
        () => 'ok',
        (e: Error) => e.message,
      );
      if (reply === 'ok') return k;
    }
  } finally {
    r.disconnect();
  }
}

test('ioredis: flushdb()/flushall() unchanged, plain and Cluster; a cluster port flushes only the slots it serves', { skip }, async () => {
  const c = readCluster(dir);
  const plain = new Redis({ port: respPorts(c).single[0], password });
  await writeKeys(plain, 'io', 60);
  assert.equal(await plain.flushdb(), 'OK');
  assert.equal(await plain.dbsize(), 0);
  await writeKeys(plain, 'io', 60);
  assert.equal(await plain.flushall(), 'OK');
  assert.equal(await plain.dbsize(), 0);

  const io = new Cluster(respPorts(c).cluster.map((port) => ({ host: '127.0.0.1', port })), { redisOptions: { password } });
  await new Promise((resolve) => io.once('ready', resolve));
  const masters = io.nodes('master');
  assert.equal(masters.length, c.nodes.flatMap((n) => n.resp!.clusterPorts).length, 'every worker\'s cluster port is a master');
  const sum = async () => (await Promise.all(io.nodes('master').map((n) => n.dbsize()))).reduce((a, b) => a + b, 0);
  const keys = Array.from({ length: 300 }, (_, i) => `ioc:${i}`);
  for (const k of keys) await io.set(k, 'v');
  assert.equal(await sum(), 300);
  // One master's FLUSHALL: its own slots only (Redis Cluster flushes only the node it is sent to).
  const one = masters[0]!;
  const had = await one.dbsize();
  assert.ok(had > 0, 'the first master serves some of the keys');
  assert.equal(await one.flushall(), 'OK');
  assert.equal(await one.dbsize(), 0);
  assert.equal(await sum(), 300 - had, 'the other masters kept their keys');
  // What a Cluster client does to empty the cluster: FLUSHALL on every master.
  assert.deepEqual(await Promise.all(io.nodes('master').map((n) => n.flushall())), masters.map(() => 'OK'));
  assert.equal(await sum(), 0);
  assert.equal(await plain.dbsize(), 0);
  for (const k of keys.slice(0, 10)) assert.equal(await io.get(k), null);
  await io.set('ioc:after', 'x');
  assert.equal(await io.get('ioc:after'), 'x');
  assert.equal(await io.flushall(), 'OK'); // a keyless command: ioredis sends it to one master
  io.disconnect();
  plain.disconnect();
});
