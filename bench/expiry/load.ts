// The "other requests" of the expiry benchmark: closed-loop streams of GET and SET (half each) on a
// fixed set of long-lived keys through an ioredis Cluster client, latencies recorded per phase and
// per second, so a phase's p99 and its timeline come from the same requests.
import { Cluster } from 'ioredis';
import { LatencyHistogram } from '../hist.js';

export interface LoadOptions {
  ports: number[];
  password: string;
  streams: number;
  liveKeys: number;
  valueBytes: number;
}

export interface Phase {
  lat: LatencyHistogram;
  errors: number;
  startMs: number;
  endMs: number;
}

export class Load {
  private phase: Phase | null = null;
  /** Latencies per whole second since `epochMs` (set by perSecondFrom). */
  private seconds = new Map<number, LatencyHistogram>();
  private epochMs = 0;
  private running = false;
  private done: Promise<void>[] = [];
  private constructor(private readonly io: Cluster, private readonly o: LoadOptions) {}

  static async start(o: LoadOptions): Promise<Load> {
    const io = new Cluster(o.ports.map((port) => ({ host: '127.0.0.1', port })), { redisOptions: { password: o.password } });
    io.on('error', () => {}); // failed requests are counted as errors
    await new Promise((resolve) => io.once('ready', resolve));
    const l = new Load(io, o);
    l.running = true;
    l.done = Array.from({ length: o.streams }, (_, i) => l.stream(i));
    return l;
  }

  private async stream(i: number): Promise<void> {
    const value = 'v'.repeat(this.o.valueBytes);
    let seed = 7919 * (i + 1);
    while (this.running) {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      const key = `live:${seed % this.o.liveKeys}`;
      const t0 = performance.now();
      try {
        if (seed & 1) await this.io.set(key, value);
        else await this.io.get(key);
        this.record((performance.now() - t0) * 1000);
      } catch {
        if (this.phase) this.phase.errors++;
      }
    }
  }

  private record(us: number): void {
    this.phase?.lat.recordUs(us);
    if (this.epochMs === 0) return;
    const s = Math.floor((Date.now() - this.epochMs) / 1000);
    let h = this.seconds.get(s);
    if (!h) this.seconds.set(s, (h = LatencyHistogram.create()));
    h.recordUs(us);
  }

  /** Start recording a phase (the previous one ends). */
  begin(): void {
    this.phase = { lat: LatencyHistogram.create(), errors: 0, startMs: Date.now(), endMs: 0 };
  }

  end(): Phase {
    const p = this.phase!;
    p.endMs = Date.now();
    this.phase = null;
    return p;
  }

  /** Record per-second histograms from `epochMs` on (second 0 starts there; earlier ones are negative). */
  perSecondFrom(epochMs: number): void {
    this.epochMs = epochMs;
  }

  /** p99 (ms) over seconds [from, to) of the per-second record (null: no request there). */
  p99Between(from: number, to: number): number | null {
    const h = LatencyHistogram.merge([...this.seconds.entries()].filter(([s]) => s >= from && s < to).map(([, h]) => h));
    return h.count === 0 ? null : (h.percentileUs(99) ?? NaN) / 1000;
  }

  /** p99 (ms) and requests of each second recorded. */
  timeline(): { second: number; p99ms: number; requests: number }[] {
    return [...this.seconds.entries()].sort((a, b) => a[0] - b[0]).map(([second, h]) => ({ second, p99ms: (h.percentileUs(99) ?? NaN) / 1000, requests: h.count }));
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.done);
    this.io.disconnect();
  }
}
