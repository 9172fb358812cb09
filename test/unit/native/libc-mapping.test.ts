// native/libc-mapping.ts (a pool file mapped through libc alone) and native/mapping.ts (which back end
// maps it): stores reach the file, dax is refused naming the package it needs, close semantics and
// range checks as native/pmem2.ts has them, and ROWAN_PM_BACKEND's choice.
import { test, after, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LibcMapping } from '../../../native/libc-mapping.js';
import { PM_BACKEND_ENV, backendFor, mapFile } from '../../../native/mapping.js';
import { pmem2Loadable } from '../../../native/pmem2.js';
import { ErrorCodes, RowanError } from '../../../config/base/errors.js';

const dir = mkdtempSync(join(tmpdir(), 'rowan-libc-map-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const saved = process.env[PM_BACKEND_ENV];
afterEach(() => {
  if (saved === undefined) delete process.env[PM_BACKEND_ENV];
  else process.env[PM_BACKEND_ENV] = saved;
});

let n = 0;
function file(bytes = 1 << 20): string {
  const p = join(dir, `f${n++}.bin`);
  writeFileSync(p, Buffer.alloc(bytes));
  return p;
}

for (const mode of ['msync', 'pagecache'] as const) {
  test(`${mode}: stores through the mapping are in the file once persisted, and after close`, () => {
    const p = file();
    const m = LibcMapping.map(p, { mode });
    assert.equal(m.backend, 'libc');
    assert.equal(m.size, 1 << 20);
    assert.equal(m.granularity, mode === 'msync' ? 'page' : 'cache-line');
    m.bytes.set([1, 2, 3], 5000); // across no page boundary
    m.bytes.set([9, 9], 8191); // across one
    m.persist(5000, 3);
    m.persist(8191, 2);
    // Another mapping of the file (what a restarted process sees) reads them at once.
    const other = LibcMapping.map(p, { mode });
    assert.deepEqual([...other.bytes.subarray(5000, 5003)], [1, 2, 3]);
    other.close();
    m.close();
    const onDisk = readFileSync(p);
    assert.deepEqual([...onDisk.subarray(5000, 5003), onDisk[8191], onDisk[8192]], [1, 2, 3, 9, 9]);
  });
}

test('dax without libpmem2 is refused with the package to install', () => {
  assert.throws(() => LibcMapping.map(file(), { mode: 'dax' }), (e: RowanError) => e.code === ErrorCodes.NATIVE_LIBRARY && /apt-get install libpmem2/.test(e.message));
});

test('use after close and a persist outside the mapping are invariant errors; close is idempotent', () => {
  const m = LibcMapping.map(file(), { mode: 'msync' });
  assert.throws(() => m.persist(1 << 20, 1), /outside the 1048576-byte mapping/);
  m.close();
  m.close();
  assert.equal(m.closed, true);
  assert.throws(() => m.bytes, /used after close/);
  assert.throws(() => m.persist(0, 1), /used after close/);
});

test('a missing file is DATA_DIR; an empty one BAD_ARGUMENT', () => {
  assert.throws(() => LibcMapping.map(join(dir, 'nope'), { mode: 'pagecache' }), (e: RowanError) => e.code === ErrorCodes.DATA_DIR);
  const empty = join(dir, 'empty');
  writeFileSync(empty, '');
  assert.throws(() => LibcMapping.map(empty, { mode: 'pagecache' }), (e: RowanError) => e.code === ErrorCodes.BAD_ARGUMENT);
});

test('ROWAN_PM_BACKEND pins the back end; auto takes libpmem2 where it loads; anything else is BAD_CONFIG', () => {
  process.env[PM_BACKEND_ENV] = 'libc';
  assert.equal(backendFor('pagecache'), 'libc');
  const m = mapFile(file(), { mode: 'pagecache' });
  assert.equal(m.backend, 'libc');
  m.close();
  process.env[PM_BACKEND_ENV] = 'libpmem2';
  assert.equal(backendFor('msync'), 'libpmem2');
  delete process.env[PM_BACKEND_ENV];
  assert.equal(backendFor('pagecache'), pmem2Loadable() ? 'libpmem2' : 'libc');
  assert.equal(backendFor('dax'), 'libpmem2', 'dax only ever maps through libpmem2');
  process.env[PM_BACKEND_ENV] = 'mmap';
  assert.throws(() => backendFor('pagecache'), (e: RowanError) => e.code === ErrorCodes.BAD_CONFIG && /libpmem2, libc or auto/.test(e.message));
});
