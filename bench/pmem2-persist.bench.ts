// Cost of one libpmem2 persist through koffi, per persistence mode and length: store into the range,
// then persist it (what a log append does). Modes this machine cannot offer (dax without a DAX
// filesystem) are skipped with a note on stderr. Runnable alone: node dist/bench/pmem2-persist.bench.js
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Bench } from 'tinybench';
import { PERSIST_MODES, PmemMapping, type PersistMode } from '../native/pmem2.js';
import { ErrorCodes, RowanError } from '../config/base/errors.js';
import { formatTable, recordParams, type Row } from './report.js';

const LENGTHS = [64, 256, 1024, 4096];
const FILE_BYTES = 16 * 1024 * 1024;
/** Persists per timed call: amortises the timer for the sub-microsecond modes. */
const BATCH: Record<PersistMode, number> = { dax: 32, pagecache: 32, msync: 1 };

export interface PersistRow extends Row {
  name: string;
  mode: PersistMode;
  bytes: number;
  opsPerSec: number;
  nsPerOp: number;
}

function tryMap(path: string, mode: PersistMode): PmemMapping | null {
  try {
    return PmemMapping.map(path, { mode });
  } catch (err) {
    if (err instanceof RowanError && err.code === ErrorCodes.PMEM2_MODE_UNAVAILABLE) {
      console.error(`pmem2-persist: ${mode} skipped: ${err.message.split(';')[0]}`);
      return null;
    }
    throw err;
  }
}

/** Store + persist `len` bytes at successive offsets, wrapping around the file. */
function persistTask(m: PmemMapping, len: number, batch: number): () => void {
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

export async function run(o: { timeMs?: number } = {}): Promise<PersistRow[]> {
  const dir = mkdtempSync(join(tmpdir(), 'rowan-bench-pmem2-'));
  const rows: PersistRow[] = [];
  recordParams({ lengths: LENGTHS, fileBytes: FILE_BYTES, persistsPerTimedCall: BATCH, tinybenchTimeMs: o.timeMs ?? 500, warmupMs: 50 });
  try {
    for (const mode of PERSIST_MODES) {
      const path = join(dir, `${mode}.bin`);
      writeFileSync(path, Buffer.alloc(FILE_BYTES));
      const m = tryMap(path, mode);
      if (!m) continue;
      try {
        const bench = new Bench({ time: o.timeMs ?? 500, warmupTime: 50, throws: true });
        for (const len of LENGTHS) bench.add(`${mode} persist ${len} B`, persistTask(m, len, BATCH[mode]));
        await bench.run();
        for (const [i, task] of bench.tasks.entries()) {
          const r = task.result;
          if (r.state !== 'completed') throw new Error(`${task.name}: ${r.state}`);
          const nsPerOp = (r.latency.mean * 1e6) / BATCH[mode];
          rows.push({ name: task.name, mode, bytes: LENGTHS[i]!, opsPerSec: 1e9 / nsPerOp, nsPerOp });
        }
      } finally {
        m.close();
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
