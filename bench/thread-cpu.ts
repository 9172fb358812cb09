// CPU per thread of a benchmark's node processes, from /proc (utime + stime of every task), so a run
// on a shared machine can say what a copy cost in CPU, not only in wall time (which other jobs stretch).
import { readdirSync, readFileSync } from 'node:fs';

/** CPU seconds (utime + stime, /proc) per thread name of process `pid`, threads of one name summed. */
export function threadCpu(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out; // the process is gone
  }
  for (const tid of tids) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      out.set(name, (out.get(name) ?? 0) + (Number(f[11]) + Number(f[12])) / 100); // fields 14, 15: clock ticks
    } catch {
      // the thread ended meanwhile
    }
  }
  return out;
}

/** CPU seconds each thread (by name) spent between two samples, the busiest first. */
export function cpuBetween(a: Map<string, number>, b: Map<string, number>): [string, number][] {
  return [...b].map(([k, v]) => [k, +(v - (a.get(k) ?? 0)).toFixed(2)] as [string, number]).filter(([, v]) => v > 0).sort((x, y) => y[1] - x[1]);
}

interface Sample {
  at: number;
  /** node -> (pid, its threads' CPU). */
  nodes: Map<number, { pid: number; cpu: Map<string, number> }>;
}

/** Samples every node process's threads every `everyMs` (pids from `pids()`, which may change as nodes
 *  restart), and answers what each node spent over a window of wall-clock (Date.now()) time. */
export class NodeCpuSampler {
  private readonly samples: Sample[] = [];
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly pids: () => Map<number, number>, everyMs = 50) {
    this.timer = setInterval(() => this.sample(), everyMs);
  }

  private sample(): void {
    const nodes = new Map<number, { pid: number; cpu: Map<string, number> }>();
    for (const [node, pid] of this.pids()) nodes.set(node, { pid, cpu: threadCpu(pid) });
    this.samples.push({ at: Date.now(), nodes });
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** CPU seconds per node and thread name over [from, to]: from the last sample at or before `from`
   *  (or a restarted process's first one) to the first at or after `to`, per process. */
  between(from: number, to: number): Map<number, [string, number][]> {
    const out = new Map<number, [string, number][]>();
    const end = this.samples.find((s) => s.at >= to) ?? this.samples[this.samples.length - 1];
    if (!end) return out;
    for (const [node, e] of end.nodes) {
      const same = this.samples.filter((s) => s.nodes.get(node)?.pid === e.pid);
      const start = [...same].reverse().find((s) => s.at <= from) ?? same[0]!;
      out.set(node, cpuBetween(start.nodes.get(node)!.cpu, e.cpu));
    }
    return out;
  }
}

/** Seconds summed over threads whose name matches `re` (every thread when omitted). */
export function cpuOf(xs: readonly [string, number][], re = /./): number {
  return +xs.filter(([k]) => re.test(k)).reduce((a, [, v]) => a + v, 0).toFixed(2);
}
