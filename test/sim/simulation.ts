// One seeded run of the simulated cluster (issue 10): build the nodes, the fabric and the clients,
// schedule the faults the seed picks, run the workload, settle, then check (./checks.ts). The seed
// decides everything; the trace hash of the events run is the run's fingerprint.
import { planCluster, type ClusterConfig } from '../../config/cluster.js';
import type { Operation } from '../check/linearizability.js';
import { checkHistory, checkIndexes, replicaReads, type Finding } from './checks.js';
import { keyName, shardOfKey, SimClients, type ClientOptions } from './clients.js';
import { EventLoop } from './loop.js';
import { mutations, type MutationName } from './mutations.js';
import { SimNet, type SimNetOptions } from './net.js';
import { SimNode, type SimNodeOptions } from './node.js';
import { Rng } from './rng.js';
import { TraceHash } from './trace.js';

export interface SimOptions {
  nodes: number;
  shards: number;
  replicationFactor: number;
  node: SimNodeOptions;
  net: SimNetOptions;
  clients: ClientOptions;
  /** Faults the seed may pick: node crashes (up to), partitions (up to). */
  crashesMax: number;
  partitionsMax: number;
  /** Simulated time to let in-flight work finish after the workload (ms). */
  settleMs: number;
  /** Give up on a workload still running at this simulated time (a hang is a finding). */
  horizonMs: number;
  /** Run against a deliberately broken component (the mutation test). */
  mutation?: MutationName;
}

