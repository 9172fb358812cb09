// The binary client's PUT with an expiry (issue 27; PUT_EXPIRES, runtime/rpc/frames-layout.ts): a TTL
// the shard's primary turns into a deadline with its clock (Redis's SET PX), or the deadline itself
// (PXAT). The key reads back until the deadline and is absent from it on, through the binary client
// and the RESP port alike, which sees the same deadline (PEXPIRETIME); malformed options are refused
// locally as not applied; a plain PUT clears a deadline as Redis's SET does.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Cluster } from 'ioredis';
import { RowanClient } from '../../client/client.js';
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import { randomBasePort, stopCluster } from '../fixtures/cluster.js';
import { launchClusterReady } from '../fixtures/cluster-retry.js';
import { readCluster, respPorts, useClusterPassword } from '../fixtures/redis.js';

const text = (v: Uint8Array | null) => (v === null ? null : Buffer.from(v).toString());

/** Poll `key` until it reads absent; when it went, and that it was there at every read before `notBefore`. */
async function goneAt(c: RowanClient, key: string, notBefore: number, timeoutMs: number): Promise<number> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const sent = Date.now();
    const v = await c.get(key);
    if (v === null) {
      assert.ok(Date.now() >= notBefore, `${key} gone at ${Date.now()}, before its deadline ${notBefore}`);
      return sent;
    }
    assert.ok(Date.now() < until, `${key} still there ${Date.now() - notBefore} ms after its deadline`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

test('binary client: PUT with ttlMs or expiresAtMs expires the key on time, seen alike on the RESP port', { timeout: 120_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-kv-client-expiry-'));
  const run = await launchClusterReady(dir, randomBasePort(), ['--nodes', '3', '--replication', '2', '--shards', '6']);
  let client: RowanClient | null = null;
  let io: Cluster | null = null;
  try {
    client = await RowanClient.connect({ cluster: join(dir, 'cluster.json') });
    const password = useClusterPassword(dir);
    io = new Cluster(respPorts(readCluster(dir)).cluster.map((port) => ({ host: '127.0.0.1', port })), { redisOptions: { password } });

    const t0 = Date.now();
    await client.put('ttl', 'v1', { ttlMs: 1500 });
    const t1 = Date.now();
    assert.equal(text(await client.get('ttl')), 'v1');
    const at = await io.pexpiretime('ttl');
    assert.ok(at >= t0 + 1500 && at <= t1 + 1500, `PEXPIRETIME ${at} within [${t0 + 1500}, ${t1 + 1500}] (the primary's clock)`);

    const deadline = Date.now() + 1500;
    await client.put('at', 'v2', { expiresAtMs: deadline });
    assert.equal(await io.pexpiretime('at'), deadline, 'the deadline as given');
    assert.equal(await io.get('at'), 'v2');

    await client.put('cleared', 'v3', { ttlMs: 1000 });
    await client.put('cleared', 'v4'); // a plain PUT drops the deadline, as Redis's SET does
    assert.equal(await io.pttl('cleared'), -1);

    await goneAt(client, 'ttl', t0 + 1500, 30_000);
    await goneAt(client, 'at', deadline, 30_000);
    for (const k of ['ttl', 'at']) assert.equal(await io.exists(k), 0, `${k} absent on the RESP port too`);
    assert.equal(text(await client.get('cleared')), 'v4');

    for (const [opts, why] of [
      [{ ttlMs: 0 }, 'zero TTL'],
      [{ ttlMs: 1.5 }, 'fractional TTL'],
      [{ expiresAtMs: -5 }, 'negative deadline'],
      [{ ttlMs: 2 ** 48 }, 'TTL past 2^47 ms'],
      [{ ttlMs: 100, expiresAtMs: Date.now() + 100 }, 'both'],
    ] as const) {
      await assert.rejects(client.put('bad', 'x', opts), (e: unknown) => e instanceof RowanError && e.code === ErrorCodes.BAD_ARGUMENT, why);
    }
    assert.equal(await client.get('bad'), null, 'nothing written by a refused PUT');
  } finally {
    io?.disconnect();
    await client?.close();
    await stopCluster(run.child);
    rmSync(dir, { recursive: true, force: true });
  }
});
