// The package as another project gets it: `npm pack`, unpacked next to a consumer project that imports
// 'rowan' as the README shows. Its TypeScript compiles against the shipped declarations (and a wrong
// call does not: the types are real), and the module loads and exports what the README promises.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

const repo = new URL('../../../', import.meta.url).pathname;
const tsc = join(repo, 'node_modules/typescript/bin/tsc');

function run(cmd: string, args: string[], cwd: string): { code: number; out: string } {
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8', timeout: 120_000 });
  return { code: r.status ?? -1, out: `${r.stdout ?? ''}${r.stderr ?? ''}` };
}

const consumerTs = `import { RowanClient, RowanError, ErrorCodes, type ClientOptions, type ClusterConfig } from 'rowan';

export async function roundTrip(file: string, password?: string): Promise<string | null> {
  const o: ClientOptions = { cluster: file, ...(password !== undefined ? { password } : {}), timeoutMs: 5000 };
  const c: RowanClient = await RowanClient.connect(o);
  try {
    await c.put('hello', 'world');
    const v: Uint8Array | null = await c.get('hello');
    const cfg: ClusterConfig = c.config();
    return v === null ? null : new TextDecoder().decode(v) + cfg.term;
  } catch (err) {
    if (err instanceof RowanError && err.code === ErrorCodes.KEY_EMPTY) return null;
    throw err;
  } finally {
    await c.close();
  }
}
`;

test('a TypeScript consumer compiles against the packed package and loads it', { timeout: 300_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-pack-'));
  try {
    const pack = run('npm', ['pack', '--silent', '--pack-destination', dir], repo);
    assert.equal(pack.code, 0, pack.out);
    const tarball = readdirSync(dir).find((f) => f.endsWith('.tgz'));
    assert.ok(tarball, `npm pack wrote no tarball: ${pack.out}`);
    const untar = run('tar', ['-xzf', join(dir, tarball), '-C', dir], dir);
    assert.equal(untar.code, 0, untar.out);

    // node_modules beside the unpacked package: rowan itself, and its dependencies from this checkout
    // (what `npm install <tarball>` would fetch), so the test needs no registry.
    const nm = join(dir, 'node_modules');
    const link = (name: string, target: string) => {
      mkdirSync(dirname(join(nm, name)), { recursive: true });
      symlinkSync(target, join(nm, name));
    };
    link('rowan', join(dir, 'package'));
    for (const dep of ['@node-rs/crc32', 'commander', 'koffi', 'pino', 'ringbuf.js', '@types/node', '@node-rs/crc32-linux-x64-gnu'])
      link(dep, join(repo, 'node_modules', dep));
    for (const dep of readdirSync(join(repo, 'node_modules'))) {
      // pino's own dependencies (flat in this checkout's node_modules)
      if (!dep.startsWith('.') && !dep.startsWith('@') && !['rowan', 'commander', 'koffi', 'pino', 'ringbuf.js'].includes(dep)) {
        try {
          symlinkSync(join(repo, 'node_modules', dep), join(nm, dep));
        } catch {
          // already linked
        }
      }
    }

    const consumer = join(dir, 'consumer');
    mkdirSync(consumer);
    writeFileSync(join(consumer, 'package.json'), JSON.stringify({ name: 'consumer', type: 'module', private: true }));
    const tsconfig = { compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true, types: ['node'], skipLibCheck: false } };
    writeFileSync(join(consumer, 'tsconfig.json'), JSON.stringify(tsconfig));
    writeFileSync(join(consumer, 'index.ts'), consumerTs);
    const ok = run(process.execPath, [tsc, '-p', 'tsconfig.json'], consumer);
    assert.equal(ok.code, 0, `the consumer must type-check against the package:\n${ok.out}`);

    // A wrong call is a compile error: the declarations are real, not `any`.
    writeFileSync(join(consumer, 'bad.ts'), `import { RowanClient } from 'rowan';\nexport async function f(c: RowanClient): Promise<void> { await c.put(42, 'x'); }\n`);
    const bad = run(process.execPath, [tsc, '-p', 'tsconfig.json'], consumer);
    assert.notEqual(bad.code, 0, 'put(42, ...) must not type-check');
    assert.match(bad.out, /bad\.ts.*TS2345/);

    const load = run(process.execPath, ['--input-type=module', '-e', "const m = await import('rowan'); console.log(typeof m.RowanClient, typeof m.startNode, m.ErrorCodes.KEY_EMPTY);"], consumer);
    assert.equal(load.code, 0, load.out);
    assert.match(load.out, /function function ROWAN_ERR_KEY_EMPTY/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
