// Replies of the Redis front end that must not claim what did not happen (issue 27, "Honest replies"),
// with redis-cli and raw RESP against a real rowan cluster: a multi-key write refused for one bad key or
// value writes none of them; a value over the limit gets an error reply and the connection goes on; the
// single-endpoint port presents itself as a standalone Redis; DBSIZE and INFO keyspace agree.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { launchReadyCluster, stopCluster, type LaunchedCluster } from '../fixtures/cluster.js';
import { cli, haveRedisTools, raw, readCluster, respPorts, run, useClusterPassword } from '../fixtures/redis.js';

const skip = haveRedisTools();
const dir = mkdtempSync(join(tmpdir(), 'rowan-redis-honest-'));
let cl: LaunchedCluster | null = null;

before(async () => {
  if (skip) return;
  cl = await launchReadyCluster(dir, ['--shards', '6', '--nodes', '2', '--replication', '2']);
  useClusterPassword(dir);
});

after(async () => {
  if (cl) await stopCluster(cl.child);
  rmSync(dir, { recursive: true, force: true });
});

const bigKey = (tag: string) => `{${tag}}` + 'k'.repeat(2000);

test('MSET / multi-key DEL refused for one over-limit key write none of their keys (single-endpoint and cluster ports)', { skip }, async () => {
  const ports = respPorts(readCluster(dir));
  for (const [i, p] of ports.single.entries()) {
    const t = `s${i}`;
    assert.match(await cli(p, 'MSET', `{${t}}a`, 'v1', bigKey(t), 'v2'), /^ERR ROWAN_ERR_KEY_TOO_LARGE /);
    assert.equal(await cli(p, 'GET', `{${t}}a`), '', 'MSET refused: {t}a not written');
    // Keys of several slots on the single-endpoint port (split per key): still all or none refused.
    assert.match(await cli(p, 'MSET', `x${i}`, 'v1', `y${i}`, 'v2', bigKey(`z${i}`), 'v3'), /^ERR ROWAN_ERR_KEY_TOO_LARGE /);
    assert.equal(await cli(p, 'EXISTS', `x${i}`, `y${i}`), '0');
    assert.match(await cli(p, 'MSET', `x${i}`, 'v1', '', 'v2'), /^ERR ROWAN_ERR_KEY_EMPTY /);
    assert.equal(await cli(p, 'GET', `x${i}`), '');
    assert.equal(await cli(p, 'SET', `{${t}}a`, 'kept'), 'OK');
    assert.match(await cli(p, 'DEL', `{${t}}a`, bigKey(t)), /^ERR ROWAN_ERR_KEY_TOO_LARGE /);
    assert.equal(await cli(p, 'GET', `{${t}}a`), 'kept', 'DEL refused: {t}a not deleted');
  }
  for (const [i, p] of ports.cluster.entries()) {
    const t = `c${i}`;
    assert.match(await cli(p, '-c', 'MSET', `{${t}}a`, 'v1', bigKey(t), 'v2'), /^ERR ROWAN_ERR_KEY_TOO_LARGE /);
    assert.equal(await cli(p, '-c', 'GET', `{${t}}a`), '');
  }
});

test('MSET with one value over the value limit writes none of its keys', { skip }, async () => {
  const p = respPorts(readCluster(dir)).single[0]!;
  const v = Buffer.alloc(1024 * 1024 + 1, 0x61);
  const r = await raw(p, [`*5\r\n$4\r\nMSET\r\n$4\r\nv:ok\r\n$1\r\n1\r\n$5\r\nv:big\r\n$${v.length}\r\n`, v, '\r\nGET v:ok\r\nGET v:big\r\nQUIT\r\n'], 30_000);
  assert.match(r.text, /^-ERR ROWAN_ERR_VALUE_TOO_LARGE [^\r]*\r\n\$-1\r\n\$-1\r\n\+OK\r\n$/);
});

test('MSET with a value one log entry of the pool cannot hold (these pools have 256 KiB segments) writes none of its keys', { skip }, async () => {
  const p = respPorts(readCluster(dir)).single[1]!;
  const v = Buffer.alloc(300_000, 0x61);
  const r = await raw(p, [`*5\r\n$4\r\nMSET\r\n$4\r\ne:ok\r\n$1\r\n1\r\n$5\r\ne:big\r\n$${v.length}\r\n`, v, '\r\nGET e:ok\r\nQUIT\r\n'], 30_000);
  assert.match(r.text, /^-ERR ROWAN_ERR_ENTRY_TOO_LARGE [^\r]*\r\n\$-1\r\n\+OK\r\n$/);
});

