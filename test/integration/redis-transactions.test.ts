// MULTI / EXEC / DISCARD / WATCH / UNWATCH on the Redis front end (issue 27), against a real rowan
// cluster: Redis 7's replies and error strings byte for byte (checked against redis-server 7.0), ioredis
// multi() and watch() unchanged (plain and Cluster), the cluster port's one-slot rule and the
// single-endpoint port's one-shard rule, and no reader ever seeing a transaction half applied.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { Cluster, Redis } from 'ioredis';
import type { ClusterConfig } from '../../config/cluster.js';
import { keySlot, shardOfSlot } from '../../config/slots.js';
import { launchReadyCluster, stopCluster, type LaunchedCluster } from '../fixtures/cluster.js';
import { haveRedisTools, raw, readCluster, respPorts, useClusterPassword } from '../fixtures/redis.js';

const skip = haveRedisTools();
const dir = mkdtempSync(join(tmpdir(), 'rowan-redis-txn-'));
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

function ownerOf(c: ClusterConfig, key: string): number {
  return c.shards[shardOfSlot(keySlot(Buffer.from(key)), c.shardCount)]!.primary;
}

/** A hash tag whose keys live on `node` (or on another node than `node`, with `other`). */
function tagOn(c: ClusterConfig, node: number, prefix: string, other = false): string {
  for (let i = 0; ; i++) if ((ownerOf(c, `{${prefix}${i}}`) === node) !== other) return `${prefix}${i}`;
}

/** The replies to `cmds` (inline commands) on a fresh connection, QUIT's +OK stripped. */
async function replies(port: number, cmds: string[]): Promise<string> {
  const r = await raw(port, [cmds.map((x) => `${x}\r\n`).join('') + 'QUIT\r\n'], 10_000);
  assert.ok(r.text.endsWith('+OK\r\n'), `QUIT answered: ${JSON.stringify(r.text)}`);
  return r.text.slice(0, -5);
}

test('ioredis multi(): the queued commands run at EXEC, and a failed MULTI block is not applied (issue 27 regression)', { skip }, async () => {
  const c = readCluster(dir);
  for (const port of respPorts(c).single) {
    const r = new Redis({ port, password });
    const k = `tx:plain:${port}`;
    assert.deepEqual(await r.multi().set(k, 'x').get(k).exec(), [
      [null, 'OK'],
      [null, 'x'],
    ]);
    // A queuing error (wrong arity) discards the whole block: nothing of it is applied.
    const bad = r.multi().set(`${k}:b`, 'y').call('set', `${k}:b`);
    await assert.rejects(bad.exec(), /EXECABORT Transaction discarded because of previous errors/);
    assert.equal(await r.get(`${k}:b`), null, 'the aborted block wrote nothing');
    r.disconnect();
  }
});

test('the replies and error strings of Redis 7 (single-endpoint and cluster ports)', { skip }, async () => {
  const c = readCluster(dir);
  const node = 0;
  const t = tagOn(c, node, 'e');
  for (const port of [c.nodes[node]!.resp!.ports[0]!, c.nodes[node]!.resp!.clusterPorts[0]!]) {
    const k = `{${t}}${port}`;
    assert.equal(
      await replies(port, ['EXEC', 'DISCARD', 'MULTI', 'MULTI', `WATCH ${k}`, `SET ${k} 1`, 'EXEC', `GET ${k}`]),
      '-ERR EXEC without MULTI\r\n-ERR DISCARD without MULTI\r\n+OK\r\n-ERR MULTI calls can not be nested\r\n' +
        '-ERR WATCH inside MULTI is not allowed\r\n+QUEUED\r\n*1\r\n+OK\r\n$1\r\n1\r\n',
    );
    // A queuing error: unknown command or wrong arity -> EXECABORT, nothing applied.
    assert.equal(
      await replies(port, ['MULTI', `SET ${k} 2`, 'NOSUCH a', 'EXEC', 'MULTI', `SET ${k} 3`, 'GET', 'EXEC', `GET ${k}`]),
      "+OK\r\n+QUEUED\r\n-ERR unknown command 'NOSUCH', with args beginning with: 'a' \r\n-EXECABORT Transaction discarded because of previous errors.\r\n" +
        "+OK\r\n+QUEUED\r\n-ERR wrong number of arguments for 'get' command\r\n-EXECABORT Transaction discarded because of previous errors.\r\n$1\r\n1\r\n",
    );
    // A runtime error is that command's reply; the others run. An empty block answers an empty array.
    assert.equal(
      await replies(port, ['MULTI', `SET ${k} x`, `INCR ${k}`, `APPEND ${k} y`, 'EXEC', 'MULTI', 'EXEC', 'MULTI', `SET ${k} z`, 'DISCARD', `GET ${k}`]),
      '+OK\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n*3\r\n+OK\r\n-ERR value is not an integer or out of range\r\n:2\r\n' +
        '+OK\r\n*0\r\n+OK\r\n+QUEUED\r\n+OK\r\n$2\r\nxy\r\n',
    );
    // UNWATCH inside MULTI is queued; RESET leaves MULTI (and the connection must AUTH again).
    assert.equal(
      await replies(port, ['MULTI', 'UNWATCH', 'PING', 'EXEC', 'MULTI', 'RESET', `AUTH ${password}`, 'EXEC']),
      '+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n+OK\r\n+PONG\r\n+OK\r\n+RESET\r\n+OK\r\n-ERR EXEC without MULTI\r\n',
    );
  }
});

