// Cost of one persist through koffi, per persistence mode, back end and length: store into the range,
// then persist it (what a log append does). Both back ends side by side: libpmem2 (native/pmem2.ts)
// and libc alone (native/libc-mapping.ts: msync and pagecache only). Modes or back ends this machine
// cannot offer (dax without a DAX filesystem, libpmem2 not installed) are skipped with a note on
// stderr. Runnable alone: node dist/bench/pmem2-persist.bench.js
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Bench } from 'tinybench';
import { PERSIST_MODES, PmemMapping, pmem2Loadable, type PersistMode } from '../native/pmem2.js';
import { LibcMapping } from '../native/libc-mapping.js';
import type { FileMapping, PmBackend } from '../native/mapping.js';
import { ErrorCodes, RowanError } from '../config/base/errors.js';
import { formatTable, recordParams, type Row } from './report.js';

const LENGTHS = [64, 256, 1024, 4096];
const FILE_BYTES = 16 * 1024 * 1024;
/** Persists per timed call: amortises the timer for the sub-microsecond modes. */
const BATCH: Record<PersistMode, number> = { dax: 32, pagecache: 32, msync: 1 };

export interface PersistRow extends Row {
  name: string;
  mode: PersistMode;
  backend: PmBackend;
  bytes: number;
  opsPerSec: number;
  nsPerOp: number;
}

function tryMap(path: string, mode: PersistMode, backend: PmBackend): FileMapping | null {
  if (backend === 'libc' && mode === 'dax') return null; // dax is libpmem2's alone
  if (backend === 'libpmem2' && !pmem2Loadable()) {
    console.error(`pmem2-persist: ${mode} over libpmem2 skipped: libpmem2 does not load here (apt-get install libpmem2)`);
    return null;
  }
  try {
    return backend === 'libpmem2' ? PmemMapping.map(path, { mode }) : LibcMapping.map(path, { mode });
  } catch (err) {
    if (err instanceof RowanError && err.code === ErrorCodes.PMEM2_MODE_UNAVAILABLE) {
      console.error(`pmem2-persist: ${mode} skipped: ${err.message.split(';')[0]}`);
      return null;
    }
    throw err;
  }
}

/** Store + persist `len` bytes at successive offsets, wrapping around the file. */
function persistTask(m: FileMapping, len: number, batch: number): () => void {
  const bytes = m.bytes;
  let off = 0;
  let v = 0;
  return () => {
    for (let k = 0; k < batch; k++) {
      if (off + len > bytes.length) off = 0;
      bytes.fill(++v & 0xff, off, off + len);
      m.persist(off, len);
      off += len;
    }
  };
}

async function measure(m: FileMapping, mode: PersistMode, backend: PmBackend, timeMs: number): Promise<PersistRow[]> {
  const bench = new Bench({ time: timeMs, warmupTime: 50, throws: true });
  for (const len of LENGTHS) bench.add(`${mode} ${backend} persist ${len} B`, persistTask(m, len, BATCH[mode]));
  await bench.run();
  return bench.tasks.map((task, i) => {
    const r = task.result;
    if (r.state !== 'completed') throw new Error(`${task.name}: ${r.state}`);
    const nsPerOp = (r.latency.mean * 1e6) / BATCH[mode];
    return { name: task.name, mode, backend, bytes: LENGTHS[i]!, opsPerSec: 1e9 / nsPerOp, nsPerOp };
  });
}

export async function run(o: { timeMs?: number } = {}): Promise<PersistRow[]> {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-bench-pmem2-'));
  const rows: PersistRow[] = [];
  recordParams({ lengths: LENGTHS, fileBytes: FILE_BYTES, persistsPerTimedCall: BATCH, tinybenchTimeMs: o.timeMs ?? 500, warmupMs: 50 });
  try {
    for (const mode of PERSIST_MODES) {
      for (const backend of ['libpmem2', 'libc'] as const) {
        const path = join(dir, `${mode}-${backend}.bin`);
        writeFileSync(path, Buffer.alloc(FILE_BYTES));
        const m = tryMap(path, mode, backend);
        if (!m) continue;
        try {
          rows.push(...(await measure(m, mode, backend, o.timeMs ?? 500)));
        } finally {
          m.close();
        }
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return rows;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  run().then(
    (rows) => console.log(formatTable(rows)),
    (err) => {
      console.error(err);
      process.exit(1);
    },
  );
}
