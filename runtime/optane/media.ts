// The Optane media model of `pm.media: optane` (issue 29): every persist into a pool goes through the
// pool's XPBuffer model (./xpbuffer.ts), and the lines that reach the media occupy their DIMM for the
// time the media takes to write them (xplineBytes / dimmWriteMBps, plus a 256 B read first for a
// read-modify-write). A DIMM absorbs a backlog of up to `queueNs` of media time without stalling anyone
// (the write-pending queue and XPBuffer of the ADR domain); beyond that, a persist that touches the
// DIMM waits until the backlog is back within it. So throughput follows media bandwidth / DLWA, and
// persist latency grows with the backlog a write pattern builds, as on the paper's testbed.
//
// The model's state (XPBuffer lines, counters, the DIMMs' busy-until times) is shared words: every
// thread and process mapping the pool maps the same state (./media-file.ts), serialised by a spin lock
// in word 0. Times are ns of the monotonic clock since the state's epoch (shared by all processes).
import { Hdr, HEADER_WORDS, XPBufferModel, dimmWords, optaneParams, resultOf, stateWords, type DlwaResult, type XPBufferParams } from './xpbuffer.js';

export interface MediaTiming {
  /** Media write bandwidth of one DIMM, MB/s (paper §2.1: about 2 GB/s). */
  dimmWriteMBps: number;
  /** Media read bandwidth of one DIMM, MB/s, paid by the read half of a read-modify-write (about 6 GB/s). */
  dimmReadMBps: number;
  /** Media time a DIMM may owe before persists to it wait, at the real 2 GB/s (2 µs: 16 XPLines); at
   *  another dimmWriteMBps it scales with the line time, so the queue holds the same 16 lines. */
  queueNs: number;
}

export const optaneTiming: Readonly<MediaTiming> = Object.freeze({ dimmWriteMBps: 2000, dimmReadMBps: 6000, queueNs: 2000 });

export interface MediaSnapshot extends DlwaResult {
  persists: number;
  /** Modelled media busy time, summed over DIMMs, ms. */
  mediaMs: number;
  /** Time persisting threads waited for the media, summed, ms. */
  waitMs: number;
  /** What bulk persists (segment zeroing) wrote: not in requestBytes/mediaBytes, charged no time. */
  bulkBytes: number;
}

/** Waits shorter than this spin; longer ones sleep on a private cell first (futex slack is ~50 µs). */
const SPIN_NS = 200_000;
const sleepCell = new Int32Array(new SharedArrayBuffer(4));
const LOCK_SPINS = 2000;
const BACKLOG_MAX_NS = 1e9;
/** Persists this long or longer are bulk (see OptaneMedia.bulk): the smallest segment is 64 KiB. */
export const BULK_BYTES = 64 * 1024;

/** Write the parameters into a fresh (zeroed) state's header; the state is then enabled. */
export function initState(state: Float64Array, p: XPBufferParams, t: MediaTiming): void {
  state[Hdr.DIMMS] = p.dimms;
  state[Hdr.BUFFER_BYTES] = p.bufferBytes;
  state[Hdr.INTERLEAVE_BYTES] = p.interleaveBytes;
  state[Hdr.WRITE_MBPS] = t.dimmWriteMBps;
  state[Hdr.READ_MBPS] = t.dimmReadMBps;
  state[Hdr.QUEUE_NS] = t.queueNs;
  state[Hdr.EPOCH_S] = process.hrtime()[0];
  state[Hdr.ENABLED] = 1;
}

export function paramsOf(state: Float64Array): { params: XPBufferParams; timing: MediaTiming } {
  return {
    params: { ...optaneParams, dimms: state[Hdr.DIMMS]!, bufferBytes: state[Hdr.BUFFER_BYTES]!, interleaveBytes: state[Hdr.INTERLEAVE_BYTES]! },
    timing: { dimmWriteMBps: state[Hdr.WRITE_MBPS]!, dimmReadMBps: state[Hdr.READ_MBPS]!, queueNs: state[Hdr.QUEUE_NS]! },
  };
}

export class OptaneMedia {
  readonly model: XPBufferModel;
  private readonly lock: Int32Array;
  private readonly per: number;

  /** The model over a state initState wrote (shared words, or a fresh state for one thread). */
  constructor(readonly state: Float64Array) {
    const { params } = paramsOf(state);
    this.model = new XPBufferModel(params, state);
    this.lock = new Int32Array(state.buffer, state.byteOffset, 2);
    this.per = dimmWords(params);
  }

  /** A model of its own (unit tests, benchmarks without a pool). */
  static fresh(params: Partial<XPBufferParams> = {}, timing: Partial<MediaTiming> = {}): OptaneMedia {
    const p = { ...optaneParams, ...params };
    const state = new Float64Array(stateWords(p));
    initState(state, p, { ...optaneTiming, ...timing });
    return new OptaneMedia(state);
  }

  get timing(): MediaTiming {
    return paramsOf(this.state).timing;
  }

  /** Change the bandwidths for every opener of the state (benchmarks scale them to this machine). */
  setTiming(t: Partial<MediaTiming>): void {
    this.withLock(() => {
      if (t.dimmWriteMBps !== undefined) this.state[Hdr.WRITE_MBPS] = t.dimmWriteMBps;
      if (t.dimmReadMBps !== undefined) this.state[Hdr.READ_MBPS] = t.dimmReadMBps;
      if (t.queueNs !== undefined) this.state[Hdr.QUEUE_NS] = t.queueNs;
    });
  }

