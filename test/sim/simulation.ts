// One seeded run of the simulated cluster (issues 10, 24): build the configuration manager, the nodes,
// the fabric and the clients, schedule the faults the seed picks (./faults.ts), run the workload,
// settle, then check (./checks.ts) against the configuration the manager stored last. The seed decides
// everything; the trace hash of the events run is the run's fingerprint.
import { liveNodes, planCluster, type ClusterConfig } from '../../config/cluster.js';
import type { Logger } from '../../config/base/log.js';
import { leaseTiming, type LeaseTiming } from '../../actors/manager/leases.js';
import type { Operation } from '../check/linearizability.js';
import { checkDigestHeld, checkHistory, checkIndexes, checkReplicaVersions, newestAcknowledged, replicaReads, type Finding } from './checks.js';
import { emptyShape, keyName, shardOfKey, SimClients, type ClientOptions } from './clients.js';
import { EventLoop } from './loop.js';
import { mutations, type MutationName } from './mutations.js';
import { SimNet, type SimNetOptions } from './net.js';
import { SimNode, type SimEnv, type SimNodeOptions } from './node.js';
import { bootNode, scheduleCopyKill, scheduleFaults, schedulePromotionCut, scheduleScenario, type FaultOptions, type Scenario } from './faults.js';
import { SimManager, SimStore } from './manager.js';
import { Rng } from './rng.js';
import { scheduleMembership, type MembershipScenario } from './membership.js';
import { TraceHash } from './trace.js';

export interface SimOptions {
  nodes: number;
  shards: number;
  replicationFactor: number;
  node: SimNodeOptions;
  net: SimNetOptions;
  clients: ClientOptions;
  /** Faults the seed may pick (./faults.ts). */
  faults: FaultOptions;
  /** The manager's lease timing and tick period (simulated ms). */
  lease: LeaseTiming;
  managerTickMs: number;
  /** Simulated time to let in-flight work finish after the workload (ms). */
  settleMs: number;
  /** Give up on a workload still running at this simulated time (a hang is a finding). */
  horizonMs: number;
  /** Run against a deliberately broken component (the mutation test). */
  mutation?: MutationName;
  /** A cluster without a manager (`rowan start` with no --manager): a static configuration, no
   *  leases, no failover or move; a crashed node's shards wait for its restart, and a restarted
   *  primary serves at once -- its counters raised by its version marks alone. */
  managerless?: boolean;
  /** A copy move of one of the clients' shards to the node holding no replica of it, its target or
   *  source killed mid-copy (./faults.ts scheduleCopyKill). Absent: none (the seeds' runs are as before). */
  copyKill?: 'target' | 'source';
  /** A shard moved away and back, then failed over, every node (or only the new primary) losing power
   *  at the failover's prepare (./faults.ts schedulePromotionCut). Absent: none. */
  promotionCut?: boolean;
  /** A membership change under load (./membership.ts): a node added (one spare node more than
   *  `nodes`, outside the configuration until added) or a member decommissioned. Absent: none. */
  membership?: MembershipScenario;
}

export const defaultSimOptions: Readonly<SimOptions> = Object.freeze({
  nodes: 4,
  shards: 8,
  replicationFactor: 3,
  node: {
    segmentBytes: 8192,
    segmentCount: 64, // 48 ran out under the long-stalls scenarios: each fenced buffer keeps its original Using and a copy (runtime/rowan/receiver.ts), 17 of them in 4 s of seed 834
    reserveSegments: 3,
    keysPerShard: 64,
    keysPerShardMax: 4096,
    preallocate: 3,
    batch: 1,
    graceMs: 2,
    controlTickMs: 1,
    cleanPeriodMs: 4,
    commitVerPeriodMs: 15,
    liveThresholdPercent: 75,
    holdTimeoutMs: 50,
    tombstoneSweepMs: 10,
  },
  net: { delayMinMs: 0.02, delayMaxMs: 1.5, lossP: 0, stallP: 0, stallMinMs: 20, stallMaxMs: 300, noBufferRetryMs: 0.5, noBufferTimeoutMs: 200 },
  clients: { clients: 4, opsPerClient: 80, keys: 8, thinkMaxMs: 4, timeoutMs: 400, bigValueP: 0.03, churnClients: 1, churnPairs: 40 },
  faults: { crashesMax: 2, partitionsMax: 3, fullRestartP: 0.25, managerCrashP: 0.5, movesMax: 3, scenarioP: 0.5 },
  lease: leaseTiming(60, 12, 3),
  managerTickMs: 2,
  settleMs: 3000,
  horizonMs: 60_000,
});

