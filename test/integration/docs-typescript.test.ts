// Every ```ts block of README.md and docs/*.md is compiled and run (issue: "the docs cannot rot"; the
// shell blocks are test/integration/docs-commands.test.ts's). The blocks go, as written, into a
// consumer project whose `rowan` is this checkout's package (its `exports`, the built dist/): they
// must type-check under strict settings against the package's declarations, then each runs as RULES
// says -- against a cluster started here when it connects to one -- and must do what its text says.
// A block that matches no rule fails the test, and so does a rule that matches no block.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { docFiles, extractBlocks, type DocBlock } from '../fixtures/doc-commands.js';
import { launchCluster, randomBasePort, stopCluster, type LaunchedCluster } from '../fixtures/cluster.js';

const root = new URL('../../../', import.meta.url).pathname;
const tsc = join(root, 'node_modules/typescript/bin/tsc');

interface Rule {
  /** Matched against the block's text. */
  pattern: RegExp;
  why: string;
  /** Needs a running cluster at ./rowan-cluster (the block names that directory, as `npm start` makes it). */
  cluster?: boolean;
  /** What the run must leave: its output, and files in its directory. */
  check: (out: string, dir: string) => void;
}

const RULES: Rule[] = [
  {
    pattern: /RowanClient\.connect\(\{ cluster: 'rowan-cluster\/cluster\.json' \}\)/,
    why: 'the client example: a PUT, then a GET that prints what was put',
    cluster: true,
    check: (out) => assert.equal(out.trim(), 'world'),
  },
  {
    pattern: /planCluster\(/,
    why: 'the multi-host configuration: written to cluster.json for three hosts',
    check: (_out, dir) => {
      const c = JSON.parse(readFileSync(join(dir, 'cluster.json'), 'utf8')) as { nodes: { host: string }[]; shards: { backups: number[] }[] };
      assert.deepEqual(c.nodes.map((n) => n.host), ['10.0.0.1', '10.0.0.2', '10.0.0.3']);
      assert.equal(c.shards.length, 48);
      assert.ok(c.shards.every((s) => s.backups.length === 2), 'replication factor 3');
    },
  },
];

const blocks: DocBlock[] = docFiles(root).flatMap((f) => extractBlocks(f, readFileSync(join(root, f), 'utf8')).filter((b) => b.lang === 'ts' || b.lang === 'typescript'));
const work = mkdtempSync(join(tmpdir(), 'rowan-docs-ts-'));
let cl: LaunchedCluster | null = null;

/** A consumer project: `rowan` is this checkout (package.json `exports` -> dist/), types from its node_modules. */
function consumer(): string {
  const dir = join(work, 'consumer');
  mkdirSync(join(dir, 'node_modules', '@types'), { recursive: true });
  symlinkSync(root, join(dir, 'node_modules', 'rowan'));
  symlinkSync(join(root, 'node_modules', '@types', 'node'), join(dir, 'node_modules', '@types', 'node'));
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'consumer', type: 'module', private: true }));
  const compilerOptions = { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, types: ['node'], outDir: 'out', rootDir: '.' };
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions, include: ['block-*.ts'] }));
  return dir;
}

const where = (b: DocBlock) => `${b.file}:${b.line}`;
const ruleOf = (b: DocBlock) => RULES.filter((r) => r.pattern.test(b.text));

before(async () => {
  if (!existsSync(join(root, 'dist', 'bin', 'api.js'))) throw new Error('dist/bin/api.js is missing: npm run build first');
  if (blocks.some((b) => ruleOf(b).some((r) => r.cluster))) {
    cl = launchCluster(join(work, 'rowan-cluster'), randomBasePort());
    await cl.ready;
  }
});

after(async () => {
  if (cl) await stopCluster(cl.child);
  rmSync(work, { recursive: true, force: true });
});

test('every TypeScript block of the docs has a rule, and every rule a block', () => {
  assert.ok(blocks.length > 0, 'the docs have TypeScript blocks');
  for (const b of blocks) assert.equal(ruleOf(b).length, 1, `${where(b)}: a TypeScript block needs exactly one rule in RULES:\n${b.text}`);
  for (const r of RULES) assert.ok(blocks.some((b) => r.pattern.test(b.text)), `the rule for ${r.why} (${r.pattern}) matches no block any more`);
});

test('every TypeScript block type-checks against the package and runs as its text says', { timeout: 240_000 }, () => {
  const dir = consumer();
  blocks.forEach((b, i) => writeFileSync(join(dir, `block-${i}.ts`), `// ${where(b)}\n${b.text}\nexport {};\n`));
  const built = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.json'], { cwd: dir, encoding: 'utf8', timeout: 120_000 });
  assert.equal(built.status, 0, `the docs' TypeScript must compile against the package:\n${built.stdout}${built.stderr}\n(block-N.ts is the Nth block: ${blocks.map((b, i) => `${i}: ${where(b)}`).join(', ')})`);
  blocks.forEach((b, i) => {
    const rule = ruleOf(b)[0]!;
    // Each runs in a directory of its own; a cluster block's holds the cluster started above.
    const cwd = rule.cluster ? work : mkdtempSync(join(work, 'run-'));
    const r = spawnSync(process.execPath, [join(dir, 'out', `block-${i}.js`)], { cwd, encoding: 'utf8', timeout: 60_000 });
    assert.equal(r.status, 0, `${where(b)} (${rule.why}) exited ${r.status}${r.signal ? ` (${r.signal})` : ''}:\n${r.stdout}${r.stderr}`);
    rule.check(r.stdout, cwd);
  });
});
