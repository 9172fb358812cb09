// A fixed CPU budget per node process for the resharding benchmark: the paper's servers each have their
// own CPUs, so a hot node saturates while a cold one idles. Three nodes on this 2-core machine share
// the cores instead: a hot node just takes what an idle one leaves, and no overload shows. A cgroup
// CPU quota per node (cgroup v1 `cpu.cfs_quota_us`, or v2 `cpu.max`) restores "one budget per server".
// Needs root and a cpu controller; otherwise the benchmark runs without budgets and says so.
//
// The quota's period matters. With the kernel's default 100 ms, a node that used its quota (say 25 ms
// of 0.25 CPU) is frozen, every thread of it, for the rest of the period (75 ms): requests stall in
// bursts, whole 100 ms buckets see no operation, and lease renewals (every 40 ms at the time, 200 ms lease) come
// late -- at 0.12 CPU the nodes lost their leases. A short period (default 10 ms) spreads the same
// budget evenly: a saturated node is slow, not stopped, like a server whose CPUs are all busy.
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface CpuBudgets {
  /** Where the cgroups were made, or why none could be. */
  how: string;
  /** Per node (index as in `pids`): the cgroup directory, or null (no budget). */
  groups: (string | null)[];
  release(): void;
}

/** Put each of `pids` in a cgroup of its own limited to `cores` CPUs (e.g. 0.5), enforced per `periodUs`. */
export function limitCpu(pids: number[], cores: number, tag: string, periodUs = 10_000): CpuBudgets {
  const v1 = '/sys/fs/cgroup/cpu';
  const v2 = '/sys/fs/cgroup';
  const made: string[] = [];
  const quota = Math.round(cores * periodUs);
  try {
    for (const [i, pid] of pids.entries()) {
      if (existsSync(join(v1, 'cpu.cfs_quota_us'))) {
        const dir = join(v1, `${tag}-${i}`);
        mkdirSync(dir, { recursive: true });
        made.push(dir);
        writeFileSync(join(dir, 'cpu.cfs_period_us'), String(periodUs));
        writeFileSync(join(dir, 'cpu.cfs_quota_us'), String(quota));
        writeFileSync(join(dir, 'cgroup.procs'), String(pid)); // the whole process: every thread
      } else if (existsSync(join(v2, 'cgroup.controllers'))) {
        const dir = join(v2, `${tag}-${i}`);
        mkdirSync(dir, { recursive: true });
        made.push(dir);
        writeFileSync(join(dir, 'cpu.max'), `${quota} ${periodUs}`);
        writeFileSync(join(dir, 'cgroup.procs'), String(pid));
      } else {
        throw new Error('no cgroup cpu controller');
      }
      // Check what the kernel holds: every thread of the node in the group, the quota as asked.
      const procs = readFileSync(join(made[i]!, 'cgroup.procs'), 'utf8').trim().split('\n').map(Number);
      if (!procs.includes(pid)) throw new Error(`pid ${pid} is not in ${made[i]}`);
    }
  } catch (err) {
    release(made);
    return { how: `none (${(err as Error).message})`, groups: pids.map(() => null), release: () => {} };
  }
  return {
    how: `${cores} CPU per node (cgroup quota ${quota} us per ${periodUs} us period)`,
    groups: made,
    release: () => release(made),
  };
}

/** CPU time (ns) a process has run so far, all its threads (the sum of /proc/PID/task/*\/schedstat). */
export function processCpuNs(pid: number): number | null {
  try {
    let ns = 0;
    for (const t of readdirSync(`/proc/${pid}/task`)) {
      try {
        ns += Number(readFileSync(`/proc/${pid}/task/${t}/schedstat`, 'utf8').split(' ')[0]);
      } catch {
        // the thread ended between the listing and the read
      }
    }
    return ns;
  } catch {
    return null;
  }
}

/** The group's throttling counters so far (cgroup v1 cpu.stat, or v2 cpu.stat). */
export function throttling(group: string | null): { periods: number; throttled: number } | null {
  if (group === null) return null;
  try {
    const st = Object.fromEntries(readFileSync(join(group, 'cpu.stat'), 'utf8').trim().split('\n').map((l) => l.split(' ') as [string, string]));
    return { periods: Number(st['nr_periods'] ?? 0), throttled: Number(st['nr_throttled'] ?? 0) };
  } catch {
    return null;
  }
}

/** How many threads the group holds (cgroup v1 `tasks`; v2 `cgroup.threads`). */
export function threadsIn(group: string | null): number | null {
  if (group === null) return null;
  for (const f of ['tasks', 'cgroup.threads']) {
    try {
      return readFileSync(join(group, f), 'utf8').trim().split('\n').filter(Boolean).length;
    } catch {
      // not this version's file
    }
  }
  return null;
}

function release(dirs: string[]): void {
  // A cgroup is removed once its processes have exited (the cluster stops first).
  for (const d of dirs) {
    try {
      rmdirSync(d);
    } catch {
      // still populated (a node lingering): the kernel keeps it until it empties; harmless
    }
  }
}
