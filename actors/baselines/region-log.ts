// One sender-owned log at the receiver, written with one-sided writeAt (RWrite-KV's b-log per remote
// worker, FaRM style; ROWAN §6.1). The log is a chain of regions from allocateRegion; the tail lives
// here, at the sender, which is what makes every such log its own PM write stream at the receiver.
// An append that does not fit the current region's rest moves to a fresh region (the rest stays zero,
// as in a b-log, so a scan steps over it).
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import type { RemoteRegion, RowanConnection } from '../../runtime/fabric/fabric.js';

interface OpenRegion {
  region: RemoteRegion;
  /** Bytes of the region handed out so far. */
  tail: number;
  /** Appends into it not yet acknowledged. */
  inflight: number;
  /** The log has moved on to a later region. */
  left: boolean;
}

export interface RegionLogOptions {
  ownerId: number;
  /** The stream's name in PM write traces (default 'stream:<ownerId>'): the owner id names the sending
   *  node, so each worker's stream names itself here. */
  traceId?: string;
  onRegionRetired?: (r: RemoteRegion) => void;
  firstRegionSkipBytes?: number;
}

export interface RegionLogStats {
  writes: number;
  bytes: number;
  regions: number;
}

export class RegionLog {
  readonly ownerId: number;
  readonly traceId: string;
  private cur: OpenRegion | null = null;
  private growing: Promise<OpenRegion> | null = null;
  private regionBytes = 0;
  private skip: number;
  private readonly onRetired: ((r: RemoteRegion) => void) | undefined;
  private readonly s: RegionLogStats = { writes: 0, bytes: 0, regions: 0 };
  private closed = false;
  /** Settles when the last in-flight append does (for close). */
  private drained: (() => void) | null = null;
  private inflight = 0;

  constructor(
    private readonly conn: RowanConnection,
    o: RegionLogOptions,
  ) {
    this.ownerId = o.ownerId;
    this.traceId = o.traceId ?? `stream:${o.ownerId}`;
    this.onRetired = o.onRegionRetired;
    this.skip = o.firstRegionSkipBytes ?? 0;
    if (!Number.isInteger(this.skip) || this.skip < 0 || this.skip % 64 !== 0) {
      throw new RowanError(ErrorCodes.BAD_ARGUMENT, `firstRegionSkipBytes must be a non-negative multiple of 64, got ${this.skip}`);
    }
  }

  /**
   * Append `bytes` at the tail; resolves with its pool offset once it is persistent at the receiver.
   * `before(at)` runs once the bytes' place is reserved and before they are written (Erda publishes
   * the object's index entry there, baselines/erda.ts).
   */
  async append(bytes: Uint8Array, before?: (at: number) => Promise<void>): Promise<number> {
    const len = bytes.length;
    if (this.closed) throw new RowanError(ErrorCodes.RECEIVER_CLOSED, `log of owner ${this.ownerId} is closed`);
    if (len === 0) throw new RowanError(ErrorCodes.BAD_ARGUMENT, 'an append needs at least one byte');
    if (this.regionBytes > 0 && len > this.regionBytes) tooLarge(len, this.regionBytes);
    let cur = this.cur;
    while (cur === null || cur.tail + len > cur.region.length) cur = await this.advance(len);
    const at = cur.region.offset + cur.tail;
    cur.tail += len;
    cur.inflight++;
    this.inflight++;
    try {
      if (before) await before(at);
      await this.conn.writeAt(at, bytes);
    } finally {
      this.release(cur);
    }
    this.s.writes++;
    this.s.bytes += len;
    return at;
  }

  /** Allocate the first region now (a no-op once the log has one). */
  async prepare(): Promise<void> {
    if (this.cur === null) await this.advance(0);
  }

  stats(): RegionLogStats {
    return { ...this.s };
  }

  /** Wait for in-flight appends, then retire the current region. Later appends fail. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.growing) await this.growing.catch(() => undefined);
    if (this.inflight > 0) await new Promise<void>((r) => (this.drained = r));
    const cur = this.cur;
    this.cur = null;
    if (cur) {
      cur.left = true;
      this.retire(cur);
    }
  }

  /** One allocation at a time: concurrent appends that find the region full wait for the same one. */
  private advance(len: number): Promise<OpenRegion> {
    if (this.growing === null) {
      this.growing = this.grow(len).finally(() => (this.growing = null));
    }
    return this.growing;
  }

  private async grow(len: number): Promise<OpenRegion> {
    const region = await this.conn.allocateRegion(this.ownerId);
    this.s.regions++;
    if (this.regionBytes === 0) this.regionBytes = region.length;
    const start = this.skip < region.length - len ? this.skip : 0;
    this.skip = 0;
    const fresh: OpenRegion = { region, tail: start, inflight: 0, left: false };
    const old = this.cur;
    this.cur = fresh;
    if (old) {
      old.left = true;
      if (old.inflight === 0) this.retire(old);
    }
    if (len > region.length) tooLarge(len, region.length);
    return fresh;
  }

  private release(r: OpenRegion): void {
    r.inflight--;
    if (r.left && r.inflight === 0) this.retire(r);
    if (--this.inflight === 0 && this.drained) {
      this.drained();
      this.drained = null;
    }
  }

  private retire(r: OpenRegion): void {
    this.onRetired?.(r.region);
  }
}

function tooLarge(len: number, regionBytes: number): never {
  throw new RowanError(ErrorCodes.ENTRY_TOO_LARGE, `a ${len} B write cannot fit a ${regionBytes} B remote region`);
}
