// Every command of the documentation is run (issue: "the docs cannot rot"). Each line of each ```sh /
// ```bash block of README.md and docs/*.md (test/fixtures/doc-commands.ts extracts them) is matched
// against RULES below, which says how it runs, and is then executed for real, in document order, in
// a scratch copy of the built project (so `bin/rowan` and `npm run` work, and `rowan-cluster/` starts
// fresh for each file, and benchmarks write their results into the copy, not the repository).
//
// Ports are the documented ones, unchanged: every command runs in a network namespace of its own
// (`ip netns exec`), whose 127.0.0.1 no other process on the machine shares, so `npm start` listens on
// 7100..7900 and ZooKeeper on 2181 as the docs say, without colliding with other runs. The addresses
// too: for running.md's multi-host walkthrough its loopback also carries the example hosts 10.0.0.1-3
// and 10.0.0.9 (test/fixtures/doc-hosts.ts), on which that block starts a manager and three nodes. That
// needs root; without it the test skips, saying so (CI runs as root and fails on a skip).
//
// A command that matches no rule fails the test, naming its file and line: a new command in the docs
// needs a way to run it here. A rule that matches no command fails too, so the table cannot rot either.
// A command fails when it exits non-zero, prints an error (ERROR_OUTPUT), or never gets ready/started.
//
// Modes (the RULES table says which command runs how, and why):
//   run              run to completion: exit 0, no error printed
//   serve            a foreground server (Ctrl-C stops it): started, awaited until it says it serves,
//                    kept for the rest of its block (the block's later commands use it), then SIGINT;
//                    it must then exit cleanly (0, or 130 for Ctrl-C) with no error printed
//   serve-then-stop  the same, but SIGINT as soon as it is ready (a node or manager started by hand,
//                    whose data dir or port the next command reuses)
//   host             a server of one host of a multi-host example (running.md's manager and nodes):
//                    started without waiting for the servers of the lines before it, as in a terminal
//                    on each host; the block's next line without one waits until every one is ready;
//                    all get SIGINT together at the end of the block and must stop cleanly
//   start-then-stop  a run of minutes (a benchmark, a fault run, a simulator sweep): started, awaited
//                    until it is past its argument parsing and build and has begun its work (its
//                    progress line, or the cluster processes it starts), no error printed, then SIGINT
//   known            not executed, because it would recurse (npm test runs this test) or replace the
//                    node_modules the copy shares (npm ci): the npm script or lock file it needs exists
//   env              an `export`: kept and prepended to the block's later commands
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { docFiles, extractBlocks, readDocBlocks, splitAnd, stripComment, type DocBlock, type DocCommand } from '../fixtures/doc-commands.js';
import { netnsUnavailable, NETNS_PREFIX } from '../fixtures/netns.js';
import { waitFor } from '../fixtures/failover-cluster.js';
import { addExampleHosts, holdsLease, transpileBlock } from '../fixtures/doc-hosts.js';

const root = new URL('../../../', import.meta.url).pathname;

type Mode = 'run' | 'serve' | 'serve-then-stop' | 'start-then-stop' | 'host' | 'known' | 'env';

interface Rule {
  /** Matched against one `&&` part of a documented command, as written (placeholders and all). */
  pattern: RegExp;
  mode: Mode;
  why: string;
  /** serve*, start-then-stop: the output that says it serves / has begun its work. */
  ready?: RegExp;
  /** ...or a process it started, by command line (a fault run's cluster). */
  readyProcess?: RegExp;
  /** ...or a shell probe inside the namespace whose output matches `ready`. */
  probe?: string;
  /** ...and then this holds too (given the command as run and its directory). */
  alsoReady?: (command: string, cwd: string) => Promise<boolean>;
  /** known: what must exist for it. */
  check?: () => void;
  timeoutMs?: number;
}

