// Re-replication benchmark (issue 28): how fast a node is made a full replica again, per shard copy.
// A local 3-node cluster (replication 3, so node 2 holds every shard), --mb of --value-bytes values
// preloaded, then:
//   full         node 2 is SIGKILLed and its pool file removed: rowan cluster restarts it empty and
//                every shard is copied from its primary (COPY_SHARD walks, ../actors/migration/copy.ts);
//   incremental  node 2 is paused (SIGSTOP) for --absence-ms while a write load overwrites keys and adds
//                new ones; it is failed over, resumed, finds itself evicted, exits, and rowan cluster
//                restarts it with the pool it kept: each shard is reconciled with its primary
//                (../actors/migration/reconcile.ts).
// Per copy, from node 2's "caught-up" log lines: entries and bytes moved, ms, MB/s and objects/s;
// for the incremental copy also MB/s of the shard reconciled (its full size over the time taken);
// and over all copies at once, MB/s from the first copy's start to the last one's end; and the CPU
// (/proc, per thread) the copies took on node 2's copying thread, node 2 in all, the primaries'
// workers and every node, over the same span (idle costs included: leases, ticks).
//
//   npm run bench -- rereplicate [--quick] [--mb=64] [--value-bytes=1000] [--absence-ms=10000]
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { RowanClient } from '../client/client.js';
import { launchCluster, randomBasePort, stopCluster } from '../test/fixtures/cluster.js';
import { nodePids, readCluster, waitFor } from '../test/fixtures/failover-cluster.js';
import { fullyReplicated } from '../test/fixtures/rereplication.js';
import { progress, recordParams, type Row } from './report.js';
import { cpuOf, NodeCpuSampler } from './thread-cpu.js';

const SHARDS = 4;
const VICTIM = 2;

function flag(name: string, dflt: number): number {
  const a = process.argv.find((x) => x.startsWith(`--${name}=`));
  return a ? Number(a.split('=')[1]) : dflt;
}

interface CopyLine {
  shard: number;
  entries: number;
  bytes: number;
  ms: number;
  end: number;
  kept: boolean;
  listed?: number;
}

