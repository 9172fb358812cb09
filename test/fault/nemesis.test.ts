// The nemesis test (issue 24): one long-lived cluster -- the manager, three nodes and two client hosts,
// each in its own network namespace (test/fixtures/netns-cluster.ts), ZooKeeper beside the manager
// where installed -- under a skewed PUT/GET/DEL load on a small key set plus unique-key PUT-then-DEL
// churn and a slow writer of a few rare keys from both client hosts (test/fixtures/nemesis-load.ts;
// the loads live on overlapping shard sets, see HOT_SHARDS), while faults come one after the other
// at random (test/fixtures/nemesis-faults.ts): SIGKILL of a node (restarted as `rowan cluster` would:
// rejoining empty once listed dead), SIGSTOP/SIGCONT of a node or of the manager, SIGKILL of every
// node (and half the time the manager) and a restart of all, SIGKILL of the manager, and partitions:
// a node or the manager off the bridge, or only the path between two hosts cut, then healed. After
// each fault the test waits, by condition, until the cluster serves again with every shard at full
// replication (test/fixtures/nemesis.ts).
//
// At the end: every key read back once all clients stopped; the whole history linearizable per key;
// no acknowledged write lost (test/check/read-back.ts: each key's final read shows a write that could
// be its last); each node's rowan_blog_late_blocks_total summed over its processes, and 0 when no
// write had an unknown outcome (only a write whose sender gave up can legitimately arrive late).
//
// Usage (also printed by --help):
//   npm run test:nemesis -- [--minutes N] [--fabric shm|tcp|both] [--seed S]
//   (or ROWAN_NEMESIS_MINUTES, ROWAN_NEMESIS_FABRIC, ROWAN_NEMESIS_SEED with node --test)
//   --minutes  how long faults keep coming, per fabric (default 0.5: `npm test`'s short run)
//   --fabric   shm, tcp or both (default both, one after the other)
//   --seed     the fault schedule's seed (default: random, printed; pass it to replay the sequence)
// On the shm fabric a partition cuts the manager, the clients and the nodes' peer leases but not
// replication, which goes through the receivers' mapped files (a shared filesystem).
// The CI length: 0.5 min of faults per fabric, both fabrics (about 3-4 faults each, every kind dealt
// before any repeats); about 2.5 minutes in all with the start, the final reads and the checks.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { RowanClient } from '../../client/client.js';
import { monotonicClock } from '../../config/base/clock.js';
import { checkLinearizability, type CheckResult, type Operation } from '../check/linearizability.js';
import { readBack, type ReadBack } from '../check/read-back.js';
import { waitFor } from '../fixtures/failover-cluster.js';
import { KvLoad, type LoadCounts } from '../fixtures/failover-load.js';
import { netnsUnavailable } from '../fixtures/netns.js';
import { ClientLoad, NetnsCluster } from '../fixtures/netns-cluster.js';
import { keysOnShards, readBack as readKeys, type NemesisLoadResult, type NemesisLoadSpec } from '../fixtures/nemesis-load.js';
import { FaultSchedule, describeFault } from '../fixtures/nemesis-faults.js';
import { Nemesis, SettleTimeout } from '../fixtures/nemesis.js';

type Fabric = 'shm' | 'tcp';

interface Options {
  minutes: number;
  fabrics: Fabric[];
  seed: number;
}

const SHARDS = 8;
/** Where each load lives: skewed keys on shards 0-5, churn on 4-7, the rare keys on 6-7 -- shards 6 and
 *  7 see unique-key PUT+DEL and little else, the shape of issue 24's hazard 1 (trigger ii). */
const HOT_SHARDS = [0, 1, 2, 3, 4, 5];
const CHURN_SHARDS = [4, 5, 6, 7];
const RARE_SHARDS = [6, 7];
const KEYS = keysOnShards('h', HOT_SHARDS, 24, SHARDS);
const RARE_KEYS = keysOnShards('r', RARE_SHARDS, 4, SHARDS);
const SKEW = 0.99;
const CLIENT_HOSTS = ['c0', 'c1'];
const CLIENTS_PER_HOST = 2;
/** History client number of the parent's final reads (client hosts use 0.., 10..). */
const FINAL_READER = 900;
/** The manager's lease: 1 s rather than the partition tests' 400 ms. With this 2-core machine's load at
 *  30-40 (other engineers' tests), 400 ms leases expired on CPU starvation alone and evicted healthy
 *  nodes one after another, so the cluster never settled between faults; the faults' holds (up to 4 s)
 *  still outlast the lease and fail nodes over. */
const LEASE_MS = 1000;
/** Actors' READY deadline: 10 s by default, which a restart of three nodes at once misses now and then
 *  when this 2-core machine runs other tests too (a start failure is not what this test is about). */
