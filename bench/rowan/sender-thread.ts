// A sender thread of the Rowan benchmark (bench/rowan.bench.ts): one worker_thread playing the worker
// threads of a sending node. Per cell it opens its share of the write streams on one connection to the
// receiver, prepares them (first regions allocated, outside the measurement), keeps `depth` writes in
// flight per stream (issue, await the ack, issue again) through the cell's phases (Window), and reports
// throughput, issue->ack latencies and its CPU time from the measure phase, and from the trace phase
// its persist trace (shm: every persist this thread issued into the receiver's pool) and its acked
// offsets in ack order (tcp). See drive() for how streams are scheduled.
import { readFileSync } from 'node:fs';
import { parentPort, workerData } from 'node:worker_threads';
import { ShmConnection } from '../../runtime/fabric/shm.js';
import { SharedLog, openReplicationStream, emptyStreamStats, type ReplicationStream } from '../../actors/baselines/replication-writers.js';
import type { RowanConnection } from '../../runtime/fabric/fabric.js';
import { rng } from '../dlwa/streams.js';
import { LatencyHistogram } from '../hist.js';
import { entryOfSize } from './entry.js';
import type { CellResult, CellSpec, FromSender, SenderInit, ToSender } from './protocol.js';
import { connectTcp } from './tcp-connect.js';
import { WindowTrace } from './window-trace.js';

/**
 * A cell's phases on this thread's clock: warm-up, then [measureFrom, traceFrom) counts writes,
 * samples latencies and CPU time, then [traceFrom, endAt) records the persist trace (and acked
 * offsets) for the DLWA model. Tracing costs a clock read per persist, so it gets its own phase and
 * does not slow the writes that are counted.
 */
interface Window {
  measureFrom: number;
  traceFrom: number;
  endAt: number;
  phase: 'warmup' | 'measure' | 'trace';
  writes: number;
  /** Every latencyEvery-th write issued in the measure phase is timed (a clock read costs ~0.1 µs). */
  latencyEvery: number;
  lat: LatencyHistogram;
  cpu0: Schedstat;
  nic0: Schedstat;
  cpu: Schedstat;
  nic: Schedstat;
  cpuFrom: number;
  cpuTo: number;
}

/** Nanoseconds a thread ran on a CPU, and waited runnable for one (/proc/<...>/schedstat). */
interface Schedstat {
  runNs: number;
  waitNs: number;
}

function schedstat(path: string | null): Schedstat {
  if (path === null) return { runNs: 0, waitNs: 0 };
  const [run, wait] = readFileSync(path, 'utf8').split(' ');
  return { runNs: Number(run), waitNs: Number(wait) };
}

const init = workerData as SenderInit;
const port = parentPort!;
const persists = new WindowTrace();
const acks = new WindowTrace();
const selfStat = '/proc/thread-self/schedstat';
let shm: ShmConnection | null = null;
/** The same, landing with a hold per write (cells with holdPerWrite). */
let shmHeldPerWrite: ShmConnection | null = null;
let tcp: RowanConnection | null = null;
let go: ((startAt: number) => void) | null = null;

async function connection(c: CellSpec): Promise<RowanConnection> {
  if (c.fabric === 'shm' && c.holdPerWrite) {
    return (shmHeldPerWrite ??= ShmConnection.connect(init.dataDir, { trace: persists, senderId: init.thread, holdPerWrite: true }));
  }
  if (c.fabric === 'shm') return (shm ??= ShmConnection.connect(init.dataDir, { trace: persists, senderId: init.thread }));
  if (!init.tcp) throw new Error('tcp cell without a nic endpoint');
  return (tcp ??= await connectTcp(init.tcp, { senderId: init.thread }));
}

/**
 * Drive the streams in event-loop turns: each turn (a setImmediate) issues one write on every idle
 * slot (a stream has `depth` slots), all back to back, as a worker issues the writes of its ready
 * coroutines; an ack frees its slot for the next turn. Turns leave the event loop between them, so
 * timers, polls and socket reads (region waits, batch deadlines, tcp acks) run as they would in a
 * worker; coroutine loops of pure microtasks would starve them whenever writes complete synchronously
 * (shm). Latency is issue -> ack: on shm that includes the rest of the turn's issuing, the queueing a
 * write sees behind the other writes in flight on its CPU. With `burst`, a turn's writes are all
 * issued at the turn's start and land synchronously one after another (tryWrite); each one's latency
 * runs from the turn's start to its landing.
 */
