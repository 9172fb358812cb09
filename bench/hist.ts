// Latency histograms for the benchmarks: HDR histograms (hdr-histogram-js), so a run keeps every
// sample's value to 3 significant digits in constant memory instead of a growing array to sort, and
// histograms from several threads or processes merge exactly (add) or travel as compressed base64
// (encode / decode) in a worker message or a child's JSON output.
//
// Values are recorded in integer nanoseconds (HDR histograms count integers) and read back in µs.
import hdr from 'hdr-histogram-js';

type Hdr = ReturnType<typeof hdr.build>;

/** 3 significant digits: a percentile is within 0.1 % of the true sample. */
const SIGNIFICANT_DIGITS = 3;

export interface LatencySummary {
  count: number;
  p50Us: number | null;
  p90Us: number | null;
  p99Us: number | null;
  p999Us: number | null;
  maxUs: number | null;
  meanUs: number | null;
}

export class LatencyHistogram {
  private constructor(private readonly h: Hdr) {}

  static create(): LatencyHistogram {
    return new LatencyHistogram(
      hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: 2, autoResize: true, numberOfSignificantValueDigits: SIGNIFICANT_DIGITS, bitBucketSize: 32, useWebAssembly: false }),
    );
  }

  /** A histogram from `encode()`'s text (another thread's or process's). */
  static decode(text: string): LatencyHistogram {
    return new LatencyHistogram(hdr.decodeFromCompressedBase64(text, 32, false));
  }

  /** The sum of several histograms (none: an empty one). */
  static merge(parts: Iterable<LatencyHistogram>): LatencyHistogram {
    const out = LatencyHistogram.create();
    for (const p of parts) out.add(p);
    return out;
  }

  /** Record one latency in microseconds (negative or non-finite values are a caller bug). */
  recordUs(us: number): void {
    if (!(us >= 0) || !Number.isFinite(us)) throw new RangeError(`latency ${us} µs is not a finite non-negative number`);
    this.h.recordValue(Math.max(1, Math.round(us * 1000)));
  }

  add(other: LatencyHistogram): void {
    if (other.h.totalCount > 0) this.h.add(other.h);
  }

  get count(): number {
    return this.h.totalCount;
  }

  /** The value at percentile p (0..100) in µs, or null with no samples. */
  percentileUs(p: number): number | null {
    return this.count === 0 ? null : this.h.getValueAtPercentile(p) / 1000;
  }

  summary(): LatencySummary {
    const r = (v: number | null) => (v === null ? null : Math.round(v * 10) / 10);
    return {
      count: this.count,
      p50Us: r(this.percentileUs(50)),
      p90Us: r(this.percentileUs(90)),
      p99Us: r(this.percentileUs(99)),
      p999Us: r(this.percentileUs(99.9)),
      maxUs: this.count === 0 ? null : r(this.h.maxValue / 1000),
      meanUs: this.count === 0 ? null : r(this.h.mean / 1000),
    };
  }

  /** Compressed base64: what crosses a thread or process boundary. */
  encode(): string {
    return hdr.encodeIntoCompressedBase64(this.h);
  }
}
