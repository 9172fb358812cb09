// redis-cli and redis-benchmark, unchanged, against a real rowan cluster (issue 15): the single-endpoint
// port (forwarding), -c against the cluster ports (MOVED followed), --scan, and a restart with another
// shard layout (new term) whose MOVED replies redis-cli -c and ioredis Cluster follow.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { Cluster } from 'ioredis';
import { keySlot } from '../../config/slots.js';
import { launchCluster, randomBasePort, stopCluster, type LaunchedCluster } from '../fixtures/cluster.js';
import { waitFor } from '../fixtures/failover-cluster.js';
import { benchAuth, cli, haveRedisTools, readCluster, respPorts, run, useClusterPassword } from '../fixtures/redis.js';

const skip = haveRedisTools();
const dir = mkdtempSync(join(tmpdir(), 'rowan-redis-tools-'));
const base = randomBasePort();
let cl: LaunchedCluster | null = null;

before(async () => {
  if (skip) return;
  cl = launchCluster(dir, base, ['--shards', '12']);
  await cl.ready;
  useClusterPassword(dir);
});

after(async () => {
  if (cl) await stopCluster(cl.child);
  rmSync(dir, { recursive: true, force: true });
});

test('redis-cli on a single-endpoint port: strings, multi-key, errors, INFO, CLUSTER', { skip }, async () => {
  const p = respPorts(readCluster(dir)).single[0]!;
  assert.equal(await cli(p, 'PING'), 'PONG');
  assert.equal(await cli(p, 'ECHO', 'hi there'), 'hi there');
  for (let i = 0; i < 30; i++) assert.equal(await cli(p, 'SET', `cli:${i}`, `v${i}`), 'OK');
  assert.equal(await cli(p, 'GET', 'cli:7'), 'v7');
  assert.equal(await cli(p, 'MGET', 'cli:1', 'cli:2', 'nope', 'cli:29'), 'v1\nv2\n\nv29');
  assert.equal(await cli(p, 'MSET', 'm:a', '1', 'm:b', '2', 'm:c', '3'), 'OK');
  assert.equal(await cli(p, 'EXISTS', 'm:a', 'm:b', 'm:a', 'nope'), '3');
  assert.equal(await cli(p, 'DEL', 'm:a', 'm:b', 'nope'), '2');
  assert.equal(await cli(p, 'GET', 'm:a'), '');
  assert.equal(await cli(p, 'STRLEN', 'cli:10'), '3');
  assert.equal(await cli(p, 'SET', 'cli:10', 'new', 'GET'), 'v10');
  assert.equal(await cli(p, 'SET', 'cli:10', 'x', 'NX'), '');
  assert.equal(await cli(p, 'SET', 'fresh', 'x', 'XX'), '');
  assert.equal(await cli(p, 'SETNX', 'fresh', 'y'), '1');
  assert.equal(await cli(p, 'GETDEL', 'fresh'), 'y');
  assert.equal(await cli(p, 'WAIT', '2', '0'), '2');
  assert.equal(await cli(p, 'DBSIZE'), '31');
  // Expiry exists since issue 27 (redis-expiry.test.ts); a TTL long enough that the key outlives this file.
  assert.equal(await cli(p, 'SET', 'k', 'v', 'EX', '1000'), 'OK');
  assert.match(await cli(p, 'TTL', 'k'), /^(999|1000)$/);
  assert.equal(await cli(p, 'FOO', 'a', 'b'), "ERR unknown command 'FOO', with args beginning with: 'a' 'b' ");
  assert.equal(await cli(p, 'GET'), "ERR wrong number of arguments for 'get' command");
  assert.match(await cli(p, 'AUTH', 'pw'), /^WRONGPASS invalid username-password pair/);
  assert.equal(await cli(p, 'SELECT', '0'), 'OK');
  assert.equal(await cli(p, 'SELECT', '3'), 'ERR DB index is out of range');
  assert.equal(await cli(p, 'CLUSTER', 'KEYSLOT', 'foo'), '12182');
  const info = await cli(p, 'INFO');
  for (const s of ['# Server', '# Clients', '# Memory', '# Persistence', '# Stats', '# Replication', '# Keyspace', '# Rowan', 'loading:0', 'pool_segments:', 'rowan_term:1'])
    assert.ok(info.includes(s), `INFO has ${s}`);
  const slots = await cli(p, 'CLUSTER', 'SLOTS');
  assert.ok(slots.startsWith('0\n'), slots.slice(0, 40));
  assert.equal((await cli(p, 'CLUSTER', 'NODES')).split('\n').length, 3);
  assert.equal(await cli(p, 'COMMAND', 'COUNT'), String((await cli(p, 'COMMAND', 'LIST')).split('\n').length));
});