  /** Empty buffers, idle DIMMs, zero counts (a benchmark's next cell starts from a clean model). */
  resetCounts(): void {
    this.withLock(() => {
      this.state.fill(0, Hdr.CLOCK, Hdr.PERSISTS + 1);
      this.state[Hdr.BULK_BYTES] = 0;
      this.state.fill(0, HEADER_WORDS);
    });
  }

  get enabled(): boolean {
    return this.state[Hdr.ENABLED] === 1;
  }

  /** Turn charging on or off for every opener of the state (benchmarks compare both in one run). */
  setEnabled(on: boolean): void {
    this.state[Hdr.ENABLED] = on ? 1 : 0;
  }

  /** ns since the shared epoch. */
  now(): number {
    const [s, ns] = process.hrtime();
    return (s - this.model.state[Hdr.EPOCH_S]!) * 1e9 + ns;
  }

  /** Feed a persist of [offset, offset+length) to the model; the ns of the clock to wait until (0: none).
   *  `at` replaces the clock's now (tests). */
  charge(offset: number, length: number, at?: number): number {
    if (this.state[Hdr.ENABLED] !== 1) return 0;
    if (length >= BULK_BYTES) return this.bulk(offset, length);
    return this.withLock(() => {
      const m = this.model;
      const s = m.state;
      m.resetTally();
      m.write(offset, length);
      s[Hdr.PERSISTS]!++;
      const now = at ?? this.now(); // `at`: a test's clock
      const lineBytes = m.p.xplineBytes;
      const writeNs = (lineBytes / s[Hdr.WRITE_MBPS]!) * 1e3;
      const readNs = (lineBytes / s[Hdr.READ_MBPS]!) * 1e3;
      // The queue holds as many lines at a scaled-down bandwidth as at the real one: its time scales.
      const queueNs = (s[Hdr.QUEUE_NS]! * optaneTiming.dimmWriteMBps) / s[Hdr.WRITE_MBPS]!;
      let until = 0;
      for (let d = 0; d < m.p.dimms; d++) {
        const at = HEADER_WORDS + d * this.per;
        const cost = m.tally.lines[d]! * writeNs + m.tally.rmw[d]! * readNs;
        if (cost > 0) {
          // A busy-until more than BACKLOG_MAX_NS ahead is a stale state (another boot's clock), not debt.
          const from = s[at]! > now + BACKLOG_MAX_NS ? now : Math.max(s[at]!, now);
          s[at] = from + cost;
          s[Hdr.MEDIA_NS] = s[Hdr.MEDIA_NS]! + cost;
        }
        if ((m.tally.touched & (1 << d)) !== 0) until = Math.max(until, s[at]! - queueNs);
      }
      if (until <= now) return 0;
      s[Hdr.WAIT_NS] = s[Hdr.WAIT_NS]! + (until - now);
      return until;
    });
  }

  /**
   * A persist of a whole segment or more (the pool zeroing a segment it allocates): whole XPLines
   * written in order, DLWA 1, so it bypasses the XPBuffers and is counted apart (BULK_BYTES), neither
   * in the request/media bytes that DLWA is made of nor charged media time. On Optane it would cost
   * time (0.5 ms per MiB at 2 GB/s), but the benchmarks scale the bandwidth hundreds of times down to
   * this machine's data path, where zeroing the segments a node posts at start would take minutes; and
   * a short run's DLWA would be mostly those zeros (a node zeroes 128 MiB of b-log at start).
   */
  private bulk(offset: number, length: number): number {
    const cl = this.model.p.cachelineBytes;
    const lines = Math.floor((offset + length - 1) / cl) - Math.floor(offset / cl) + 1;
    this.withLock(() => {
      this.state[Hdr.BULK_BYTES] = this.state[Hdr.BULK_BYTES]! + lines * cl;
      this.state[Hdr.PERSISTS]!++;
    });
    return 0;
  }

  /** Charge a persist and wait the media time it owes. */
  persist(offset: number, length: number): void {
    const until = this.charge(offset, length);
    if (until > 0) this.waitUntil(until);
  }

  waitUntil(until: number): void {
    let left = until - this.now();
    if (left > SPIN_NS) Atomics.wait(sleepCell, 0, 0, (left - SPIN_NS / 2) / 1e6);
    do left = until - this.now();
    while (left > 0);
  }

  snapshot(): MediaSnapshot {
    return this.withLock(() => snapshotOf(this.state));
  }

  private withLock<T>(f: () => T): T {
    // The holder runs a few hundred ns of JS: spin; if it lost its CPU (2 cores, many threads), back off
    // with short sleeps rather than burn the CPU it needs (another process may hold it: no notify).
    for (let n = 0; Atomics.compareExchange(this.lock, 0, 0, 1) !== 0; n++) {
      if (n > LOCK_SPINS) Atomics.wait(sleepCell, 0, 0, 0.02);
    }
    try {
      return f();
    } finally {
      Atomics.store(this.lock, 0, 0);
    }
  }
}

export function snapshotOf(state: Float64Array): MediaSnapshot {
  return {
    ...resultOf(state, paramsOf(state).params),
    persists: state[Hdr.PERSISTS]!,
    mediaMs: state[Hdr.MEDIA_NS]! / 1e6,
    waitMs: state[Hdr.WAIT_NS]! / 1e6,
    bulkBytes: state[Hdr.BULK_BYTES]!,
  };
}
