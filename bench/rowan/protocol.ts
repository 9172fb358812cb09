// What the Rowan benchmark's main thread (receiver side) and its sender threads exchange.
// One startup message (workerData) and a READY reply, then per cell: main sends `cell`; the thread
// opens and prepares its streams (first regions allocated) and answers `prepared`; once every thread
// has, main sends `go` with a common start time; the thread answers with `retired` (one-sided regions
// its logs left, for the receiver to reclaim) and one `result`.
import type { ReplicationMode, ReplicationStreamStats } from '../../actors/baselines/replication-writers.js';

export type BenchFabric = 'shm' | 'tcp';

export interface SenderInit {
  thread: number;
  dataDir: string;
  /** The soft RNIC's endpoint, when the tcp fabric is measured. */
  tcp: { host: string; port: number } | null;
  /** The nic thread's kernel tid, to account its CPU time in tcp cells (thread 0 does). */
  nicTid: number | null;
}

export interface CellSpec {
  mode: ReplicationMode;
  fabric: BenchFabric;
  /** The streams this thread runs (global stream ids). */
  streamIds: number[];
  writeBytes: number;
  /** Writes each stream keeps in flight (1 = each stream waits for its ack before the next write). */
  depth: number;
  /**
   * rowan over shm only: issue with ShmConnection.tryWrite, synchronously, in each turn's burst (the
   * landing itself, without the promise layer); a write that does not land at once goes async.
   */
  burst: boolean;
  /** rowan over shm: a hold per write instead of one per buffer and turn (ShmConnectOptions.holdPerWrite). */
  holdPerWrite: boolean;
  /** Phases after `go`'s start time: warm-up, measure (writes, latency, CPU), trace (DLWA). */
  warmupMs: number;
  durationMs: number;
  traceMs: number;
  /** Bound on writes per stream, whatever the clock says. */
  maxWritesPerStream: number;
  /** Persist-trace records (and acked-offset records) kept per thread, from the start of the trace phase. */
  traceCap: number;
  /** Time every latencyEvery-th write of the measure phase (into an HDR histogram, bench/hist.ts). */
  latencyEvery: number;
  /** share: the sending node's shared log (one node = this process). */
  sharedLog: SharedArrayBuffer | null;
  /** rwrite/batch: each stream's log starts at a random 256 B-aligned offset below this in its first region. */
  firstRegionSkipMax: number;
  /** Owner id of one-sided regions: stream id + this (rwrite/batch), or this (share). */
  ownerBase: number;
  seed: number;
}

export interface TraceArrays {
  addrs: Float64Array;
  lens: Uint32Array;
  times: Float64Array;
  /** The cap was reached: the trace covers only the start of the measurement. */
  capped: boolean;
}

export interface CellResult {
  thread: number;
  /** Writes issued in the measure phase (and acknowledged). */
  writes: number;
  /** The measure phase (ms). */
  windowMs: number;
  /** Wall time between the two CPU-time readings (the measure phase as this thread saw it). */
  cpuWindowMs: number;
  /** CPU time this thread ran in that time, and time it was runnable but waiting for a CPU. */
  cpuMs: number;
  waitMs: number;
  /** tcp, thread 0: CPU time of the nic thread during the window. */
  nicCpuMs: number;
  /** Issue -> ack latencies of the timed writes: an HDR histogram, encoded (LatencyHistogram.encode). */
  latHist: string;
  /** Every persist this thread issued (shm) in the trace phase, up to traceCap. */
  persists: TraceArrays;
  /** Every acked offset, in ack order (the tcp stand-in for the NIC's persist trace). */
  acks: TraceArrays;
  logIds: string[];
  stats: ReplicationStreamStats;
  retries: number;
  noBufferWaits: number;
}

export type ToSender = { type: 'cell'; cell: CellSpec } | { type: 'go'; startAt: number } | { type: 'exit' };

export type FromSender =
  | { type: 'ready' }
  | { type: 'prepared' }
  | { type: 'retired'; segments: number[] }
  | { type: 'result'; result: CellResult }
  | { type: 'error'; code: string; message: string };
