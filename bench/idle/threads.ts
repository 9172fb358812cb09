// Per-thread CPU and wakeups of a set of processes, read from /proc, for the idle benchmark
// (../idle.bench.ts, issue 26): for every thread of every process, utime + stime (proc(5) stat fields
// 14 and 15, clock ticks) and voluntary context switches (/proc/PID/task/TID/status: each is the
// thread going to sleep, so, for an idle thread, one wakeup). Differences over a window give cores and
// wakeups per second by thread; threads are named by their comm (the actors name theirs: worker.0,
// background, rowan-lease, manager.0), the main thread (tid = pid) is `main`, and Node's unnamed
// helpers (V8 platform workers, libuv's pool, the inspector's) are `helpers`.
import { readdirSync, readFileSync } from 'node:fs';
import { clockTicksPerSec, statTicks } from '../redis/server-cpu.js';

/** One thread at one instant. */
interface ThreadMark {
  name: string;
  ticks: number;
  switches: number;
}

/** Every thread of each process, by `pid/tid`; a process or thread gone between reads is left out. */
export type ProcMark = Map<string, ThreadMark>;

function voluntarySwitches(status: string): number {
  const m = /^voluntary_ctxt_switches:\s*(\d+)/m.exec(status);
  return m ? Number(m[1]) : 0;
}

function threadName(pid: number, tid: number, stat: string): string {
  if (pid === tid) return 'main';
  const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
  return comm === 'node' ? 'helpers' : comm;
}

export function markThreads(pids: readonly number[]): ProcMark {
  const out: ProcMark = new Map();
  for (const pid of pids) {
    let tids: string[];
    try {
      tids = readdirSync(`/proc/${pid}/task`);
    } catch {
      continue;
    }
    for (const t of tids) {
      try {
        const stat = readFileSync(`/proc/${pid}/task/${t}/stat`, 'utf8');
        const status = readFileSync(`/proc/${pid}/task/${t}/status`, 'utf8');
        out.set(`${pid}/${t}`, { name: threadName(pid, Number(t), stat), ticks: statTicks(stat), switches: voluntarySwitches(status) });
      } catch {
        // the thread ended between the listing and the read
      }
    }
  }
  return out;
}

/** CPU (cores) and wakeups per second of one process's threads of one name over a window. */
export interface ThreadUse {
  pid: number;
  thread: string;
  threads: number;
  cores: number;
  wakeupsPerSec: number;
}

/** Use per (process, thread name) between two marks `sec` apart; a thread born in between counts
 *  from zero (its whole CPU fell in the window). */
export function threadUse(a: ProcMark, b: ProcMark, sec: number): ThreadUse[] {
  const tck = clockTicksPerSec();
  const by = new Map<string, ThreadUse>();
  for (const [key, now] of b) {
    const was = a.get(key);
    const pid = Number(key.split('/')[0]);
    const k = `${pid}/${now.name}`;
    const u = by.get(k) ?? { pid, thread: now.name, threads: 0, cores: 0, wakeupsPerSec: 0 };
    u.threads++;
    u.cores += (now.ticks - (was?.ticks ?? 0)) / tck / sec;
    u.wakeupsPerSec += (now.switches - (was?.switches ?? 0)) / sec;
    by.set(k, u);
  }
  return [...by.values()];
}

/** Per-thread use of `pids` over `ms` (a sleep between two marks). */
export async function measureThreads(pids: readonly number[], ms: number): Promise<{ use: ThreadUse[]; sec: number }> {
  const a = markThreads(pids);
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, ms));
  const b = markThreads(pids);
  const sec = (performance.now() - t0) / 1000;
  return { use: threadUse(a, b, sec), sec };
}
