// Layering checks that the type-checker cannot do (CONVENTIONS 5, 9, 12). Usage: node scripts/lint.mjs [root]
//
// 1. One dependency direction. Every source file belongs to the first layer whose folder prefixes its
//    path; a file may import its own layer and the layers below it, never one above it nor a sibling
//    of the same rank:
//        base (config/base/)  <-  native/ | config/  <-  shm/  <-  runtime/  <-  client/
//          <-  actors/shared/ | actors/baselines/  <-  actors/<role>/  <-  actors/node/  <-  bin/
//    actors/<role>/ holds what runs on that role's thread (worker, nic, digest, clean, control, migration,
//    manager); actors/node/ what runs on a node's main thread (the manager link, promotion, catch-up,
//    cold start, the node application), which starts the roles; actors/shared/ the state and protocols
//    several of them share; client/ the client library (no role code); actors/baselines/ the
//    evaluation's replication writers (docs/architecture.md). A role may not import another role: what
//    two roles share lives in actors/shared/. test/, bench/ and scripts/ sit outside the layers (they may
//    import anything) but still take part in the cycle check.
// 2. No import cycle anywhere, type-only imports included (a type defined in the wrong file is a cycle).
// 3. Only native/ imports koffi.
// 4. Code under actors/ gets storage and time through its context: no
//    Pool.open(path), Date.now() or performance.now() of its own.
// 5. No source file over 600 lines.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const root = resolve(process.argv[2] ?? new URL('..', import.meta.url).pathname);
const sourceDirs = ['config', 'native', 'shm', 'runtime', 'actors', 'client', 'bin', 'bench', 'test', 'scripts'];
const maxLines = 600;

/** [folder prefix, layer name, rank]: the first matching prefix wins. */
const layers = [
  ['config/base/', 'base', 0],
  ['native/', 'native', 1],
  ['config/', 'config', 1],
  ['shm/', 'shm', 2],
  ['runtime/', 'runtime', 3],
  ['client/', 'client', 4],
  ['actors/shared/', 'shared', 5],
  ['actors/baselines/', 'baselines', 5],
  ['actors/node/', 'node', 7],
  ['actors/', 'role', 6],
  ['bin/', 'cli', 8],
];

function layerOf(rel) {
  for (const [prefix, name, rank] of layers) if (rel.startsWith(prefix)) return { name, rank, prefix };
  return null;
}

/** The role folder of a file under actors/<role>/: 'worker' etc. (null for shared/, baselines/, node/). */
function roleOf(rel) {
  const m = /^actors\/([^/]+)\//.exec(rel);
  return m && !['shared', 'baselines', 'node'].includes(m[1]) ? m[1] : null;
}

function* walk(dir) {
  let names;
  try { names = readdirSync(dir).sort(); } catch { return; }
  for (const name of names) {
    if (name === 'node_modules' || name === 'dist') continue;
    const p = join(dir, name);
    if (statSync(p).isDirectory()) yield* walk(p);
    else if (/\.(ts|mts|mjs)$/.test(name) && !name.endsWith('.d.ts')) yield p;
  }
}

/** Comments out of the way (import-looking text in prose is not an import). */
function stripComments(text) {
  return text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
}

const importRe = /(?:^|[;\s])(?:import|export)\s(?:[^'";]*?\sfrom\s)?\s*['"](\.{1,2}\/[^'"]+)['"]|import\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g;

const files = new Map(); // rel -> text
for (const d of sourceDirs) for (const f of walk(join(root, d))) files.set(relative(root, f), readFileSync(f, 'utf8'));

const problems = [];
const graph = new Map(); // rel -> Set(rel)
for (const [rel, text] of files) {
  const code = stripComments(text);
  const deps = new Set();
  for (const m of code.matchAll(importRe)) {
    const spec = m[1] ?? m[2];
    let target = relative(root, resolve(dirname(join(root, rel)), spec));
    if (target.endsWith('.js')) target = target.slice(0, -3) + '.ts';
    else if (target.endsWith('.mjs') && !files.has(target)) continue;
    if (files.has(target)) deps.add(target);
  }
  graph.set(rel, deps);

  const from = layerOf(rel);
  if (from) {
    for (const dep of deps) {
      const to = layerOf(dep);
      if (!to) {
        problems.push(`${rel} imports ${dep}: source layers may not import test/, bench/ or scripts/`);
      } else if (to.rank > from.rank || (to.rank === from.rank && to.name !== from.name)) {
        problems.push(`${rel} imports ${dep}: upward (${from.name} may import only ${below(from)})`);
      } else if (from.name === 'role' && to.name === 'role' && roleOf(rel) !== roleOf(dep)) {
        problems.push(`${rel} imports ${dep}: one role reaching into another; move what they share to actors/shared/`);
      }
    }
  }
  if (!rel.startsWith('native/') && /from\s+['"]koffi['"]|require\(\s*['"]koffi['"]\s*\)/.test(code))
    problems.push(`${rel}: imports koffi outside native/`);
  if (rel.startsWith('actors/')) {
    for (const [re, what] of [
      [/\bPool\.(open|openOrCreate|create)\(/, 'opens a pool itself; take ctx.pool (storage is injected)'],
      [/\bDate\.now\(\)/, 'reads Date.now(); take the injected Clock'],
      [/\bperformance\.now\(\)/, 'reads performance.now(); take the injected Clock'],
    ])
      if (re.test(code)) problems.push(`${rel}: ${what}`);
  }
  const lines = text.split('\n').length;
  if (lines > maxLines) problems.push(`${rel}: ${lines} lines (limit ${maxLines}); split it by what it does`);
}

function below(l) {
  const names = layers.filter(([, n, r]) => r < l.rank || n === l.name).map(([, n]) => n);
  return [...new Set(names)].join(', ');
}

// Cycles: Tarjan's strongly connected components; each component of more than one file is reported
// with one closed path through it, so the message names the files to untangle.
let index = 0;
const idx = new Map(), low = new Map(), onStack = new Set(), stack = [];
function strong(v) {
  idx.set(v, index); low.set(v, index); index++;
  stack.push(v); onStack.add(v);
  for (const w of graph.get(v) ?? []) {
    if (!idx.has(w)) { strong(w); low.set(v, Math.min(low.get(v), low.get(w))); }
    else if (onStack.has(w)) low.set(v, Math.min(low.get(v), idx.get(w)));
  }
  if (low.get(v) === idx.get(v)) {
    const comp = [];
    let w;
    do { w = stack.pop(); onStack.delete(w); comp.push(w); } while (w !== v);
    if (comp.length > 1) problems.push(`import cycle: ${cyclePath(new Set(comp)).join(' -> ')}`);
  }
}
/** A shortest closed path through a strongly connected component, from its first file in sort order. */
function cyclePath(comp) {
  const start = [...comp].sort()[0];
  const prev = new Map([[start, null]]);
  const queue = [start];
  while (queue.length) {
    const v = queue.shift();
    for (const w of graph.get(v) ?? []) {
      if (!comp.has(w)) continue;
      if (w === start) {
        const path = [start];
        for (let u = v; u !== start; u = prev.get(u)) path.splice(1, 0, u);
        return [...path, start];
      }
      if (!prev.has(w)) { prev.set(w, v); queue.push(w); }
    }
  }
  return [...comp];
}
for (const v of [...graph.keys()].sort()) if (!idx.has(v)) strong(v);

if (problems.length) {
  for (const p of problems) console.error(`lint: ${p}`);
  process.exit(1);
}
console.log(`lint: ok (${files.size} files: one dependency direction, no import cycle, koffi behind native/, injected storage and time in roles, no oversized file)`);