test('WATCH: EXEC answers a null array once a watched key changed (SET, DEL, SET then DEL) from another connection', { skip }, async () => {
  const c = readCluster(dir);
  for (const port of [respPorts(c).single[1]!, c.nodes[0]!.resp!.clusterPorts[0]!]) {
    const k = `{${tagOn(c, 0, 'w')}}${port}`;
    const a = new Redis({ port, password });
    const b = new Redis({ port: respPorts(c).single[2]!, password });
    await a.set(k, '0');
    await a.watch(k);
    await b.set(k, 'other');
    assert.equal(await a.multi().set(k, 'mine').exec(), null, 'a change after WATCH aborts EXEC');
    assert.equal(await a.get(k), 'other');
    // Unchanged: applied (and EXEC unwatched, so a later change aborts nothing).
    await a.watch(k);
    assert.deepEqual(await a.multi().set(k, 'mine').exec(), [[null, 'OK']]);
    await b.set(k, 'later');
    assert.deepEqual(await a.multi().get(k).exec(), [[null, 'later']]);
    // An absent key set and deleted again still counts as changed; UNWATCH forgets.
    await a.del(k);
    await a.watch(k);
    await b.set(k, '1');
    await b.del(k);
    assert.equal(await a.multi().set(k, 'mine').exec(), null);
    await a.watch(k);
    await b.set(k, '2');
    await a.unwatch();
    assert.deepEqual(await a.multi().get(k).exec(), [[null, '2']]);
    a.disconnect();
    b.disconnect();
  }
});

