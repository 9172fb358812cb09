// What one replicated write costs in CPU, Rowan's landing beside Share-KV's append (issue 29), measured
// where the shared machine disturbs it least: the modes take turns, round after round, so a disturbance
// falls on all of them alike. --threads=1: one thread runs the receiver (its control loop, posting zeroed
// segments) and the sender, so every cost of both sides is in its CPU time. --threads=N: N sender
// worker_threads write at once (the main thread is the receiver, not counted), so the words all senders
// share (the queue's cursor and holds; share's cursor) move between cores as in the microbenchmark. Per write: the
// stream's write() (rowan: reserve, copy, persist, complete; share: atomic add on the node's cursor,
// copy, persist, and the regions it allocates and zeroes) and its promise, 144 writes in flight per
// batch. Modes: rowan (holds kept for the turn, the default), rowan with a hold per write
// (ShmConnectOptions.holdPerWrite: the landing before issue 29), share.
//
//   node dist/bench/rowan/landing-cost.js [--size=64] [--rounds=7] [--writes=300000] [--threads=1]
//
// Prints, per mode, the median over rounds of CPU ns per write (the writing threads' run time from
// /proc/thread-self/schedstat, summed, over the writes of all of them) and each mode's ratio to share.
import { readFileSync } from 'node:fs';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { ShmConnection } from '../../runtime/fabric/shm.js';
import { SharedLog, openReplicationStream, type ReplicationStream } from '../../actors/baselines/replication-writers.js';
import { BenchReceiver } from './receiver.js';
import { entryOfSize } from './entry.js';

const arg = (name: string, dflt: number) => Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? dflt);
const INFLIGHT = 144;
const MODES = ['rowan', 'rowan, hold per write', 'share'] as const;
type Mode = (typeof MODES)[number];

const runNs = () => Number(readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ')[0]);

/** A sender: one stream per mode on connections of its own (share: the node's one log, `shareLog`). */
class Sender {
  readonly streams: Record<Mode, ReplicationStream>;
  readonly retired: number[] = [];
  private readonly bytes: Uint8Array;

  constructor(dataDir: string, id: number, shareLog: SharedArrayBuffer, size: number) {
    this.bytes = entryOfSize(id + 1, size);
    this.streams = {
      rowan: openReplicationStream('rowan', ShmConnection.connect(dataDir, { senderId: 3 * id }), { ownerId: 1 }),
      'rowan, hold per write': openReplicationStream('rowan', ShmConnection.connect(dataDir, { senderId: 3 * id + 1, holdPerWrite: true }), { ownerId: 1 }),
      share: openReplicationStream('share', ShmConnection.connect(dataDir, { senderId: 3 * id + 2 }), {
        ownerId: 1000,
        sharedLog: SharedLog.attach(shareLog),
        onRegionRetired: (r) => this.retired.push(r.segment),
      }),
    };
  }

  /** CPU ns this thread ran for `writes` writes of `mode`, INFLIGHT at a time; `pause` every 16 batches. */
  async round(mode: Mode, writes: number, pause: () => Promise<void>): Promise<number> {
    const s = this.streams[mode];
    const batch = new Array<Promise<number>>(INFLIGHT);
    const t0 = runNs();
    for (let done = 0; done < writes; done += INFLIGHT) {
      for (let i = 0; i < INFLIGHT; i++) batch[i] = s.write(this.bytes);
      await Promise.all(batch);
      if ((done / INFLIGHT) % 16 === 0) await pause();
    }
    return runNs() - t0;
  }
}

const yieldTurn = () => new Promise<void>((r) => setImmediate(r));

if (!isMainThread) {
  const d = workerData as { dataDir: string; id: number; shareLog: SharedArrayBuffer; size: number };
  const sender = new Sender(d.dataDir, d.id, d.shareLog, d.size);
  for (const s of Object.values(sender.streams)) await s.prepare();
  parentPort!.on('message', (m: { mode: Mode; writes: number } | 'exit') => {
    if (m === 'exit') process.exit(0);
    void sender.round(m.mode, m.writes, yieldTurn).then((ns) => parentPort!.postMessage({ ns, retired: sender.retired.splice(0) }));
  });
  parentPort!.postMessage('ready');
} else {
  await main();
}

async function main(): Promise<void> {
  const size = arg('size', 64);
  const rounds = arg('rounds', 7);
  const writes = arg('writes', 300_000);
  const threads = arg('threads', 1);
  const rx = new BenchReceiver({ segmentBytes: 1 << 20, segmentCount: 1024 + 64 * threads, preallocate: 64, batch: 16, graceMs: 2 });
  rx.start();
  const shareLog = SharedLog.create({ nodeId: 1 }).buffer;
  let run: (mode: Mode) => Promise<number>;
  let stop = async () => {};
  if (threads <= 1) {
    const sender = new Sender(rx.dataDir, 0, shareLog, size);
    for (const s of Object.values(sender.streams)) await s.prepare();
    const pause = async () => {
      rx.receiver.tick();
      rx.freeRetired(sender.retired.splice(0));
      await yieldTurn();
    };
    run = async (mode) => (await sender.round(mode, writes, pause)) / writes;
  } else {
    const workers = await Promise.all(
      Array.from({ length: threads }, (_, id) => {
        const w = new Worker(new URL(import.meta.url), { workerData: { dataDir: rx.dataDir, id, shareLog, size } });
        return new Promise<Worker>((resolve, reject) => (w.once('message', () => resolve(w)), w.once('error', reject)));
      }),
    );
    run = async (mode) => {
      const done = await Promise.all(
        workers.map((w) => new Promise<{ ns: number; retired: number[] }>((r) => (w.once('message', r), w.postMessage({ mode, writes })))),
      );
      for (const d of done) rx.freeRetired(d.retired);
      return done.reduce((a, d) => a + d.ns, 0) / (writes * threads);
    };
    stop = async () => {
      for (const w of workers) w.postMessage('exit');
    };
  }
  const samples = Object.fromEntries(MODES.map((m) => [m, [] as number[]])) as Record<Mode, number[]>;
  for (let r = 0; r < rounds; r++) for (const m of MODES) samples[m].push(await run(m));
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const share = median(samples.share);
  console.log(`landing cost, ${size} B writes, ${threads} sender thread(s), ${rounds} rounds of ${writes} writes per thread and mode, ${INFLIGHT} in flight per thread; CPU ns per write (median; all rounds):`);
  for (const m of MODES) {
    const xs = samples[m];
    console.log(`  ${m.padEnd(22)} ${median(xs).toFixed(0).padStart(5)} ns  (${(median(xs) / share).toFixed(2)}x share)  [${xs.map((x) => x.toFixed(0)).join(' ')}]`);
  }
  await stop();
  rx.close();
  process.exit(0);
}