const READY_TIMEOUT_MS = 60_000;
const loadScript = new URL('../fixtures/nemesis-load.js', import.meta.url).pathname;

function flag(argv: string[], name: string): string | undefined {
  const i = argv.indexOf(`--${name}`);
  if (i >= 0) return argv[i + 1];
  return argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
}

const USAGE = `usage: npm run test:nemesis -- [--minutes N] [--fabric shm|tcp|both] [--seed S]
  --minutes  how long faults keep coming, per fabric (default 0.5; env ROWAN_NEMESIS_MINUTES)
  --fabric   shm, tcp or both, one after the other (default both; env ROWAN_NEMESIS_FABRIC)
  --seed     the fault schedule's seed (default random, printed; env ROWAN_NEMESIS_SEED)`;

export function parseOptions(argv: string[], env: NodeJS.ProcessEnv): Options {
  if (argv.includes('--help') || argv.includes('-h')) {
    console.log(USAGE);
    process.exit(0);
  }
  const minutes = Number(flag(argv, 'minutes') ?? env['ROWAN_NEMESIS_MINUTES'] ?? 0.5);
  const fabric = flag(argv, 'fabric') ?? env['ROWAN_NEMESIS_FABRIC'] ?? 'both';
  const seedText = flag(argv, 'seed') ?? env['ROWAN_NEMESIS_SEED'];
  const seed = seedText === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(seedText);
  if (!(minutes > 0)) throw new Error(`--minutes: '${minutes}' is not a positive number`);
  if (!['shm', 'tcp', 'both'].includes(fabric)) throw new Error(`--fabric: '${fabric}' (shm|tcp|both)`);
  if (!Number.isInteger(seed)) throw new Error(`--seed: '${seedText}' is not an integer`);
  return { minutes, fabrics: fabric === 'both' ? ['shm', 'tcp'] : [fabric as Fabric], seed };
}

const opts = parseOptions(process.argv.slice(2), process.env);
const unavailable = netnsUnavailable();

/** Each fabric deals its own sequence from the one seed (a short run of both sees more kinds), the
 *  same whether it runs alone or after the other: `--seed S --fabric tcp` replays the tcp part of a
 *  run of both. */
function scheduleSeed(seed: number, fabric: Fabric): number {
  return fabric === 'shm' ? seed : (seed ^ 0x2545f491) >>> 0;
}

function add(into: LoadCounts, c: LoadCounts): void {
  for (const k of ['ok', 'fail', 'unknown'] as const) into[k] += c[k];
  for (const [code, n] of Object.entries(c.codes)) into.codes[code] = (into.codes[code] ?? 0) + n;
}

/** The logs of a failed run, kept where the report says (the run's dir goes with its namespaces). */
function keepLogs(dir: string, fabric: Fabric, seed: number): string {
  const to = join('/tmp', `rowan-nemesis-${fabric}-seed-${seed}-${process.pid}`);
  mkdirSync(to, { recursive: true });
  for (const f of readdirSync(dir).filter((x) => x.endsWith('.log'))) cpSync(join(dir, f), join(to, f));
  return to;
}

/** What the end of a run found: the merged history and every check made on it. */
interface Verdict {
  history: Operation[];
  results: NemesisLoadResult[];
  back: ReadBack;
  /** Keys no final read could read (hot and rare ones here, churn ones on the client hosts). */
  unread: string[];
  lin: CheckResult;
  late: { late: number; readings: number }[];
  unknownWrites: number;
  faultMs: number;
  /** Why the cluster did not settle (faults stopped there; the history was still checked), or null. */
  liveness: string | null;
}

function startLoads(c: NetnsCluster, dir: string): ClientLoad[] {
  return CLIENT_HOSTS.map((host, i) => {
    const spec: NemesisLoadSpec = {
      cluster: c.file, passwordFile: c.passwordFile, out: join(dir, `load-${host}.json`), keys: KEYS, skew: SKEW, clients: CLIENTS_PER_HOST,
      clientBase: i * 10, maxOps: 2_000_000, shards: SHARDS, churnShards: CHURN_SHARDS, rareKeys: RARE_KEYS,
    };
    return ClientLoad.start(c, host, spec, loadScript);
  });
}

/** Faults until `minutes` ran out (the last one ends and settles), then the loads stop, every key is
 *  read back, and the history is checked. */
