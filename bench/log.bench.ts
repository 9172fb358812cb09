// Log append and scan cost (§4.2.2, §5.3).
//   (a) append+persist per entry of 64/128/256/1024 encoded bytes, through LogAppender on a pool in each
//       persistence mode that maps here, over each back end (libpmem2, and libc alone for pagecache and
//       msync: native/mapping.ts), side by side (dax is refused on a machine without a DAX filesystem
//       and is reported as unavailable), plus a DRAM row with a no-op persist to separate codec from persist;
//   (b) scan rate over one 4 MiB segment full of ~100 B entries (128 B encoded), in entries/s.
// Runnable alone: node dist/bench/log.bench.js
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Bench } from 'tinybench';
import { defaultLimits } from '../config/limits.js';
import { LogAppender } from '../shm/appender.js';
import { EntryType, scanEntries, type EntryInput } from '../shm/log.js';
import { HEADER_BYTES } from '../shm/log-layout.js';
import { Pool } from '../shm/pool.js';
import { MemoryRegion, type PersistentRegion } from '../config/base/region.js';
import { PM_BACKEND_ENV, type PmBackend } from '../native/mapping.js';
import type { PersistMode } from '../native/pmem2.js';
import { formatTable, recordParams, type Row } from './report.js';

const L = defaultLimits;
const ENTRY_SIZES = [64, 128, 256, 1024];
const KEY_BYTES = 16;
/** Appends per timed call, so tinybench's per-call overhead stays out of the per-entry figure. msync
 *  writes a page back to the file system per persist (~0.1–1 ms here), so it gets small calls and few
 *  minimum iterations, or its four tasks alone would take tens of seconds. */
const BATCH = 256;
const BATCH_MSYNC = 4;
const POOL_SEGMENTS = 8;
const BENCH_OPTS = { time: 500, warmupTime: 100 };

function entryOf(encodedBytes: number): EntryInput {
  const key = new Uint8Array(KEY_BYTES).fill(0x6b);
  const value = new Uint8Array(encodedBytes - HEADER_BYTES - KEY_BYTES).fill(0x76);
  return { type: EntryType.Put, shard: 1, version: 1, key, value };
}

/** Appends round-robin over `segments` segments of `region` starting at `base` (a pool's segments sit
 *  after its superblock and meta table), restarting a segment when it fills. */
function appendTask(region: PersistentRegion, base: number, segments: number, e: EntryInput, batch: number): () => void {
  let seg = 0;
  let app = new LogAppender(region, base, base + L.segmentBytes, L);
  return () => {
    for (let n = 0; n < batch; n++) {
      if (!app.fits(e)) {
        seg = (seg + 1) % segments;
        const start = base + seg * L.segmentBytes;
        app = new LogAppender(region, start, start + L.segmentBytes, L);
      }
      e.version++;
      app.append(e);
    }
  };
}

function rowsOf(bench: Bench, mode: string, perCall: number, unitName: string, sizes: number[]): Row[] {
  return bench.tasks.map((t, i) => {
    const r = t.result as { latency?: { mean: number } };
    const msPerCall = r.latency?.mean ?? Infinity;
    const nsPerOp = (msPerCall * 1e6) / perCall;
    return { name: unitName, mode, entryBytes: sizes[i]!, nsPerOp: Math.round(nsPerOp), opsPerSec: Math.round(1e9 / nsPerOp) };
  });
}

/** A pool mapped through `backend` (native/mapping.ts reads ROWAN_PM_BACKEND at each map). */
function createPool(path: string, mode: PersistMode, backend: PmBackend): Pool {
  const was = process.env[PM_BACKEND_ENV];
  process.env[PM_BACKEND_ENV] = backend;
  try {
    return Pool.create(path, { segmentCount: POOL_SEGMENTS, segmentBytes: L.segmentBytes, mode });
  } finally {
    if (was === undefined) delete process.env[PM_BACKEND_ENV];
    else process.env[PM_BACKEND_ENV] = was;
  }
}

async function appendRows(mode: 'dram' | PersistMode, backend: PmBackend | '-', dir: string): Promise<Row[]> {
  let region: PersistentRegion;
  let base = 0;
  let pool: Pool | null = null;
  if (mode === 'dram' || backend === '-') {
    region = new MemoryRegion(POOL_SEGMENTS * L.segmentBytes);
  } else {
    try {
      pool = createPool(join(dir, `${mode}-${backend}.pm`), mode, backend);
    } catch (err) {
      const why = (err as { code?: string }).code ?? String(err);
      return ENTRY_SIZES.map((entryBytes) => ({ name: 'append+persist', mode, backend, entryBytes, nsPerOp: null, opsPerSec: null, note: `unavailable (${why})` }));
    }
    region = pool.region;
    base = pool.segmentOffset(0);
  }
  try {
    const batch = mode === 'msync' ? BATCH_MSYNC : BATCH;
    const bench = new Bench(mode === 'msync' ? { ...BENCH_OPTS, iterations: 8 } : BENCH_OPTS);
    for (const size of ENTRY_SIZES) bench.add(`append ${size}`, appendTask(region, base, POOL_SEGMENTS, entryOf(size), batch));
    await bench.run();
    return rowsOf(bench, mode, batch, 'append+persist', ENTRY_SIZES).map((r) => ({ ...r, backend, note: '' }));
  } finally {
    pool?.close();
  }
}

async function scanRows(): Promise<Row[]> {
  const region = new MemoryRegion(L.segmentBytes);
  const app = new LogAppender(region, 0, L.segmentBytes, L);
  const e = entryOf(128); // 16 B key + 80 B value: a ~100 B object
  while (app.remaining >= 128) {
    e.version++;
    app.append(e);
  }
  const count = [...scanEntries(region.bytes, 0, L.segmentBytes, L)].length;
  let sink = 0;
  const bench = new Bench(BENCH_OPTS);
  bench.add('scan', () => {
    for (const x of scanEntries(region.bytes, 0, L.segmentBytes, L)) sink += x.version;
  });
  await bench.run();
  if (sink === 0.5) console.log(sink); // keep the loop observable
  return rowsOf(bench, 'dram', count, 'scan', [128]).map((r) => ({ ...r, backend: '-', note: `${count} entries per 4 MiB segment` }));
}

export async function run(): Promise<Row[]> {
  recordParams({ entrySizes: ENTRY_SIZES, keyBytes: KEY_BYTES, appendsPerCall: BATCH, appendsPerCallMsync: BATCH_MSYNC, poolSegments: POOL_SEGMENTS, segmentBytes: L.segmentBytes, tinybench: BENCH_OPTS, scanEntryBytes: 128 });
  const dir = mkdtempSync(join(tmpdir(), 'rowan-log-bench-'));
  try {
    const rows: Row[] = [];
    // Both back ends side by side for the modes libc can map; dax is libpmem2's alone.
    const runs = [['dram', '-'], ['pagecache', 'libpmem2'], ['pagecache', 'libc'], ['msync', 'libpmem2'], ['msync', 'libc'], ['dax', 'libpmem2']] as const;
    for (const [mode, backend] of runs) rows.push(...(await appendRows(mode, backend, dir)));
    rows.push(...(await scanRows()));
    return rows;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  run().then((rows) => console.log(formatTable(rows)));
}
