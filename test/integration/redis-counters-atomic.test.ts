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
  // No resend by the client itself (ioredis's default on a dropped connection): an update sent twice
  // would be counted once and applied twice.
  const noResend = { password, maxRetriesPerRequest: 0, autoResendUnfulfilledCommands: false };
  const out: Client[] = [];
  for (const n of c.nodes) for (const port of n.resp!.ports) out.push(new Redis({ ...noResend, port }));
  for (let i = 0; i < 2; i++) out.push(new Cluster(c.nodes.map((n) => ({ host: '127.0.0.1', port: n.resp!.clusterPorts[0]! })), { redisOptions: noResend, retryDelayOnFailover: 0 }));
  return out;
}

/** A refusal says "not applied" (handler.ts): TRYAGAIN when a lease renewal ran late on a loaded machine. */
const NOT_APPLIED = /^(TRYAGAIN|CLUSTERDOWN|MOVED|ERR|OOM) /;

/** Per update: acknowledged, or outcome unknown (an UNKNOWN reply, a dropped connection); a refusal
 *  is neither. */
class Outcomes {
  readonly acked: string[] = [];
  readonly unknown: string[] = [];
  refused = 0;

  async track(what: string, op: Promise<unknown>): Promise<void> {
    try {
      await op;
      this.acked.push(what);
    } catch (e) {
      if (NOT_APPLIED.test((e as Error).message)) this.refused++;
      else this.unknown.push(what);
    }
  }

  count(what: string, among: 'acked' | 'unknown'): number {
    return this[among].filter((x) => x === what).length;
  }
}

test('INCR, INCRBYFLOAT, APPEND and SETBIT from many clients through every worker and port: the final values hold every acknowledged update', { skip, timeout: 300_000 }, async (t) => {
  const c = readCluster(dir);
  // Two keys on each node, so each node's two workers both write them.
  const counters = c.nodes.flatMap((n) => keysOn(c, n.id, 'ctr', 2));
  const [floatKey, appendKey, bitsKey] = [keysOn(c, 0, 'flt', 1)[0]!, keysOn(c, 1, 'app', 1)[0]!, keysOn(c, 2, 'bit', 1)[0]!];
  const cs = clients(c);
  t.after(() => cs.forEach((x) => x.disconnect()));
  const o = new Outcomes();
  await Promise.all(
    cs.map(async (cli, id) => {
      for (let r = 0; r < ROUNDS; r++) {
        const token = `<${id}.${r}>`;
        const bit = id * ROUNDS + r;
        await Promise.all([
          ...counters.map((k) => o.track(k, cli.incr(k))),
          o.track(floatKey, cli.incrbyfloat(floatKey, '0.5')),
          o.track(token, cli.append(appendKey, token)),
          o.track(`bit${bit}`, cli.setbit(bitsKey, bit, 1)),
        ]);
      }
    }),
  );
  // Every acknowledged update is in the final value once; one whose outcome is unknown (none on a
  // healthy cluster) at most once: a lost update falls below the range, a doubled one above it.
  const within = (what: string, v: number, per = 1) => {
    const [lo, hi] = [o.count(what, 'acked') * per, (o.count(what, 'acked') + o.count(what, 'unknown')) * per];
    assert.ok(v >= lo && v <= hi, `${what}: ${v}, acknowledged ${lo}, at most ${hi}`);
  };
  const reader = cs[0]! as Redis;
  for (const k of counters) within(k, Number(await reader.get(k)));
  within(floatKey, Number(await reader.get(floatKey)), 0.5);
  const text = (await reader.get(appendKey))!;
  const tokens: string[] = text.match(/<\d+\.\d+>/g) ?? [];
  assert.equal(tokens.join(''), text, 'nothing but whole tokens');
  assert.equal(new Set(tokens).size, tokens.length, 'no APPEND applied twice');
  for (const tok of o.acked.filter((x) => x.startsWith('<'))) assert.ok(tokens.includes(tok), `acknowledged APPEND ${tok} is in the value`);
  for (const tok of tokens) assert.ok(o.acked.includes(tok) || o.unknown.includes(tok), `${tok} was sent`);
  const bits = o.acked.filter((x) => x.startsWith('bit')).length;
  const bitsUnknown = o.unknown.filter((x) => x.startsWith('bit')).length;
  const set = await reader.bitcount(bitsKey);
  assert.ok(set >= bits && set <= bits + bitsUnknown, `BITCOUNT ${set}, acknowledged ${bits}, unknown ${bitsUnknown}`);
  console.log(`# ${o.acked.length} updates acknowledged, ${o.unknown.length} unknown, ${o.refused} refused (not applied), over ${cs.length} clients`);
});

test('MSETNX races through every worker and port: exactly one client sets the keys each round', { skip, timeout: 300_000 }, async (t) => {
  const c = readCluster(dir);
  const cs = clients(c);
  t.after(() => cs.forEach((x) => x.disconnect()));
  for (let round = 0; round < 10; round++) {
    const [a, b] = [`{race${round}}a`, `{race${round}}b`];
    const tries = await Promise.allSettled(cs.map((x, id) => x.msetnx(a, `c${id}`, b, `c${id}`)));
    const won = tries.map((x) => {
      if (x.status === 'fulfilled') return x.value;
      assert.match((x.reason as Error).message, /^(TRYAGAIN|CLUSTERDOWN) /, 'only a refusal (not applied) may fail');
      return -1;
    });
    assert.equal(won.filter((w) => w === 1).length, 1, `round ${round}: ${won.join(' ')}`);
    const winner = `c${won.indexOf(1)}`;
    assert.deepEqual(await (cs[0] as Redis).mget(a, b), [winner, winner]);
  }
});
