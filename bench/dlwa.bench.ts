// DLWA sweep (ROWAN Figure 2 / Figure 8 shape): 1..144 concurrent 64 B and 128 B write streams landed
// in separate logs (rwrite: one PM write stream per sender) vs merged into one log (Rowan), through
// the calibrated XPBuffer model. Runnable alone: node dist/bench/dlwa.bench.js
import { modelDlwa } from '../runtime/optane/xpbuffer.js';
import { streamTrace } from './dlwa/streams.js';
import { formatTable, recordParams, type Row } from './report.js';

export async function run(): Promise<Row[]> {
  recordParams({ writeBytes: [64, 128], streams: [1, 8, 36, 72, 90, 108, 144], writesTotal: 300_000, model: 'XPBuffer (runtime/optane/xpbuffer.ts)' });
  const rows: Row[] = [];
  const paper: Record<string, number> = { '64:144': 2.48, '128:144': 1.58 };
  for (const writeBytes of [64, 128]) {
    for (const streams of [1, 8, 36, 72, 90, 108, 144]) {
      const n = Math.ceil(300_000 / streams);
      const sep = streamTrace({ streams, writeBytes, writesPerStream: n, layout: 'separate' });
      const mer = streamTrace({ streams, writeBytes, writesPerStream: n, layout: 'merged' });
      rows.push({
        writeBytes,
        streams,
        rwriteDlwa: modelDlwa(sep.addrs, sep.lens).dlwa,
        rowanDlwa: modelDlwa(mer.addrs, mer.lens).dlwa,
        paperRwrite: paper[`${writeBytes}:${streams}`] ?? null,
      });
    }
  }
  return rows;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  run().then((rows) => console.log(formatTable(rows)));
}
