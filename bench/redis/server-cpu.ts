// Server CPU time read from /proc, for the Redis comparison's CPU per operation and idle cores: the sum
// of utime + stime of /proc/PID/stat over every server process (rowan: its 3 nodes and the manager;
// Redis: the primary and its 2 replicas). A process's stat counts all its threads, the live ones and
// those that have ended, so worker threads (rowan's actors, Redis's I/O and bio threads) are included.
// The unit is the clock tick (getconf CLK_TCK, 100 per second here): a figure over a 2 s run is good to
// about 1 %, which is why the runs are sized to last seconds (bench/redis.bench.ts).
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

let ticksPerSec: number | undefined;

/** Clock ticks per second of /proc's times (getconf CLK_TCK). */
export function clockTicksPerSec(): number {
  if (ticksPerSec === undefined) {
    const t = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());
    if (!(Number.isInteger(t) && t > 0)) throw new Error(`getconf CLK_TCK gave ${t}`);
    ticksPerSec = t;
  }
  return ticksPerSec;
}

/**
 * utime + stime (fields 14 and 15 of proc(5)'s stat) of one /proc/PID/stat text, in ticks. The command
 * name (field 2) is in parentheses and may itself hold spaces and parentheses, so fields are counted
 * from after its last ')'.
 */
export function statTicks(stat: string): number {
  const close = stat.lastIndexOf(')');
  if (close < 0) throw new Error(`not a /proc/PID/stat line: ${stat.slice(0, 80)}`);
  const f = stat.slice(close + 2).trim().split(/\s+/); // f[0] is field 3 (state)
  const utime = Number(f[14 - 3]);
  const stime = Number(f[15 - 3]);
  if (!Number.isFinite(utime) || !Number.isFinite(stime)) throw new Error(`no utime/stime in /proc/PID/stat: ${stat.slice(0, 120)}`);
  return utime + stime;
}

/**
 * CPU seconds the processes have run so far, every thread of each. Null if one of them is gone: a server
 * that died or was restarted mid-run leaves no right figure, so none is given.
 */
export function cpuSecondsOf(pids: readonly number[]): number | null {
  let ticks = 0;
  for (const pid of pids) {
    try {
      ticks += statTicks(readFileSync(`/proc/${pid}/stat`, 'utf8'));
    } catch {
      return null;
    }
  }
  return ticks / clockTicksPerSec();
}

/** The server processes as of now (a supervisor may have restarted one since the last call). */
export type ServerPids = () => readonly number[];

/** A reading of the servers' CPU and the wall clock, to take a difference of. */
export interface CpuMark {
  pids: readonly number[];
  cpuSec: number | null;
  atMs: number;
}

export function mark(pids: ServerPids): CpuMark {
  const now = pids();
  return { pids: now, cpuSec: cpuSecondsOf(now), atMs: performance.now() };
}

/**
 * CPU seconds and wall seconds between two marks; cpuSec null when a reading failed or a server was
 * replaced in between (its CPU before the restart is lost).
 */
export function between(a: CpuMark, b: CpuMark): { cpuSec: number | null; wallSec: number } {
  const same = a.pids.length === b.pids.length && a.pids.every((p, i) => p === b.pids[i]);
  return { cpuSec: !same || a.cpuSec === null || b.cpuSec === null ? null : b.cpuSec - a.cpuSec, wallSec: (b.atMs - a.atMs) / 1000 };
}

/** Cores the servers use with no client at all: CPU seconds over wall seconds across `ms`. */
export async function idleCores(pids: ServerPids, ms: number): Promise<{ cpuSec: number | null; wallSec: number; cores: number | null }> {
  const a = mark(pids);
  await new Promise((r) => setTimeout(r, ms));
  const d = between(a, mark(pids));
  return { ...d, cores: d.cpuSec === null ? null : d.cpuSec / d.wallSec };
}