/** The options of a promotion-cut run (test/unit/sim/promotion-cut.test.ts, `sim --promotion-cut`): the
 *  scenario alone, no random fault, and a network without lost connections or stalls -- a connection
 *  to a live backup lost under a write holds that write (and a move's drain of its shard) until the
 *  backup could have been failed over (actors/worker/primary.ts replicateOrOutlive), and the unknown
 *  outcomes of that second-long gap exhaust the linearizability checker's budget. */
export const PROMOTION_CUT: Readonly<Partial<SimOptions>> = Object.freeze({
  promotionCut: true,
  faults: { crashesMax: 0, partitionsMax: 0, fullRestartP: 0, managerCrashP: 0, movesMax: 0, scenarioP: 0 },
  net: { ...defaultSimOptions.net, lossP: 0, stallP: 0 },
});

/** The client id of the final reads on the primaries (replica reads use 1000 + node id). */
const FINAL_READER = 900;

export interface SimResult {
  seed: number;
  ok: boolean;
  findings: Finding[];
  trace: string;
  events: number;
  simMs: number;
  ops: { ok: number; fail: number; unknown: number };
  faults: string[];
  net: SimNet['stats'];
  /** Per node: segments digested, cleaned (freed + emptied), tombstones dropped (all, as a backup), boots, buffers fenced
   *  and quarantined. */
  nodes: string[];
  /** Tombstones the nodes' sweeps removed from their indexes (all incarnations), and of those, the
   *  ones of shards the node backs up. */
  tombstonesDropped: number;
  tombstonesDroppedOnBackup: number;
  /** Backups whose answers after the cold start fit the writes but not what clients read (see above). */
  divergent: number;
  /** The targeted scenario the seed picked (./faults.ts), if any. */
  scenario: Scenario | null;
  /** The configuration's term at the end, failovers and moves the manager recorded, its crashes. */
  term: number;
  failovers: number;
  moves: number;
  /** Copy moves still listed in the stored configuration at the end. */
  copies: number;
  /** The stored configuration at the end: its members, the ids retired, whether a balancing or a
   *  decommission is still going on. */
  members: number[];
  retired: number[];
  membership: { balancing: boolean; leaving: number[]; catchingUp: number };
  managerCrashes: number;
  /** Crash points of the manager that fired (a crash inside a round). */
  crashPoints: number;
  /** The manager's log and the nodes' (for a failing seed). */
  log: string[];
}