async function run(nemesis: Nemesis, schedule: FaultSchedule, loads: ClientLoad[], probe: RowanClient): Promise<Verdict> {
  const t0 = monotonicClock.now();
  let liveness: string | null = null;
  while (liveness === null && monotonicClock.now() - t0 < opts.minutes * 60_000) {
    try {
      await nemesis.inject(schedule.next(), t0);
    } catch (err) {
      if (!(err instanceof SettleTimeout)) throw err;
      liveness = err.message; // no more faults; what the clients saw so far is still checked
    }
  }
  const faultMs = monotonicClock.now() - t0;
  const results = await Promise.all(loads.map((l) => l.stop<NemesisLoadResult>(300_000)));
  // Without the load's CPU the cluster may come back (an eviction loop under load, say): once more.
  if (liveness !== null) await nemesis.settle('once the load stopped', false).catch((err: Error) => (liveness += `; ${err.message}`));
  // Every client host stopped writing: the hot and rare keys' final reads, from here, in the history.
  const reader = new KvLoad([], [], Infinity, 0, FINAL_READER, () => monotonicClock.now());
  const unread = [...(await readKeys(reader, probe, FINAL_READER, [...KEYS, ...RARE_KEYS])), ...results.flatMap((r) => r.unread)];
  const history: Operation[] = [...results.flatMap((r) => r.history), ...reader.operations()];
  const isFinal = (o: Operation) => o.client === FINAL_READER || results.some((_, i) => o.client === i * 10 + CLIENTS_PER_HOST + 1);
  return {
    history,
    results,
    back: readBack(history, isFinal),
    unread,
    lin: checkLinearizability(history, { timeLimitMs: Math.max(120_000, opts.minutes * 30_000) }),
    late: await nemesis.lateBlocks(),
    unknownWrites: history.filter((o) => o.op !== 'get' && o.outcome === 'unknown').length,
    faultMs,
    liveness,
  };
}

/** The run's table: faults by kind, operations by outcome, what the checks found. */
function summary(fabric: Fabric, c: NetnsCluster, nemesis: Nemesis, v: Verdict, tStart: number): string {
  const counts: LoadCounts = { ok: 0, fail: 0, unknown: 0, codes: {} };
  for (const r of v.results) for (const part of [r.skewed, r.churn, r.rare]) add(counts, part);
  const isolatedManager = nemesis.faults.filter((f) => f.fault.kind === 'isolate-manager');
  const nodeExits = nemesis.ownExits.filter((e) => e.node !== 'manager');
  const lin = v.lin;
  const rows: [string, string][] = [
    ['fabric / store', `${fabric} / ${c.store}`],
    ['seed', String(opts.seed)],
    ['faults', `${nemesis.faults.length} in ${(v.faultMs / 1000).toFixed(0)} s: ${Object.entries(nemesis.byKind()).map(([k, n]) => `${k} ${n}`).join(', ')}`],
    ['settled after a fault', nemesis.faults.length === 0 ? '-' : `max ${Math.max(...nemesis.faults.map((f) => f.settledMs)).toFixed(0)} ms`],
    ['processes that stopped on their own', `${nodeExits.length} node(s) (${nodeExits.filter((e) => e.code === 0).length} with exit code 0: evicted), the manager ${nemesis.ownExits.length - nodeExits.length} time(s); all started again`],
    // A cut-off manager must fail nobody over (issue 24, hazard 3): an evicted node stops on its own.
    // Other term changes over the fault's span evicted nobody (a catch-up or a confirming round the
    // manager finished, which the manager's log names).
    ['isolate-manager faults that evicted a node', `${isolatedManager.filter((f) => f.ownExits > 0).length} of ${isolatedManager.length} (a cut-off manager should store nothing: issue 24, hazard 3)`],
    ['isolate-manager faults with another term change', `${isolatedManager.filter((f) => f.ownExits === 0 && f.terms[1] > f.terms[0]).map((f) => `+${f.terms[1] - f.terms[0]}`).join(', ') || 'none'} (no node evicted)`],
    ['starts that failed (started again)', `${nemesis.startFailures.length}${nemesis.startFailures.length > 0 ? `: ${[...new Set(nemesis.startFailures)].slice(0, 3).join('; ')}` : ''}`],
    ['operations', `${v.history.length} (${counts.ok} ok, ${counts.fail} failed-not-applied, ${counts.unknown} unknown ${JSON.stringify(counts.codes)}), ${v.unknownWrites} writes of unknown outcome`],
    ['churn keys', `${v.results.reduce((n, r) => n + r.churnKeys, 0)} (PUT then DEL each)`],
    ['keys read back', `${v.back.keys}; unread ${v.back.unread.length + v.unread.length}`],
    ['lost acknowledged writes', String(v.back.lost.length)],
    ['linearizable', lin.ok === true ? `yes (${lin.checked} ops checked over ${lin.keys} keys)` : lin.ok === false ? `NO (key ${lin.key})` : `undecided (${lin.reason})`],
    ['late blocks (rowan_blog_late_blocks_total)', v.late.map((l, i) => `node ${i}: ${l.late} (${l.readings} readings)`).join(', ')],
    ['liveness', v.liveness === null ? 'settled after every fault' : `FAILED: ${v.liveness}`],
    ['duration', `${((monotonicClock.now() - tStart) / 1000).toFixed(0)} s`],
  ];
  const lost = v.back.lost.slice(0, 10).map((l) => `\n  lost: key ${l.key} read ${JSON.stringify(l.read)}, possible ${JSON.stringify(l.possible)}, acknowledged ${JSON.stringify(l.acknowledged)}`);
  return `summary\n${rows.map(([k, v]) => `  ${k.padEnd(44)} ${v}`).join('\n')}${lost.join('')}`;
}