test('cluster port: keys of several slots in one transaction are refused with CROSSSLOT, a slot served elsewhere with MOVED', { skip }, async () => {
  const c = readCluster(dir);
  const port = c.nodes[0]!.resp!.clusterPorts[0]!;
  const t = tagOn(c, 0, 'x');
  const far = tagOn(c, 0, 'f', true);
  const r = await replies(port, ['MULTI', `SET {${t}}a 1`, `SET {${t}}b 1`, `SET {${t}x}c 1`, 'EXEC', `EXISTS {${t}}a`, 'MULTI', `GET {${far}}a`, 'EXEC']);
  const owner = c.nodes[ownerOf(c, `{${far}}`)]!;
  const slot = keySlot(Buffer.from(`{${far}}a`));
  const crossOrMoved = ownerOf(c, `{${t}x}`) === 0 ? "-CROSSSLOT Keys in request don't hash to the same slot\r\n" : /^-(CROSSSLOT|MOVED) /;
  const lines = r.split('\r\n');
  assert.deepEqual(lines.slice(0, 3), ['+OK', '+QUEUED', '+QUEUED']);
  if (typeof crossOrMoved === 'string') assert.equal(`${lines[3]}\r\n`, crossOrMoved);
  else assert.match(lines[3]!, /^-(CROSSSLOT Keys in request don't hash to the same slot|MOVED \d+ )/);
  assert.deepEqual(lines.slice(4, 7), ['-EXECABORT Transaction discarded because of previous errors.', ':0', '+OK']);
  assert.equal(lines[7], `-MOVED ${slot} ${owner.host}:${owner.resp!.clusterPorts[0]}`);
  assert.equal(lines[8], '-EXECABORT Transaction discarded because of previous errors.');
});

test('single-endpoint port: a transaction of one shard runs on its owner (forwarded), keys of two shards are refused', { skip }, async () => {
  const c = readCluster(dir);
  const port = c.nodes[0]!.resp!.ports[0]!;
  const far = tagOn(c, 0, 'g', true);
  const r = new Redis({ port, password });
  await r.set(`{${far}}w`, 'a');
  await r.watch(`{${far}}w`);
  assert.deepEqual(await r.multi().set(`{${far}}a`, '1').incr(`{${far}}n`).get(`{${far}}w`).exec(), [
    [null, 'OK'],
    [null, 1],
    [null, 'a'],
  ]);
  // Another shard: refused at queuing, the block is discarded.
  let other = 'h0';
  for (let i = 0; shardOfSlot(keySlot(Buffer.from(`{${other}}`)), c.shardCount) === shardOfSlot(keySlot(Buffer.from(`{${far}}`)), c.shardCount); i++) other = `h${i}`;
  const text = await replies(port, ['MULTI', `SET {${far}}a 2`, `SET {${other}}a 2`, 'EXEC', `GET {${far}}a`]);
  assert.match(text, /^\+OK\r\n\+QUEUED\r\n-CROSSSLOT Keys in request don't hash to the same shard [^\r]*\r\n-EXECABORT Transaction discarded because of previous errors\.\r\n\$1\r\n1\r\n$/);
  r.disconnect();
});

test('ioredis Cluster: multi() and watch() on hash-tagged keys', { skip }, async () => {
  const c = readCluster(dir);
  const cc = new Cluster(respPorts(c).cluster.map((port) => ({ host: '127.0.0.1', port })), { redisOptions: { password } });
  assert.deepEqual(await cc.multi().set('{cu}a', '1').set('{cu}b', '2').mget('{cu}a', '{cu}b').exec(), [
    [null, 'OK'],
    [null, 'OK'],
    [null, ['1', '2']],
  ]);
  await assert.rejects(cc.multi().set('{cu}a', '1').set('{cv}b', '2').exec(), /CROSSSLOT|EXECABORT|All keys in the pipeline should belong to the same slot/);
  // watch(): the WATCH and the block go to the slot's node on one connection.
  const other = new Redis({ port: respPorts(c).single[1]!, password });
  assert.equal(await cc.watch('{cu}a'), 'OK');
  await other.set('{cu}a', 'changed');
  assert.equal(await cc.multi().set('{cu}a', 'mine').exec(), null);
  assert.equal(await cc.get('{cu}a'), 'changed');
  assert.equal(await cc.watch('{cu}a'), 'OK');
  assert.deepEqual(await cc.multi().set('{cu}a', 'mine').exec(), [[null, 'OK']]);
  other.disconnect();
  cc.disconnect();
});

test('no reader sees a transaction half applied: concurrent MULTI blocks keep two keys equal, INCRs are never lost', { skip }, async () => {
  const c = readCluster(dir);
  const node = 1;
  const t = tagOn(c, node, 'atom');
  const ports = [...c.nodes[node]!.resp!.ports, ...respPorts(c).single];
  const writers = ports.map((port) => new Redis({ port, password }));
  const reader = new Redis({ port: c.nodes[node]!.resp!.ports[1]!, password });
  await writers[0]!.mset(`{${t}}a`, '0', `{${t}}b`, '0');
  let stop = false;
  let reads = 0;
  const read = (async () => {
    while (!stop) {
      const [a, b] = await reader.mget(`{${t}}a`, `{${t}}b`);
      assert.equal(a, b, 'MGET saw one key of a transaction without the other');
      reads++;
    }
  })();
  const ROUNDS = 30;
  await Promise.all(
    writers.map(async (w) => {
      for (let i = 0; i < ROUNDS; i++) {
        const res = await w.multi().incr(`{${t}}a`).incr(`{${t}}b`).exec();
        assert.equal(res![0]![1], res![1]![1], 'the two INCRs of one block ran back to back');
      }
    }),
  );
  stop = true;
  await read;
  assert.ok(reads > 0);
  assert.deepEqual(await reader.mget(`{${t}}a`, `{${t}}b`), [String(ROUNDS * writers.length), String(ROUNDS * writers.length)]);
  for (const w of writers) w.disconnect();
  reader.disconnect();
});
