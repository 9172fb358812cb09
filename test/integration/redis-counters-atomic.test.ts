// No lost update under concurrency (issue 27): many ioredis clients INCR, INCRBYFLOAT, APPEND and
// SETBIT the same keys of a `rowan cluster --workers 2` at once, through both workers of the owning
// node's single-endpoint ports (the key is local to both: they serialize on the node's shared key
// locks, actors/shared/key-locks.ts), through the other nodes' single-endpoint ports (forwarded to the
// owner's cluster port) and through ioredis Cluster clients. Every acknowledged update must be in the
// final value, exactly once. MSETNX races: exactly one client wins each round.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { Cluster, Redis } from 'ioredis';
import type { ClusterConfig } from '../../config/cluster.js';
import { keySlot, shardOfSlot } from '../../config/slots.js';
import { launchReadyCluster, stopCluster, type LaunchedCluster } from '../fixtures/cluster.js';
import { haveRedisTools, readCluster, useClusterPassword } from '../fixtures/redis.js';

const skip = haveRedisTools();
const dir = mkdtempSync(join(tmpdir(), 'rowan-redis-atomic-'));
let cl: LaunchedCluster | null = null;
let password = '';
const ROUNDS = 40;

before(async () => {
  if (skip) return;
  cl = await launchReadyCluster(dir, ['--shards', '12', '--workers', '2']);
  password = useClusterPassword(dir);
});

after(async () => {
  if (cl) await stopCluster(cl.child);
  rmSync(dir, { recursive: true, force: true });
});

function ownerOf(c: ClusterConfig, key: string): number {
  return c.shards[shardOfSlot(keySlot(Buffer.from(key)), c.shardCount)]!.primary;
}

/** `n` keys named prefix:i whose primary is `node`. */
function keysOn(c: ClusterConfig, node: number, prefix: string, n: number): string[] {
  const out: string[] = [];
  for (let i = 0; out.length < n; i++) if (ownerOf(c, `${prefix}:${i}`) === node) out.push(`${prefix}:${i}`);
  return out;
}

type Client = Redis | Cluster;

/** Plain clients on every worker's single-endpoint port of every node, and two Cluster clients. */
function clients(c: ClusterConfig): Client[] {
  const out: Client[] = [];
  for (const n of c.nodes) for (const port of n.resp!.ports) out.push(new Redis({ port, password }));
  for (let i = 0; i < 2; i++) out.push(new Cluster(c.nodes.map((n) => ({ host: '127.0.0.1', port: n.resp!.clusterPorts[0]! })), { redisOptions: { password } }));
  return out;
}

test('INCR, INCRBYFLOAT, APPEND and SETBIT from many clients through every worker and port: the final values hold every acknowledged update', { skip, timeout: 300_000 }, async (t) => {
  const c = readCluster(dir);
  // Two keys on each node, so each node's two workers both write them.
  const counters = c.nodes.flatMap((n) => keysOn(c, n.id, 'ctr', 2));
  const [floatKey, appendKey, bitsKey] = [keysOn(c, 0, 'flt', 1)[0]!, keysOn(c, 1, 'app', 1)[0]!, keysOn(c, 2, 'bit', 1)[0]!];
  const cs = clients(c);
  t.after(() => cs.forEach((x) => x.disconnect()));
  const acked = new Map<string, number>(counters.map((k) => [k, 0]));
  let floats = 0;
  const appended: string[] = [];
  const bits: number[] = [];
  const failures: string[] = [];
  await Promise.all(
    cs.map(async (cli, id) => {
      for (let r = 0; r < ROUNDS; r++) {
        const token = `<${id}.${r}>`;
        const bit = id * ROUNDS + r;
        const ops = [
          ...counters.map((k) => cli.incr(k).then(() => acked.set(k, acked.get(k)! + 1))),
          cli.incrbyfloat(floatKey, '0.5').then(() => floats++),
          cli.append(appendKey, token).then(() => appended.push(token)),
          cli.setbit(bitsKey, bit, 1).then(() => bits.push(bit)),
        ];
        for (const x of await Promise.allSettled(ops)) if (x.status === 'rejected') failures.push(String(x.reason));
      }
    }),
  );
  // Nothing fails on a healthy cluster; an error here would be an unknown outcome to bound instead.
  assert.deepEqual(failures, []);
  const reader = cs[0]! as Redis;
  for (const k of counters) assert.equal(Number(await reader.get(k)), acked.get(k), `${k}: ${cs.length * ROUNDS} INCRs acknowledged`);
  assert.equal(Number(await reader.get(floatKey)), floats * 0.5);
  const text = (await reader.get(appendKey))!;
  assert.equal(text.length, appended.join('').length, 'every acknowledged APPEND, once');
  for (const t of appended) assert.equal(text.split(t).length, 2, `${t} appended exactly once`);
  assert.equal(await reader.bitcount(bitsKey), bits.length);
});

test('MSETNX races through every worker and port: exactly one client sets the keys each round', { skip, timeout: 300_000 }, async (t) => {
  const c = readCluster(dir);
  const cs = clients(c);
  t.after(() => cs.forEach((x) => x.disconnect()));
  for (let round = 0; round < 10; round++) {
    const [a, b] = [`{race${round}}a`, `{race${round}}b`];
    const won = await Promise.all(cs.map((x, id) => x.msetnx(a, `c${id}`, b, `c${id}`)));
    assert.equal(won.filter((w) => w === 1).length, 1, `round ${round}: ${won.join(' ')}`);
    const winner = `c${won.indexOf(1)}`;
    assert.deepEqual(await (cs[0] as Redis).mget(a, b), [winner, winner]);
  }
});
