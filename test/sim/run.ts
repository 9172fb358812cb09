// npm run sim -- --seeds N        run seeds 1..N, print the failing ones and seeds/second
// npm run sim -- --seed S         replay one seed and print its findings and trace hash
// options: --mutation NAME (test/sim/mutations.ts), --unfixed (receiver without the
//          stalled-sender fix), --from F (first seed), --first (stop at the first failing seed), --verbose, --log (the manager's and nodes' log lines)
import { performance } from 'node:perf_hooks';
import type { MutationName } from './mutations.js';
import { defaultSimOptions, runSeed, type SimOptions, type SimResult } from './simulation.js';

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

async function main(): Promise<void> {
  let unhandled: unknown = null;
  process.on('unhandledRejection', (e) => (unhandled ??= e));
  const mutation = arg('mutation') as MutationName | undefined;
  const verbose = process.argv.includes('--verbose');
  const one = arg('seed');
  const opts: Partial<SimOptions> = mutation ? { mutation } : {};
  // --unfixed: the receiver ignores the queue's holds, as before the stalled-sender fix.
  if (process.argv.includes("--unfixed")) opts.node = { ...defaultSimOptions.node, receiverIgnoresHolds: true };
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
  const failed: number[] = [];
  console.log(`seeds ${from}..${from + n - 1}${mutation ? `, mutation ${mutation}` : ''}${first ? ', until the first that fails' : ''}:`);
  const t0 = performance.now();
  for (let s = from; s < from + n; s++) {
    const r = await runSeed(s, opts);
    if (!r.ok) {
      failed.push(s);
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

void main();