function drive(streams: ReplicationStream[], bytes: Uint8Array[], c: CellSpec, w: Window): Promise<void> {
  const recordAcks = c.fabric === 'tcp';
  const burst = c.burst && c.fabric === 'shm' && c.mode === 'rowan' ? shm : null;
  const nicPath = recordAcks && init.thread === 0 && init.nicTid !== null ? `/proc/self/task/${init.nicTid}/schedstat` : null;
  return new Promise((resolve, reject) => {
    // A slot is one write in flight: stream k % n, `depth` slots per stream. Each slot's ack handler
    // and issue state are made once per cell, so issuing a write allocates nothing of the bench's own.
    const n = streams.length;
    const slots = n * c.depth;
    const slotPhase: Window['phase'][] = new Array<Window['phase']>(slots).fill('warmup');
    const slotT0 = new Float64Array(slots);
    let idle: number[] = [];
    let spare: number[] = [];
    for (let i = 0; i < n; i++) for (let d = 0; d < c.depth; d++) idle.push(d * n + i);
    let inflight = 0;
    let armed = false;
    let done = false;
    let budget = c.maxWritesPerStream * n;
    let issued = 0;
    const arm = (): void => {
      if (!armed && !done) {
        armed = true;
        setImmediate(turn);
      }
    };
    /** An ack of the write slot k issued at t0 in phase `ph` (t0 < 0: not timed). */
    const acked = (k: number, ph: Window['phase'], t0: number, at: number): void => {
      if (ph === 'measure') {
        w.writes++;
        if (t0 >= 0) w.lat.recordUs((performance.now() - t0) * 1000);
      } else if (ph === 'trace' && recordAcks) acks.record(at, bytes[k % n]!.length);
      idle.push(k);
    };
    const onAck = Array.from({ length: slots }, (_, k) => (at: number): void => {
      inflight--;
      acked(k, slotPhase[k]!, slotT0[k]!, at);
      if (done) {
        if (inflight === 0) resolve();
      } else arm();
    });
    const endMeasure = (): void => {
      w.cpu = schedstat(selfStat);
      w.nic = schedstat(nicPath);
      w.cpuTo = performance.now();
    };
    const finish = (): void => {
      done = true;
      persists.enabled = false;
      acks.enabled = false;
      if (w.phase === 'measure') endMeasure();
      if (inflight === 0) resolve();
    };
    const turn = (): void => {
      armed = false;
      const now = performance.now();
      if (now >= w.endAt || budget <= 0) return finish();
      if (w.phase === 'warmup' && now >= w.measureFrom) {
        w.phase = 'measure';
        w.cpu0 = schedstat(selfStat);
        w.nic0 = schedstat(nicPath);
        w.cpuFrom = performance.now();
      }
      if (w.phase === 'measure' && now >= w.traceFrom) {
        endMeasure();
        w.phase = 'trace';
        persists.enabled = true;
        acks.enabled = true;
      }
      const ph = w.phase;
      // Acks during this turn go to the other list.
      const ready = idle;
      idle = spare;
      for (let r = 0; r < ready.length; r++) {
        const k = ready[r]!;
        const i = k % n;
        const timed = ph === 'measure' && issued++ % w.latencyEvery === 0;
        const t0 = !timed ? -1 : burst ? now : performance.now();
        budget--;
        if (burst) {
          const at = burst.tryWrite(bytes[i]!);
          if (at >= 0) {
            acked(k, ph, t0, at);
            continue;
          }
        }
        inflight++;
        slotPhase[k] = ph;
        slotT0[k] = t0;
        streams[i]!.write(bytes[i]!).then(onAck[k], reject);
      }
      ready.length = 0;
      spare = ready;
      if (idle.length > 0) arm();
    };
    arm();
  });
}

