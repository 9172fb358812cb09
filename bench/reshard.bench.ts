// Dynamic resharding (ROWAN §6.6, Figure 15): a read-intensive load (95 % GET, 5 % PUT, uniform keys)
// on a local 3-node cluster with automatic resharding on; at t = HOTSPOT_MS, 80 % of the requests that
// went to node A's shards go to one shard S whose primary is node B (A holds a full replica of S), so
// B is overloaded and A underloaded. The manager detects it from the nodes' load reports and moves S
// to the least loaded of its full backups; throughput per bucket is recorded over the run, with marks
// for the hotspot, the overload detected, the move started and finished (from the manager's log,
// whose `at` is the same CLOCK_MONOTONIC this process reads).
//
// Where a hot node's bottleneck comes from. The paper's hot server saturates its own CPUs. The three
// nodes and the client here share 2 cores, so a hot node simply takes what idle ones leave; a cgroup
// CPU quota per node (--link-mbit=0 --node-cpu=C, ./reshard/cpu-budget.ts) did not make the hot node
// saturate alone either, because a node's cost per request falls as its batches grow (README
// "Resharding", runs 1-11). So by default each node runs on a host of its own (a network namespace,
// test/fixtures/netns.ts) whose link sends at most --link-mbit Mbit/s, the tcp fabric carries the
// replication, and requests carry 16 KiB values: a node's capacity is its link, which it does not share
// and which batching does not stretch. Per 250 ms the run records what each node sent, the cores each
// node, the client and the rest of the machine ran, and (with a quota) how often it throttled a node.
//
// Flags (default with links / with --link-mbit=0): --link-mbit=M (180; 0: loopback), --duration=ms
// (15000 / 10000), --hotspot=ms (3000), --warmup=ms (3000, load not counted), --keys=N (4000 / 30000),
// --value-bytes=B (16384 / 100; the pool grows to hold the keys), --rate=N (3000 / 45000 requests/s
// offered, open loop; 0: closed loop of --concurrency=C, 48), --node-queue=N (48: requests outstanding
// per node, more arrivals are shed), --workers=W (per node, 1; more only on loopback), --shards=S (12),
// --nodes=N (3; more: node A holds no replica of S, resharding.copyMoves is on, and S is copied to A),
// --period=ms (resharding.periodMs, 500), --lease-ms=ms (2000), --node-cpu=C (a cgroup quota of C CPUs
// per node process: none / 0.2; 0: none), --quota-period=ms (the quota's CFS period, 10).
// Through the harness: npm run bench -- reshard.
import { findSecret } from '../config/base/secret.js';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { RowanClient } from '../client/client.js';
import { monotonicClock } from '../config/base/clock.js';
import type { ClusterConfig } from '../config/cluster.js';
import { shardOfKey } from '../config/slots.js';
import { progress, recordParams, resultsDir, type Row } from './report.js';
import { reshardTimelineSvg, type Mark } from './reshard/timeline.js';
import { limitCpu, threadsIn } from './reshard/cpu-budget.js';
import { managerEvents, startCluster, startNetnsCluster } from './reshard/cluster.js';
import { CPU_SAMPLE_MS, sampleResources, type CpuSample } from './reshard/samples.js';
import { mulberry32 } from './ycsb/zipfian.js';
import { nonReplica } from '../test/fixtures/reshard.js';
import { askManager, managerAddress } from '../bin/manager-admin.js';

const BUCKET_MS = 100;

function flag(name: string, dflt: number): number {
  const a = process.argv.find((x) => x.startsWith(`--${name}=`));
  const v = a ? Number(a.slice(name.length + 3)) : dflt;
  if (!Number.isFinite(v) || v <= 0) throw new Error(`--${name}: '${a}' is not a positive number`);
  return v;
}

/** Figure 15 as in the paper: one more node than replicas, so the hot shard is copied to a node that
 *  holds none of it (`npm run bench -- reshard-copy`). */
export function runCopy(): Promise<Row[]> {
  return run(4);
}

