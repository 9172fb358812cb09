// The simulator's command line (npm run sim): seeds, replays, mutations; `npm run sim -- --help`
// prints the options (USAGE below, the one place they are listed).
import { performance } from 'node:perf_hooks';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { mutations, type MutationName } from './mutations.js';
import { defaultSimOptions, PROMOTION_CUT, runSeed, type SimOptions, type SimResult } from './simulation.js';

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

function show(r: SimResult, verbose: boolean): void {
  console.log(
    `seed ${r.seed}: ${r.ok ? 'ok' : 'FAILED'}  trace ${r.trace}  events ${r.events}  sim ${r.simMs.toFixed(0)} ms  ` +
      `ops ok/fail/unknown ${r.ops.ok}/${r.ops.fail}/${r.ops.unknown}  term ${r.term}  failovers ${r.failovers}  moves ${r.moves}  manager crashes ${r.managerCrashes} (${r.crashPoints} at a crash point)  stalls ${r.net.stalls}  divergent ${r.divergent}  nodes ${r.nodes.join(' ')}  net ${JSON.stringify(r.net)}  faults: ${r.faults.join('; ') || 'none'}`,
  );
  if (verbose || !r.ok) for (const f of r.findings.slice(0, 8)) console.log(`  [${f.check}${f.node === undefined ? '' : ` node ${f.node}`}] ${f.detail}`);
  if (process.argv.includes('--log')) for (const l of r.log) console.log(`    ${l}`);
}

const USAGE = `usage: npm run sim -- --seeds N [options]    run seeds 1..N: the failing ones and seeds/second
       npm run sim -- --seed S [options]     replay one seed: its findings and trace hash
options:
  --from F          first seed of --seeds (default 1)
  --first           stop at the first failing seed
  --jobs J          run seeds on J worker threads (a seed's run is the same on any thread)
  --managerless     a static cluster without a manager (as rowan start without --manager)
  --mutation NAME   run against a deliberately broken component: ${Object.keys(mutations).join(', ')}
  --unfixed         the receiver without the stalled-sender fix (ignores the queue's holds)
  --promotion-cut   every seed moves a shard away and back, fails it over, and cuts the failover's
                    promotion short: every node, or only the new primary, loses power at its prepare
                    (faults.ts schedulePromotionCut); no random faults, no lost connections or stalls
  --verbose         print every seed's findings; --log: the manager's and nodes' log lines`;

async function main(): Promise<void> {
  if (process.argv.includes('--help') || process.argv.includes('-h')) {
    console.log(USAGE);
    return;
  }
  const m = arg('mutation');
  if (m !== undefined && !(m in mutations)) {
    console.error(`sim: unknown mutation ${JSON.stringify(m)}\n${USAGE}`);
    process.exitCode = 2;
    return;
  }
  let unhandled: unknown = null;
  process.on('unhandledRejection', (e) => (unhandled ??= e));
  const mutation = arg('mutation') as MutationName | undefined;
  const verbose = process.argv.includes('--verbose');
  const one = arg('seed');
  const opts: Partial<SimOptions> = mutation ? { mutation } : {};
  // --unfixed: the receiver ignores the queue's holds, as before the stalled-sender fix.
  if (process.argv.includes("--unfixed")) opts.node = { ...defaultSimOptions.node, receiverIgnoresHolds: true };
  if (process.argv.includes('--managerless')) opts.managerless = true;
  if (process.argv.includes('--promotion-cut')) Object.assign(opts, PROMOTION_CUT);
  if (one !== undefined) {
    const r = await runSeed(Number(one), opts);
    show(r, true);
    if (unhandled) console.log(`unhandled rejection: ${String(unhandled)}`);
    process.exitCode = r.ok && !unhandled ? 0 : 1;
    return;
  }
  const n = Number(arg('seeds') ?? 100);
  const from = Number(arg('from') ?? 1);
  const first = process.argv.includes('--first');
  const jobs = Math.max(1, Number(arg('jobs') ?? 1));
  const failed: number[] = [];
  console.log(`seeds ${from}..${from + n - 1}${opts.managerless ? ', without a manager' : ''}${mutation ? `, mutation ${mutation}` : ''}${first ? ', until the first that fails' : ''}:`);
  const t0 = performance.now();
  const results = jobs > 1 ? inWorkers(jobs, from, n, opts, first) : inThisThread(from, n, opts, first);
  for await (const r of results) {
    if (!r.ok) {
      failed.push(r.seed);
      show(r, false);
      if (first) break;
    } else if (verbose) show(r, false);
  }
  const secs = (performance.now() - t0) / 1000;
  const ran = failed.length > 0 && first ? failed[0]! - from + 1 : n;
  console.log(`${ran} seeds (${from}..${from + ran - 1}) in ${secs.toFixed(1)} s: ${(ran / secs).toFixed(2)} seeds/s; ${failed.length} failed${failed.length ? `: ${failed.join(' ')}` : ''}`);
  if (unhandled) console.log(`unhandled rejection: ${String(unhandled)}`);
  process.exitCode = failed.length === 0 && !unhandled ? 0 : 1;
}

async function* inThisThread(from: number, n: number, opts: Partial<SimOptions>, first: boolean): AsyncGenerator<SimResult> {
  for (let s = from; s < from + n; s++) {
    const r = await runSeed(s, opts);
    yield r;
    if (first && !r.ok) return;
  }
}

/** Seeds `from..from+n-1` on `jobs` worker threads, each taking the next seed when it is free; the
 *  results come back in seed order. With `first`, no seed above a failing one is started. */
async function* inWorkers(jobs: number, from: number, n: number, opts: Partial<SimOptions>, first: boolean): AsyncGenerator<SimResult> {
  const done = new Map<number, SimResult>();
  let next = from;
  let stopAt = from + n; // no seed at or above this one is started
  let wake: (() => void) | null = null;
  let failure: unknown = null;
  const workers: Worker[] = [];
  const give = (w: Worker): void => {
    if (next < stopAt) w.postMessage(next++);
    else void w.terminate();
  };
  for (let j = 0; j < Math.min(jobs, n); j++) {
    const w = new Worker(new URL(import.meta.url), { workerData: { opts }, argv: process.argv.slice(2) });
    w.on('message', (r: SimResult) => {
      done.set(r.seed, r);
      if (first && !r.ok) stopAt = Math.min(stopAt, r.seed + 1);
      give(w);
      wake?.();
    });
    w.on('error', (err) => {
      failure = err;
      wake?.();
    });
    workers.push(w);
    give(w);
  }
  try {
    for (let s = from; s < stopAt; s++) {
      while (!done.has(s)) {
        if (failure) throw failure;
        await new Promise<void>((r) => (wake = r));
      }
      const r = done.get(s)!;
      done.delete(s);
      yield r;
    }
  } finally {
    for (const w of workers) void w.terminate();
  }
}

/** A worker thread of --jobs: runs the seeds it is sent and posts each result. */
function serve(): void {
  const { opts } = workerData as { opts: Partial<SimOptions> };
  parentPort!.on('message', (seed: number) => {
    void runSeed(seed, opts).then((r) => parentPort!.postMessage(r));
  });
}

if (isMainThread) void main();
else serve();
