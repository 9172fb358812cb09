// Request latency histograms in a SharedArrayBuffer: each worker actor records its requests in its own
// slot (one writer per slot, so plain loads and stores suffice; Atomics make them visible), and the
// node's main thread sums the slots for /metrics and `rowan status`. Buckets are Prometheus-style upper
// bounds in seconds; recording is an index computation and three stores: no allocation per request.
//
//   slot w (one per worker), op o (one per request kind):
//   +------------------------------------------+-----------+---------------------------+
//   | Int32 counts[BUCKETS.length + 1] (+Inf)  | Int32 err | Float64 sum of seconds    |
//   +------------------------------------------+-----------+---------------------------+

/** Upper bounds in seconds (le), the last bucket is +Inf. */
export const LATENCY_BUCKETS_S = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5] as const;

const COUNTS = LATENCY_BUCKETS_S.length + 1;
/** Int32 words of one (slot, op) cell: counts, errors, one pad word, then the Float64 sum (8-aligned). */
const CELL_I32 = COUNTS + 2 + 2 + ((COUNTS + 2) % 2);
const ERR = COUNTS;
const SUM_I32 = CELL_I32 - 2;

export interface HistogramSnapshot {
  /** Cumulative counts per bucket, the last one +Inf (= count). */
  cumulative: number[];
  count: number;
  errors: number;
  sumSeconds: number;
}

export class RequestHistograms {
  private readonly i32: Int32Array;
  private readonly f64: Float64Array;

  static bytes(slots: number, ops: number): number {
    return slots * ops * CELL_I32 * 4;
  }

  static create(slots: number, ops: number): RequestHistograms {
    return new RequestHistograms(new SharedArrayBuffer(RequestHistograms.bytes(slots, ops)), slots, ops);
  }

  constructor(readonly buffer: SharedArrayBuffer, readonly slots: number, readonly ops: number) {
    this.i32 = new Int32Array(buffer);
    this.f64 = new Float64Array(buffer);
  }

  private cell(slot: number, op: number): number {
    return (slot * this.ops + op) * CELL_I32;
  }

  /** Record one request of `op` that took `seconds` (slot: this worker's; one writer per slot). */
  record(slot: number, op: number, seconds: number, ok: boolean): void {
    const c = this.cell(slot, op);
    let b = 0;
    while (b < LATENCY_BUCKETS_S.length && seconds > LATENCY_BUCKETS_S[b]!) b++;
    // Single writer: load, add, store; the stores publish to the main thread's loads.
    Atomics.store(this.i32, c + b, Atomics.load(this.i32, c + b) + 1);
    if (!ok) Atomics.store(this.i32, c + ERR, Atomics.load(this.i32, c + ERR) + 1);
    this.f64[(c + SUM_I32) / 2] = this.f64[(c + SUM_I32) / 2]! + seconds; // a reader may see it one request late
  }

  /** Sum over every slot for `op`. */
  snapshot(op: number): HistogramSnapshot {
    const per = new Array<number>(COUNTS).fill(0);
    let errors = 0;
    let sum = 0;
    for (let s = 0; s < this.slots; s++) {
      const c = this.cell(s, op);
      for (let b = 0; b < COUNTS; b++) per[b]! += Atomics.load(this.i32, c + b);
      errors += Atomics.load(this.i32, c + ERR);
      sum += this.f64[(c + SUM_I32) / 2]!;
    }
    const cumulative: number[] = [];
    let acc = 0;
    for (const n of per) cumulative.push((acc += n));
    return { cumulative, count: acc, errors, sumSeconds: sum };
  }
}
