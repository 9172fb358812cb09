// Layering check that the type-checker cannot do: only native/ may import koffi (CONVENTIONS 5),
// and no source file may grow into a thousand-line mix of concerns (CONVENTIONS 12).
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const sourceDirs = ['runtime', 'actors', 'native', 'shm', 'config', 'bench', 'test', 'bin'];
const maxLines = 600;
const problems = [];

function* walk(dir) {
  let names;
  try { names = readdirSync(dir); } catch { return; }
  for (const name of names) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) yield* walk(p);
    else if (/\.(ts|mts|js|mjs)$/.test(name) || dir.endsWith('bin')) yield p;
  }
}

for (const d of sourceDirs) {
  for (const file of walk(join(root, d))) {
    const rel = relative(root, file);
    const text = readFileSync(file, 'utf8');
    if (!rel.startsWith('native/') && /from\s+['"]koffi['"]|require\(\s*['"]koffi['"]\s*\)/.test(text)) {
      problems.push(`${rel}: imports koffi outside native/`);
    }
    const lines = text.split('\n').length;
    if (lines > maxLines) problems.push(`${rel}: ${lines} lines (limit ${maxLines}); split it by what it does`);
  }
}

if (problems.length) {
  for (const p of problems) console.error(`lint: ${p}`);
  process.exit(1);
}
console.log('lint: ok (koffi stays behind native/, no oversized source files)');