test('redis-cli --scan (MATCH/COUNT) returns every key exactly as DBSIZE counts them', { skip }, async () => {
  const p = respPorts(readCluster(dir)).single[1]!;
  const r = await run('redis-cli', ['-p', String(p), '--scan']);
  const all = r.out.trim().split('\n');
  const n = Number(await cli(p, 'DBSIZE'));
  assert.equal(new Set(all).size, n, r.out + r.err);
  // SCAN by hand with COUNT 3: the cursor is stable across calls and ends at 0.
  const seen = new Set<string>();
  let cursor = '0';
  for (let i = 0; i < 10_000; i++) {
    const [next, ...keys] = (await cli(p, 'SCAN', cursor, 'COUNT', '3', 'MATCH', 'cli:*')).split('\n');
    for (const k of keys) if (k) seen.add(k);
    cursor = next!;
    if (cursor === '0') break;
  }
  assert.equal(cursor, '0');
  assert.equal(seen.size, 30);
  const some = (await run('redis-cli', ['-p', String(p), '--scan', '--pattern', 'cli:2*'])).out.trim().split('\n').sort();
  assert.deepEqual(some, ['cli:2', ...Array.from({ length: 10 }, (_, i) => `cli:2${i}`)].sort());
});

test('cluster ports: MOVED, CROSSSLOT; redis-cli -c follows the redirect', { skip }, async () => {
  const c = readCluster(dir);
  const cp = respPorts(c).cluster;
  const replies = await Promise.all(cp.map((p) => cli(p, 'GET', 'cli:3')));
  assert.equal(replies.filter((r) => r === 'v3').length, 1, replies.join(' | '));
  const moved = replies.filter((r) => r.startsWith('MOVED'));
  assert.equal(moved.length, 2);
  assert.match(moved[0]!, new RegExp(`^MOVED ${keySlot(Buffer.from('cli:3'))} 127\\.0\\.0\\.1:\\d+$`));
  for (const p of cp) assert.equal(await cli(p, '-c', 'GET', 'cli:3'), 'v3');
  assert.equal(await cli(cp[0]!, 'MGET', 'cli:1', 'cli:2'), "CROSSSLOT Keys in request don't hash to the same slot");
  assert.equal(await cli(cp[0]!, '-c', 'MSET', '{t}a', '1', '{t}b', '2'), 'OK');
  assert.equal(await cli(cp[1]!, '-c', 'MGET', '{t}a', '{t}b'), '1\n2');
});

test('redis-benchmark: single endpoint, pipelined, and --cluster', { skip }, async () => {
  const c = readCluster(dir);
  const common = ['-t', 'set,get', '-n', '2000', '-c', '10', '-d', '91', '-r', '100000', '--csv'];
  for (const extra of [['-p', String(respPorts(c).single[0])], ['-p', String(respPorts(c).single[2]), '-P', '16'], ['-p', String(respPorts(c).cluster[0]), '--cluster']]) {
    const r = await run('redis-benchmark', [...benchAuth(), ...common, ...extra], 120_000);
    assert.equal(r.code, 0, r.err + r.out);
    for (const t of ['SET', 'GET']) assert.match(r.out, new RegExp(`"${t}","[1-9]`), `${extra.join(' ')}: ${r.out}`);
  }
  const errs = await cli(respPorts(c).single[0]!, 'INFO', 'stats');
  assert.match(errs, /total_error_replies:\d+/);
});

