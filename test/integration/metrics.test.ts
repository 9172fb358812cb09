// GET /metrics of a node while a client load runs: the exposition is well-formed Prometheus text (every
// family has HELP and TYPE, every sample line parses, histogram buckets are cumulative and end in +Inf
// = count), and two scrapes during the load show the request counters and latency histograms moving;
// once the load is over, the actors' periodic duties wait 100 ms or more between ticks, not 1 to 15.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { launchCluster, randomBasePort, stopCluster } from '../fixtures/cluster.js';
import { RowanClient } from '../../client/client.js';
import { waitFor } from '../fixtures/failover-cluster.js';

async function scrape(url: string): Promise<string> {
  const r = await fetch(url);
  assert.equal(r.status, 200);
  assert.match(r.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
  return r.text();
}

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Parse and check the text format; returns the samples. */
function parse(text: string): Sample[] {
  const typed = new Map<string, string>();
  const helped = new Set<string>();
  const samples: Sample[] = [];
  for (const line of text.trimEnd().split('\n')) {
    let m = /^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) (.+)$/.exec(line);
    if (m) {
      if (m[1] === 'TYPE') {
        assert.ok(['counter', 'gauge', 'histogram'].includes(m[3]!), line);
        typed.set(m[2]!, m[3]!);
      } else helped.add(m[2]!);
      continue;
    }
    m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (-?[0-9.e+-]+|\+Inf|NaN)$/.exec(line);
    assert.ok(m, `not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const p of (m[2] ?? '').split(/,(?=[a-zA-Z_]+=")/).filter(Boolean)) {
      const lm = /^([a-zA-Z_][a-zA-Z0-9_]*)="(.*)"$/.exec(p);
      assert.ok(lm, `bad label in ${line}`);
      labels[lm[1]!] = lm[2]!;
    }
    const family = m[1]!.replace(/_(bucket|sum|count)$/, '');
    assert.ok(typed.has(m[1]!) || typed.get(family) === 'histogram', `sample ${m[1]} has no TYPE`);
    assert.ok(helped.has(m[1]!) || helped.has(family), `sample ${m[1]} has no HELP`);
    samples.push({ name: m[1]!, labels, value: m[3] === '+Inf' ? Infinity : Number(m[3]) });
  }
  return samples;
}

const get = (s: Sample[], name: string, labels: Record<string, string> = {}) =>
  s.filter((x) => x.name === name && Object.entries(labels).every(([k, v]) => x.labels[k] === v)).reduce((a, x) => a + x.value, 0);

/** An idle actor's wait between ticks reaches at least this (runtime.idleTickMs is 200 ms; the base
 *  periods are 1 ms for control, 5 for clean, 15 for the worker). */
const IDLE_TICK_WAIT_MS_MIN = 100;

/** Wait (at most 30 s) until every actor of `actors` waits at least `min` ms between ticks; returns
 *  each one's wait then. A machine too busy to fire timers on time gets there all the same. */
async function idleTickWaits(url: string, actors: string[], min: number): Promise<Map<string, number>> {
  let waits = new Map<string, number>();
  await waitFor(`idle actors to wait ${min} ms or more between ticks`, async () => {
    const s = parse(await scrape(url));
    waits = new Map(actors.map((a) => [a, get(s, 'rowan_actor_tick_wait_ms', { actor: a })]));
    return [...waits.values()].every((w) => w >= min);
  }, 30_000, 100).catch((err: Error) => assert.fail(`${err.message}: waits ${[...waits].map(([a, w]) => `${a} ${w} ms`).join(', ')}`));
  return waits;
}

function checkHistograms(s: Sample[]): void {
  for (const op of ['put', 'get', 'del']) {
    const buckets = s.filter((x) => x.name === 'rowan_request_duration_seconds_bucket' && x.labels.op === op);
    assert.ok(buckets.length > 2);
    for (let i = 1; i < buckets.length; i++) assert.ok(buckets[i]!.value >= buckets[i - 1]!.value, `${op} buckets are cumulative`);
    assert.equal(buckets.at(-1)!.labels.le, '+Inf');
    assert.equal(buckets.at(-1)!.value, get(s, 'rowan_request_duration_seconds_count', { op }));
  }
}

test('GET /metrics during a load: well-formed, and request rates and latency histograms move', { timeout: 240_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-metrics-'));
  const base = randomBasePort();
  const run = launchCluster(dir, base);
  try {
    await run.ready;
    // rowan cluster serves node N's metrics on base + 800 + N.
    const url = `http://127.0.0.1:${base + 800}/metrics`;
    const client = await RowanClient.connect({ cluster: join(dir, 'cluster.json') });
    let stop = false;
    let ops = 0;
    const load = (async () => {
      for (let round = 0; !stop && round < 2000; round++) {
        await Promise.all(Array.from({ length: 16 }, (_, j) => {
          const k = `key-${(round * 16 + j) % 500}`;
          ops++;
          return j % 4 === 0 ? client.get(k) : j % 9 === 0 ? client.del(k) : client.put(k, `v${round}`);
        }));
      }
    })();
    const first = parse(await scrape(url));
    checkHistograms(first);
    // Wait (bounded by the load's own end) until node 0 has served more requests of every op.
    let second = first;
    const grew = (s: Sample[]) => ['put', 'get', 'del'].every((op) => get(s, 'rowan_request_duration_seconds_count', { op }) > get(first, 'rowan_request_duration_seconds_count', { op }));
    while (!grew(second)) {
      assert.ok(ops < 2000 * 16, 'the load ended before node 0 served more of every op');
      await new Promise((r) => setTimeout(r, 100));
      second = parse(await scrape(url));
    }
    stop = true;
    await load;
    await client.close();
    checkHistograms(second);
    assert.ok(get(second, 'rowan_requests_total', { op: 'put' }) > get(first, 'rowan_requests_total', { op: 'put' }));
    assert.ok(get(second, 'rowan_request_duration_seconds_sum', { op: 'put' }) > 0);
    // The control actor counts landed writes on its pass, which may still be stretched from the idle
    // time before the load (up to runtime.idleTickMs): wait for the count rather than read it once.
    await waitFor('node 0 to count Rowan writes it took as a backup', async () => get(parse(await scrape(url)), 'rowan_blog_writes_total') > 0, 30_000, 100);
    assert.ok(get(second, 'rowan_pool_segments', { state: 'using' }) > 0);
    assert.equal(get(second, 'rowan_config_term'), 1);
    assert.equal(get(second, 'rowan_actor_state', { actor: 'worker.0' }), 1);
    console.log(`# metrics: ${second.length} samples; node 0 served ${get(second, 'rowan_request_duration_seconds_count', { op: 'put' })} PUTs by the second scrape`);
    // The load is over: the periodic duties find nothing to do and their waits stretch towards
    // runtime.idleTickMs (200 ms), where the base periods tick the control actor 1,000, the clean actor
    // 200 and the worker 67 times a second (runtime/tick-schedule.ts).
    const waits = await idleTickWaits(url, ['control.0', 'clean.0', 'worker.0'], IDLE_TICK_WAIT_MS_MIN);
    console.log(`# idle tick waits: ${[...waits].map(([a, w]) => `${a} ${w} ms`).join(', ')}`);
  } finally {
    await stopCluster(run.child);
    rmSync(dir, { recursive: true, force: true });
  }
});
