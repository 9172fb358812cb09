// The control actor's b-log: the Rowan receiver of this node (§3.2.2, §4.3). It creates the node's
// shared receive queue, keeps free segments posted, and forwards Used segments to every digest actor
// (each digests the shards it owns from every segment, §4.4). A batch that does not fit a digest ring
// waits in a backlog and is retried next tick: segments are never dropped.
import { blogOwner } from '../../config/base/ids.js';
import type { ActorContext } from '../../runtime/actor.js';
import { RowanReceiver } from '../../runtime/rowan/receiver.js';
import { SharedReceiveQueue } from '../../runtime/rowan/srq.js';
import { shmPaths } from '../../runtime/fabric/shm.js';
import type { Pool } from '../../shm/pool.js';
import { RecordKind } from '../../shm/mailbox.js';
import { I64 } from '../../shm/counters.js';

/** Ring CQ slots: it only wraps, nobody polls it per write (§3.2.2). */
const CQ_SLOTS = 4096;

export class ControlBlog {
  readonly pool: Pool;
  readonly srq: SharedReceiveQueue;
  readonly receiver: RowanReceiver;
  private readonly backlog: { to: string; segments: number[] }[] = [];

  constructor(private readonly ctx: ActorContext) {
    const c = ctx.config;
    const paths = shmPaths(c.dataDir);
    this.pool = ctx.pool;
    this.srq = SharedReceiveQueue.create(paths.srq, {
      postCap: c.blog.preallocSegments * 2 + 2,
      cqCap: CQ_SLOTS,
      bufferBytesMax: this.pool.segmentBytes,
    });
    this.receiver = new RowanReceiver({
      pool: this.pool,
      srq: this.srq,
      ownerId: blogOwner(ctx.id),
      preallocate: c.blog.preallocSegments,
      batch: c.blog.batchSegments,
      graceMs: c.blog.usedGraceMs,
      onUsed: (segments) => {
        for (const to of ctx.peers('digest')) this.backlog.push({ to, segments });
      },
    });
    this.receiver.start();
    ctx.log.info({ srq: paths.srq, incarnation: this.srq.incarnation, ...this.receiver.stats() }, 'b-log receive queue ready');
  }

  tick(): void {
    this.receiver.tick();
    this.forward();
    const st = this.receiver.stats();
    const c = this.ctx.counters.local;
    c[I64.BLOG_POSTED] = st.used + st.posted; // ever posted = retired as Used + still posted
    c[I64.BLOG_USED] = st.used;
    c[I64.BLOG_WRITES] = this.srq.stats().completions;
  }

  private forward(): void {
    while (this.backlog.length > 0) {
      const b = this.backlog[0]!;
      if (!this.ctx.send(b.to, { kind: RecordKind.SEGMENT_BATCH, segments: Int32Array.from(b.segments) })) return; // ring full: next tick
      this.backlog.shift();
    }
  }

  close(): void {
    // Read everything that touches the mappings before unmapping them.
    const last = { ...this.receiver.stats(), ...this.srq.stats(), backlog: this.backlog.length };
    this.srq.shutdown();
    this.srq.close();
    this.ctx.log.info(last, 'b-log closed');
  }
}