/** Node `node`'s caught-up lines (actors/migration/copy.ts), from the `from`-th on. */
function copyLines(dir: string, node: number, from = 0): CopyLine[] {
  const out: CopyLine[] = [];
  for (const l of readFileSync(join(dir, `node-${node}.log`), 'utf8').split('\n')) {
    if (!l.includes('"event":"caught-up"')) continue;
    const o = JSON.parse(l) as CopyLine & { time: string };
    out.push({ ...o, end: Date.parse(o.time) });
  }
  return out.slice(from);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
const r2 = (x: number) => +x.toFixed(2);

/** CPU over the copies (first start to last end), /proc: node 2's copying thread (its migration actor,
 *  or the `background` thread it shares), node 2 in all, the primaries' workers, every node in all. */
function cpuRow(cpu: NodeCpuSampler, start: number, end: number, entries: number): Row {
  const by = cpu.between(start, end);
  const all = [...by.values()].reduce((n, xs) => n + cpuOf(xs), 0);
  const copier = cpuOf(by.get(VICTIM) ?? [], /^(migration|background)/);
  return {
    cpuCopierS: copier,
    cpuTargetS: cpuOf(by.get(VICTIM) ?? []),
    cpuSourceWorkersS: +[...by].filter(([n]) => n !== VICTIM).reduce((a, [, xs]) => a + cpuOf(xs, /^worker/), 0).toFixed(2),
    cpuAllNodesS: +all.toFixed(2),
    copierUsPerObject: entries > 0 ? +((copier * 1e6) / entries).toFixed(1) : null,
  };
}

/** One row: per copy (median, and the slowest) and over all copies at once. */
function rowOf(kind: string, lines: CopyLine[], shardBytes: number, cpu: NodeCpuSampler, extra: Row): Row {
  const start = Math.min(...lines.map((l) => l.end - l.ms));
  const end = Math.max(...lines.map((l) => l.end));
  const bytes = lines.reduce((n, l) => n + l.bytes, 0);
  const objects = lines.reduce((n, l) => n + l.entries + (l.listed ?? 0), 0);
  return {
    copy: kind,
    copies: lines.length,
    entriesPerCopy: Math.round(median(lines.map((l) => l.entries))),
    movedMBPerCopy: r2(median(lines.map((l) => l.bytes)) / 1e6),
    shardMB: r2(shardBytes / 1e6),
    msP50: r2(median(lines.map((l) => l.ms))),
    msMax: r2(Math.max(...lines.map((l) => l.ms))),
    movedMBpsPerCopy: r2(median(lines.map((l) => l.bytes / 1e6 / (l.ms / 1000)))),
    objectsPerSecPerCopy: Math.round(median(lines.map((l) => (l.entries + (l.listed ?? 0)) / (l.ms / 1000)))),
    shardMBpsPerCopy: r2(median(lines.map((l) => shardBytes / 1e6 / (l.ms / 1000)))),
    allCopiesMBps: r2(bytes / 1e6 / ((end - start) / 1000)),
    ...cpuRow(cpu, start, end, objects),
    ...extra,
  };
}

async function fill(c: RowanClient, keys: number, value: (i: number) => string): Promise<void> {
  for (let i = 0; i < keys; i += 64) await Promise.all(Array.from({ length: Math.min(64, keys - i) }, (_, j) => c.put(`k-${i + j}`, value(i + j))));
}

async function caughtUp(dir: string, file: string, before: number): Promise<CopyLine[]> {
  await waitFor('node 2 to be a full replica of every shard again', () => copyLines(dir, VICTIM).length >= before + SHARDS && !(readCluster(file).dead ?? []).includes(VICTIM) && fullyReplicated(file, 3), 300_000, 100);
  return copyLines(dir, VICTIM, before).slice(-SHARDS);
}

export async function run(): Promise<Row[]> {
  const quick = process.argv.includes('--quick');
  const mb = flag('mb', quick ? 16 : 64);
  const valueBytes = flag('value-bytes', 1000);
  const absenceMs = flag('absence-ms', quick ? 5000 : 10_000);
  const keys = Math.round((mb * 1e6) / valueBytes);
  const poolMib = Math.max(128, Math.ceil(mb * 4));
  recordParams({ quick, mb, valueBytes, keys, absenceMs, shards: SHARDS, nodes: 3, replication: 3, poolMib, fabric: 'shm (loopback)' });
  const dir = mkdtempSync(join(tmpdir(), 'rowan-rereplicate-bench-'));
  const cluster = launchCluster(dir, randomBasePort(), ['--shards', String(SHARDS), '--lease-ms', '400', '--pool-mib', String(poolMib), '--no-auto-reshard']);
  let c: RowanClient | null = null;
  const cpu = new NodeCpuSampler(() => nodePids(cluster.output()));
  try {
    await cluster.ready;
    const file = join(dir, 'cluster.json');
    c = await RowanClient.connect({ cluster: file, retries: 8, timeoutMs: 10_000 });
    const client = c;
    const value = (i: number, round = 0) => `${round}:${i}:`.padEnd(valueBytes, 'v');
    progress(`rereplicate: preloading ${keys} x ${valueBytes} B`, 0, 3);
    await fill(client, keys, (i) => value(i));
    const shardBytes = (keys * valueBytes) / SHARDS;

    progress('rereplicate: full copy (pool removed)', 1, 3);
    let before = copyLines(dir, VICTIM).length;
    process.kill(nodePids(cluster.output()).get(VICTIM)!, 'SIGKILL');
    rmSync(join(dir, `node-${VICTIM}`, 'pool.pm'), { force: true });
    const full = await caughtUp(dir, file, before);

    progress(`rereplicate: incremental after a ${absenceMs} ms absence`, 2, 3);
    before = copyLines(dir, VICTIM).length;
    const pid = nodePids(cluster.output()).get(VICTIM)!;
    process.kill(pid, 'SIGSTOP');
    const t0 = performance.now();
    let written = 0;
    let next = 0;
    // While it is away: 32 independent loops overwrite keys from the start of the key space, as fast
    // as the cluster takes them (a write held up by the failover holds up only its own loop).
    const writer = await RowanClient.connect({ cluster: file, retries: 8, timeoutMs: 2000 });
    await Promise.all(
      Array.from({ length: 32 }, async () => {
        while (performance.now() - t0 < absenceMs) {
          const k = next++ % keys;
          await writer.put(`k-${k}`, value(k, 1)).then(() => written++, () => undefined);
        }
      }),
    );
    await writer.close();
    process.kill(pid, 'SIGCONT');
    const inc = await caughtUp(dir, file, before);
    await sleep(100);
    return [
      rowOf('full (pool removed)', full, shardBytes, cpu, { writtenWhileAwayMB: 0 }),
      rowOf(`incremental after ${absenceMs / 1000} s away`, inc, shardBytes, cpu, { writtenWhileAwayMB: r2((written * valueBytes) / 1e6) }),
    ];
  } finally {
    cpu.stop();
    await c?.close();
    await stopCluster(cluster.child);
    if (process.env['ROWAN_BENCH_KEEP']) console.log(`kept ${dir}`);
    else rmSync(dir, { recursive: true, force: true });
  }
}
