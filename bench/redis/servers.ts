// Real Redis for the side-by-side benchmark: a primary and 2 replicas on loopback ports, data under a
// temp dir, AOF on with the given appendfsync. Started with redis-server (never installed here:
// `apt-get install redis-server redis-tools`), stopped with SHUTDOWN NOSAVE then SIGKILL if needed.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface RedisSet {
  primaryPort: number;
  /** The redis-server processes (primary first): whose CPU the benchmark reads. */
  pids: number[];
  stop(): Promise<void>;
}

export function haveRedis(): boolean {
  return spawnSync('redis-server', ['--version']).status === 0 && spawnSync('redis-benchmark', ['--version']).status === 0;
}

function cli(port: number, ...args: string[]): string {
  return spawnSync('redis-cli', ['-p', String(port), ...args], { encoding: 'utf8', timeout: 10_000 }).stdout.trim();
}

export async function startRedis(basePort: number, fsync: 'everysec' | 'always'): Promise<RedisSet> {
  const dir = mkdtempSync(join(tmpdir(), `rowan-bench-redis-${fsync}-`));
  const procs: ChildProcess[] = [];
  const ports = [basePort, basePort + 1, basePort + 2];
  for (const [i, port] of ports.entries()) {
    const d = join(dir, `r${i}`);
    mkdirSync(d);
    const args = ['--port', String(port), '--bind', '127.0.0.1', '--dir', d, '--appendonly', 'yes', '--appendfsync', fsync, '--save', '', '--daemonize', 'no', '--protected-mode', 'no'];
    if (i > 0) args.push('--replicaof', '127.0.0.1', String(ports[0]));
    procs.push(spawn('redis-server', args, { stdio: 'ignore' }));
  }
  // Wait until both replicas report a connected link (bounded).
  for (let i = 0; i < 200; i++) {
    if (cli(ports[0]!, 'INFO', 'replication').includes('connected_slaves:2')) break;
    if (i === 199) throw new Error('redis replicas did not connect within 20 s');
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    primaryPort: ports[0]!,
    pids: procs.map((p) => p.pid!),
    stop: async () => {
      for (const [i, p] of procs.entries()) {
        if (p.exitCode !== null) continue;
        cli(ports[i]!, 'SHUTDOWN', 'NOSAVE');
        const t = setTimeout(() => p.exitCode === null && p.kill('SIGKILL'), 5000);
        await new Promise((r) => (p.exitCode !== null ? r(null) : p.once('exit', r)));
        clearTimeout(t);
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