export const defaultSimOptions: Readonly<SimOptions> = Object.freeze({
  nodes: 4,
  shards: 8,
  replicationFactor: 3,
  node: {
    segmentBytes: 8192,
    segmentCount: 32,
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
  clients: { clients: 4, opsPerClient: 80, keys: 8, thinkMaxMs: 4, timeoutMs: 400, bigValueP: 0.03 },
  crashesMax: 2,
  partitionsMax: 3,
  settleMs: 600,
  horizonMs: 30_000,
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
}

export async function runSeed(seed: number, over: Partial<SimOptions> = {}): Promise<SimResult> {
  const o: SimOptions = { ...defaultSimOptions, ...over, node: { ...defaultSimOptions.node, ...over.node }, net: { ...defaultSimOptions.net, ...over.net }, clients: { ...defaultSimOptions.clients, ...over.clients } };
  const trace = new TraceHash();
  const loop = new EventLoop(trace);
  const rng = new Rng(seed);
  const findings: Finding[] = [];
  const faults: string[] = [];
  const cluster = planSimCluster(o);
  if (o.mutation) Object.assign(o.node, mutations[o.mutation]);
  // The seed picks how hostile the network is.
  const netO: SimNetOptions = { ...o.net, ...pickNetFaults(rng, over.net) };
  const nodes: SimNode[] = [];
  const net = new SimNet(loop, rng.fork(), netO, nodes);
  const onError = (node: number, where: string, err: unknown) => findings.push({ check: 'run', node, detail: `${where}: ${(err as Error).stack ?? String(err)}` });
  for (let id = 0; id < o.nodes; id++) nodes.push(new SimNode(id, cluster, o.node, loop, (n) => net.transportFor(n), onError));
  for (const n of nodes) n.boot();
  const clients = new SimClients(loop, rng.fork(), trace, cluster, nodes, o.clients);
  scheduleFaults(o, rng.fork(), loop, nodes, net, faults, findings);

  let done = false;
  void clients.run().then(() => (done = true));
  await loop.run(o.horizonMs, () => done);
  if (!done) findings.push({ check: 'run', detail: `clients still running at ${o.horizonMs} ms of simulated time` });

  // Settle: no more faults; everything down comes back; stalled writes finish; digest catches up.
  net.heal();
  netO.stallP = 0;
  netO.lossP = 0;
  for (const n of nodes) if (!n.up) boot(n, findings);
  await loop.run(loop.now() + o.settleMs);
  for (const n of nodes) if (n.up) findings.push(...checkIndexes(n));

  // Final reads on the primaries, then a power cycle of every node and its replicas' answers.
  const keys = Array.from({ length: o.clients.keys }, (_, i) => keyName(i));
  for (const k of keys) await clients.op(FINAL_READER, 'get', k);
  let t = loop.now() + 1;
  const after: Operation[][] = [];
  for (const n of nodes) {
    n.crash();
    if (!boot(n, findings)) continue;
    findings.push(...checkIndexes(n));
    const r = await replicaReads(n, keys, () => (t += 1), 1000 + n.id);
    findings.push(...r.findings);
    after.push(r.ops);
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
  if (findings.length === 0) {
    after.forEach((ops, i) => {
      const mine = ops.filter((op) => primaryOf(cluster, op.key) === i);
      const backup = ops.filter((op) => primaryOf(cluster, op.key) !== i);
      findings.push(...checkHistory([...workload, ...mine], `primary reads of node ${i} after a cold start`));
      findings.push(...checkHistory([...writes, ...backup], `backup reads of node ${i} after a cold start`));
      if (checkHistory([...workload, ...backup], '').length > 0) divergent++;
    });
  }
  return { seed, ok: findings.length === 0, findings, divergent, nodes: nodes.map((n) => `${n.counts.digested}d/${n.counts.cleaned}c/${n.counts.tombstonesDropped}t/${n.counts.tombstonesDroppedOnBackup}tb/${n.counts.boots}b/${n.counts.quarantined}q`),
    tombstonesDropped: nodes.reduce((a, n) => a + n.counts.tombstonesDropped, 0), tombstonesDroppedOnBackup: nodes.reduce((a, n) => a + n.counts.tombstonesDroppedOnBackup, 0), trace: trace.hex(), events: trace.events, simMs: loop.now(), ops: clients.counts, faults, net: net.stats };
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

function boot(n: SimNode, findings: Finding[]): boolean {
  try {
    n.boot();
    return true;
  } catch (err) {
    findings.push({ check: 'run', node: n.id, detail: `cold start failed: ${(err as Error).stack ?? String(err)}` });
    return false;
  }
}

/** Node crashes (power loss, or a torn persist) with a restart, and partitions, at times the seed picks. */
function scheduleFaults(o: SimOptions, rng: Rng, loop: EventLoop, nodes: SimNode[], net: SimNet, faults: string[], findings: Finding[]): void {
  const span = o.clients.opsPerClient * (o.clients.thinkMaxMs / 2 + 2);
  for (let i = rng.int(o.crashesMax + 1); i > 0; i--) {
    const at = rng.float() * span;
    const n = nodes[rng.int(nodes.length)]!;
    const torn = rng.chance(0.5);
    const chunk = rng.chance(0.5) ? 8 : 64;
    const downMs = rng.range(3, 40);
    faults.push(`${torn ? `torn-${chunk}` : 'power'} crash of node ${n.id} at ${at.toFixed(1)} ms for ${downMs} ms`);
    loop.at(at, ['crash', n.id, torn ? chunk : 0], () => {
      if (!n.up) return;
      const restart = () => loop.at(downMs, ['restart', n.id], () => {
        if (!n.up) boot(n, findings);
      });
      if (!torn) {
        n.crash();
        return restart();
      }
      n.region.arm(rng.fork(), chunk as 8 | 64, () => {
        n.markDown();
        restart();
      });
      // No persist within 5 ms: the power goes out all the same.
      loop.at(5, ['crash-fallback', n.id], () => {
        if (n.up && n.region.isArmed) {
          n.crash();
          restart();
        }
      });
    }, true);
  }
  for (let i = rng.int(o.partitionsMax + 1); i > 0; i--) {
    const at = rng.float() * span;
    const a = rng.int(nodes.length);
    const b = (a + 1 + rng.int(nodes.length - 1)) % nodes.length;
    const ms = rng.range(2, 60);
    faults.push(`partition ${a}|${b} at ${at.toFixed(1)} ms for ${ms} ms`);
    loop.at(at, ['partition', a, b, ms], () => net.partition(a, b, ms));
  }
}
