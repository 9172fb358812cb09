// What the resharding benchmark records while it runs (../reshard.bench.ts), per CPU_SAMPLE_MS: the
// cores each node process and the client ran, the rest of the machine, how often each node's CPU quota
// throttled it, and with shaped links the Mbit/s each node sent -- the evidence of which one saturates.
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { monotonicClock } from '../../config/base/clock.js';
import type { Cluster } from './cluster.js';
import { processCpuNs, throttling } from './cpu-budget.js';

export const CPU_SAMPLE_MS = 250;

/** Cores each node process (by node id) and the client ran over the sample's interval, and the share of
 *  the node's quota periods in which the quota throttled it. */
export interface CpuSample {
  atMs: number;
  nodes: Record<string, number | null>;
  throttledShare: Record<string, number | null>;
  client: number;
  /** Cores the rest of the machine ran: every other process (the manager, other users), from /proc/stat. */
  rest: number | null;
  /** With --link-mbit: Mbit/s each node sent over the interval (its eth0 counter). */
  linkMbit?: Record<string, number | null>;
}

/** Busy and total jiffies of the whole machine so far (/proc/stat's first line). */
function machineJiffies(): { busy: number; total: number } | null {
  try {
    const f = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1, 9).map(Number);
    const total = f.reduce((a, b) => a + b, 0);
    return { busy: total - f[3]! - f[4]!, total };
  } catch {
    return null;
  }
}

/**
 * Sample until `end` (monotonic ms); `atMs` counts from `t0`. `groups`: each node's cgroup (null: no
 * quota). `samples` fills as it goes; `done` resolves after the last one.
 */
export function sampleResources(cl: Cluster, groups: (string | null)[], t0: number, end: number): { samples: CpuSample[]; done: Promise<void> } {
  const samples: CpuSample[] = [];
  return { samples, done: sampleUntil(cl, groups, t0, end, samples) };
}

/** One reading of every counter the samples are differences of. */
function readCounters(cl: Cluster, groups: (string | null)[]) {
  return {
    at: monotonicClock.now(),
    ns: cl.pids.map(processCpuNs),
    thr: groups.map(throttling),
    client: process.cpuUsage(),
    machine: machineJiffies(),
    tx: cl.links?.txBytes() ?? null,
  };
}

async function sampleUntil(cl: Cluster, groups: (string | null)[], t0: number, end: number, cpu: CpuSample[]): Promise<void> {
  const nodeOfPid = cl.ids.map(String);
  const cores = availableParallelism();
  let prev = readCounters(cl, groups);
  while (monotonicClock.now() < end) {
    await new Promise((res) => setTimeout(res, CPU_SAMPLE_MS));
    const cur = readCounters(cl, groups);
    const { ns, thr, client, machine, tx } = cur;
    const dtUs = (cur.at - prev.at) * 1000;
    const nodeCores = cl.pids.map((_, i) => (ns[i] != null && prev.ns[i] != null && ns[i]! >= prev.ns[i]! ? (ns[i]! - prev.ns[i]!) / 1000 / dtUs : null));
    const clientCores = (client.user + client.system - prev.client.user - prev.client.system) / dtUs;
    const pm = prev.machine;
    const busyCores = machine && pm && machine.total > pm.total ? ((machine.busy - pm.busy) / (machine.total - pm.total)) * cores : null;
    const ptx = prev.tx;
    cpu.push({
      atMs: +(cur.at - t0).toFixed(1),
      // null: the process is gone (a dying one's threads vanish: a negative difference).
      nodes: Object.fromEntries(cl.pids.map((_, i) => [nodeOfPid[i]!, nodeCores[i] === null ? null : +nodeCores[i]!.toFixed(3)])),
      throttledShare: Object.fromEntries(cl.pids.map((_, i) => {
        const a = prev.thr[i];
        const b = thr[i];
        return [nodeOfPid[i]!, a && b && b.periods > a.periods ? +((b.throttled - a.throttled) / (b.periods - a.periods)).toFixed(3) : null];
      })),
      client: +clientCores.toFixed(3),
      rest: busyCores === null ? null : +Math.max(0, busyCores - clientCores - nodeCores.reduce<number>((a, b) => a + (b ?? 0), 0)).toFixed(3),
      ...(tx && ptx ? { linkMbit: Object.fromEntries(cl.pids.map((_, i) => [nodeOfPid[i]!, tx[i] != null && ptx[i] != null ? +(((tx[i]! - ptx[i]!) * 8) / dtUs).toFixed(1) : null])) } : {}),
    });
    prev = cur;
  }
}
