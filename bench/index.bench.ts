// Shard index throughput (§5.3): get and upsert ops/s on ~1 M keys in a table sized for them
// (ShardIndex.optionsFor, ~60 % primary load), with 1 thread (tinybench, batches of BATCH ops) and with
// 2 worker_threads attached to the same SharedArrayBuffer (fixed op count each; aggregate ops/s =
// all ops / wall time from the first start to the last finish).
//
// Hashes are precomputed (the `hash64` row prices hashing on its own), so index rows measure the
// table. The "log" is a SharedArrayBuffer of (keyId, version) records, two per key used ping-pong by
// upserts; in the 2-thread upsert run each thread updates only its own half of the keys (as digest
// threads own disjoint shards), while gets range over all keys.
// Runnable alone: node dist/bench/index.bench.js
import { Worker, isMainThread, workerData, parentPort } from 'node:worker_threads';
import { performance } from 'node:perf_hooks';
import { Bench } from 'tinybench';
import { ShardIndex, type EntryReader } from '../shm/index.js';
import { hash64Into } from '../shm/hash.js';
import { formatTable, recordParams, type Row } from './report.js';

const KEYS = 1 << 20;
const KEY_BYTES = 16;
const BATCH = 10_000;
const WORKER_OPS = { get: 3_000_000, upsert: 1_500_000 };
const ROLE = 'rowan-index-bench';

/** Everything a bench thread needs, all in SharedArrayBuffers. */
interface Shared {
  indexSab: SharedArrayBuffer;
  hashSab: SharedArrayBuffer; // per key: hi, lo
  recSab: SharedArrayBuffer; // per record (2 per key): keyId, version
  stateSab: SharedArrayBuffer; // per key: current version (the record parity is version & 1)
}

interface WorkerJob extends Shared {
  role: typeof ROLE;
  op: 'get' | 'upsert';
  ops: number;
  thread: number;
  threads: number;
  seed: number;
}

/** Record r lives at pool offset (r + 1) * 64: 64-byte aligned, never 0. */
const addrOf = (rec: number): number => (rec + 1) * 64;

class BenchLog implements EntryReader {
  private readonly recs: Int32Array;
  constructor(sab: SharedArrayBuffer) {
    this.recs = new Int32Array(sab);
  }
  keyEquals(addr: number, key: Uint8Array): boolean {
    const id = key[8]! | (key[9]! << 8) | (key[10]! << 16) | (key[11]! << 24);
    return this.recs[((addr >>> 6) - 1) * 2] === id;
  }
  versionAt(addr: number): number {
    return this.recs[((addr >>> 6) - 1) * 2 + 1]!;
  }
  write(rec: number, keyId: number, version: number): void {
    this.recs[rec * 2] = keyId;
    // Plain stores then the index CAS (seq-cst) publish the record to other threads.
    this.recs[rec * 2 + 1] = version;
  }
}

/** One thread's view: index attachment, reader, scratch key, and the two ops. */
class Driver {
  readonly ix: ShardIndex;
  readonly log: BenchLog;
  private readonly hashes: Uint32Array;
  private readonly versions: Int32Array;
  private readonly key = new Uint8Array(KEY_BYTES);
  private readonly h = { hi: 0, lo: 0 };
  private rng: number;
  constructor(s: Shared, seed: number) {
    this.ix = ShardIndex.attach(s.indexSab);
    this.log = new BenchLog(s.recSab);
    this.hashes = new Uint32Array(s.hashSab);
    this.versions = new Int32Array(s.stateSab);
    this.key.set(new TextEncoder().encode('rowan-k:'));
    this.rng = seed | 1;
  }
  nextKey(): number {
    let x = this.rng;
    x ^= x << 13; x ^= x >>> 17; x ^= x << 5; // xorshift32
    this.rng = x;
    return (x >>> 0) & (KEYS - 1);
  }
  private setKey(id: number): void {
    const k = this.key;
    k[8] = id & 0xff; k[9] = (id >>> 8) & 0xff; k[10] = (id >>> 16) & 0xff; k[11] = id >>> 24;
    this.h.hi = this.hashes[id * 2]!;
    this.h.lo = this.hashes[id * 2 + 1]!;
  }
  get(id: number): number {
    this.setKey(id);
    return this.ix.get(this.key, this.h, this.log);
  }
  upsert(id: number): string {
    this.setKey(id);
    const v = this.versions[id]! + 1;
    this.versions[id] = v;
    const rec = id * 2 + (v & 1);
    this.log.write(rec, id, v);
    return this.ix.upsert(this.key, this.h, addrOf(rec), v, this.log);
  }
}

