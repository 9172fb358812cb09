// Client SETs racing the expiry sweeps' DELs (issue 27), checked with the linearizability checker.
//
// The sweep (actors/worker/resp/expiry-sweep.ts) finds expired PUTs by walking the index, and later,
// under the keys' locks, checks each is still the expired PUT before it claims a DEL's version; it lets
// the locks go while the DELs replicate. Here every key is first SET with a deadline (PXAT) and then,
// just after the deadline -- when the sweeps are deleting it -- SET again without one. Whatever the
// interleaving, the second value must stay: a DEL meant for the expired value that lands over it, or a
// version it claimed above the new write's, is a lost acknowledged write.
//
// The checker's model is one register per key, so the deadline is recorded as a DEL of the key that
// happens once the first SET was applied and its deadline reached: over [max(invoke, D),
// max(response, D) + 1] on the wall clock the server's deadlines are on (ms; the +1 covers the
// rounding). Readers GET the keys throughout, and every key is read back once the sweeps went quiet.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { randomBasePort, stopCluster } from '../fixtures/cluster.js';
import { launchClusterReady } from '../fixtures/cluster-retry.js';
import { readCluster, respPorts, useClusterPassword } from '../fixtures/redis.js';
import { checkLinearizability, HistoryRecorder, type Operation } from '../check/linearizability.js';

const FLAGS = ['--nodes', '3', '--replication', '3', '--shards', '6'];
const KEYS = 1500;
/** A first SET's deadline is 200-400 ms after it is sent. */
const TTL_MS = 200;
/** The second SET goes after the deadline by up to NEAR_MS for most keys (a sweep wakes for the
 *  earliest deadline it saw, so its DELs are then in flight) and up to FAR_MS for the others (the
 *  sweeps sleep at most 1000 ms between passes, so those meet their passes at every stage). */
const NEAR_MS = 40;
const FAR_MS = 1200;
const WRITERS = 48;
const READERS = 4;

const sleepUntil = (t: number) => new Promise((r) => setTimeout(r, Math.max(0, t - Date.now())));

class Race {
  readonly history = new HistoryRecorder(() => Date.now());
  /** The deadlines, as DELs (client -1). */
  readonly expiries: Operation[] = [];
  writesDone = false;

  constructor(private readonly r: Redis) {}

  /** Keys k = client, client + WRITERS, ...: SET with a deadline, then SET without one after it. */
  async writer(client: number): Promise<void> {
    for (let i = client; i < KEYS; i += WRITERS) {
      const k = `race:${i}`;
      const invoke = Date.now();
      const deadline = invoke + TTL_MS + Math.floor(Math.random() * TTL_MS);
      const first = this.history.invoke(client, k, 'put', `a-${i}`);
      assert.equal(await this.r.set(k, `a-${i}`, 'PXAT', deadline), 'OK');
      this.history.ok(first);
      const response = Date.now();
      this.expiries.push({ client: -1, key: k, op: 'del', invoke: Math.max(invoke, deadline), response: Math.max(response, deadline) + 1, outcome: 'ok' });
      await sleepUntil(Math.max(response, deadline) + 2 + Math.floor(Math.random() * (Math.random() < 0.7 ? NEAR_MS : FAR_MS)));
      const second = this.history.invoke(client, k, 'put', `b-${i}`);
      assert.equal(await this.r.set(k, `b-${i}`), 'OK');
      this.history.ok(second);
    }
  }

  async reader(client: number): Promise<number> {
    let reads = 0;
    while (!this.writesDone) {
      const k = `race:${Math.floor(Math.random() * KEYS)}`;
      const op = this.history.invoke(client, k, 'get');
      this.history.ok(op, await this.r.get(k));
      reads++;
    }
    return reads;
  }

  async readBack(): Promise<number> {
    let kept = 0;
    for (let i = 0; i < KEYS; i++) {
      const k = `race:${i}`;
      const op = this.history.invoke(0, k, 'get');
      const v = await this.r.get(k);
      this.history.ok(op, v);
      if (v === `b-${i}`) kept++;
    }
    return kept;
  }
}

/** INFO expired_keys summed over the nodes. */
async function expiredKeys(conns: Redis[]): Promise<number> {
  let n = 0;
  for (const c of conns) n += Number(/expired_keys:(\d+)/.exec(await c.info('stats'))?.[1] ?? NaN);
  return n;
}

/** Until the sweeps deleted nothing over a span longer than their longest sleep between passes. */
async function sweepsQuiet(conns: Redis[]): Promise<number> {
  let last = await expiredKeys(conns);
  for (;;) {
    await new Promise((r) => setTimeout(r, 1500));
    const now = await expiredKeys(conns);
    if (now === last) return now;
    last = now;
  }
}

test('SETs racing the expiry sweeps: a value written after its key expired is never deleted by the sweep (linearizable)', { timeout: 300_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-expiry-race-'));
  const run = await launchClusterReady(dir, randomBasePort(), FLAGS);
  const conns: Redis[] = [];
  try {
    const password = useClusterPassword(dir);
    for (const port of respPorts(readCluster(dir)).single) conns.push(new Redis({ port, password }));
    const race = new Race(conns[0]!);
    const readers = Array.from({ length: READERS }, (_, i) => race.reader(WRITERS + i));
    await Promise.all(Array.from({ length: WRITERS }, (_, i) => race.writer(i)));
    race.writesDone = true;
    const reads = (await Promise.all(readers)).reduce((a, b) => a + b, 0);
    const early = await race.readBack();
    const expired = await sweepsQuiet(conns);
    const kept = await race.readBack();
    const history = [...race.history.history(), ...race.expiries];
    const lin = checkLinearizability(history, { timeLimitMs: 60_000 });
    assert.equal(lin.ok, true, lin.describe());
    assert.equal(early, KEYS, 'every second value read back once written');
    assert.equal(kept, KEYS, 'every second value read back once the sweeps went quiet');
    assert.ok(expired > 0, `the sweeps deleted keys during the race (INFO expired_keys ${expired})`);
    console.log(`# expiry race: ${KEYS} keys SET with a deadline then again after it; the sweeps deleted ${expired} meanwhile; ${history.length} ops (${reads} racing reads) linearizable; every second value kept`);
  } finally {
    for (const c of conns) c.disconnect();
    await stopCluster(run.child);
    rmSync(dir, { recursive: true, force: true });
  }
});
