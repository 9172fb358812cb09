// A fixed CPU budget per node process for the resharding benchmark: the paper's servers each have their
// own CPUs, so a hot node saturates while a cold one idles. Three nodes on this 2-core machine share
// the cores instead: a hot node just takes what an idle one leaves, and no overload shows. A cgroup
// CPU quota per node (cgroup v1 `cpu.cfs_quota_us`, or v2 `cpu.max`) restores "one budget per server".
// Needs root and a cpu controller; otherwise the benchmark runs without budgets and says so.
import { existsSync, mkdirSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const PERIOD_US = 100_000;

export interface CpuBudgets {
  /** Where the cgroups were made, or why none could be. */
  how: string;
  release(): void;
}

/** Put each of `pids` in a cgroup of its own limited to `cores` CPUs (e.g. 0.5). */
export function limitCpu(pids: number[], cores: number, tag: string): CpuBudgets {
  const v1 = '/sys/fs/cgroup/cpu';
  const v2 = '/sys/fs/cgroup';
  const made: string[] = [];
  const quota = Math.round(cores * PERIOD_US);
  try {
    for (const [i, pid] of pids.entries()) {
      if (existsSync(join(v1, 'cpu.cfs_quota_us'))) {
        const dir = join(v1, `${tag}-${i}`);
        mkdirSync(dir, { recursive: true });
        made.push(dir);
        writeFileSync(join(dir, 'cpu.cfs_period_us'), String(PERIOD_US));
        writeFileSync(join(dir, 'cpu.cfs_quota_us'), String(quota));
        writeFileSync(join(dir, 'cgroup.procs'), String(pid)); // the whole process: every thread
      } else if (existsSync(join(v2, 'cgroup.controllers'))) {
        const dir = join(v2, `${tag}-${i}`);
        mkdirSync(dir, { recursive: true });
        made.push(dir);
        writeFileSync(join(dir, 'cpu.max'), `${quota} ${PERIOD_US}`);
        writeFileSync(join(dir, 'cgroup.procs'), String(pid));
      } else {
        throw new Error('no cgroup cpu controller');
      }
    }
  } catch (err) {
    release(made);
    return { how: `none (${(err as Error).message})`, release: () => {} };
  }
  return { how: `${cores} CPU per node (cgroup quota ${quota} / ${PERIOD_US} us)`, release: () => release(made) };
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
