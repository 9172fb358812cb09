// Rowan vs one-sided replication on this machine (ROWAN §2.4 / §6.2, Figure 8): 1..144 concurrent
// write streams of 64 B and 128 B into one receiver, replicated with Rowan, rwrite (a log per stream,
// FaRM style), share (one log per sending node) and batch (rwrite + 256 B / 5 µs batching) over the
// shm fabric, and Rowan over the tcp fabric (soft RNIC). Per cell: aggregate writes/s, writes per
// sender CPU-second, issue->ack latency p50/p99, PM write streams (distinct remote logs written) and
// DLWA modelled on the merged persist trace of all sender threads (runtime/optane/xpbuffer.ts).
//
// A stream is one sequential writer (a worker thread of the paper's §2.4 experiment: write, wait for
// the ack, write again). Streams are spread round-robin over 2 sender worker_threads (one sending node)
// and driven in event-loop turns (bench/rowan/sender-thread.ts); the receiver's control loop runs on
// the main thread, the tcp fabric's nic on a thread of its own. Cells of one (size, streams) run back
// to back, so compare modes as ratios within a run: the machine has 2 cores and other jobs (see
// cpuWaitPct; a badly disturbed cell is run again, bounded).
//
// Runnable alone: see USAGE in bench/rowan/options.ts (ROWAN_BENCH_QUICK=1 = --quick,
// ROWAN_BENCH_TCP=off = --no-tcp). Through the harness: node dist/bench/run.js rowan [--quick].
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { SharedLog } from '../actors/baselines/replication-writers.js';
import { formatTable, progress, recordParams, type Row } from './report.js';
import { cellsOf, parseOptions, type Cell, type RowanBenchOptions } from './rowan/options.js';
import type { CellResult, CellSpec } from './rowan/protocol.js';
import { BenchReceiver } from './rowan/receiver.js';
import { cpuWaitPct, rowOf, verdicts } from './rowan/row.js';
import { SenderThreads } from './rowan/senders.js';
import { loadTcp } from './rowan/tcp-connect.js';
import type { MediaSnapshot, OptaneMedia } from '../runtime/optane/media.js';

const SEGMENT_BYTES = 1 << 20;
/** Owner ids of one-sided regions: stream s's log is STREAM_OWNER_BASE + s; the node's shared log SHARE_OWNER. */
const STREAM_OWNER_BASE = 1;
const SHARE_OWNER = 1000;

interface Nic {
  endpoint: { host: string; port: number };
  tid: number;
  close: () => Promise<void>;
}

async function startNic(dataDir: string): Promise<Nic> {
  const w = new Worker(new URL('./rowan/nic-thread.js', import.meta.url), { workerData: { dataDir } });
  const m = await new Promise<{ ok: boolean; endpoint?: Nic['endpoint']; tid?: number; message?: string }>((resolve, reject) => {
    w.once('message', resolve);
    w.once('error', reject);
  });
  if (!m.ok || !m.endpoint) throw new Error(`nic did not start: ${m.message}`);
  return {
    endpoint: m.endpoint,
    tid: m.tid ?? -1,
    close: () =>
      new Promise<void>((resolve) => {
        w.once('exit', () => resolve());
        w.postMessage('close');
      }),
  };
}

/** Split a cell's streams round-robin over the sender threads. */
function partsOf(c: Cell, o: RowanBenchOptions, threads: number, seed: number): Array<CellSpec | null> {
  const parts: Array<CellSpec | null> = Array.from({ length: threads }, () => null);
  const sharedLog = c.mode === 'share' ? SharedLog.create({ nodeId: 1 }).buffer : null;
  for (let s = 0; s < c.streams; s++) {
    const t = s % threads;
    parts[t] ??= {
      mode: c.mode,
      fabric: c.fabric,
      streamIds: [],
      writeBytes: c.bytes,
      depth: c.depth,
      burst: c.api === 'tryWrite',
      holdPerWrite: c.holds === 'write',
      warmupMs: o.warmupMs,
      durationMs: o.durationMs,
      traceMs: o.traceMs,
      maxWritesPerStream: 50_000_000,
      traceCap: o.traceCap,
      latencyEvery: o.latencyEvery,
      sharedLog,
      firstRegionSkipMax: SEGMENT_BYTES - 4096,
      ownerBase: c.mode === 'share' ? SHARE_OWNER : STREAM_OWNER_BASE,
      seed,
    };
    parts[t]!.streamIds.push(s);
  }
  return parts;
}

/** Run a cell; run it again (bounded) while other jobs kept its sender threads off the CPUs. */
async function measureCell(c: Cell, o: RowanBenchOptions, senders: SenderThreads, rx: BenchReceiver, seed: number, media: OptaneMedia | null): Promise<Row> {
  let best: CellResult[] | null = null;
  let bestMedia: MediaSnapshot | null = null;
  let attempts = 0;
  for (let a = 0; a <= o.noisyRetries; a++) {
    attempts++;
    // The model runs from the go to the end of the cell: preparing the streams (allocating and zeroing
    // 144 logs up front) would otherwise be most of a 200 ms cell's media time.
    const onGo = () => {
      media?.resetCounts();
      media?.setEnabled(true);
    };
    const rs = await senders.run(partsOf(c, o, senders.count, seed), 60_000 + (o.durationMs + o.traceMs) * 4, 20, onGo);
    media?.setEnabled(false);
    rx.sweepOneSided();
    if (!best || cpuWaitPct(rs) < cpuWaitPct(best)) {
      best = rs;
      bestMedia = media?.snapshot() ?? null;
    }
    if (cpuWaitPct(rs) <= o.noisyWaitPct) break;
  }
  return { ...rowOf(c, best!, attempts), ...mediaColumns(c, bestMedia) };
}

