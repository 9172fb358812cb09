// Command-line options of the Rowan benchmark and the cells they expand to.
import { REPLICATION_MODES, type ReplicationMode } from '../../actors/baselines/replication-writers.js';
import type { BenchFabric } from './protocol.js';

export interface RowanBenchOptions {
  quick: boolean;
  streams: number[];
  sizes: number[];
  modes: ReplicationMode[];
  /** Writes in flight per stream in the main sweep. */
  depth: number;
  /** Extra cells at 144 streams with this many writes in flight per stream (0: none), see cellsOf. */
  deepDepth: number;
  tcp: boolean;
  /** Also measure Rowan over shm through tryWrite bursts (the landing without the promise layer). */
  burst: boolean;
  warmupMs: number;
  durationMs: number;
  traceMs: number;
  traceCap: number;
  latencyEvery: number;
  /** A cell whose sender threads waited for a CPU more than this share of the time is run again... */
  noisyWaitPct: number;
  /** ...at most this many more times (the machine is shared; the least disturbed run is kept). */
  noisyRetries: number;
  /** With a number: the receiver's pool runs the Optane media model (pm.media optane) at this media
   *  write bandwidth per DIMM, MB/s, and each row reports the model's DLWA and wait. null: no model. */
  mediaMBps: number | null;
  /** Sender worker_threads (one sending node); the streams are spread over them round-robin. */
  senderThreads: number;
  /** Run every cell once (at most 36 streams), unmeasured, before the measured cells. */
  warmUp: boolean;
  /** Also measure Rowan over shm with a hold per write (the landing before keepHolds, srq.ts) beside it. */
  holdPerWrite: boolean;
}

export const USAGE =
  'node dist/bench/rowan.bench.js [--quick] [--duration=ms] [--streams=1,8,36,72,144] [--sizes=64,128] ' +
  '[--modes=rowan,rwrite,share,batch (or tailwind)] [--depth=n] [--deep-depth=n] [--no-tcp] [--no-burst] [--retries=n] [--media-mbps=n] [--sender-threads=n] [--warm-up] [--hold-per-write]';

const FIGURE8_MODES: readonly ReplicationMode[] = ['rowan', 'rwrite', 'share', 'batch'];

export function parseOptions(argv: string[]): RowanBenchOptions {
  const flag = (name: string) => argv.find((a) => a === `--${name}` || a.startsWith(`--${name}=`))?.split('=')[1];
  const list = (name: string) => flag(name)?.split(',').filter(Boolean);
  const num = (name: string, dflt: number) => {
    const v = Number(flag(name) ?? dflt);
    if (!Number.isFinite(v) || v < 0) throw new Error(`--${name} wants a non-negative number; usage: ${USAGE}`);
    return v;
  };
  const quick = argv.includes('--quick') || process.env.ROWAN_BENCH_QUICK === '1';
  // By default the modes of the paper's Figure 8; the others (tailwind) when --modes names them.
  const modes = (list('modes') ?? FIGURE8_MODES) as ReplicationMode[];
  for (const m of modes) if (!REPLICATION_MODES.includes(m)) throw new Error(`unknown mode ${m}; usage: ${USAGE}`);
  const o: RowanBenchOptions = {
    quick,
    streams: (list('streams') ?? ['1', '8', '36', '72', '144']).map(Number),
    sizes: (list('sizes') ?? ['64', '128']).map(Number),
    modes,
    depth: Math.max(1, num('depth', 1)),
    deepDepth: num('deep-depth', 4),
    tcp: !argv.includes('--no-tcp') && process.env.ROWAN_BENCH_TCP !== 'off',
    burst: !argv.includes('--no-burst') && modes.includes('rowan'),
    warmupMs: quick ? 60 : 150,
    durationMs: num('duration', quick ? 200 : 600),
    traceMs: quick ? 100 : 250,
    traceCap: quick ? 100_000 : 300_000,
    latencyEvery: 4,
    noisyWaitPct: 50,
    noisyRetries: num('retries', quick ? 1 : 2),
    mediaMBps: flag('media-mbps') === undefined ? null : num('media-mbps', 2000),
    senderThreads: Math.max(1, num('sender-threads', 2)),
    warmUp: argv.includes('--warm-up'),
    holdPerWrite: argv.includes('--hold-per-write') && modes.includes('rowan'),
  };
  for (const n of [...o.streams, ...o.sizes]) if (!Number.isInteger(n) || n < 1) throw new Error(`bad stream count or size ${n}; usage: ${USAGE}`);
  for (const b of o.sizes) if (b % 64 !== 0) throw new Error(`write sizes are whole 64 B strides, got ${b}`);
  return o;
}

export interface Cell {
  fabric: BenchFabric;
  mode: ReplicationMode;
  /** How writes are issued: ReplicationStream.write, or ShmConnection.tryWrite bursts. */
  api: 'write' | 'tryWrite';
  bytes: number;
  streams: number;
  depth: number;
  /** rowan over shm: the lander's holds, one per buffer and event-loop turn (the default) or one per write. */
  holds?: 'turn' | 'write';
}

/**
 * The sweep: for each size and stream count, every mode over shm (Rowan twice: through write() and
 * through tryWrite bursts) and Rowan over tcp, back to back so they compare as ratios. Then, at the
 * largest stream count, rwrite/batch/rowan again with deepDepth writes in flight per stream: with one
 * write in flight a batch can only ever hold one write, so this is where batching has something to do.
 */
export function cellsOf(o: RowanBenchOptions, tcp: boolean): Cell[] {
  const cells: Cell[] = [];
  for (const bytes of o.sizes) {
    for (const streams of o.streams) {
      for (const mode of o.modes) {
        cells.push({ fabric: 'shm', mode, api: 'write', bytes, streams, depth: o.depth });
        if (mode === 'rowan' && o.holdPerWrite) cells.push({ fabric: 'shm', mode, api: 'write', bytes, streams, depth: o.depth, holds: 'write' });
        if (mode === 'rowan' && o.burst) cells.push({ fabric: 'shm', mode, api: 'tryWrite', bytes, streams, depth: o.depth });
      }
      if (tcp) cells.push({ fabric: 'tcp', mode: 'rowan', api: 'write', bytes, streams, depth: o.depth });
    }
  }
  if (o.deepDepth > o.depth) {
    const streams = Math.max(...o.streams);
    for (const bytes of o.quick ? o.sizes.slice(0, 1) : o.sizes) {
      for (const mode of (['rowan', 'rwrite', 'batch'] as const).filter((m) => o.modes.includes(m))) {
        cells.push({ fabric: 'shm', mode, api: 'write', bytes, streams, depth: o.deepDepth });
      }
    }
  }
  return cells;
}