const SERVING = /^serving\. Try:/m;
const NODE_READY = /"msg":"node ready"/;
/** `rowan status --cluster` of running.md's three hosts: no node dead, each one up (one filesystem here). */
const THREE_UP = /: 3 nodes \(none dead\)[^]*\n0 +up [^]*\n1 +up [^]*\n2 +up /;
/** Bounds, not waits: a cluster that is ready in 10 s on a quiet machine took 180 s at a load of 22 on 2 cores. */
const READY_TIMEOUT_MS = 300_000;
const BENCH_STARTED = /^\[0\/\d+\] [\w-]+: /m; // bench/report.ts progress(): the first benchmark began
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
const script = (name: string) => () => assert.ok(pkg.scripts[name], `package.json has no script ${name}`);

/** How each documented command is run, first match wins. */
const RULES: Rule[] = [
  { pattern: /^npm ci$/, mode: 'known', why: 'would replace the node_modules the copy links to', check: () => assert.ok(existsSync(join(root, 'package-lock.json')), 'package-lock.json is missing') },
  { pattern: /^npm test$/, mode: 'known', why: 'runs this test: it would recurse', check: script('test') },
  { pattern: /^npm start$/, mode: 'serve', ready: SERVING, why: 'a 3-node cluster in the foreground until Ctrl-C' },
  { pattern: /^npm run test:(kills|rejoin-kills|reshard-kills)$/, mode: 'start-then-stop', readyProcess: /\/bin\/rowan (start|cluster|manager) /, why: 'a 5-10 min fault run: stopped once its build is done and its test has started a cluster' },
  { pattern: /^npm run bench -- --help$/, mode: 'run', ready: /^usage: npm run bench/m, why: 'prints the usage' },
  { pattern: /^npm run bench -- --replot$/, mode: 'run', why: 'redraws the plots from bench/results/ (of the copy)', timeoutMs: 240_000 },
  { pattern: /^npm run bench( -- [\w -]+)?$/, mode: 'start-then-stop', ready: BENCH_STARTED, why: 'benchmarks of 30 s to 25 min: stopped once the first one began (its progress line)' },
  { pattern: /^npm run sim -- --seed \d+ --log$/, mode: 'run', why: 'replays one seed' },
  { pattern: /^npm run sim -- --seeds \d+/, mode: 'start-then-stop', ready: /^seeds \d+\.\.\d+/m, why: 'hundreds of seeds, minutes: stopped once the sweep began' },
  { pattern: /^bin\/rowan cluster (--detach|stop) /, mode: 'run', why: 'returns once the cluster serves / has stopped' },
  { pattern: /^bin\/rowan cluster /, mode: 'serve', ready: SERVING, why: 'a cluster in the foreground until Ctrl-C' },
  { pattern: /^bin\/rowan manager --cluster cluster\.json --host 10\.0\.0\.9 /, mode: 'host', ready: /configuration manager listening on 10\.0\.0\.9:7090/, why: "running.md's multi-host manager, on 10.0.0.9 (an address of the namespace's loopback)" },
  { pattern: /^bin\/rowan start .* --manager 10\.0\.0\.9:7090 /, mode: 'host', ready: NODE_READY, alsoReady: holdsLease, why: "running.md's multi-host nodes, each on its address: ready once it holds its lease (the clients after them must not race the first grant)" },
  { pattern: /^bin\/rowan manager --zookeeper 127\.0\.0\.1:2181 --cluster-name ha /, mode: 'serve', ready: /standby: \S+ is ahead; watching it/, why: "running.md's third manager, by hand: ready once it stands by in the election (an active one listens; a standby does not)" },
  { pattern: /^bin\/rowan start /, mode: 'serve-then-stop', ready: NODE_READY, why: 'a node started by hand, in the foreground' },
  { pattern: /^bin\/rowan manager /, mode: 'serve-then-stop', ready: /configuration manager listening on /, why: 'a configuration manager started by hand, in the foreground' },
  { pattern: /^bin\/rowan get hello --cluster cluster\.json$/, mode: 'run', ready: /^world$/m, why: 'the multi-host cluster serves: the value put on it' },
  { pattern: /^bin\/rowan status --cluster cluster\.json$/, mode: 'run', ready: THREE_UP, why: 'the multi-host cluster: 3 nodes, none dead, each up' },
  { pattern: /^bin\/rowan status --zookeeper 127\.0\.0\.1:2181 --cluster-name ha$/, mode: 'run', ready: /^configuration manager: 127\.0\.0\.1:7590 \(pid \d+\) active, 2 standby$/m, why: "running.md's standby managers: the cluster's two and the one started by hand, in the election" },
  { pattern: /^bin\/rowan (put|get|status|reshard) /, mode: 'run', why: 'a client command' },
  { pattern: /^java .* org\.apache\.zookeeper\.server\.quorum\.QuorumPeerMain /, mode: 'serve', probe: 'exec 3<>/dev/tcp/127.0.0.1/2181 && echo srvr >&3 && cat <&3', ready: /Mode: standalone/, why: 'ZooKeeper in the foreground until Ctrl-C: ready once `srvr` answers' },
  { pattern: /^export [A-Z_]+=/, mode: 'env', why: 'an environment variable for the commands after it' },
  { pattern: /^redis-cli /, mode: 'run', why: 'a Redis client command' },
  { pattern: /^redis-benchmark .* -t set,get /, mode: 'start-then-stop', ready: /(^|\r)(GET: rps=|====== GET)/m, why: '2 x 100,000 requests: stopped once every SET was answered and the GETs began' },
  { pattern: /^(openssl|printf|head -c \d+ \/dev\/urandom|mkdir -p|chmod \d+) /, mode: 'run', why: 'makes files' },
];

