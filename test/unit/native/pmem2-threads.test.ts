// Threads of one process mapping and unmapping pools at once (every actor maps the pool at start, the
// cold-start helper threads map and unmap it): libpmem2 picks addresses from /proc/self/maps, so
// without the address-space lock (native/libc.ts withAddressSpaceLock) this stress failed with
// pmem2_map_new -EEXIST or killed the process with SIGSEGV in most runs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from '../../../shm/pool.js';

test('4 threads opening and closing one pool 150 times each: every map succeeds, no crash', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-map-stress-'));
  try {
    const path = join(dir, 'pool.pm');
    Pool.create(path, { segmentCount: 16, segmentBytes: 1 << 20 }).close();
    const child = new URL('../../fixtures/map-stress.js', import.meta.url).pathname;
    for (let run = 0; run < 3; run++) {
      const r = spawnSync(process.execPath, [child, path], { encoding: 'utf8', timeout: 120_000 });
      assert.equal(r.signal, null, `run ${run}: killed by ${r.signal}\n${r.stderr}`);
      assert.equal(r.status, 0, r.stderr);
      assert.match(r.stdout, /^ok 600 fails 0$/m, r.stderr);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
