// Lease soak (issue 26: "no lease lost in a 10-minute run on a busy machine"): a fresh local 3-node
// cluster with the default lease, a CPU hog beside it (--hogs=N shell busy loops, default 1, for the
// whole run), and a light load (a PUT and a GET every 20 ms through one client) for --duration ms
// (default 600000, --quick 60000). Then, from the logs:
//   renewGaps / maxGapMs    the manager received two renewals of a node more than half a lease apart
//                           (manager.log `renew-gap`, actors/manager/manager.ts noteGap)
//   lapses / maxLapsedMs    a node's grant came after its lease had run out: it served nothing for
//                           that stretch (node-N.log `lease-lapsed`, actors/node/lease-client.ts)
//   failovers               the manager failed a node over (`detected`): a lease lost for good
// and the load's operations and errors.
//
//   npm run bench -- lease-soak [--quick] [--duration=ms] [--hogs=N] [--lease-ms=ms]
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { RowanClient } from '../client/client.js';
import { defaultTimings } from '../config/timings.js';
import { launchCluster, randomBasePort, stopCluster } from '../test/fixtures/cluster.js';
import { logRecords } from '../test/fixtures/failover-cluster.js';
import { load, progress, recordParams, type Row } from './report.js';

const NODES = 3;
const LOAD_EVERY_MS = 20;

function flag(name: string, dflt: number): number {
  const a = process.argv.find((x) => x.startsWith(`--${name}=`));
  return a ? Number(a.split('=')[1]) : dflt;
}

/** One shell busy loop until `endSec` (epoch seconds), as issue 26's soak asks. */
function hog(endSec: number): ChildProcess {
  return spawn('sh', ['-c', `end=${endSec}; while [ $(date +%s) -lt $end ]; do :; done`], { stdio: 'ignore' });
}

/** Records of `event` in a log file. */
function events(file: string, event: string): Record<string, unknown>[] {
  return logRecords(file).filter((r) => r.event === event);
}

function maxOf(rs: Record<string, unknown>[], field: string): number {
  return rs.reduce((m, r) => Math.max(m, typeof r[field] === 'number' ? (r[field] as number) : 0), 0);
}

/** A PUT and a GET every LOAD_EVERY_MS until `stop()` says so. */
async function trickle(c: RowanClient, stop: () => boolean): Promise<{ ops: number; errors: number; firstError: string }> {
  let ops = 0;
  let errors = 0;
  let firstError = '';
  for (let i = 0; !stop(); i++) {
    try {
      await c.put(`soak-${i % 500}`, Buffer.from(`v${i}`));
      await c.get(`soak-${(i * 7) % 500}`);
      ops += 2;
    } catch (err) {
      errors++;
      firstError ||= (err as Error).message.slice(0, 160);
    }
    await sleep(LOAD_EVERY_MS);
  }
  return { ops, errors, firstError };
}

function rowsOf(dir: string, leaseMs: number, sec: number, t: { ops: number; errors: number; firstError: string }): Row[] {
  const mlog = join(dir, 'manager.log');
  const gaps = events(mlog, 'renew-gap');
  const rows: Row[] = [];
  for (let n = 0; n < NODES; n++) {
    const mine = gaps.filter((g) => g.node === n);
    const lapses = events(join(dir, `node-${n}.log`), 'lease-lapsed');
    rows.push({ node: n, leaseMs, seconds: sec, renewGaps: mine.length, maxGapMs: maxOf(mine, 'gapMs'), lapses: lapses.length, maxLapsedMs: maxOf(lapses, 'lapsedMs') });
  }
  rows.push({ node: 'all', leaseMs, seconds: sec, renewGaps: gaps.length, maxGapMs: maxOf(gaps, 'gapMs'), lapses: rows.reduce((s, r) => s + (r.lapses as number), 0), failovers: events(mlog, 'detected').length, ops: t.ops, errors: t.errors, firstError: t.firstError, loadAvgEnd: load().join(' ') });
  return rows;
}

export async function run(): Promise<Row[]> {
  const quick = process.argv.includes('--quick');
  const durationMs = flag('duration', quick ? 60_000 : 600_000);
  const hogs = flag('hogs', 1);
  const leaseMs = flag('lease-ms', defaultTimings.leaseMs);
  recordParams({ durationMs, hogs, leaseMs, nodes: NODES, loadEveryMs: LOAD_EVERY_MS });
  const dir = mkdtempSync(join(tmpdir(), 'rowan-lease-soak-'));
  const cluster = launchCluster(dir, randomBasePort(), ['--lease-ms', String(leaseMs), '--pool-mib', '64', '--no-restart']);
  const hogProcs: ChildProcess[] = [];
  let c: RowanClient | null = null;
  try {
    await cluster.ready;
    c = await RowanClient.connect({ cluster: join(dir, 'cluster.json'), retries: 8, timeoutMs: 3000 });
    const t0 = Date.now();
    for (let i = 0; i < hogs; i++) hogProcs.push(hog(Math.ceil((t0 + durationMs) / 1000)));
    let done = false;
    const load = trickle(c, () => done);
    while (Date.now() < t0 + durationMs) {
      progress(`lease soak: ${Math.round((Date.now() - t0) / 1000)} of ${durationMs / 1000} s`, Date.now() - t0, durationMs);
      await sleep(Math.min(10_000, Math.max(0, t0 + durationMs - Date.now())));
    }
    done = true;
    const t = await load;
    return rowsOf(dir, leaseMs, Math.round((Date.now() - t0) / 1000), t);
  } finally {
    for (const h of hogProcs) if (h.exitCode === null) h.kill('SIGKILL');
    await c?.close().catch(() => {});
    await stopCluster(cluster.child);
    if (process.env['ROWAN_BENCH_KEEP']) console.log(`kept ${dir}`);
    else rmSync(dir, { recursive: true, force: true });
  }
}