test('a value over the bulk limit (value limit + 64 KiB) gets an error reply, is discarded as it streams, and the connection goes on', { skip }, async () => {
  const p = respPorts(readCluster(dir)).single[0]!;
  const n = 1024 * 1024 + 64 * 1024 + 1;
  const parts = Array.from({ length: 8 }, (_, i) => Buffer.alloc(i < 7 ? n >> 3 : n - 7 * (n >> 3), 0x62));
  const r = await raw(p, ['SET before 1\r\n', `*3\r\n$3\r\nSET\r\n$4\r\nhuge\r\n$${n}\r\n`, ...parts, '\r\n*2\r\n$3\r\nGET\r\n$4\r\nhuge\r\nGET before\r\nPING\r\nQUIT\r\n'], 30_000);
  assert.match(r.text, /^\+OK\r\n-ERR ROWAN_ERR_VALUE_TOO_LARGE [^\r]*not applied[^\r]*\r\n\$-1\r\n\$1\r\n1\r\n\+PONG\r\n\+OK\r\n$/);
  // Arguments after the oversized one still parse; the whole request is refused.
  const m = await raw(p, [`*5\r\n$4\r\nMSET\r\n$2\r\nm1\r\n$${n}\r\n`, Buffer.alloc(n, 0x63), '\r\n$2\r\nm2\r\n$1\r\nx\r\nEXISTS m1 m2\r\nQUIT\r\n'], 30_000);
  assert.match(m.text, /^-ERR ROWAN_ERR_VALUE_TOO_LARGE [^\r]*\r\n:0\r\n\+OK\r\n$/);
});

test('the single-endpoint port presents itself as a standalone Redis, the cluster port as a cluster node', { skip }, async () => {
  const ports = respPorts(readCluster(dir));
  for (const p of ports.single) {
    const hello = await cli(p, '-3', 'HELLO', '3');
    assert.match(hello, /^mode standalone$/m, hello);
    assert.match(await cli(p, 'INFO', 'server'), /\r?\nredis_mode:standalone\r?\n/);
    assert.match(await cli(p, 'INFO', 'cluster'), /cluster_enabled:0/);
    assert.equal(await cli(p, 'CONFIG', 'GET', 'cluster-enabled'), 'cluster-enabled\nno');
  }
  for (const p of ports.cluster) {
    assert.match(await cli(p, '-3', 'HELLO', '3'), /^mode cluster$/m);
    assert.match(await cli(p, 'INFO', 'server'), /\r?\nredis_mode:cluster\r?\n/);
    assert.match(await cli(p, 'INFO', 'cluster'), /cluster_enabled:1/);
    assert.equal(await cli(p, 'CONFIG', 'GET', 'cluster-enabled'), 'cluster-enabled\nyes');
  }
});

test('DBSIZE and INFO keyspace agree: the whole cluster on a single-endpoint port, the slots served on a cluster port (as Redis Cluster, so redis-cli --cluster info sums right)', { skip }, async () => {
  const ports = respPorts(readCluster(dir));
  for (let i = 0; i < 40; i++) assert.equal(await cli(ports.single[0]!, 'SET', `ks:${i}`, 'v'), 'OK');
  const keysOf = async (p: number) => Number(/keys=(\d+)/.exec(await cli(p, 'INFO', 'keyspace'))?.[1] ?? 0);
  const total = Number(await cli(ports.single[0]!, 'DBSIZE'));
  assert.ok(total >= 40, String(total));
  for (const p of ports.single) {
    assert.equal(Number(await cli(p, 'DBSIZE')), total);
    assert.equal(await keysOf(p), total);
  }
  let sum = 0;
  for (const p of ports.cluster) {
    const n = Number(await cli(p, 'DBSIZE'));
    assert.equal(await keysOf(p), n);
    sum += n;
  }
  assert.equal(sum, total);
  const info = await run('redis-cli', ['--cluster', 'info', `127.0.0.1:${ports.cluster[0]}`]);
  assert.match(info.out, new RegExp(`\\b${total} keys in \\d+ masters`), info.out + info.err);
});