function assertVerdict(v: Verdict): void {
  assert.deepEqual([...v.back.unread, ...v.unread], [], 'keys whose final read never completed: the run cannot say whether their writes were kept');
  assert.equal(v.back.lost.length, 0, `acknowledged writes lost on ${v.back.lost.length} key(s): ${v.back.lost.slice(0, 5).map((l) => l.key).join(', ')}`);
  assert.equal(v.lin.ok, true, v.lin.describe());
  assert.ok(v.late.every((l) => l.readings > 0), 'a node whose /metrics was never read: its late blocks are unknown');
  // Only a write whose sender gave up (an unknown outcome) can legitimately reach a backup late.
  if (v.unknownWrites === 0) assert.deepEqual(v.late.map((l) => l.late), v.late.map(() => 0), 'late b-log blocks although no write had an unknown outcome');
  assert.equal(v.liveness, null, 'the cluster did not serve again within the bounds after a fault');
}

/** The fault sequence so far, the one in progress, the nodes' own exits, where the logs are. */
function failureReport(nemesis: Nemesis, dir: string, fabric: Fabric): string {
  const done = nemesis.faults.map((f, i) => `  ${i + 1}. ${describeFault(f.fault)} at ${f.at.toFixed(0)}..${f.endAt.toFixed(0)} (monotonic ms), settled ${f.settledMs.toFixed(0)} ms later; term ${f.terms[0]} -> ${f.terms[1]}`);
  const current = nemesis.current ? [`  ${nemesis.faults.length + 1}. ${describeFault(nemesis.current.fault)} at ${nemesis.current.at.toFixed(0)} (monotonic ms): not over when the run failed`] : [];
  return [`FAILED with seed ${opts.seed}; faults:`, ...done, ...current, `  processes that stopped on their own: ${JSON.stringify(nemesis.ownExits)}`, `  logs kept in ${keepLogs(dir, fabric, opts.seed)}`].join('\n');
}

for (const fabric of opts.fabrics) {
  const timeout = opts.minutes * 60_000 + 15 * 60_000;
  test(`nemesis (${fabric}, ${opts.minutes} min, seed ${opts.seed}): random kills, pauses, full restarts, manager kills and partitions; history linearizable, no acknowledged write lost`, { timeout, skip: unavailable ?? false }, async (t) => {
    const log = (line: string) => console.log(`nemesis ${fabric}: ${line}`);
    log(`seed ${opts.seed} (replay the fault sequence: npm run test:nemesis -- --seed ${opts.seed} --fabric ${fabric} --minutes ${opts.minutes})`);
    const tStart = monotonicClock.now();
    const { c, dir } = await NetnsCluster.forTest(t, `nemesis-${fabric}`, SHARDS, { fabric, readyTimeoutMs: READY_TIMEOUT_MS, leaseMs: LEASE_MS });
    c.lab.rootLink(); // the probe and the final reads run in this process
    const probe = await RowanClient.connect({ cluster: c.file, passwordFile: c.passwordFile, retries: 8, timeoutMs: 5000 });
    t.after(() => probe.close());
    const loads = startLoads(c, dir);
    const nemesis = new Nemesis(c, probe, loads, log);
    let stopped = false;
    try {
      await waitFor('both client hosts to be served', () => loads.every((l) => (l.progress()?.fresh.ok ?? 0) > 50), 120_000, 50);
      const v = await run(nemesis, new FaultSchedule(scheduleSeed(opts.seed, fabric), 3), loads, probe);
      stopped = true;
      log(summary(fabric, c, nemesis, v, tStart));
      assertVerdict(v);
    } catch (err) {
      log(failureReport(nemesis, dir, fabric));
      throw err;
    } finally {
      // A failed run's loads are not drained (their final reads would wait on a broken cluster).
      if (!stopped) for (const l of loads) l.child.kill('SIGKILL');
    }
  });
}

if (unavailable) console.log(`nemesis skipped: ${unavailable}`);
