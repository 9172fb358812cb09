// scripts/lint.mjs on small trees made here: it rejects an upward import, a role reaching into another
// role, an import cycle (type-only included) and a role that opens its own pool or reads the wall
// clock -- naming the files -- and accepts a tree that follows the direction.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

const lint = new URL('../../../../scripts/lint.mjs', import.meta.url).pathname;

function runLint(files: Record<string, string>): { code: number; out: string } {
  const root = mkdtempSync(join(tmpdir(), 'rowan-lint-'));
  try {
    for (const [rel, text] of Object.entries(files)) {
      mkdirSync(dirname(join(root, rel)), { recursive: true });
      writeFileSync(join(root, rel), text);
    }
    const r = spawnSync(process.execPath, [lint, root], { encoding: 'utf8' });
    return { code: r.status ?? -1, out: `${r.stdout}${r.stderr}` };
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

const ok = {
  'config/base/errors.ts': 'export const E = 1;\n',
  'shm/ring.ts': "import { E } from '../config/base/errors.js';\nexport const R = E;\n",
  'runtime/actor.ts': "import { R } from '../shm/ring.js';\nexport const A = R;\n",
  'actors/shared/node-shared.ts': "import { A } from '../../runtime/actor.js';\nexport const S = A;\n",
  'client/client.ts': "import { A } from '../runtime/actor.js';\nexport const K = A;\n",
  'actors/baselines/share.ts': "import { K } from '../../client/client.js';\nexport const B = K;\n",
  'actors/worker/thread.ts': "import { S } from '../shared/node-shared.js';\nimport { B } from '../baselines/share.js';\nexport const W = S + B;\n",
  'actors/node/node-application.ts': "import { W } from '../worker/thread.js';\nexport const N = W;\n",
  'bin/cli.ts': "import { N } from '../actors/node/node-application.js';\nexport const C = N;\n",
};

test('a tree that follows the direction passes', () => {
  const r = runLint(ok);
  assert.equal(r.code, 0, r.out);
  assert.match(r.out, /lint: ok/);
});

test('an upward import fails and names both files', () => {
  const r = runLint({ ...ok, 'shm/pool.ts': "import { A } from '../runtime/actor.js';\nexport const P = A;\n" });
  assert.equal(r.code, 1, r.out);
  assert.match(r.out, /shm\/pool\.ts imports runtime\/actor\.ts: upward/);
});

test('the generic runtime may not import the KV application', () => {
  const r = runLint({ ...ok, 'runtime/node.ts': "import type { S } from '../actors/shared/node-shared.js';\nexport type N = typeof S;\n" });
  assert.equal(r.code, 1, r.out);
  assert.match(r.out, /runtime\/node\.ts imports actors\/shared\/node-shared\.ts: upward/);
});

test('the layout by thread: a role may not import the node main thread, shared state no role, the client no actor', () => {
  const role = runLint({ ...ok, 'actors/digest/thread.ts': "import { N } from '../node/node-application.js';\nexport const D = N;\n" });
  assert.equal(role.code, 1, role.out);
  assert.match(role.out, /actors\/digest\/thread\.ts imports actors\/node\/node-application\.ts: upward \(role may import only/);
  const shared = runLint({ ...ok, 'actors/shared/commit.ts': "import { W } from '../worker/thread.js';\nexport const C = W;\n" });
  assert.equal(shared.code, 1, shared.out);
  assert.match(shared.out, /actors\/shared\/commit\.ts imports actors\/worker\/thread\.ts: upward/);
  const sibling = runLint({ ...ok, 'actors/shared/commit.ts': "import { B } from '../baselines/share.js';\nexport const C = B;\n" });
  assert.equal(sibling.code, 1, sibling.out);
  assert.match(sibling.out, /actors\/shared\/commit\.ts imports actors\/baselines\/share\.ts: upward/);
  const client = runLint({ ...ok, 'client/routing.ts': "import { S } from '../actors/shared/node-shared.js';\nexport const R = S;\n" });
  assert.equal(client.code, 1, client.out);
  assert.match(client.out, /client\/routing\.ts imports actors\/shared\/node-shared\.ts: upward/);
});

test('a role importing another role fails', () => {
  const r = runLint({ ...ok, 'actors/digest/thread.ts': "import { W } from '../worker/thread.js';\nexport const D = W;\n" });
  assert.equal(r.code, 1, r.out);
  assert.match(r.out, /actors\/digest\/thread\.ts imports actors\/worker\/thread\.ts: one role reaching into another/);
});

test('an import cycle fails, type-only imports included, and the message names the files', () => {
  const r = runLint({
    ...ok,
    'shm/log.ts': "import type { B } from './log-assembler.js';\nexport type L = B;\nexport const X = 1;\n",
    'shm/log-assembler.ts': "import type { L } from './log.js';\nexport type B = L | number;\n",
  });
  assert.equal(r.code, 1, r.out);
  assert.match(r.out, /import cycle: shm\/log-assembler\.ts -> shm\/log\.ts -> shm\/log-assembler\.ts/);
});

test('a role that opens its own pool or reads the wall clock fails', () => {
  const r = runLint({
    ...ok,
    'actors/clean/thread.ts': "import { S } from '../shared/node-shared.js';\nexport const t = Date.now() + performance.now() + S;\nexport const p = (P: { open(x: string): void }) => Pool.open('pool.pm');\ndeclare const Pool: { open(x: string): void };\n",
  });
  assert.equal(r.code, 1, r.out);
  assert.match(r.out, /actors\/clean\/thread\.ts: opens a pool itself/);
  assert.match(r.out, /actors\/clean\/thread\.ts: reads Date\.now\(\)/);
  assert.match(r.out, /actors\/clean\/thread\.ts: reads performance\.now\(\)/);
});

test('a leaf module importing the layer above it (native -> shm) fails', () => {
  const r = runLint({ ...ok, 'native/verbs-mem.ts': "import { R } from '../shm/ring.js';\nexport const V = R;\n" });
  assert.equal(r.code, 1, r.out);
  assert.match(r.out, /native\/verbs-mem\.ts imports shm\/ring\.ts: upward/);
});