export async function runSeed(seed: number, over: Partial<SimOptions> = {}): Promise<SimResult> {
  const o: SimOptions = { ...defaultSimOptions, ...over, node: { ...defaultSimOptions.node, ...over.node }, net: { ...defaultSimOptions.net, ...over.net }, clients: { ...defaultSimOptions.clients, ...over.clients }, faults: { ...defaultSimOptions.faults, ...over.faults } };
  const trace = new TraceHash();
  const loop = new EventLoop(trace);
  const rng = new Rng(seed);
  const findings: Finding[] = [];
  const faults: string[] = [];
  const store = new SimStore(planSimCluster(o));
  const mutation = o.mutation ? mutations[o.mutation] : {};
  Object.assign(o.node, mutation.node ?? {});
  // The seed picks how hostile the network is.
  const netO: SimNetOptions = { ...o.net, ...pickNetFaults(rng, over.net) };
  const nodes: SimNode[] = [];
  const net = new SimNet(loop, rng.fork(), netO, nodes);
  const onError = (node: number, where: string, err: unknown) => findings.push({ check: 'run', node, detail: `${where}: ${(err as Error).stack ?? String(err)}` });
  const manager = new SimManager(store, net, { timing: o.lease, tickMs: o.managerTickMs, ...mutation.manager }, (where, err) => onError(-1, `manager ${where}`, err));
  const env: SimEnv = { loop, net, store, manager, nodes, log: (id) => nodeLogger(id, loop, manager.lines) };
  const managed = !o.managerless;
  const spares = o.membership === 'grow' ? 1 : 0;
  for (let id = 0; id < o.nodes + spares; id++) nodes.push(new SimNode(id, env, { ...o.node, managed }, (n) => net.transportFor(n), onError));
  if (managed) manager.boot(false);
  for (const n of nodes) if (n.member()) n.boot();
  const shape = emptyShape();
  const clients = new SimClients(loop, rng.fork(), trace, () => store.cfg, nodes, o.clients, shape);
  // Never two primaries (DESIGN §6): as a request succeeds at a node, no other node would serve its
  // shard at that instant (a move committed without its source draining would: issue 24, hazard 2).
  clients.onServed = (node, shard) => {
    for (const m of nodes) {
      if (m !== node && m.serves(shard)) findings.push({ check: 'primaries', node: node.id, detail: `two primaries: node ${node.id} answered for shard ${shard} at ${loop.now().toFixed(3)} ms while node ${m.id} serves it too (terms ${node.cell.term()} and ${m.cell.term()})` });
    }
  };
  // The same invariant on the nodes' state, after every event: at most one node would serve each
  // shard, whether or not a request lands in the window (a move committed undrained opens it for as
  // long as the source has not heard the commit).
  const doubled = new Set<string>();
  const checkServing = (): void => {
    for (let shard = 0; shard < store.cfg.shards.length; shard++) {
      const serving = nodes.filter((n) => n.serves(shard));
      if (serving.length < 2) continue;
      const ids = serving.map((n) => n.id).join('+');
      if (doubled.has(`${shard}:${ids}`)) continue;
      doubled.add(`${shard}:${ids}`);
      findings.push({ check: 'primaries', node: serving[0]!.id, detail: `two primaries: nodes ${serving.map((n) => `${n.id} (term ${n.cell.term()})`).join(' and ')} would both serve shard ${shard} at ${loop.now().toFixed(3)} ms` });
    }
  };
  let calm = false;
  const span = o.clients.opsPerClient * (o.clients.thinkMaxMs / 2 + 2);
  const keyShards = [...new Set(Array.from({ length: o.clients.keys }, (_, i) => shardOfKey(store.cfg, keyName(i))))].sort((a, b) => a - b);
  // The random faults pick among the configuration's first members (a spare is added by its scenario).
  const faultEnv = { loop, net, nodes: nodes.slice(0, o.nodes), manager, faults, findings, calm: () => calm, keyShards };
  scheduleFaults(o.faults, span, rng.fork(), faultEnv);
  // Drawn last, from its own stream: a seed without a scenario has the faults and workload it had
  // before scenarios existed.
  const keysOf = (shard: number) => Array.from({ length: o.clients.keys }, (_, i) => i).filter((i) => shardOfKey(store.cfg, keyName(i)) === shard);
  const scenario = scheduleScenario(o.faults, span, rng.fork(), { ...faultEnv, shape, netO, keysOf, keyCount: o.clients.keys });
  if (o.copyKill && !o.managerless) scheduleCopyKill(rng.fork(), span, { ...faultEnv, shape, netO, keysOf, keyCount: o.clients.keys }, o.copyKill);
  if (o.promotionCut && !o.managerless) schedulePromotionCut(rng.fork(), span, { ...faultEnv, shape, netO, keysOf, keyCount: o.clients.keys });
  if (o.membership && !o.managerless) scheduleMembership(rng.fork(), span, { ...faultEnv, nodes, shape, netO, keysOf, keyCount: o.clients.keys }, o.membership);

  let done = false;
  void clients.run().then(() => (done = true));
  await loop.run(o.horizonMs, () => {
    checkServing();
    return done;
  });
  if (!done) findings.push({ check: 'run', detail: `clients still running at ${o.horizonMs} ms of simulated time` });

  // Settle: no more faults; everything down comes back (an evicted node stays out); stalled writes
  // finish; failovers and moves in progress end; digest catches up.
  calm = true;
  manager.disarm();
  net.heal();
  netO.stallP = 0;
  netO.lossP = 0;
  netO.dupP = 0;
  if (managed && !manager.up) manager.boot(false);
  for (const n of nodes) if (!n.up) bootNode(n, findings);
  await settle(loop, nodes, store, o.settleMs);
  for (const n of nodes) if (n.up) findings.push(...checkIndexes(n), ...checkDigestHeld(n));

  // Final reads on the primaries, then a power cycle of every member and its replicas' answers.
  // Every key a client wrote is read back, the churn clients' too (a tombstone dropped too early
  // brings its older PUT back).
  const keys = [...new Set([...Array.from({ length: o.clients.keys }, (_, i) => keyName(i)), ...clients.history.map((op) => op.key)])];
  for (const k of keys) await drive(loop, clients.op(FINAL_READER, 'get', k));
  const cfg = store.cfg;
  let t = loop.now() + 1;
  const after = new Map<number, Operation[]>();
  const newest = newestAcknowledged(clients.history, clients.versions);
  for (const n of nodes) {
    if (!liveNodes(cfg).some((x) => x.id === n.id)) continue;
    n.crash();
    if (!bootNode(n, findings)) continue;
    findings.push(...checkIndexes(n));
    const r = await replicaReads(n, cfg, keys, () => (t += 1), 1000 + n.id);
    findings.push(...r.findings);
    findings.push(...checkReplicaVersions(n, cfg, newest));
    after.set(n.id, r.ops);
  }
  const workload = clients.history.filter((op) => op.client !== FINAL_READER);
  findings.push(...checkHistory(clients.history, 'clients and final primary reads'));
  // Each replica on its own. A primary's answers must fit everything its clients saw. A backup's must
  // fit the writes: every acknowledged write there at its latest version, nothing older back. They
  // need not fit the clients' reads: a write that failed after its primary persisted it (unknown) is
  // served by that primary once it cold-starts from its t-log, and without failover nothing
  // re-replicates it to the backups that missed it -- counted as a divergence, not a failure.
  const writes = workload.filter((op) => op.op !== 'get');
  let divergent = 0;
  // Each check looks only at the keys the replica answered for: linearizability is per key, and on
  // any other key the history is the workload's alone -- linearizable already (the check above
  // passed, and dropping reads keeps it so), or writes alone (always linearizable).
  if (findings.length === 0) {
    for (const [id, ops] of after) {
      const mine = ops.filter((op) => primaryOf(cfg, op.key) === id);
      const backup = ops.filter((op) => primaryOf(cfg, op.key) !== id);
      findings.push(...checkHistory([...onKeysOf(workload, mine), ...mine], `primary reads of node ${id} after a cold start`));
      findings.push(...checkHistory([...onKeysOf(writes, backup), ...backup], `backup reads of node ${id} after a cold start`));
      if (checkHistory([...onKeysOf(workload, backup), ...backup], '').length > 0) divergent++;
    }
  }
  const cm = manager.cm;
  return { seed, ok: findings.length === 0, findings, divergent, scenario, nodes: nodes.map((n) => `${n.counts.digested}d/${n.counts.cleaned}c/${n.counts.tombstonesDropped}t/${n.counts.tombstonesDroppedOnBackup}tb/${n.counts.boots}b/${n.counts.quarantined}q${n.evicted ? '/evicted' : ''}`),
    tombstonesDropped: nodes.reduce((a, n) => a + n.counts.tombstonesDropped, 0), tombstonesDroppedOnBackup: nodes.reduce((a, n) => a + n.counts.tombstonesDroppedOnBackup, 0), trace: trace.hex(), events: trace.events, simMs: loop.now(), ops: clients.counts, faults, net: net.stats,
    term: cfg.term, failovers: cm?.history.length ?? 0, moves: cm?.moves.history.length ?? 0, copies: cfg.copies?.length ?? 0,
    members: liveNodes(cfg).map((n) => n.id), retired: cfg.retired ?? [], membership: { balancing: cfg.balancing === true, leaving: cfg.leaving ?? [], catchingUp: cfg.catchingUp?.length ?? 0 }, managerCrashes: manager.counts.crashes, crashPoints: manager.counts.crashPoints, log: manager.lines };
}

