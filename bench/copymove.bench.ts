// Copy-move benchmark (issue 28; §4.6, Figure 15 with a target that holds no replica): a 4-node local
// cluster (replication 3, so every shard has a node holding none of it), --keys objects of
// --value-bytes preloaded into one shard, a closed-loop GET/PUT load (--loops loops over keys of
// every shard) running throughout; after 2 s the shard's primary is moved to the node holding no
// replica (`rowan reshard --shard S --to N`, actors/manager/copies.ts): its migration actor copies the
// shard from the source (COPY_SHARD batches), the primary role is handed over, the source leaves.
// Reported: objects and MB copied, the copy's time, objects/s and MB/s, the whole move's time, and the
// load's throughput before, during and after the move (per 250 ms window in the JSON). The move is
// asked for by hand: the planner does not make copy moves (docs/resharding.md), so there is no
// detection to time here.
//
//   npm run bench -- copymove [--quick] [--keys=200000] [--value-bytes=100] [--loops=8]
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { RowanClient } from '../client/client.js';
import { launchCluster, randomBasePort, stopCluster } from '../test/fixtures/cluster.js';
import { nodePids, readCluster } from '../test/fixtures/failover-cluster.js';
import { copyMove, keysOfShard, nonReplica } from '../test/fixtures/reshard.js';
import { progress, recordParams, type Row } from './report.js';
import { cpuBetween, cpuOf, threadCpu } from './thread-cpu.js';

const SHARDS = 4;
const HOT = 1;
const WINDOW_MS = 250;

function flag(name: string, dflt: number): number {
  const a = process.argv.find((x) => x.startsWith(`--${name}=`));
  return a ? Number(a.split('=')[1]) : dflt;
}

async function preload(c: RowanClient, keys: string[], value: string): Promise<void> {
  for (let i = 0; i < keys.length; i += 256) {
    await Promise.all(keys.slice(i, i + 256).map((k) => c.put(k, value)));
    if (i % 25_600 === 0) progress(`copymove: preloading ${keys.length} objects`, i, keys.length);
  }
}

/** Closed-loop GET/PUT over `keys` until stopped; completed operations per window. */
function startLoad(c: RowanClient, keys: string[], loops: number, value: string): { windows: number[]; stop: () => Promise<void> } {
  const windows: number[] = [];
  const t0 = performance.now();
  let stopped = false;
  const one = async (i: number) => {
    for (let n = i; !stopped; n += loops) {
      const k = keys[n % keys.length]!;
      await (n % 2 === 0 ? c.get(k) : c.put(k, value)).then(() => {
        const w = Math.floor((performance.now() - t0) / WINDOW_MS);
        windows[w] = (windows[w] ?? 0) + 1;
      }, () => undefined);
    }
  };
  const all = Promise.all(Array.from({ length: loops }, (_, i) => one(i)));
  return { windows, stop: async () => { stopped = true; await all; } };
}

const opsPerSec = (w: number[], from: number, to: number) => {
  const a = Math.max(0, Math.floor(from / WINDOW_MS));
  const b = Math.max(a + 1, Math.floor(to / WINDOW_MS));
  let n = 0;
  for (let i = a; i < b; i++) n += w[i] ?? 0;
  return Math.round(n / (((b - a) * WINDOW_MS) / 1000));
};

