// `npm run fuzz -- [--inputs N] [--seed S] [--target NAME]` (--help prints just that): every target (or one) on N mutated inputs
// (default 100,000), a table of counts, and each finding written to test/fuzz/findings/ for a
// regression test. Exits 1 if anything crashed, broke an invariant or was slow.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fuzz, type FuzzReport } from './fuzz.js';
import { targets } from './targets.js';

function arg(name: string, dflt: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1]! : dflt;
}

const USAGE = 'usage: npm run fuzz -- [--inputs N] [--seed S] [--target NAME]';
if (process.argv.includes('--help') || process.argv.includes('-h')) {
  console.log(USAGE);
  process.exit(0);
}
const inputs = Number(arg('inputs', '100000'));
const seed = Number(arg('seed', '1'));
const only = arg('target', '');
if (!Number.isInteger(inputs) || inputs < 1 || !Number.isInteger(seed)) {
  console.error(USAGE);
  process.exit(2);
}
const chosen = targets.filter((t) => !only || t.name === only);
if (chosen.length === 0) {
  console.error(`no target '${only}' (${targets.map((t) => t.name).join(', ')})`);
  process.exit(2);
}
const reports: FuzzReport[] = [];
for (const t of chosen) {
  process.stdout.write(`fuzz ${t.name}: ${inputs} inputs, seed ${seed} ... `);
  const r = fuzz(t, seed, inputs, () => performance.now());
  reports.push(r);
  console.log(`${r.findings.length} findings in ${(r.ms / 1000).toFixed(1)} s`);
}
console.log('\nTARGET           INPUTS    REFUSED   CRASHES  VIOLATIONS  SLOW  INPUTS/S');
for (const r of reports) {
  const n = (k: string) => r.findings.filter((f) => f.kind === k).length;
  console.log(
    `${r.target.padEnd(15)}  ${String(r.inputs).padStart(7)}  ${String(r.refused).padStart(8)}  ${String(n('crash')).padStart(7)}  ` +
      `${String(n('violation')).padStart(10)}  ${String(n('slow')).padStart(4)}  ${Math.round(r.inputs / (r.ms / 1000)).toString().padStart(8)}`,
  );
}
const findings = reports.flatMap((r) => r.findings);
if (findings.length > 0) {
  const dir = new URL('../../../test/fuzz/findings/', import.meta.url).pathname;
  mkdirSync(dir, { recursive: true });
  for (const f of findings.slice(0, 50)) {
    writeFileSync(join(dir, `${f.target}-seed${f.seed}-input${f.input}.bin`), f.bytes);
    console.log(`\n${f.kind} in ${f.target} (seed ${f.seed}, input ${f.input}): ${f.message.split('\n')[0]}`);
  }
  process.exit(1);
}