export async function run(defaultNodes = 3): Promise<Row[]> {
  // Two set-ups (docs/resharding.md). By default each node is a host of its own whose link sends at
  // most --link-mbit Mbit/s, and requests carry 16 KiB values: the hot node's link saturates while the
  // others' do not, as the paper's hot server's CPUs do. --link-mbit=0: all on loopback, 100 B values,
  // a cgroup CPU quota per node instead (runs 1-11: no node saturates alone there).
  const linkMbit = process.argv.some((a) => a === '--link-mbit=0') ? 0 : flag('link-mbit', 180);
  const link = linkMbit > 0;
  const durationMs = flag('duration', link ? 15_000 : 10_000);
  const hotspotMs = flag('hotspot', 3_000);
  const keyCount = flag('keys', link ? 4_000 : 30_000);
  const concurrency = flag('concurrency', 48);
  const offerRate = process.argv.some((a) => a === '--rate=0') ? 0 : flag('rate', link ? 3_000 : 45_000);
  const nodeQueue = flag('node-queue', 48);
  const workers = flag('workers', 1);
  const shards = flag('shards', 12);
  // More nodes than the 3 replicas: a node holds no replica of the hot shard, and the manager may copy
  // the shard to it (resharding.copyMoves, on for such a run) -- Figure 15 as in the paper.
  const nodes = flag('nodes', defaultNodes);
  if (!Number.isInteger(nodes) || nodes < 3) throw new Error(`--nodes: ${nodes} is not an integer >= 3`);
  const copyMoves = nodes > 3;
  const timelineName = copyMoves ? 'reshard-copy-timeline' : 'reshard-timeline';
  const periodMs = flag('period', 500);
  const cpuFlag = process.argv.find((a) => a.startsWith('--node-cpu='));
  const nodeCpu = cpuFlag === '--node-cpu=0' || (cpuFlag === undefined && link) ? 0 : flag('node-cpu', 0.2);
  const quotaPeriodMs = flag('quota-period', 10);
  // The lease only decides how fast a dead node is failed over, which this benchmark does not measure.
  // A node throttled to a fraction of a CPU runs its main thread's lease renewals late: with the default
  // 200 ms lease all three nodes lost theirs at 0.2 CPU while the keys were loaded.
  const leaseMs = flag('lease-ms', 2000);
  const warmupMs = process.argv.some((a) => a === '--warmup=0') ? 0 : flag('warmup', 3000);
  const valueBytes = Math.round(flag('value-bytes', link ? 16_384 : 100));
  // Every node holds every key (3 replicas); 4x leaves room for the PUTs' overwrites before GC.
  const poolMib = Math.max(128, Math.ceil((keyCount * (valueBytes + 64) * 4) / 2 ** 20));
  recordParams({ linkMbit: linkMbit > 0 ? linkMbit : null, leaseMs, rate: offerRate, nodeQueue: offerRate > 0 ? nodeQueue : null, concurrency: offerRate > 0 ? null : concurrency, nodeCpu, quotaPeriodMs, warmupMs, durationMs, hotspotMs, keys: keyCount, workers, shards, periodMs, nodes, replication: 3, copyMoves, valueBytes, poolMib, workload: '95 % GET / 5 % PUT, uniform keys; after the hotspot 80 % of the requests to one node go to one shard of another' });
  if (link && workers !== 1) throw new Error('--workers: the namespaced nodes run one worker each; --link-mbit=0 for more');
  const cl = link ? await startNetnsCluster(shards, periodMs, leaseMs, poolMib, linkMbit, nodes, copyMoves) : await startCluster(shards, workers, periodMs, leaseMs, poolMib, nodes, copyMoves);
  progress(`reshard: ${cl.network}`, 0, 1);
  // One CPU budget per node, as the paper's servers each have their own CPUs (./reshard/cpu-budget.ts).
  const budgets = nodeCpu > 0 ? limitCpu(cl.pids, nodeCpu, `rowan-reshard-${process.pid}`, Math.round(quotaPeriodMs * 1000)) : { how: 'none', groups: cl.pids.map(() => null), release: () => {} };
  progress(`reshard: CPU budget: ${budgets.how}; threads in each node's group: ${budgets.groups.map(threadsIn).join(', ')}`, 0, 1);
  try {
    const c0 = JSON.parse(readFileSync(cl.file, 'utf8')) as ClusterConfig;
    const clients = await Promise.all(Array.from({ length: 4 }, () => RowanClient.connect({ cluster: cl.file, retries: 10, timeoutMs: 10_000 })));
    const keys = Array.from({ length: keyCount }, (_, i) => `user${String(i).padStart(10, '0')}`);
    const shardOf = keys.map((k) => shardOfKey(Buffer.from(k), shards));
    // The hot shard S on node B, and node A whose load goes to S: a full backup of S (so the manager can
    // hand S to it), or with more nodes than replicas a node holding no replica of S (it is copied).
    const hot = 0;
    const nodeB = c0.shards[hot]!.primary;
    const nodeA = copyMoves ? nonReplica(c0, hot)! : c0.shards[hot]!.backups[0]!;
    const nodeC = c0.nodes.map((n) => n.id).find((id) => id !== nodeA && id !== nodeB)!;
    if (nodeA === undefined) throw new Error(`every node holds a replica of shard ${hot} (replication ${c0.replicationFactor} on ${c0.nodes.length} nodes): no copy target`);
    const hotKeys = keys.filter((_, i) => shardOf[i] === hot);
    const shardOfName = new Map(keys.map((k, i) => [k, shardOf[i]!]));
    const value = Buffer.alloc(valueBytes, 'v');
    progress(`reshard: loading ${keyCount} keys`, 0, 1);
    for (let i = 0; i < keys.length; i += 64) await Promise.all(keys.slice(i, i + 64).map((k, j) => clients[j % clients.length]!.put(k, value)));
    const rand = mulberry32(42);
    const buckets = new Array<number>(Math.ceil(durationMs / BUCKET_MS)).fill(0);
    let errors = 0;
    // A warm-up first (not counted): the load's digest and clean work, and the JIT, settle.
    const t0 = monotonicClock.now() + warmupMs;
    const end = t0 + durationMs;
    const pick = (now: number): string => {
      const i = Math.floor(rand() * keys.length);
      // After the hotspot: 80 % of what went to node A's primary shards goes to the hot shard instead.
      if (now - t0 >= hotspotMs && c0.shards[shardOf[i]!]!.primary === nodeA && rand() < 0.8) return hotKeys[Math.floor(rand() * hotKeys.length)]!;
      return keys[i]!;
    };
    // Per bucket: requests completed (`buckets`), offered, shed; latencies (ms) of those completed.
    const offered = new Array<number>(buckets.length).fill(0);
    const shed = new Array<number>(buckets.length).fill(0);
    const lat: number[][] = buckets.map(() => []);
    let notGenerated = 0;
    const bucketOf = (ms: number) => {
      const b = Math.floor((ms - t0) / BUCKET_MS);
      return b >= 0 && b < buckets.length ? b : -1;
    };
    const one = async (c: RowanClient, key: string) => {
      const start = monotonicClock.now();
      try {
        if (rand() < 0.05) await c.put(key, value);
        else await c.get(key);
        const now = monotonicClock.now();
        const b = bucketOf(now);
        if (b >= 0) {
          buckets[b]!++;
          lat[b]!.push(now - start);
        }
      } catch {
        errors++;
      }
    };
    // Closed loop (--rate=0): `concurrency` requests outstanding; each sends its next when one returns.
    const loop = async (c: RowanClient) => {
      for (;;) {
        const now = monotonicClock.now();
        if (now >= end) return;
        await one(c, pick(now));
      }
    };
    // Open loop (--rate=R): requests arrive at R/s whatever the latency, as from many independent
    // clients. Each node takes at most `nodeQueue` outstanding requests of this client; an arrival for a
    // node already holding that many is shed (counted, not sent), as a server with a bounded queue
    // refuses it: an overloaded node's backlog cannot grow without bound and swamp the rest.
    const outstanding = new Map<number, number>();
    const paced = async () => {
      const start = monotonicClock.now();
      let sent = 0;
      let rr = 0;
      const inflight: Promise<void>[] = [];
      for (;;) {
        const now = monotonicClock.now();
        if (now >= end) break;
        let due = Math.floor(((now - start) * offerRate) / 1000) - sent;
        // More than 50 ms behind (this process was not scheduled): those arrivals are not generated.
        const cap = Math.ceil((offerRate * 50) / 1000);
        if (due > cap) {
          if (now >= t0) notGenerated += due - cap;
          sent += due - cap;
          due = cap;
        }
        for (let i = 0; i < due; i++, sent++) {
          const key = pick(now);
          const c = clients[rr++ % clients.length]!;
          const cfg = c.config();
          const node = cfg.shards[shardOfName.get(key)!]!.primary;
          const b = bucketOf(now);
          if (b >= 0) offered[b]!++;
          const n = outstanding.get(node) ?? 0;
          if (n >= nodeQueue) {
            if (b >= 0) shed[b]!++;
            continue;
          }
          outstanding.set(node, n + 1);
          const p = one(c, key).finally(() => outstanding.set(node, outstanding.get(node)! - 1));
          if (inflight.length < 1024) inflight.push(p);
          else inflight[sent % 1024] = p;
        }
        await new Promise((res) => setTimeout(res, 1));
      }
      await Promise.all(inflight);
    };
    progress(`reshard: ${warmupMs} ms warm-up, then ${durationMs} ms of 95 % GET, hotspot on shard ${hot} (node ${nodeB}) at ${hotspotMs} ms`, 0, 1);
    // The manager's view of each node's load (requests/s as primary + weighted backup writes), sampled.
    const loads: { atMs: number; loads: Record<string, number> }[] = [];
    const secret = findSecret(undefined, cl.file);
    const loadSampler = (async () => {
      while (monotonicClock.now() < t0) await new Promise((res) => setTimeout(res, 20));
      while (monotonicClock.now() < end) {
        const r = (await askManager(cl.manager ?? managerAddress(undefined, c0), { op: 'loads' }, 1000, secret).catch(() => null)) as { loads: Record<string, number> } | null;
        if (r) loads.push({ atMs: monotonicClock.now() - t0, loads: r.loads });
        await new Promise((res) => setTimeout(res, 250));
      }
    })();
    // What each node process and this client actually ran (cores, all threads) and how often a node's
    // quota throttled it, per CPU_SAMPLE_MS: the evidence of which one is saturated.
    const { samples: cpu, done: cpuSampler } = sampleResources(cl, budgets.groups, t0, end);
    if (offerRate > 0) await paced();
    else await Promise.all(Array.from({ length: concurrency }, (_, i) => loop(clients[i % clients.length]!)));
    await Promise.all([loadSampler, cpuSampler]);
    await Promise.all(clients.map((c) => c.close()));
    const ev = managerEvents(cl.dir);
    const rel = (e: Record<string, unknown> | undefined) => (e ? (e['at'] as number) - t0 : null);
    const detected = ev.find((e) => e['event'] === 'overload-detected' && (e['at'] as number) >= t0 + hotspotMs);
    const atOrAfter = (e: Record<string, unknown>, from: Record<string, unknown> | undefined) => from !== undefined && (e['at'] as number) >= (from['at'] as number);
    // A copy move: copy-stored ... copy-done (its copy: entries, bytes, copyMs), with the handover (a
    // move of the primary role to the copy) in between. A role move: move-started ... move-done.
    const copyStored = ev.find((e) => e['event'] === 'copy-stored' && atOrAfter(e, detected));
    const copyDone = copyStored ? ev.find((e) => e['event'] === 'copy-done' && e['term'] === copyStored['term']) : undefined;
    const started = copyStored ?? ev.find((e) => e['event'] === 'move-started' && atOrAfter(e, detected));
    const moveStarted = copyStored ? ev.find((e) => e['event'] === 'move-started' && atOrAfter(e, copyStored)) : started;
    const done = copyStored ? copyDone : started ? ev.find((e) => e['event'] === 'move-done' && e['term'] === started['term']) : undefined;
    const promoted = moveStarted ? ev.find((e) => e['event'] === 'move-promoted' && e['term'] === moveStarted['term']) : undefined;
    const moves = (started?.['moves'] as { shard: number; from: number; to: number }[] | undefined) ?? [];
    const span = (xs: number[], from: number, to: number) => xs.slice(Math.max(0, Math.floor(from / BUCKET_MS)), Math.max(0, Math.floor(to / BUCKET_MS)));
    const perSec = (xs: number[], from: number, to: number) => {
      const bs = span(xs, from, to);
      return bs.length ? Math.round((bs.reduce((a, b) => a + b, 0) * 1000) / (bs.length * BUCKET_MS)) : 0;
    };
    const rate = (from: number, to: number) => perSec(buckets, from, to);
    const pct = (from: number, to: number, q: number) => {
      const xs = lat.slice(Math.max(0, Math.floor(from / BUCKET_MS)), Math.max(0, Math.floor(to / BUCKET_MS))).flat().sort((a, b) => a - b);
      return xs.length ? +xs[Math.min(xs.length - 1, Math.floor(q * xs.length))]!.toFixed(1) : null;
    };
    const detectedMs = rel(detected);
    const doneMs = rel(done);
    const hotObjects = hotKeys.length;
    const moveMs = done && started ? +((done['at'] as number) - (started['at'] as number)).toFixed(1) : null;
    // The three windows: 2 s before the hotspot; the hotspot until the overload is detected (the move
    // starts at once); from 500 ms after the move to the end.
    const win = {
      before: [hotspotMs - 2000, hotspotMs],
      hotspot: [hotspotMs + 100, detectedMs ?? hotspotMs + 1000],
      after: [(doneMs ?? durationMs) + 500, durationMs],
    } as const;
    const before = rate(...win.before);
    const during = rate(...win.hotspot);
    const after = rate(...win.after);
    // Mean over the CPU samples whose interval ends inside [from, to] (at least the one ending first after `from`).
    const meanCpu = (pickOne: (c: CpuSample) => number | null, [from, to]: readonly [number, number]) => {
      let xs = cpu.filter((c) => c.atMs > from && c.atMs <= to + CPU_SAMPLE_MS / 2).map(pickOne).filter((v): v is number => v !== null);
      if (xs.length === 0) xs = cpu.filter((c) => c.atMs > from).slice(0, 1).map(pickOne).filter((v): v is number => v !== null);
      return xs.length ? +(xs.reduce((a, b) => a + b, 0) / xs.length).toFixed(2) : null;
    };
    const cpuOf = (node: number) => (c: CpuSample) => c.nodes[String(node)] ?? null;
    const thrOf = (node: number) => (c: CpuSample) => c.throttledShare[String(node)] ?? null;
    const ratio = (a: number, b: number) => (b > 0 ? +(a / b).toFixed(2) : null);
    const row: Row = {
      nodes,
      shards,
      workers,
      keys: keyCount,
      rate: offerRate > 0 ? offerRate : null,
      concurrency: offerRate > 0 ? null : concurrency,
      nodeQueue: offerRate > 0 ? nodeQueue : null,
      hotShard: hot,
      hotspotMs,
      detectedAfterMs: detectedMs === null ? null : Math.round(detectedMs - hotspotMs),
      moved: moves.map((m) => `shard ${m.shard} ${m.from}->${m.to}`).join(', ') || 'none',
      moveMs,
      handoverMs: promoted && moveStarted ? +((promoted['at'] as number) - (moveStarted['at'] as number)).toFixed(1) : null,
      objectsHandedOver: moves.length ? hotObjects : 0,
      objectsPerSec: moves.length && moveMs ? Math.round(hotObjects / (moveMs / 1000)) : null,
      // A copy move's copy (the target's migration actor streaming the shard from its primary).
      objectsCopied: (copyDone?.['entries'] as number | undefined) ?? 0,
      copyMs: (copyDone?.['copyMs'] as number | undefined) ?? null,
      copiedObjectsPerSec: copyDone && (copyDone['copyMs'] as number) > 0 ? Math.round((copyDone['entries'] as number) / ((copyDone['copyMs'] as number) / 1000)) : null,
      copiedMB: copyDone ? +((copyDone['bytes'] as number) / 2 ** 20).toFixed(2) : null,
      blogEntriesApplied: copyStored ? null : ((done?.['entries'] as number | undefined) ?? null),
      opsPerSecBefore: before,
      opsPerSecHotspot: during,
      opsPerSecAfter: after,
      hotspotVsBefore: ratio(during, before),
      afterVsHotspot: ratio(after, during),
      afterVsBefore: ratio(after, before),
      errors,
      // Open loop: what arrived, what was shed at a full node queue, latency of what completed (ms).
      offeredPerSec: offerRate > 0 ? [win.before, win.hotspot, win.after].map((w) => perSec(offered, ...w)).join(' / ') : null,
      shedPerSec: offerRate > 0 ? [win.before, win.hotspot, win.after].map((w) => perSec(shed, ...w)).join(' / ') : null,
      notGenerated: offerRate > 0 ? notGenerated : null,
      p50Ms: [win.before, win.hotspot, win.after].map((w) => pct(...w, 0.5)).join(' / '),
      p99Ms: [win.before, win.hotspot, win.after].map((w) => pct(...w, 0.99)).join(' / '),
      network: cl.network,
      cpuBudget: budgets.how,
      // Cores used (all threads) in the three windows: the hot shard's first primary B, the node it
      // moved to (A), the third node, and this client process.
      hotNode: nodeB,
      cpuHotNode: [win.before, win.hotspot, win.after].map((w) => meanCpu(cpuOf(nodeB), w)).join(' / '),
      throttledHotNode: [win.before, win.hotspot, win.after].map((w) => meanCpu(thrOf(nodeB), w)).join(' / '),
      cpuTargetNode: [win.before, win.hotspot, win.after].map((w) => meanCpu(cpuOf(nodeA), w)).join(' / '),
      cpuThirdNode: [win.before, win.hotspot, win.after].map((w) => meanCpu(cpuOf(nodeC), w)).join(' / '),
      // With --link-mbit: Mbit/s the hot node, the target and the third node sent in the three windows.
      ...(cl.links ? Object.fromEntries(([['linkMbitHotNode', nodeB], ['linkMbitTargetNode', nodeA], ['linkMbitThirdNode', nodeC]] as const).map(([k, n]) => [k, [win.before, win.hotspot, win.after].map((w) => meanCpu((c) => c.linkMbit?.[String(n)] ?? null, w)).join(' / ')])) : {}),
      cpuClient: [win.before, win.hotspot, win.after].map((w) => meanCpu((c) => c.client, w)).join(' / '),
      // Everything else on the machine (other users' processes: noise), over the whole run and the windows.
      cpuRestOfMachine: [win.before, win.hotspot, win.after].map((w) => meanCpu((c) => c.rest, w)).join(' / '),
    };
    const marks: Mark[] = [{ label: 'hotspot', atMs: hotspotMs, color: '#d62728' }];
    if (detectedMs !== null) marks.push({ label: 'overload detected', atMs: detectedMs, color: '#ff7f0e' });
    if (started) marks.push({ label: 'move started', atMs: rel(started)!, color: '#2ca02c' });
    if (doneMs !== null) marks.push({ label: 'move finished', atMs: doneMs, color: '#9467bd' });
    writeFileSync(
      join(resultsDir, `${timelineName}.svg`),
      reshardTimelineSvg(`Resharding (Figure 15): ${nodes} nodes, ${shards} shards, 95 % GET; hotspot on shard ${hot} of node ${nodeB} at ${hotspotMs / 1000} s${copyMoves ? `, copied to node ${nodeA} (no replica of it)` : ''}`, BUCKET_MS, buckets, marks, loads, { cpu, quota: nodeCpu > 0 && budgets.groups.every((g) => g !== null) ? nodeCpu : null, linkMbit: cl.links?.mbit ?? null }),
    );
    const loadAt = (ms: number) => loads.filter((l) => l.atMs <= ms).pop()?.loads ?? {};
    row['loadsBeforeHotspot'] = JSON.stringify(loadAt(hotspotMs));
    row['loadsAtDetection'] = JSON.stringify(loadAt((detectedMs ?? hotspotMs) + 1));
    row['loadsAtEnd'] = JSON.stringify(loadAt(durationMs));
    writeFileSync(join(resultsDir, `${timelineName}.json`), JSON.stringify({ bucketMs: BUCKET_MS, buckets, offered, shed, marks, loads, cpu, row, events: ev.filter((e) => String(e['event']).startsWith('move') || String(e['event']).startsWith('copy') || e['event'] === 'overload-detected').map((e) => ({ event: e['event'], atMs: rel(e), term: e['term'], moves: e['moves'] })) }, null, 1) + '\n');
    return [row];
  } finally {
    await cl.stop();
    budgets.release();
    if (process.env['ROWAN_BENCH_KEEP'] === undefined) rmSync(cl.dir, { recursive: true, force: true });
    else console.log(`kept ${cl.dir}`);
  }
}
