// Simulated persistent memory: a PoolRegion whose `bytes` are what the CPU sees (caches included) and
// which keeps a separate durable image, what the DIMM holds. persist() and flush()+drain() copy ranges
// to the durable image; a crash throws the CPU's view away and restarts from the durable image, so every
// store that was not made persistent is lost.
//
// A crash can also tear a persist in flight: arm() makes the next persist() of this region (whoever
// calls it: the node's own actors, or a remote sender landing a Rowan write) copy only a random subset
// of its 8- or 64-byte chunks to the durable image and then throw SimCrash, so the code that called it
// never continues (the power went out inside the persist). PM makes aligned 8-byte stores atomic; nothing
// bigger. After a crash every persist/flush/drain throws SimCrash until the node restarts.
import type { PoolRegion } from '../../config/base/region.js';
import type { Rng } from './rng.js';

/** Thrown at the instant a simulated node loses power; unwinds whatever of it was running. */
export class SimCrash extends Error {
  constructor(readonly node: number) {
    super(`node ${node} crashed (simulated power loss)`);
  }
}

export class SimRegion implements PoolRegion {
  readonly mode = 'memory' as const;
  readonly bytes: Uint8Array;
  private readonly durable: Uint8Array;
  private flushed: number[] = [];
  private armed: { rng: Rng; chunk: number; onFire: () => void } | null = null;
  private dead = false;
  persists = 0;
  /** Bytes of the last torn persist that did not reach the durable image (for the trace). */
  lastTear = { offset: -1, lostChunks: 0 };

  constructor(
    readonly size: number,
    readonly node: number,
  ) {
    this.bytes = new Uint8Array(new ArrayBuffer(size));
    this.durable = new Uint8Array(size);
  }

  get crashed(): boolean {
    return this.dead;
  }

  persist(offset: number, length: number): void {
    this.alive();
    if (this.armed) return this.tear(offset, length);
    this.persists++;
    this.durable.set(this.bytes.subarray(offset, offset + length), offset);
  }

  flush(offset: number, length: number): void {
    this.alive();
    this.flushed.push(offset, length);
  }

  drain(): void {
    this.alive();
    const f = this.flushed;
    this.flushed = [];
    for (let i = 0; i < f.length; i += 2) this.persist(f[i]!, f[i + 1]!);
  }

  close(): void {}

  /** The next persist tears (chunk: 8 or 64 bytes) and crashes the node; onFire runs first. */
  arm(rng: Rng, chunk: 8 | 64, onFire: () => void): void {
    this.armed = { rng, chunk, onFire };
  }

  get isArmed(): boolean {
    return this.armed !== null;
  }

  /** Power off now: nothing more reaches the durable image. */
  crash(): void {
    this.dead = true;
    this.armed = null;
    this.flushed = [];
  }

  /** Power on: the CPU sees exactly the durable image. */
  restart(): void {
    this.bytes.set(this.durable);
    this.dead = false;
  }

  private tear(offset: number, length: number): never {
    const { rng, chunk, onFire } = this.armed!;
    this.armed = null;
    let lost = 0;
    // Chunks are aligned to the chunk size in the pool (what the hardware persists atomically).
    const first = Math.floor(offset / chunk) * chunk;
    for (let c = first; c < offset + length; c += chunk) {
      const lo = Math.max(c, offset);
      const hi = Math.min(c + chunk, offset + length);
      if (rng.chance(0.5)) this.durable.set(this.bytes.subarray(lo, hi), lo);
      else lost++;
    }
    this.lastTear = { offset, lostChunks: lost };
    onFire();
    this.crash();
    throw new SimCrash(this.node);
  }

  private alive(): void {
    if (this.dead) throw new SimCrash(this.node);
  }
}