export async function run(): Promise<Row[]> {
  const quick = process.argv.includes('--quick');
  const keys = flag('keys', quick ? 50_000 : 200_000);
  const valueBytes = flag('value-bytes', 100);
  const loops = flag('loops', 8);
  const poolMib = Math.max(128, Math.ceil((keys * (valueBytes + 96) * 4) / 1e6));
  recordParams({ quick, keys, valueBytes, loops, shards: SHARDS, nodes: 4, replication: 3, poolMib, fabric: 'shm (loopback)', windowMs: WINDOW_MS });
  const dir = mkdtempSync(join(tmpdir(), 'rowan-copymove-bench-'));
  const cluster = launchCluster(dir, randomBasePort(), ['--nodes', '4', '--shards', String(SHARDS), '--lease-ms', '1000', '--pool-mib', String(poolMib), '--no-auto-reshard']);
  const clients: RowanClient[] = [];
  try {
    await cluster.ready;
    const file = join(dir, 'cluster.json');
    for (let i = 0; i < 2; i++) clients.push(await RowanClient.connect({ cluster: file, retries: 8, timeoutMs: 10_000 }));
    const value = 'v'.padEnd(valueBytes, 'v');
    await preload(clients[0]!, keysOfShard(HOT, SHARDS, keys).map((k) => `p${k}`), value);
    const loadKeys = Array.from({ length: SHARDS }, (_, s) => keysOfShard(s, SHARDS, 250)).flat();
    const load = startLoad(clients[1]!, loadKeys, loops, value);
    const t0 = performance.now();
    await new Promise((r) => setTimeout(r, 2000));
    const c = readCluster(file);
    const from = c.shards[HOT]!.primary;
    const to = nonReplica(c, HOT)!;
    progress(`copymove: moving shard ${HOT} ${from}->${to}`, 1, 2);
    const pids = nodePids(cluster.output());
    const cpu0 = [threadCpu(pids.get(from)!), threadCpu(pids.get(to)!)];
    const askedAt = performance.now() - t0;
    const rec = await copyMove(c, HOT, from, to, dir, 600_000);
    const doneAt = performance.now() - t0;
    const [srcCpu, dstCpu] = [cpuBetween(cpu0[0]!, threadCpu(pids.get(from)!)), cpuBetween(cpu0[1]!, threadCpu(pids.get(to)!))];
    await new Promise((r) => setTimeout(r, 2500));
    await load.stop();
    const end = performance.now() - t0;
    const copyMs = rec.copyMs ?? NaN;
    const entries = rec.entries ?? 0;
    return [{
      moved: `shard ${HOT} ${from}->${to}`,
      objects: entries,
      copiedMB: +((rec.bytes ?? 0) / 1e6).toFixed(2),
      copyMs: Math.round(copyMs),
      objectsPerSec: Math.round(entries / (copyMs / 1000)),
      copyMBps: +((rec.bytes ?? 0) / 1e6 / (copyMs / 1000)).toFixed(2),
      moveMs: Math.round(doneAt - askedAt),
      handoverMs: rec.handedOverAt !== undefined && rec.copiedAt !== undefined ? Math.round(rec.handedOverAt - rec.copiedAt) : null,
      opsBefore: opsPerSec(load.windows, 500, askedAt),
      opsDuring: opsPerSec(load.windows, askedAt, doneAt),
      opsAfter: opsPerSec(load.windows, doneAt + 500, end),
      // CPU the move took (/proc, over the whole move) on the source's workers (the load's share
      // included) and on the target's migration actor -- its own thread, or the `background` thread
      // it shares with control, digest and clean on a node with fewer cores than actors
      // (runtime/placement.ts) -- and that per object copied.
      sourceWorkerCpuS: cpuOf(srcCpu, /^worker/),
      targetMigrationCpuS: cpuOf(dstCpu, /^(migration|background)/),
      targetMigrationUsPerObject: entries > 0 ? +((cpuOf(dstCpu, /^(migration|background)/) * 1e6) / entries).toFixed(1) : null,
      sourceThreads: JSON.stringify(srcCpu.slice(0, 6)),
      targetThreads: JSON.stringify(dstCpu.slice(0, 6)),
      loadAvg: JSON.stringify(loadavg().map((x) => +x.toFixed(1))),
      askedAtMs: Math.round(askedAt),
      doneAtMs: Math.round(doneAt),
      windows: JSON.stringify(load.windows.map((n) => n ?? 0)),
    }];
  } finally {
    await Promise.all(clients.map((x) => x.close()));
    await stopCluster(cluster.child);
    if (process.env['ROWAN_BENCH_KEEP']) console.log(`kept ${dir}`);
    else rmSync(dir, { recursive: true, force: true });
  }
}