/** The media model's view of a cell (shm: the senders' persists paid it; tcp: the nic's pool has none). */
function mediaColumns(c: Cell, m: MediaSnapshot | null): Row {
  if (!m || c.fabric !== 'shm') return {};
  return { mediaDlwa: Number(m.dlwa.toFixed(3)), mediaWaitMs: Number(m.waitMs.toFixed(1)), mediaBusyMs: Number(m.mediaMs.toFixed(1)), rmw: m.partialEvictions };
}

export async function run(opts: RowanBenchOptions = parseOptions(process.argv.slice(2))): Promise<Row[]> {
  const SENDER_THREADS = opts.senderThreads;
  recordParams({ ...opts, segmentBytes: SEGMENT_BYTES });
  const maxStreams = Math.max(...opts.streams);
  // b-log: 64 segments posted ahead; one-sided logs: a region per stream, plus what a cell fills, plus
  // the share log's ring of 64 unretired regions.
  const rx = new BenchReceiver({
    segmentBytes: SEGMENT_BYTES,
    segmentCount: Math.max(640, 64 + maxStreams * 2 + 448),
    preallocate: 64,
    batch: 16,
    graceMs: 2,
    mediaMBps: opts.mediaMBps,
  });
  rx.start();
  const tcpWhy = opts.tcp ? await loadTcp() : '--no-tcp';
  let nic: Nic | null = null;
  if (typeof tcpWhy !== 'string') {
    try {
      nic = await startNic(rx.dataDir);
    } catch (err) {
      console.error(`rowan bench: tcp rows skipped: ${(err as Error).message}`);
    }
  } else if (opts.tcp) console.error(`rowan bench: tcp rows skipped: ${tcpWhy}`);
  const senders = await SenderThreads.start(
    SENDER_THREADS,
    { dataDir: rx.dataDir, tcp: nic?.endpoint ?? null, nicTid: nic?.tid ?? null },
    (segs) => rx.freeRetired(segs),
  );
  const cells = cellsOf(opts, nic !== null);
  const rows: Row[] = [];
  try {
    // A first cell runs cold (the sender thread's JIT, first allocations): with few cells, that cell is
    // always the same mode's. --warm-up runs every mode's cell once first and drops those rows.
    if (opts.warmUp) {
      for (let i = 0; i < cells.length; i++) {
        progress(`rowan: warm-up ${cells[i]!.mode} ${cells[i]!.bytes} B`, i, cells.length);
        await measureCell({ ...cells[i]!, streams: Math.min(cells[i]!.streams, 36) }, { ...opts, noisyRetries: 0 }, senders, rx, 1000 + i, rx.mapped?.media ?? null);
      }
    }
    for (let i = 0; i < cells.length; i++) {
      const c = cells[i]!;
      progress(`rowan: ${c.fabric} ${c.mode} ${c.api}${c.holds === 'write' ? ' (hold per write)' : ''} ${c.bytes} B x${c.streams} depth ${c.depth}`, i, cells.length);
      rows.push(await measureCell(c, opts, senders, rx, i + 1, rx.mapped?.media ?? null));
    }
    progress('rowan: done', cells.length, cells.length);
  } finally {
    await senders.close();
    await nic?.close();
    rx.close();
  }
  console.log(
    `\nrowan bench: ${SENDER_THREADS} sender worker_threads = one sending node; a stream = one sequential writer ` +
      `(depth = writes in flight per stream), streams spread round-robin over the threads and issued in ` +
      `event-loop turns; api tryWrite = Rowan's shm landing called synchronously in each turn's burst. ` +
      `Receiver control loop on the main thread${nic ? ', tcp nic on its own thread' : ''}. Per cell: ` +
      `${opts.warmupMs} ms warm-up, ${opts.durationMs} ms measured (writes/s, latency of every ` +
      `${opts.latencyEvery}th write, sender CPU time${nic ? ' + nic CPU time for tcp' : ''}), then ${opts.traceMs} ms ` +
      `traced (DLWA: XPBuffer model on the persist traces of both threads merged by time; tcp: on the ` +
      `acked offsets in ack order, the nic records no trace). ${SEGMENT_BYTES >> 20} MiB segments.` +
      (nic ? '' : ' No tcp rows (see above).'),
  );
  if (opts.mediaMBps !== null) console.log(`Optane media model on the receiver's pool: ${opts.mediaMBps} MB/s media writes per DIMM; mediaDlwa/mediaWaitMs/rmw per cell from the model (runtime/optane/).`);
  for (const v of verdicts(rows, SENDER_THREADS)) console.log(v);
  return rows;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const rows = await run();
  console.log(formatTable(rows));
}
