// One table row per cell from the sender threads' reports, and what the rows say about the targets.
import type { Row } from '../report.js';
import { LatencyHistogram } from '../hist.js';
import { dlwaOf } from './measure.js';
import type { Cell } from './options.js';
import type { CellResult } from './protocol.js';

/** Share of the measure phase the sender threads spent runnable but waiting for a CPU (other jobs). */
export function cpuWaitPct(rs: CellResult[]): number {
  const win = rs.reduce((a, r) => a + r.cpuWindowMs, 0);
  return win > 0 ? Math.round((100 * rs.reduce((a, r) => a + r.waitMs, 0)) / win) : 0;
}

export function rowOf(c: Cell, rs: CellResult[], attempts: number): Row {
  const writes = rs.reduce((a, r) => a + r.writes, 0);
  const windowMs = Math.max(...rs.map((r) => r.windowMs));
  // Sender threads' CPU time, plus the nic thread's for tcp (it does the landing there).
  const cpuMs = rs.reduce((a, r) => a + r.cpuMs + r.nicCpuMs, 0);
  // Every sender thread's histogram, merged: percentiles of the union of their samples.
  const lat = LatencyHistogram.merge(rs.map((r) => LatencyHistogram.decode(r.latHist))).summary();
  // shm: the persists the sender threads issued into the receiver's pool. tcp: the nic persists and
  // records nothing, so model the b-log from the acked offsets in ack order (one persist per write).
  const fromAcks = c.fabric === 'tcp';
  const d = dlwaOf(rs.map((r) => (fromAcks ? r.acks : r.persists)), !fromAcks);
  const traced = rs.reduce((a, r) => a + (fromAcks ? r.acks : r.persists).times.length, 0);
  const logs = new Set(rs.flatMap((r) => r.logIds));
  const batches = rs.reduce((a, r) => a + r.stats.batches, 0);
  return {
    fabric: c.fabric,
    mode: c.mode,
    api: c.api,
    holds: c.fabric === 'shm' && c.mode === 'rowan' ? (c.holds ?? 'turn') : null,
    bytes: c.bytes,
    streams: c.streams,
    depth: c.depth,
    writesPerSec: Math.round(writes / (windowMs / 1000)),
    writesPerCpuSec: cpuMs > 0 ? Math.round(writes / (cpuMs / 1000)) : null,
    cpuWaitPct: cpuWaitPct(rs),
    p50Us: lat.p50Us,
    p99Us: lat.p99Us,
    latencySamples: lat.count,
    pmStreams: logs.size,
    dlwa: Number(d.dlwa.toFixed(3)),
    dlwaFrom: fromAcks ? 'acked offsets' : 'persist trace',
    modelled: d.records,
    /** Share of the traced writes modelled: the rest fell where a sender thread was off its CPU. */
    concurrentPct: traced > 0 ? Math.round((100 * d.records) / traced) : null,
    writesPerBatch: c.mode === 'batch' && batches > 0 ? Number((rs.reduce((a, r) => a + r.stats.writes, 0) / batches).toFixed(2)) : null,
    reissues: rs.reduce((a, r) => a + r.retries, 0),
    attempts,
  };
}

/** What this run's rows say about the targets. */
export function verdicts(rows: Row[], senderThreads: number): string[] {
  const find = (m: string, b: number, s: number) =>
    rows.find((r) => r.fabric === 'shm' && r.mode === m && r.api === 'write' && r.holds !== 'write' && r.bytes === b && r.streams === s && r.depth === 1);
  const out: string[] = [];
  const rowan64 = rows.filter((r) => r.fabric === 'shm' && r.mode === 'rowan' && r.bytes === 64);
  if (rowan64.length) {
    const best = rowan64.reduce((a, r) => ((r.writesPerSec as number) > (a.writesPerSec as number) ? r : a));
    const v = best.writesPerSec as number;
    const perCpu = Math.max(...rowan64.map((r) => (r.writesPerCpuSec as number) ?? 0));
    out.push(
      `target Rowan/shm >= 2 M 64 B writes/s aggregate: best ${(v / 1e6).toFixed(2)} M/s (${best.api}, ${best.streams} streams) -> ` +
        `${v >= 2e6 ? 'met' : 'NOT met'}; best per sender CPU-second ${(perCpu / 1e6).toFixed(2)} M, i.e. ` +
        `${((perCpu * senderThreads) / 1e6).toFixed(2)} M/s if ${senderThreads} cores were the senders' alone`,
    );
  }
  for (const b of [64, 128]) {
    const ro = find('rowan', b, 144);
    const rw = find('rwrite', b, 144);
    const sh = find('share', b, 144);
    if (ro && sh) {
      const ratio = (ro.writesPerSec as number) / (sh.writesPerSec as number);
      const cpuRatio = (ro.writesPerCpuSec as number) / (sh.writesPerCpuSec as number);
      out.push(`target rowan >= share at 144 streams, ${b} B (issue 29): writes/s ${ratio.toFixed(2)}x, per sender CPU-second ${cpuRatio.toFixed(2)}x -> ${ratio >= 1 ? 'met' : 'NOT met'}`);
    }
    if (ro) out.push(`target Rowan DLWA <= 1.05 at 144 streams, ${b} B: ${ro.dlwa} -> ${(ro.dlwa as number) <= 1.05 ? 'met' : 'NOT met'}`);
    if (rw) out.push(`target rwrite DLWA >= 1.5 at 144 streams, ${b} B: ${rw.dlwa} -> ${(rw.dlwa as number) >= 1.5 ? 'met' : 'NOT met'} (paper: ${b === 64 ? '2.48' : '1.58'})`);
  }
  return out;
}
