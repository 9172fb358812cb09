// Opt-in recorder of PM writes: (time, address, size) for every persist/flush on a region, for the
// DLWA model (runtime/optane/xpbuffer.ts, DESIGN §8). Wrapping is explicit, so the untraced hot path pays
// nothing. Addresses are region offsets, which stand in for physical addresses: a pool is one file
// mapped whole, so offsets keep the pool's layout (and hence its DIMM interleaving) intact.
import type { PersistentRegion } from '../config/base/region.js';

export class PersistTrace {
  private addrs: Float64Array;
  private lens: Uint32Array;
  private times: Float64Array;
  count = 0;

  constructor(initialCapacity = 1 << 16) {
    this.addrs = new Float64Array(initialCapacity);
    this.lens = new Uint32Array(initialCapacity);
    this.times = new Float64Array(initialCapacity);
  }

  record(addr: number, len: number): void {
    if (this.count === this.addrs.length) this.grow();
    this.addrs[this.count] = addr;
    this.lens[this.count] = len;
    // Absolute (epoch) milliseconds, so traces from several threads can be merged by time.
    this.times[this.count] = performance.timeOrigin + performance.now();
    this.count++;
  }

  private grow(): void {
    const n = this.addrs.length * 2;
    const a = new Float64Array(n);
    a.set(this.addrs);
    const l = new Uint32Array(n);
    l.set(this.lens);
    const t = new Float64Array(n);
    t.set(this.times);
    this.addrs = a;
    this.lens = l;
    this.times = t;
  }

  /** The recorded writes, trimmed to length (copies). */
  snapshot(): { addrs: Float64Array; lens: Uint32Array; times: Float64Array } {
    return {
      addrs: this.addrs.slice(0, this.count),
      lens: this.lens.slice(0, this.count),
      times: this.times.slice(0, this.count),
    };
  }

  /** Bytes requested in total (what the DLWA denominator counts, before cache-line rounding). */
  bytes(): number {
    let s = 0;
    for (let i = 0; i < this.count; i++) s += this.lens[i]!;
    return s;
  }

  clear(): void {
    this.count = 0;
  }
}

/**
 * The same region, recording every persist and flush into `trace`. A flush followed by a drain is one
 * write to the DIMMs, so only flushes and persists are recorded; drains are passed through.
 */
export function tracedRegion(inner: PersistentRegion, trace: PersistTrace): PersistentRegion {
  return {
    bytes: inner.bytes,
    persist(offset: number, length: number): void {
      trace.record(offset, length);
      inner.persist(offset, length);
    },
    flush(offset: number, length: number): void {
      trace.record(offset, length);
      inner.flush(offset, length);
    },
    drain(): void {
      inner.drain();
    },
  };
}
