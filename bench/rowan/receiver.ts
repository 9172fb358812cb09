// The receiving node of the Rowan benchmark, on the main thread: a pool and receive queue in a temp
// data dir, the Rowan receiver's control loop on a 1 ms timer (post segments, detect consumed ones,
// grace, hand off), and a stand-in for digest + clean that frees every Used b-log segment at once
// (it does not parse them: the benchmark measures replication, not digest). One-sided logs' regions
// (rwrite/share/batch) are freed when their sender retires them, and swept after every cell.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool, SegmentState } from '../../shm/pool.js';
import { RowanReceiver } from '../../runtime/rowan/receiver.js';
import { SharedReceiveQueue } from '../../runtime/rowan/srq.js';
import { shmPaths } from '../../runtime/fabric/shm.js';
import { attachPoolMedia, createPoolMedia, withPoolMedia, type MappedMedia } from '../../runtime/optane/media-file.js';
import type { PoolRegion } from '../../config/base/region.js';

/** Owner id of the b-log's segments; one-sided regions use owner ids above it. */
export const RECEIVER_OWNER = 0;

export interface BenchReceiverOptions {
  segmentBytes: number;
  segmentCount: number;
  preallocate: number;
  batch: number;
  graceMs: number;
  /** The Optane media model on the pool at this bandwidth per DIMM (MB/s), created with the pool so the
   *  receiver's own persists (zeroing the b-log segments it posts) pay it too; null: no model. */
  mediaMBps?: number | null;
}

export class BenchReceiver {
  readonly dataDir: string;
  readonly pool: Pool;
  readonly srq: SharedReceiveQueue;
  readonly receiver: RowanReceiver;
  blogSegmentsRecycled = 0;
  /** The pool's media model (options.mediaMBps), for the cells to switch on and read. */
  readonly mapped: MappedMedia | null;
  private timer: NodeJS.Timeout | null = null;

  constructor(o: BenchReceiverOptions) {
    this.dataDir = mkdtempSync(join(tmpdir(), 'rowan-bench-'));
    const p = shmPaths(this.dataDir);
    const mbps = o.mediaMBps ?? null;
    const wrapRegion = mbps === null ? undefined : (r: PoolRegion, path: string) => {
      createPoolMedia(path, { dimmWriteMBps: mbps }).close();
      return withPoolMedia(r, path);
    };
    this.pool = Pool.create(p.pool, { segmentCount: o.segmentCount, segmentBytes: o.segmentBytes, ...(wrapRegion ? { wrapRegion } : {}) });
    this.mapped = mbps === null ? null : attachPoolMedia(p.pool);
    this.mapped?.media.setEnabled(false); // a cell turns it on for its run (measureCell)
    this.srq = SharedReceiveQueue.create(p.srq, { postCap: o.preallocate * 2 + 2, cqCap: 1024, bufferBytesMax: o.segmentBytes });
    this.receiver = new RowanReceiver({
      pool: this.pool,
      srq: this.srq,
      ownerId: RECEIVER_OWNER,
      preallocate: o.preallocate,
      batch: o.batch,
      graceMs: o.graceMs,
      onUsed: (segs) => {
        for (const s of segs) {
          this.pool.transition(s, SegmentState.Used, SegmentState.Committed);
          this.pool.free(s);
        }
        this.blogSegmentsRecycled += segs.length;
      },
    });
    this.receiver.start();
  }

  start(): void {
    this.timer ??= setInterval(() => this.receiver.tick(), 1);
  }

  /** Regions a one-sided log left (all its writes acked): reclaim them. */
  freeRetired(segments: number[]): void {
    for (const s of segments) if (this.pool.meta(s).state === SegmentState.Using) this.pool.free(s);
  }

  /** After a cell: free every one-sided region still held (the logs of closed streams and nodes). */
  sweepOneSided(): number {
    const held = this.pool.segments({ state: SegmentState.Using }).filter((s) => this.pool.meta(s).ownerId !== RECEIVER_OWNER);
    for (const s of held) this.pool.free(s);
    return held.length;
  }

  close(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.srq.shutdown();
    this.srq.close();
    this.pool.close();
    this.mapped?.close();
    rmSync(this.dataDir, { recursive: true, force: true });
  }
}
