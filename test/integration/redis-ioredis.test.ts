// ioredis, unchanged, against a real rowan cluster: Redis (single endpoint, RESP2 and RESP3) and
// Cluster (slot routing by CLUSTER SLOTS), round trips and a 10k-command pipeline.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { Cluster, Redis } from 'ioredis';
import { launchCluster, randomBasePort, stopCluster, type LaunchedCluster } from '../fixtures/cluster.js';
import { readCluster, respPorts, useClusterPassword } from '../fixtures/redis.js';

const dir = mkdtempSync(join(tmpdir(), 'rowan-ioredis-'));
let cl: LaunchedCluster;
let password = '';

before(async () => {
  cl = launchCluster(dir, randomBasePort(), ['--shards', '12']);
  await cl.ready;
  password = useClusterPassword(dir);
});

after(async () => {
  await stopCluster(cl.child);
  rmSync(dir, { recursive: true, force: true });
});

test('ioredis Redis on a single-endpoint port: SET/GET/DEL/MGET/MSET/SCAN/INFO/PING, RESP2 and RESP3', async () => {
  for (const protocol of [2, 3] as const) {
    const r = new Redis({ port: respPorts(readCluster(dir)).single[0]!, protocol, password });
    assert.equal((await r.client('INFO')).match(/resp=(\d)/)?.[1], String(protocol));
    const p = `io${protocol}:`;
    assert.equal(await r.ping(), 'PONG');
    assert.equal(await r.set(`${p}a`, 'α'), 'OK');
    assert.equal(await r.get(`${p}a`), 'α');
    assert.equal(await r.mset(`${p}b`, '2', `${p}c`, '3'), 'OK');
    assert.deepEqual(await r.mget(`${p}a`, `${p}b`, `${p}none`, `${p}c`), ['α', '2', null, '3']);
    assert.equal(await r.del(`${p}b`, `${p}none`), 1);
    assert.equal(await r.exists(`${p}b`), 0);
    const keys: string[] = [];
    for await (const batch of r.scanStream({ match: `${p}*`, count: 2 })) keys.push(...(batch as string[]));
    assert.deepEqual(keys.sort(), [`${p}a`, `${p}c`]);
    assert.match(await r.info('keyspace'), /db0:keys=\d+/);
    assert.equal(await r.client('SETNAME', 'tester'), 'OK');
    assert.equal(await r.client('GETNAME'), 'tester');
    r.disconnect();
  }
});

test('a pipeline of 10k commands through one single-endpoint connection reads its own writes', async () => {
  const r = new Redis({ port: respPorts(readCluster(dir)).single[1]!, password });
  const pl = r.pipeline();
  for (let i = 0; i < 10_000; i++) {
    pl.set(`pl:${i % 2500}`, `v${i}`); // each key written 4 times: order within the pipeline matters
    if (i % 4 === 3) pl.get(`pl:${i % 2500}`);
  }
  const res = (await pl.exec())!;
  assert.equal(res.length, 12_500);
  assert.ok(res.every(([e]) => e === null), String(res.find(([e]) => e !== null)?.[0]));
  let k = 0;
  for (let i = 0; i < 10_000; i++) {
    k++;
    if (i % 4 === 3) assert.equal(res[k++]![1], `v${i}`, `GET after SET #${i} in the same pipeline`);
  }
  const back = await r.mget(...Array.from({ length: 2500 }, (_, i) => `pl:${i}`));
  assert.deepEqual(back, Array.from({ length: 2500 }, (_, i) => `v${7500 + i}`));
  r.disconnect();
});

test('ioredis Cluster: routing by CLUSTER SLOTS, multi-key in one slot, CROSSSLOT refused, 10k pipelined in one slot', async () => {
  const ports = respPorts(readCluster(dir)).cluster;
  const c = new Cluster(ports.map((port) => ({ host: '127.0.0.1', port })), { redisOptions: { password } });
  for (let i = 0; i < 200; i++) assert.equal(await c.set(`cl:${i}`, `w${i}`), 'OK');
  for (let i = 0; i < 200; i += 17) assert.equal(await c.get(`cl:${i}`), `w${i}`);
  assert.equal(await c.mset('{grp}x', '1', '{grp}y', '2'), 'OK');
  assert.deepEqual(await c.mget('{grp}x', '{grp}y'), ['1', '2']);
  await assert.rejects(c.mget('cl:1', 'cl:2'), /CROSSSLOT Keys in request don't hash to the same slot/);
  const pl = c.pipeline();
  for (let i = 0; i < 10_000; i++) pl.set(`{p}${i}`, `${i}`);
  const res = (await pl.exec())!;
  assert.equal(res.filter(([e, v]) => e === null && v === 'OK').length, 10_000);
  assert.equal(await c.get('{p}9999'), '9999');
  // Each endpoint counts the keys of the slots it serves; together, every key once.
  const sizes = await Promise.all(c.nodes('master').map((n) => n.dbsize()));
  const single = new Redis({ port: respPorts(readCluster(dir)).single[2]!, password });
  assert.equal(sizes.reduce((a, b) => a + b, 0), await single.dbsize());
  single.disconnect();
  c.disconnect();
});