/**
 * Placeholders of the docs and what stands for them here. security.md's `bin/rowan start ...` and
 * `rowan manager ...` are a node and a manager started by hand: those of `hand/`, a one-node cluster
 * on base port 8100 made (and stopped) for them, so they do not collide with `rowan-cluster`'s.
 */
const PLACEHOLDERS: { file: string; from: RegExp; to: (cwd: string) => string }[] = [
  { file: 'docs/security.md', from: /--cluster F \.\.\./, to: () => '--cluster hand/cluster.json' },
  { file: 'docs/security.md', from: /^bin\/rowan start \.\.\./, to: () => 'bin/rowan start --data-dir hand/node-0 --cluster hand/cluster.json --node-id 0' },
  { file: 'docs/security.md', from: /^bin\/rowan manager \.\.\./, to: () => 'bin/rowan manager --cluster hand/cluster.json' },
  { file: 'docs/security.md', from: /--secret-file S\b/, to: () => '--secret-file hand/secret' },
  { file: 'docs/security.md', from: /--client-password-file P\b/, to: () => '--client-password-file hand/client-password' },
  { file: 'docs/security.md', from: /\bDIR\//g, to: () => 'rowan-cluster/' },
  { file: 'docs/security.md', from: /\bFILE\b/g, to: () => 'hand-made-secret' },
  // ZooKeeper's data dir: in the scratch copy, not in the machine's shared /tmp.
  { file: 'docs/running.md', from: /\/tmp\/zk\b/g, to: (cwd) => join(cwd, 'zk') },
  // The multi-host nodes' data dirs (in its ```ts block too): in the copy, not in the machine's /var/lib.
  { file: 'docs/running.md', from: /\/var\/lib\/rowan\b/g, to: (cwd) => join(cwd, 'var/lib/rowan') },
];

type State = 'cluster' | 'hand' | 'certs' | 'hosts';

/** What a block needs before it runs ("While it runs:"), by its file and first command. */
const BLOCK_STATE: { file: string; first: RegExp; needs: State[] }[] = [
  { file: 'README.md', first: /^bin\/rowan put hello world /, needs: ['cluster'] },
  { file: 'docs/running.md', first: /^bin\/rowan put hello world /, needs: ['cluster'] },
  { file: 'docs/resharding.md', first: /^bin\/rowan reshard --plan /, needs: ['cluster'] },
  { file: 'docs/security.md', first: /^bin\/rowan start \.\.\. --secret-file /, needs: ['cluster', 'hand'] },
  { file: 'docs/security.md', first: /^bin\/rowan cluster --tls-cert /, needs: ['certs', 'hand'] },
  { file: 'docs/running.md', first: /^bin\/rowan manager --cluster cluster\.json --host 10\.0\.0\.9 /, needs: ['hosts'] },
];

/**
 * An error printed by a command, whatever its exit code: redis-cli prints error replies and may exit 0,
 * `export X=$(cat missing)` succeeds, a pipeline has the exit code of its last command.
 */
const ERROR_OUTPUT = /(^|\n)\s*(npm ERR!|npm error|\w*Error:|\(error\)|ERR |NOAUTH|WRONGPASS|WRONGTYPE|-ERR|Segmentation fault)|ROWAN_ERR_[A-Z_]+|"level":(50|60)|(^|\n)not ok \d|: command not found|No such file or directory/;

function ruleFor(part: string): Rule | undefined {
  return RULES.find((r) => r.pattern.test(part));
}

function substitute(file: string, text: string, cwd: string): string {
  return PLACEHOLDERS.filter((p) => p.file === file).reduce((t, p) => t.replace(p.from, p.to(cwd)), text);
}

/** A network namespace with only a loopback: private ports for everything the docs start. */
class Namespace {
  readonly name = `${NETNS_PREFIX}-${process.pid}-docs`;

  constructor() {
    ip(['netns', 'add', this.name]);
    ip(['-n', this.name, 'link', 'set', 'lo', 'up']);
  }

  pids(): number[] {
    const r = spawnSync('ip', ['netns', 'pids', this.name], { encoding: 'utf8' });
    return (r.stdout ?? '').split('\n').map(Number).filter((p) => Number.isInteger(p) && p > 0);
  }

  /** Command lines of the processes in the namespace that descend from `ancestor`. */
  commandLines(ancestor: number): string[] {
    const parent = new Map(this.pids().map((p) => [p, parentOf(p)]));
    const descends = (p: number): boolean => {
      for (let q: number | undefined = p; q !== undefined && q > 1; q = parent.get(q) ?? parentOf(q)) if (q === ancestor) return true;
      return false;
    };
    return [...parent.keys()].filter(descends).map((p) => {
      try {
        return readFileSync(`/proc/${p}/cmdline`, 'utf8').replaceAll('\0', ' ');
      } catch {
        return '';
      }
    });
  }

  /** SIGKILL whatever still runs in it (what a stopped fault run or benchmark left), until none is left. */
  async sweep(): Promise<number[]> {
    const left = this.pids();
    for (const p of left) {
      try {
        process.kill(p, 'SIGKILL');
      } catch {
        /* gone already */
      }
    }
    await waitFor('processes in the namespace to die', () => this.pids().length === 0, 30_000, 200);
    return left;
  }

  destroy(): void {
    for (const p of this.pids()) {
      try {
        process.kill(p, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
    spawnSync('ip', ['netns', 'del', this.name]);
  }
}

/** A process's parent pid (field 4 of /proc/PID/stat, after the parenthesised name), or undefined. */
function parentOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return undefined;
  }
}

function ip(args: string[]): void {
  const r = spawnSync('ip', args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`ip ${args.join(' ')}: ${r.stderr}`);
}

/** One shell running a command in the namespace, in its own process group (as a terminal's job). */
class Job {
  out = '';
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private readonly child: ChildProcess;
  private done = false;

  constructor(readonly where: string, readonly text: string, ns: Namespace, cwd: string, env: NodeJS.ProcessEnv) {
    this.child = spawn('ip', ['netns', 'exec', ns.name, 'bash', '-c', text], { cwd, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    const take = (b: Buffer) => (this.out += b.toString());
    this.child.stdout!.on('data', take);
    this.child.stderr!.on('data', take);
    this.exited = new Promise((res) => this.child.on('close', (code, signal) => ((this.done = true), res({ code, signal }))));
  }

  get pid(): number {
    return this.child.pid!;
  }

  get running(): boolean {
    return !this.done;
  }

  /** SIGINT to its process group: what Ctrl-C in its terminal does. */
  interrupt(): void {
    if (this.done) return;
    try {
      process.kill(-this.child.pid!, 'SIGINT');
    } catch {
      /* exited meanwhile */
    }
  }

  kill(): void {
    try {
      process.kill(-this.child.pid!, 'SIGKILL');
    } catch {
      /* gone */
    }
  }

  /** The output so far, failing when it shows an error. */
  checkOutput(upTo = this.out): void {
    const m = ERROR_OUTPUT.exec(upTo);
    if (m) throw new Error(`${this.where}: \`${this.text}\` printed an error (${JSON.stringify(m[0].trim())}):\n${tail(upTo)}`);
  }

  async finish(timeoutMs: number): Promise<void> {
    const timer = setTimeout(() => this.kill(), timeoutMs);
    const { code, signal } = await this.exited;
    clearTimeout(timer);
    if (code !== 0) throw new Error(`${this.where}: \`${this.text}\` exited ${signal ?? code}${signal === 'SIGKILL' ? ` (killed after ${timeoutMs} ms)` : ''}:\n${tail(this.out)}`);
    this.checkOutput();
  }

  /** Stop it as Ctrl-C would and expect a clean exit. */
  async stop(timeoutMs = 60_000): Promise<void> {
    this.interrupt();
    const timer = setTimeout(() => this.kill(), timeoutMs);
    const { code, signal } = await this.exited;
    clearTimeout(timer);
    if (!(code === 0 || code === 130 || signal === 'SIGINT')) throw new Error(`${this.where}: \`${this.text}\` did not stop cleanly on SIGINT (${signal ?? code}):\n${tail(this.out)}`);
    this.checkOutput();
  }
}

function tail(s: string): string {
  return s.split('\n').slice(-30).join('\n');
}

interface Done {
  file: string;
  line: number;
  text: string;
  mode: Mode;
  ms: number;
}

/** Runs the blocks of one file in one scratch copy. */
class Runner {
  readonly done: Done[] = [];
  private exports: string[] = [];
  private serving: Job[] = [];
  /** The block's host-mode servers; `ready` is null once the server is ready, else why it is not. */
  private hosts: { job: Job; ready: Promise<unknown> }[] = [];

  constructor(readonly ns: Namespace, readonly cwd: string, readonly env: NodeJS.ProcessEnv, readonly blocks: DocBlock[]) {}

  private job(where: string, text: string): Job {
    return new Job(where, [...this.exports, text].join('\n'), this.ns, this.cwd, this.env);
  }

  private async sh(where: string, text: string, timeoutMs = 180_000): Promise<string> {
    const j = this.job(where, text);
    await j.finish(timeoutMs);
    return j.out;
  }

  async runBlock(b: DocBlock): Promise<void> {
    const where = `${b.file}:${b.line}`;
    const state = BLOCK_STATE.find((s) => s.file === b.file && b.commands[0] && s.first.test(b.commands[0].text));
    this.exports = [];
    try {
      for (const need of state?.needs ?? []) await this.setUp(need, where);
      for (const c of b.commands) await this.runCommand(c);
      await this.hostsReady();
    } finally {
      const failures: unknown[] = [];
      // Ctrl-C on every host at once.
      await Promise.all(this.hosts.map((h) => h.job.stop().catch((e: unknown) => failures.push(e))));
      this.hosts = [];
      for (const j of this.serving.reverse()) await j.stop().catch((e: unknown) => failures.push(e));
      this.serving = [];
      if (state?.needs.includes('cluster') && this.launcherRunning('rowan-cluster')) await this.sh(`${where} (teardown)`, 'bin/rowan cluster stop --dir rowan-cluster').catch((e: unknown) => failures.push(e));
      await this.ns.sweep();
      if (failures.length > 0) throw failures[0];
    }
  }

  private launcherRunning(dir: string): boolean {
    const pidFile = join(this.cwd, dir, 'launcher.pid');
    if (!existsSync(pidFile)) return false;
    try {
      process.kill(Number(readFileSync(pidFile, 'utf8').trim()), 0);
      return true;
    } catch {
      return false;
    }
  }

  private async setUp(need: State, where: string): Promise<void> {
    const at = `${where} (setup: ${need})`;
    // A 1 s lease, as the cluster fixture gives: the 200 ms default expires under a busy CI machine's load.
    if (need === 'cluster') await this.sh(at, 'bin/rowan cluster --detach --dir rowan-cluster --lease-ms 1000');
    else if (need === 'hand' && !existsSync(join(this.cwd, 'hand', 'cluster.json'))) {
      // Its configuration, secret and client password; the node's pool is left for `rowan start` to make.
      await this.sh(at, 'bin/rowan cluster --detach --dir hand --nodes 1 --base-port 8100 && bin/rowan cluster stop --dir hand && rm -r hand/node-0');
    } else if (need === 'hosts') {
      // The example's addresses, and its cluster.json as step 1's ```ts block writes it.
      addExampleHosts(this.ns.name);
      const plan = this.blocks.find((x) => x.lang === 'ts' && x.text.includes('planCluster('));
      assert.ok(plan, `${where}: the \`\`\`ts block that writes cluster.json is gone`);
      // In the copy, so that its `import ... from 'rowan'` is the package's own name.
      writeFileSync(join(this.cwd, 'plan-cluster.mjs'), await transpileBlock(substitute(plan.file, plan.text, this.cwd)));
      await this.sh(at, 'node plan-cluster.mjs && rm plan-cluster.mjs');
    } else if (need === 'certs') {
      // The throwaway CA of the same file, made by its own openssl block.
      const certs = this.blocks.find((x) => x.commands[0]?.text.startsWith('openssl req -x509'));
      assert.ok(certs, `${where}: the openssl block that makes ca.pem is gone`);
      for (const c of certs.commands) await this.sh(at, c.text);
    }
  }

  async runCommand(c: DocCommand): Promise<void> {
    const where = `${c.file}:${c.line}`;
    const text = substitute(c.file, c.text, this.cwd);
    const parts = splitAnd(c.text).map((p) => ({ p, rule: ruleFor(p)! }));
    for (const { p, rule } of parts) assert.ok(rule, `${where}: \`${p}\` matches no rule in docs-commands.test.ts`);
    if (!parts.some((x) => x.rule.mode === 'host')) await this.hostsReady();
    const t0 = Date.now();
    // A plain chain (`a && b`) runs as written; a chain with a known or served part runs part by part.
    const modes = parts.map((x) => x.rule.mode);
    if (modes.every((m) => m === 'run')) {
      const out = await this.sh(where, text, Math.max(...parts.map((x) => x.rule.timeoutMs ?? 180_000)));
      const expect = parts.find((x) => x.rule.ready)?.rule.ready;
      if (expect) assert.match(out, expect, `${where}: \`${text}\` did not print what it should`);
      this.done.push({ ...c, mode: 'run', ms: Date.now() - t0 });
      return;
    }
    const subs = splitAnd(text);
    for (const [i, { rule }] of parts.entries()) {
      const d: Done = { ...c, mode: rule.mode, ms: 0 };
      await this.runPart(where, subs[i]!, rule, d);
      if (rule.mode !== 'host') d.ms = Date.now() - t0;
      this.done.push(d);
    }
  }

  /** `d`: what is recorded of it; a host-mode server's time is set once it is ready. */
  private async runPart(where: string, text: string, rule: Rule, d: Done): Promise<void> {
    switch (rule.mode) {
      case 'known':
        rule.check!();
        return;
      case 'env':
        this.exports.push(text);
        await this.sh(where, 'true');
        return;
      case 'run':
        await this.sh(where, text, rule.timeoutMs);
        return;
      case 'host': {
        const j = this.job(where, text);
        const t0 = Date.now();
        const ready = this.awaitReady(j, rule).then(() => ((d.ms = Date.now() - t0), null), (e: unknown) => e);
        this.hosts.push({ job: j, ready });
        return;
      }
      case 'serve':
      case 'serve-then-stop':
      case 'start-then-stop': {
        const j = this.job(where, text);
        try {
          await this.awaitReady(j, rule);
          j.checkOutput();
        } catch (e) {
          j.kill();
          throw e;
        }
        if (rule.mode === 'serve') this.serving.push(j);
        else if (rule.mode === 'serve-then-stop') await j.stop();
        else {
          // Only what it printed before the interrupt counts: npm reports the SIGINT itself as an error.
          const before = j.out;
          j.interrupt();
          const killer = setTimeout(() => j.kill(), 20_000);
          await j.exited;
          clearTimeout(killer);
          j.checkOutput(before);
        }
        return;
      }
    }
  }

  /** Wait until every host-mode server started so far is ready; the first that is not fails the block at once. */
  private async hostsReady(): Promise<void> {
    try {
      await Promise.all(
        this.hosts.map(async (h) => {
          const e = await h.ready;
          if (e !== null) throw e;
        }),
      );
    } catch (e) {
      for (const h of this.hosts) h.job.kill();
      this.hosts = [];
      throw e;
    }
    for (const h of this.hosts) h.job.checkOutput();
  }

  private async awaitReady(j: Job, rule: Rule): Promise<void> {
    const what = rule.ready ? `output matching ${rule.ready}` : `a process matching ${rule.readyProcess}`;
    await waitFor(
      `${j.where}: \`${j.text}\` to be ready (${what})`,
      async () => {
        if (!j.running) throw new Error(`${j.where}: \`${j.text}\` exited before it was ready:\n${tail(j.out)}`);
        j.checkOutput();
        if (rule.probe) return rule.ready!.test(spawnSync('ip', ['netns', 'exec', this.ns.name, 'timeout', '2', 'bash', '-c', rule.probe], { encoding: 'utf8' }).stdout ?? '');
        if (rule.ready) return rule.ready.test(j.out) && (rule.alsoReady === undefined || (await rule.alsoReady(j.text, this.cwd)));
        return this.ns.commandLines(j.pid).some((l) => rule.readyProcess!.test(l));
      },
      rule.timeoutMs ?? READY_TIMEOUT_MS,
      200,
    ).catch((e: Error) => {
      throw new Error(`${e.message}\n${tail(j.out)}`);
    });
  }
}

describe('the extractor', () => {
  test('joins continuation lines, cuts comments outside quotes, skips comment-only lines and other languages', () => {
    const md = [
      '```sh',
      "printf 'a # not a comment\\n' > x   # a comment",
      'npm run bench -- ycsb \\',
      '  --quick          # both lines',
      '                   # (a comment-only line)',
      '```',
      '```ts',
      'const x = 1;',
      '```',
    ].join('\n');
    const blocks = extractBlocks('x.md', md);
    assert.deepEqual(blocks.map((b) => [b.line, b.lang, b.commands.length]), [[1, 'sh', 2], [7, 'ts', 0]]);
    assert.deepEqual(blocks[0]!.commands, [
      { file: 'x.md', line: 2, text: "printf 'a # not a comment\\n' > x" },
      { file: 'x.md', line: 3, text: 'npm run bench -- ycsb --quick' },
    ]);
    assert.equal(stripComment('redis-cli -a "$(cat p)" get k # x'), 'redis-cli -a "$(cat p)" get k');
    assert.deepEqual(splitAnd('a && b "x && y" && c $(d && e)'), ['a', 'b "x && y"', 'c $(d && e)']);
  });
});

describe('every command in the docs', () => {
  const blocks = readDocBlocks(root);
  const commands = blocks.flatMap((b) => b.commands);

  test('every fence has a language, and every command a rule (and every rule a command)', () => {
    const untagged = blocks.filter((b) => b.lang === '').map((b) => `${b.file}:${b.line}`);
    assert.deepEqual(untagged, [], 'fences without a language (```sh for commands, ```text for anything else)');
    const parts = commands.flatMap((c) => splitAnd(c.text).map((p) => ({ c, p })));
    const unmatched = parts.filter(({ p }) => !ruleFor(p)).map(({ c, p }) => `${c.file}:${c.line}: ${p}`);
    assert.deepEqual(unmatched, [], 'documented commands without a rule in RULES (say how the test runs them)');
    const unused = RULES.filter((r) => !parts.some(({ p }) => ruleFor(p) === r)).map((r) => String(r.pattern));
    assert.deepEqual(unused, [], 'rules that match no documented command');
    assert.ok(commands.length > 0);
  });

  const skip = netnsUnavailable();
  let ns: Namespace;
  let copy: string;
  let pristine: Set<string>;
  let failed = false;
  const done: Done[] = [];
  // Actors get 60 s to report READY, as in the cluster fixture: the 10 s default fails on a busy CI machine.
  const env: NodeJS.ProcessEnv = { ROWAN_RUNTIME_READY_TIMEOUT_MS: '60000', ...process.env, npm_config_update_notifier: 'false', NO_UPDATE_NOTIFIER: '1' };
  // A fault run's `node --test` must not think it reports to this test's runner.
  delete env['NODE_TEST_CONTEXT'];

  before(() => {
    if (skip) return;
    // The copy: sources and dist (with its .tsbuildinfo, so `npm run build` finds it up to date), and
    // the repository's node_modules linked; timestamps kept, or `tsc -b` would rebuild everything once.
    // Local clusters in the repository stay out.
    copy = join(mkdtempSync(join(tmpdir(), 'rowan-docs-')), 'rowan');
    const leaveOut = new Set(['node_modules', '.git', 'rowan-cluster', 'zk-cluster', 'hand']);
    cpSync(root, copy, { recursive: true, preserveTimestamps: true, filter: (src) => !leaveOut.has(src.slice(root.length).split('/')[0]!) });
    symlinkSync(realpathSync(join(root, 'node_modules')), join(copy, 'node_modules'));
    pristine = new Set(readdirSync(copy));
    // What the commands put in the temp dir (a stopped fault run's cluster dirs) goes with the copy.
    env['TMPDIR'] = join(copy, '..', 'tmp');
    mkdirSync(env['TMPDIR']);
    ns = new Namespace();
  });

  after(() => {
    ns?.destroy();
    // After a failure the copy stays, with the logs of its clusters (rowan-cluster/node-N.log, ...).
    if (copy && failed) console.log(`the scratch copy with the failed commands' files and logs: ${copy}`);
    else if (copy) rmSync(join(copy, '..'), { recursive: true, force: true });
    const count = (f: (d: Done) => boolean) => done.filter(f).length;
    const lines = docFiles(root).map((f) => `${f}: ${count((d) => d.file === f)}`);
    const modes = [...new Set(done.map((d) => d.mode))].map((m) => `${m}: ${count((d) => d.mode === m)}`);
    const slowest = [...done].sort((a, b) => b.ms - a.ms).slice(0, 10).map((d) => `${d.file}:${d.line} ${d.mode} ${(d.ms / 1000).toFixed(1)} s`);
    console.log(`docs commands executed (by && part): ${lines.join(', ')}; by mode: ${modes.join(', ')}; slowest: ${slowest.join('; ')}`);
  });

  for (const file of docFiles(root)) {
    const mine = blocks.filter((b) => b.file === file && b.commands.length > 0);
    if (mine.length === 0) continue;
    test(`${file}: ${mine.reduce((n, b) => n + b.commands.length, 0)} commands`, { skip: skip ?? false, timeout: 600_000 }, async (t) => {
      // A fresh cwd for each file: whatever the previous file's commands made is removed.
      for (const e of readdirSync(copy)) if (!pristine.has(e)) rmSync(join(copy, e), { recursive: true, force: true });
      const r = new Runner(ns, copy, env, blocks.filter((b) => b.file === file));
      for (const b of mine) {
        await t.test(`${b.file}:${b.line}`, () =>
          r.runBlock(b).catch((e: unknown) => {
            failed = true;
            throw e;
          }),
        );
      }
      done.push(...r.done);
      const ran = new Set(r.done.map((d) => `${d.line}`));
      const missed = mine.flatMap((b) => b.commands).filter((c) => !ran.has(`${c.line}`)).map((c) => `${c.file}:${c.line}`);
      assert.deepEqual(missed, [], 'commands not executed');
    });
  }
});
