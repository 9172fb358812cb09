// One end of the ring benchmark (bench/ring.bench.ts) and of the cross-thread ring test: a worker
// thread pinned to one CPU that produces or consumes `count` PING records numbered 0..count-1, either
// through a SAB ring (the actors' mailbox path: Outbox/Inbox + doorbell + pump) or through a
// MessagePort (postMessage), and reports its timestamps. The consumer checks order and loss.
import { MessageChannel, Worker, parentPort, type MessagePort } from 'node:worker_threads';
import { schedGetaffinity, schedSetaffinity } from '../native/libc.js';
import { Doorbell, Inbox, Outbox, RecordKind, type RingMessage } from '../shm/mailbox.js';
import { Ring, type RingHandle } from '../shm/ring.js';
import { pump } from '../runtime/pump.js';

export interface PeerJob {
  mode: 'ring-produce' | 'ring-consume' | 'port-produce' | 'port-consume';
  cpu: number;
  count: number;
  batch: number;
  ring?: RingHandle;
  bell?: SharedArrayBuffer;
  port?: MessagePort;
}

export interface PeerResult {
  cpus: number[];
  /** process.hrtime.bigint() at the first send / last receive, as ns numbers (same clock in all threads). */
  startNs: number;
  endNs: number;
  received: number;
  /** First out-of-order or missing sequence number seen, -1 if none. */
  firstBadSeq: number;
}

const now = () => Number(process.hrtime.bigint());

async function ringProduce(j: PeerJob): Promise<Partial<PeerResult>> {
  const out = new Outbox('consumer', new Ring(j.ring!), new Doorbell(j.bell!));
  const startNs = now();
  for (let seq = 0; seq < j.count; ) {
    const end = Math.min(j.count, seq + j.batch);
    for (; seq < end; seq++) out.append({ kind: RecordKind.PING, seq });
    if (!out.flush()) await out.flushWhenRoom();
  }
  return { startNs, endNs: now() };
}

async function ringConsume(j: PeerJob): Promise<Partial<PeerResult>> {
  const inbox = new Inbox([{ from: 'producer', ring: new Ring(j.ring!) }], new Doorbell(j.bell!));
  let received = 0;
  let firstBadSeq = -1;
  let endNs = 0;
  const dispatch = (m: RingMessage) => {
    if (m.kind !== RecordKind.PING || m.seq !== received) {
      if (firstBadSeq < 0) firstBadSeq = received;
    }
    if (++received === j.count) endNs = now();
  };
  await pump(inbox, { dispatch, stopping: () => received >= j.count });
  return { received, firstBadSeq, endNs };
}

function portProduce(j: PeerJob): Partial<PeerResult> {
  const port = j.port!;
  const startNs = now();
  for (let seq = 0; seq < j.count; ) {
    if (j.batch === 1) {
      port.postMessage({ kind: RecordKind.PING, seq: seq++ });
      continue;
    }
    const end = Math.min(j.count, seq + j.batch);
    const msgs: { kind: number; seq: number }[] = [];
    for (; seq < end; seq++) msgs.push({ kind: RecordKind.PING, seq });
    port.postMessage(msgs);
  }
  return { startNs, endNs: now() };
}

function portConsume(j: PeerJob): Promise<Partial<PeerResult>> {
  const port = j.port!;
  let received = 0;
  let firstBadSeq = -1;
  return new Promise((resolve) => {
    const take = (m: { kind: number; seq: number }) => {
      if (m.seq !== received && firstBadSeq < 0) firstBadSeq = received;
      received++;
    };
    port.on('message', (m: { kind: number; seq: number } | { kind: number; seq: number }[]) => {
      if (Array.isArray(m)) for (const x of m) take(x);
      else take(m);
      if (received >= j.count) {
        port.close();
        resolve({ received, firstBadSeq, endNs: now() });
      }
    });
  });
}

if (parentPort) {
  const parent = parentPort;
  parent.once('message', async (j: PeerJob) => {
    schedSetaffinity(0, [j.cpu]);
    const cpus = schedGetaffinity(0);
    parent.postMessage({ ready: true, cpus });
    await new Promise((r) => parent.once('message', r)); // "go": both ends are pinned and waiting
    // A pending Atomics.waitAsync does not keep a thread alive; this timer does until the job is done.
    const keepAlive = setInterval(() => {}, 1 << 30);
    const r =
      j.mode === 'ring-produce' ? await ringProduce(j)
      : j.mode === 'ring-consume' ? await ringConsume(j)
      : j.mode === 'port-produce' ? portProduce(j)
      : await portConsume(j);
    clearInterval(keepAlive);
    parent.postMessage({ cpus, startNs: 0, endNs: 0, received: 0, firstBadSeq: -1, ...r } satisfies PeerResult);
    parent.close();
  });
}

export interface PairResult {
  msgsPerSec: number;
  producer: PeerResult;
  consumer: PeerResult;
}

/**
 * Run `count` messages from a producer thread pinned to cpus[0] to a consumer pinned to cpus[1], through
 * a ring (`ring`, `ringWords` capacity) or a MessagePort (`port`). Rate = count / (last receive - first send).
 */
export async function runPair(
  via: 'ring' | 'port',
  count: number,
  batch: number,
  cpus: [number, number],
  ringWords = 16384,
): Promise<PairResult> {
  const entry = new URL('./ring-peer.js', import.meta.url);
  const jobs: PeerJob[] = [
    { mode: via === 'ring' ? 'ring-consume' : 'port-consume', cpu: cpus[1], count, batch },
    { mode: via === 'ring' ? 'ring-produce' : 'port-produce', cpu: cpus[0], count, batch },
  ];
  const transfer: MessagePort[][] = [[], []];
  if (via === 'ring') {
    const ring = Ring.create(ringWords);
    const bell = new Doorbell();
    for (const j of jobs) Object.assign(j, { ring: ring.handle, bell: bell.sab });
  } else {
    const ch = new MessageChannel();
    jobs[0]!.port = ch.port1;
    jobs[1]!.port = ch.port2;
    transfer[0] = [ch.port1];
    transfer[1] = [ch.port2];
  }
  const workers = jobs.map(() => new Worker(entry));
  try {
    const ready = workers.map((w) => new Promise((r, f) => (w.once('message', r), w.once('error', f))));
    workers.forEach((w, i) => w.postMessage(jobs[i], transfer[i]));
    await Promise.all(ready);
    const done = workers.map((w) => new Promise<PeerResult>((r, f) => (w.once('message', r), w.once('error', f))));
    for (const w of workers) w.postMessage('go');
    const [consumer, producer] = (await Promise.all(done)) as [PeerResult, PeerResult];
    const seconds = (consumer.endNs - producer.startNs) / 1e9;
    return { msgsPerSec: count / seconds, producer, consumer };
  } finally {
    await Promise.all(workers.map((w) => w.terminate()));
  }
}
