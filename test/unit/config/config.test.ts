import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultConfig, paper, scaleBlogToPool } from '../../../config/defaults.js';
import { resolveConfig } from '../../../config/load.js';
import { formatCpuList, parseCpuList, parseRoles } from '../../../config/parse.js';
import { validateConfig } from '../../../config/validate.js';
import { loadConfigFile } from '../../../config/load.js';

test('CPU lists parse in the kernel cpulist forms and reject the rest', () => {
  assert.deepEqual(parseCpuList('0-1'), [0, 1]);
  assert.deepEqual(parseCpuList('0,1'), [0, 1]);
  assert.deepEqual(parseCpuList('3, 0-1,1'), [0, 1, 3]);
  for (const bad of ['', 'a', '1-0', '0-', '-1', '0,,1', '2000'])
    assert.throws(() => parseCpuList(bad, '--cores'), { code: 'ROWAN_ERR_BAD_ARGUMENT', message: /--cores/ });
  assert.equal(formatCpuList([5, 0, 1, 2]), '0-2,5');
});

test('role lists parse counts and per-role CPUs; unknown roles are named', () => {
  assert.deepEqual(parseRoles('worker:4,control,digest:2@0+1,clean:2@1'), [
    { role: 'worker', count: 4 },
    { role: 'control', count: 1 },
    { role: 'digest', count: 2, cores: [0, 1] },
    { role: 'clean', count: 2, cores: [1] },
  ]);
  assert.throws(() => parseRoles('worker,frobnicator:2'), { code: 'ROWAN_ERR_UNKNOWN_ROLE', message: /frobnicator/ });
  assert.throws(() => parseRoles('worker:0'), { code: 'ROWAN_ERR_BAD_ARGUMENT' });
  assert.throws(() => parseRoles('worker,worker'), { code: 'ROWAN_ERR_BAD_ARGUMENT', message: /twice/ });
  assert.throws(() => parseRoles('worker:x'), { code: 'ROWAN_ERR_BAD_ARGUMENT' });
});

test("defaults are the paper's parameters, with b-log numbers scaled to the pool", () => {
  const c = defaultConfig('/d', [0, 1]);
  assert.equal(c.pool.segmentBytes, 4 * 1024 * 1024);
  assert.equal(c.blog.usedGraceMs, 2);
  assert.equal(c.replication.retryMs, 1);
  assert.equal(c.replication.commitVerPeriodMs, 15);
  assert.equal(c.gc.liveThresholdPercent, 75);
  assert.deepEqual(c.resharding, { auto: true, periodMs: 500, overloadPercent: 30, targetPercent: 5, copyMoves: false });
  assert.equal(c.persistence, 'pagecache');
  assert.deepEqual(scaleBlogToPool(1 << 16), { preallocSegments: paper.blogPreallocSegments, batchSegments: paper.blogBatchSegments });
  assert.deepEqual(scaleBlogToPool(64), { preallocSegments: 16, batchSegments: 4 });
  assert.deepEqual(scaleBlogToPool(1), { preallocSegments: 1, batchSegments: 1 });
  validateConfig(c, [0, 1]);
});

test('a config file merges over the defaults and flags over the file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-cfg-'));
  try {
    const file = join(dir, 'c.json');
    writeFileSync(file, JSON.stringify({ pool: { segmentCount: 4096 }, gc: { periodMs: 20 }, roles: 'worker:3,control' }));
    const c = resolveConfig({ dataDir: '/d', allowedCores: [0, 1], file: loadConfigFile(file), flags: { gc: { periodMs: 30 } } });
    assert.equal(c.gc.periodMs, 30);
    assert.equal(c.pool.segmentCount, 4096);
    assert.equal(c.pool.segmentBytes, 4 * 1024 * 1024, 'untouched siblings keep their defaults');
    assert.deepEqual(c.blog, { preallocSegments: 512, batchSegments: 128, usedGraceMs: 2 }, 'rescaled to the bigger pool');
    assert.deepEqual(c.roles, [{ role: 'worker', count: 3 }, { role: 'control', count: 1 }]);
    writeFileSync(file, '{"blog": {"batchSegment": 3}}');
    assert.throws(() => resolveConfig({ dataDir: '/d', allowedCores: [0], file: loadConfigFile(file) }), {
      code: 'ROWAN_ERR_BAD_CONFIG',
      message: /blog\.batchSegment: unknown field/,
    });
    // The lease is the manager's (--lease-ms): a node's config no longer takes one.
    writeFileSync(file, '{"leaseMs": 10}');
    assert.throws(() => resolveConfig({ dataDir: '/d', allowedCores: [0], file: loadConfigFile(file) }), { code: 'ROWAN_ERR_BAD_CONFIG', message: /leaseMs: unknown field/ });
    writeFileSync(file, 'not json');
    assert.throws(() => loadConfigFile(file), { code: 'ROWAN_ERR_BAD_CONFIG', message: /not JSON/ });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('validation names the field and the rule', () => {
  const bad = (mutate: (c: ReturnType<typeof defaultConfig>) => void, field: RegExp) => {
    const c = defaultConfig('/d', [0, 1]);
    mutate(c);
    assert.throws(() => validateConfig(c, [0, 1]), { code: 'ROWAN_ERR_BAD_CONFIG', message: field });
  };
  bad((c) => (c.blog.batchSegments = 1000), /blog\.batchSegments/);
  bad((c) => (c.gc.liveThresholdPercent = 120), /gc\.liveThresholdPercent/);
  bad((c) => (c.persistence = 'tape' as never), /persistence: must be one of dax\|msync\|pagecache/);
  bad((c) => (c.cores = [0, 7]), /cores: CPU 7 is not available/);
  bad((c) => (c.roles = [{ role: 'control', count: 2 }]), /roles\.control\.count/);
  bad((c) => (c.pool.segmentBytes = 3 * 1024 * 1024), /pool\.segmentBytes: must be a power of two/);
  bad((c) => (c.runtime.restarts = { nobody: 1 } as never), /runtime\.restarts/);
});