function setup(): Shared {
  const ix = ShardIndex.create(ShardIndex.optionsFor(KEYS));
  const s: Shared = {
    indexSab: ix.buffer,
    hashSab: new SharedArrayBuffer(KEYS * 8),
    recSab: new SharedArrayBuffer(KEYS * 2 * 8),
    stateSab: new SharedArrayBuffer(KEYS * 4),
  };
  const hashes = new Uint32Array(s.hashSab);
  const key = new Uint8Array(KEY_BYTES);
  key.set(new TextEncoder().encode('rowan-k:'));
  const h = { hi: 0, lo: 0 };
  for (let id = 0; id < KEYS; id++) {
    key[8] = id & 0xff; key[9] = (id >>> 8) & 0xff; key[10] = (id >>> 16) & 0xff; key[11] = id >>> 24;
    hash64Into(key, h);
    hashes[id * 2] = h.hi;
    hashes[id * 2 + 1] = h.lo;
  }
  const d = new Driver(s, 1);
  for (let id = 0; id < KEYS; id++) if (d.upsert(id) !== 'inserted') throw new Error('prefill: not inserted');
  return s;
}

async function singleThread(s: Shared): Promise<Row[]> {
  const d = new Driver(s, 12345);
  const key = new Uint8Array(KEY_BYTES).fill(7);
  const out = { hi: 0, lo: 0 };
  let sink = 0;
  const bench = new Bench({ time: 700, warmupTime: 150 });
  bench
    .add('hash64', () => {
      for (let i = 0; i < BATCH; i++) { key[8] = i; sink ^= hash64Into(key, out).lo; }
    })
    .add('get', () => {
      for (let i = 0; i < BATCH; i++) sink ^= d.get(d.nextKey());
    })
    .add('upsert', () => {
      for (let i = 0; i < BATCH; i++) d.upsert(d.nextKey());
    });
  await bench.run();
  if (sink === 0.5) console.log(sink); // keep the loops observable
  return bench.tasks.map((t) => {
    const r = t.result as { latency?: { mean: number } };
    return { name: t.name, method: `tinybench, ${BATCH} per call`, threads: 1, opsPerSec: Math.round((BATCH * 1000) / (r.latency?.mean ?? Infinity)) };
  });
}

async function multiThread(s: Shared, op: 'get' | 'upsert', threads: number): Promise<Row> {
  const go = new Int32Array(new SharedArrayBuffer(8)); // [0] go flag, [1] ready count
  const ops = WORKER_OPS[op];
  const workers = Array.from({ length: threads }, (_, thread) => {
    const job: WorkerJob = { ...s, role: ROLE, op, ops, thread, threads, seed: 777 + thread * 31 };
    return new Worker(new URL(import.meta.url), { workerData: { job, go: go.buffer } });
  });
  const done = workers.map(
    (w) =>
      new Promise<{ start: number; end: number }>((resolve, reject) => {
        w.once('message', resolve);
        w.once('error', reject);
      }),
  );
  while (Atomics.load(go, 1) < threads) await new Promise((r) => setTimeout(r, 5));
  // Releases all workers at once.
  Atomics.store(go, 0, 1);
  Atomics.notify(go, 0);
  const times = await Promise.all(done);
  await Promise.all(workers.map((w) => w.terminate()));
  const wall = Math.max(...times.map((t) => t.end)) - Math.min(...times.map((t) => t.start));
  return { name: op, method: `worker_threads, ${ops} each`, threads, opsPerSec: Math.round((ops * threads * 1000) / wall) };
}

function benchWorker(job: WorkerJob, goSab: SharedArrayBuffer): void {
  const d = new Driver(job, job.seed);
  const go = new Int32Array(goSab);
  // Warm the JIT on this thread before the clock starts (reads only, so no effect on the table).
  for (let i = 0; i < 200_000; i++) d.get(d.nextKey());
  Atomics.add(go, 1, 1);
  while (Atomics.load(go, 0) === 0) Atomics.wait(go, 0, 0, 50);
  const start = performance.timeOrigin + performance.now();
  let sink = 0;
  if (job.op === 'get') {
    for (let i = 0; i < job.ops; i++) sink ^= d.get(d.nextKey());
  } else {
    // Each thread updates its own contiguous part of the keys (disjoint ownership, as digest threads
    // own shards; contiguous so the threads' version counters and records share no cache lines).
    const part = KEYS / job.threads;
    for (let i = 0; i < job.ops; i++) d.upsert(job.thread * part + (d.nextKey() % part));
  }
  const end = performance.timeOrigin + performance.now();
  parentPort!.postMessage({ start, end, sink });
}

export async function run(): Promise<Row[]> {
  recordParams({ keys: KEYS, keyBytes: KEY_BYTES, tinybenchBatch: BATCH, workerOps: WORKER_OPS, threads: [1, 2] });
  const s = setup();
  const rows = await singleThread(s);
  for (const op of ['get', 'upsert'] as const) {
    rows.push(await multiThread(s, op, 1));
    rows.push(await multiThread(s, op, 2));
  }
  const st = ShardIndex.attach(s.indexSab).stats();
  console.log(`# index: ${st.items} items, ${st.buckets} buckets, load ${st.loadFactor.toFixed(2)}, max chain ${st.maxChain}, ${(st.bytes / 2 ** 20).toFixed(1)} MiB`);
  return rows;
}

if (!isMainThread && (workerData as { job?: WorkerJob } | null)?.job?.role === ROLE) {
  const w = workerData as { job: WorkerJob; go: SharedArrayBuffer };
  benchWorker(w.job, w.go);
} else if (isMainThread && import.meta.url === `file://${process.argv[1]}`) {
  run().then((rows) => console.log(formatTable(rows)));
}