test('a restart with another shard layout (term 2): MOVED points at the new owners; redis-cli -c and ioredis Cluster follow', { skip }, async () => {
  const c0 = readCluster(dir);
  const cp = respPorts(c0).cluster;
  const io = new Cluster([{ host: '127.0.0.1', port: cp[0]! }], { clusterRetryStrategy: (n) => (n > 200 ? null : 100), redisOptions: { password: useClusterPassword(dir) } });
  assert.equal(await io.get('cli:5'), 'v5');
  const shard5 = Math.floor((keySlot(Buffer.from('cli:5')) * c0.shardCount) / 16384);
  const ownerBefore = c0.shards.find((s) => s.id === shard5)!.primary;
  await stopCluster(cl!.child);
  // Rotate every shard's primary to its first backup: a different layout, a new term.
  const c1 = { ...c0, term: c0.term + 1, shards: c0.shards.map((s) => ({ id: s.id, primary: s.backups[0]!, backups: [...s.backups.slice(1), s.primary] })) };
  writeFileSync(join(dir, 'cluster.json'), JSON.stringify(c1, null, 2));
  cl = launchCluster(dir, base);
  await cl.ready;
  try {
    const oldOwnerPort = cp[c0.nodes.findIndex((n) => n.id === ownerBefore)]!;
    const newOwnerPort = cp[c0.nodes.findIndex((n) => n.id === c1.shards.find((s) => s.id === shard5)!.primary)]!;
    // The restarted primaries serve once a round of the manager confirms them (actors/manager/
    // reconfirm.ts); until then a request waits, then answers TRYAGAIN (not applied). On a busy machine
    // the round can outlast that wait: retried here as a Redis client would, nothing else tolerated.
    await serves(newOwnerPort, 'cli:5', 'v5');
    assert.match(await cli(oldOwnerPort, 'GET', 'cli:5'), /^MOVED \d+ 127\.0\.0\.1:\d+$/);
    assert.equal(await cli(oldOwnerPort, '-c', 'GET', 'cli:5'), 'v5');
    // The epoch is the node's term: the new layout's, or a later one -- the restarted primaries are
    // confirmed by rounds of their own, term + 1 (or more: a round whose prepare timed out is retried).
    const epoch = Number(/cluster_current_epoch:(\d+)/.exec(await cli(oldOwnerPort, 'CLUSTER', 'INFO'))?.[1]);
    const term = Number(/rowan_term:(\d+)/.exec(await cli(oldOwnerPort, 'INFO'))?.[1]);
    assert.ok(epoch >= c1.term && epoch === term, `cluster_current_epoch ${epoch}: the node's term (${term}), at least the new layout's (${c1.term})`);
    // ioredis still holds the term-1 slot map: its requests meet MOVED and it re-routes.
    for (let i = 0; i < 30; i++) assert.equal(await io.get(`cli:${i}`), i === 10 ? 'new' : `v${i}`);
    const moved = await Promise.all(cp.map((p) => cli(p, 'INFO', 'stats')));
    assert.ok(moved.some((s) => /rowan_moved_replies:[1-9]/.test(s)), 'some node answered MOVED');
  } catch (err) {
    const e = err as Error;
    e.stack = `${e.stack}\n--- rowan cluster's output (last 6000 characters) ---\n${cl.output().slice(-6000)}`;
    throw e;
  } finally {
    io.disconnect();
  }
});

/** Wait until `port` answers GET `key` with `value`; only TRYAGAIN (not applied) may come before. */
async function serves(port: number, key: string, value: string): Promise<void> {
  await waitFor(`GET ${key} on port ${port} to answer ${value} after the restart`, async () => {
    const r = await cli(port, 'GET', key);
    if (r !== value) assert.match(r, /^TRYAGAIN /, `GET ${key} on port ${port} after the restart`);
    return r === value;
  }, 60_000, 100);
}