async function runCell(c: CellSpec): Promise<CellResult> {
  const conn = await connection(c);
  persists.reset(c.traceCap);
  acks.reset(c.traceCap);
  const before = conn.stats();
  const retired: number[] = [];
  const sharedLog = c.sharedLog ? SharedLog.attach(c.sharedLog) : undefined;
  const streams = c.streamIds.map((id) => {
    const r = rng(c.seed * 1009 + id + 1);
    return openReplicationStream(c.mode, conn, {
      ownerId: c.mode === 'share' ? c.ownerBase : c.ownerBase + id,
      onRegionRetired: (reg) => retired.push(reg.segment),
      firstRegionSkipBytes: Math.floor(r() * (c.firstRegionSkipMax / 256)) * 256,
      ...(sharedLog ? { sharedLog } : {}),
    });
  });
  for (const s of streams) await s.prepare();
  const bytes = c.streamIds.map((id) => entryOfSize(id, c.writeBytes));
  const started = new Promise<number>((r) => (go = r));
  post({ type: 'prepared' });
  const startAt = await started;
  // Performance clocks of threads differ in origin; start times cross threads as epoch ms.
  const local = (epochMs: number) => epochMs - performance.timeOrigin;
  const zero = { runNs: 0, waitNs: 0 };
  const w: Window = {
    measureFrom: local(startAt + c.warmupMs),
    traceFrom: local(startAt + c.warmupMs + c.durationMs),
    endAt: local(startAt + c.warmupMs + c.durationMs + c.traceMs),
    phase: 'warmup',
    writes: 0,
    latencyEvery: c.latencyEvery,
    lat: LatencyHistogram.create(),
    cpu0: zero,
    nic0: zero,
    cpu: zero,
    nic: zero,
    cpuFrom: 0,
    cpuTo: 0,
  };
  const wait = local(startAt) - performance.now();
  if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  await drive(streams, bytes, c, w);
  const stats = emptyStreamStats();
  for (const s of streams) {
    const st = s.stats();
    for (const k of Object.keys(stats) as Array<keyof typeof stats>) stats[k] += st[k];
  }
  for (const s of streams) await s.close();
  if (retired.length) post({ type: 'retired', segments: retired.splice(0) });
  const after = conn.stats();
  return {
    thread: init.thread,
    writes: w.writes,
    windowMs: c.durationMs,
    cpuWindowMs: w.cpuTo - w.cpuFrom,
    cpuMs: (w.cpu.runNs - w.cpu0.runNs) / 1e6,
    waitMs: (w.cpu.waitNs - w.cpu0.waitNs) / 1e6,
    nicCpuMs: (w.nic.runNs - w.nic0.runNs) / 1e6,
    latHist: w.lat.encode(),
    persists: persists.take(),
    acks: acks.take(),
    logIds: [...new Set(streams.map((s) => s.logId))],
    stats,
    retries: after.retries - before.retries,
    noBufferWaits: after.noBufferWaits - before.noBufferWaits,
  };
}

function post(m: FromSender, transfer: ArrayBuffer[] = []): void {
  port.postMessage(m, transfer);
}

port.on('message', (m: ToSender) => {
  if (m.type === 'exit') {
    void Promise.all([shm?.close(), shmHeldPerWrite?.close(), tcp?.close()]).finally(() => process.exit(0));
    return;
  }
  if (m.type === 'go') {
    go?.(m.startAt);
    go = null;
    return;
  }
  runCell(m.cell).then(
    (result) => {
      const bufs = [...Object.values(result.persists), ...Object.values(result.acks)]
        .filter((a): a is Float32Array | Float64Array | Uint32Array => ArrayBuffer.isView(a))
        .map((a) => a.buffer as ArrayBuffer);
      post({ type: 'result', result }, bufs);
    },
    (err: Error & { code?: string }) => post({ type: 'error', code: err.code ?? 'ERR', message: err.stack ?? err.message }),
  );
});
try {
  shm = ShmConnection.connect(init.dataDir, { trace: persists, senderId: init.thread });
  post({ type: 'ready' });
} catch (err) {
  const e = err as Error & { code?: string };
  post({ type: 'error', code: e.code ?? 'ERR', message: e.stack ?? e.message });
}
