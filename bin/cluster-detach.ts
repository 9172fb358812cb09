// `rowan cluster --detach`: the launcher as a daemon. This process starts the launcher again without
// --detach in a session of its own (spawn detached: setsid(), so no controlling terminal, no SIGHUP or
// ^C from this one, and reparented to init once we exit), its stdout/stderr appended to
// DIR/launcher.log; then it follows that log until the launcher says it is serving (it prints the
// endpoints) or exits (it prints why), and returns. The launcher writes DIR/launcher.pid as ever, so
// `rowan cluster stop --dir DIR` and `rowan status` find it; its nodes still die with it (parent-death
// signal), only the launcher outlives the terminal.
//
// One fork is enough here: the classic second fork keeps a daemon from reacquiring a controlling
// terminal by opening one, and Node opens no terminal device.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ErrorCodes, RowanError } from '../config/base/errors.js';
import { defaultTimings } from '../config/timings.js';
import { LAUNCHER_PID_FILE, closeQuietly, openNodeLog, processAlive, readLogFrom, runningLauncher } from './cluster-lifecycle.js';

export const LAUNCHER_LOG = 'launcher.log';
/** Set in the detached launcher's environment: it is the daemon (it must not detach again). */
export const DETACHED_ENV = 'ROWAN_CLUSTER_DETACHED';
/** What the launcher prints once every node is ready (bin/cluster-cli.ts). */
export const SERVING_MARK = '\nserving. Try:';

const bin = new URL('../../bin/rowan', import.meta.url).pathname;

/**
 * Start the launcher for `dir` in the background with `args` (the cluster command's arguments, without
 * --detach), wait until it serves, print what it printed, and return the exit code for this process.
 */
export async function detachCluster(dir: string, args: string[], timeoutMs = defaultTimings.detachReadyTimeoutMs): Promise<number> {
  const other = runningLauncher(dir);
  if (other !== null) throw new RowanError(ErrorCodes.DATA_DIR, `a launcher (pid ${other}) is already running the cluster in ${dir}; rowan cluster stop --dir ${dir} stops it`);
  mkdirSync(dir, { recursive: true });
  const logFile = join(dir, LAUNCHER_LOG);
  const { fd, from } = openNodeLog(logFile, 'starting a detached launcher');
  const child = spawn(process.execPath, [bin, 'cluster', ...args, '--dir', dir], {
    stdio: ['ignore', fd, fd],
    detached: true,
    env: { ...process.env, [DETACHED_ENV]: '1' },
  });
  closeQuietly(fd);
  let exited: string | null = null;
  child.once('exit', (code, signal) => (exited = signal ?? `code ${code}`));
  // ^C while we wait: the launcher is in another session and would not see it; stop it ourselves.
  const abort = () => child.kill('SIGTERM');
  process.once('SIGINT', abort);
  process.once('SIGTERM', abort);
  try {
    const t0 = Date.now();
    let text = '';
    for (;;) {
      text = readLogFrom(logFile, from);
      if (text.includes(SERVING_MARK)) break;
      if (exited !== null) {
        process.stderr.write(`${text}\nthe launcher exited (${exited}) before the cluster was serving; its log: ${logFile}\n`);
        return 1;
      }
      if (Date.now() - t0 > timeoutMs) {
        child.kill('SIGTERM');
        process.stderr.write(`${text}\nthe cluster was not serving after ${timeoutMs} ms; launcher (pid ${child.pid}) told to stop; its log: ${logFile}\n`);
        return 1;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    // The serving block ends with the launcher's own last line; wait for it to be complete.
    await new Promise((r) => setTimeout(r, 50));
    process.stdout.write(readLogFrom(logFile, from).trimEnd() + '\n');
    console.log(`\nlauncher running in the background (pid ${child.pid}); log ${logFile}`);
    child.unref();
    return 0;
  } finally {
    process.removeListener('SIGINT', abort);
    process.removeListener('SIGTERM', abort);
  }
}

export interface LauncherInfo {
  pid: number;
  /** In a session of its own: started with --detach (or otherwise daemonised). */
  detached: boolean;
  log: string | null;
}

/** The launcher running the cluster in `dir`, or null. */
export function launcherOf(dir: string): LauncherInfo | null {
  const pid = runningLauncher(dir);
  if (pid === null || !processAlive(pid)) return null;
  let detached = false;
  try {
    // /proc/PID/stat after the command name: state ppid pgrp session ...
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    detached = Number(f[3]) === pid;
  } catch {
    // gone meanwhile
  }
  const log = join(dir, LAUNCHER_LOG);
  return { pid, detached, log: existsSync(log) ? log : null };
}

/** One line for `rowan status`: who runs the cluster in `dir`. */
export function describeLauncher(dir: string): string {
  const l = launcherOf(dir);
  if (l === null) return `launcher: none running for ${dir} (${LAUNCHER_PID_FILE} absent or stale)`;
  return `launcher: pid ${l.pid}, ${l.detached ? `detached (rowan cluster --detach)${l.log ? `, log ${l.log}` : ''}` : 'in a terminal'}; rowan cluster stop --dir ${dir} stops it`;
}