/** Run the loop until every running node serves the stored term with nothing pending and no move is
 *  listed, twice 100 ms apart (digest and clean catch up meanwhile), or for `maxMs`. */
async function settle(loop: EventLoop, nodes: SimNode[], store: SimStore, maxMs: number): Promise<void> {
  const until = loop.now() + maxMs;
  const quiet = () => store.cfg.migrations.length === 0 && nodes.every((n) => !n.up || (n.cell.term() === store.cfg.term && n.cell.pendingTerm() === 0));
  let calm = 0;
  while (loop.now() < until && calm < 2) {
    await loop.run(Math.min(until, loop.now() + 100));
    calm = quiet() ? calm + 1 : 0;
  }
}

/** Run the event loop until `p` settles (an operation outside the workload still needs simulated time). */
async function drive<T>(loop: EventLoop, p: Promise<T>): Promise<T> {
  let settled = false;
  void p.finally(() => (settled = true)).catch(() => {});
  await loop.run(loop.now() + 5_000, () => settled);
  return p;
}

/** A node's log lines, kept with the manager's (a failing seed prints them). */
function nodeLogger(id: number, loop: EventLoop, lines: string[]): Logger {
  const line = (level: string) => (o: unknown, msg?: string) => {
    if (level === 'debug') return;
    lines.push(`${loop.now().toFixed(1)} node ${id} ${level} ${typeof o === 'string' ? o : (msg ?? '')}`);
  };
  return { info: line('info'), warn: line('warn'), error: line('error'), debug: line('debug'), trace: () => {}, fatal: line('fatal'), child: () => nodeLogger(id, loop, lines) } as unknown as Logger;
}

/** The operations of `ops` on a key some operation of `reads` is on. */
function onKeysOf(ops: readonly Operation[], reads: readonly Operation[]): Operation[] {
  const keys = new Set(reads.map((op) => op.key));
  return ops.filter((op) => keys.has(op.key));
}

function primaryOf(c: ClusterConfig, key: string): number {
  return c.shards[shardOfKey(c, key)]!.primary;
}

function planSimCluster(o: SimOptions): ClusterConfig {
  return planCluster({
    nodes: Array.from({ length: o.nodes }, (_, id) => ({ id, host: 'sim', dataDir: `/sim/node-${id}`, workerPorts: [1000 + id], fabric: { kind: 'shm' as const, host: 'sim', port: 0 } })),
    shardCount: o.shards,
    replicationFactor: o.replicationFactor,
  });
}

function pickNetFaults(rng: Rng, fixed: Partial<SimNetOptions> | undefined): Partial<SimNetOptions> {
  const p: Partial<SimNetOptions> = {
    lossP: rng.pick([0, 0, 0.002, 0.01]),
    stallP: rng.pick([0, 0.002, 0.01, 0.03]),
  };
  return { ...p, ...fixed };
}

