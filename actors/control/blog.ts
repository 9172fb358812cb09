// The control actor's b-log: the Rowan receiver of this node (§3.2.2, §4.3). It opens the node's
// receive queue (by fabric: ./blog-queue.ts), keeps free segments posted, and forwards Used segments
// to every digest actor (each digests the shards it owns from every segment, §4.4). A batch that does
// not fit a digest ring waits in a backlog and is retried next tick: segments are never dropped.
import { blogOwner } from '../../config/base/ids.js';
import type { ActorContext } from '../../runtime/actor.js';
import { RowanReceiver } from '../../runtime/rowan/receiver.js';
import type { Pool } from '../../shm/pool.js';
import { RecordKind } from '../../shm/mailbox.js';
import { I64 } from '../../shm/counters.js';
import { shmBlogQueue, type BlogQueue } from './blog-queue.js';
import { verbsBlogQueue } from './verbs-blog-queue.js';

export class ControlBlog {
  readonly pool: Pool;
  readonly receiver: RowanReceiver;
  private readonly backlog: { to: string; segments: number[] }[] = [];

  /** The b-log on the queue of this node's fabric, posted and ready for senders. */
  static async open(ctx: ActorContext): Promise<ControlBlog> {
    const q = ctx.config.fabric.kind === 'verbs' ? await verbsBlogQueue(ctx) : shmBlogQueue(ctx);
    return new ControlBlog(ctx, q);
  }

  private constructor(
    private readonly ctx: ActorContext,
    private readonly q: BlogQueue,
  ) {
    const c = ctx.config;
    this.pool = ctx.pool;
    this.receiver = new RowanReceiver({
      pool: this.pool,
      srq: q.queue,
      ownerId: blogOwner(ctx.id),
      preallocate: c.blog.preallocSegments,
      batch: c.blog.batchSegments,
      graceMs: c.blog.usedGraceMs,
      onUsed: (segments) => {
        for (const to of ctx.peers('digest')) this.backlog.push({ to, segments });
      },
    });
    this.receiver.start();
    ctx.log.info({ fabric: c.fabric.kind, ...q.describe(), ...this.receiver.stats() }, 'b-log receive queue ready');
  }

  /** One control pass; false when it found nothing to do and nothing waits (the actor may look less often). */
  tick(): boolean {
    const busy = this.receiver.tick();
    this.forward();
    const st = this.receiver.stats();
    const c = this.ctx.counters.local;
    c[I64.BLOG_POSTED] = st.used + st.posted; // ever posted = retired as Used + still posted
    c[I64.BLOG_USED] = st.used;
    const landed = c[I64.BLOG_WRITES];
    this.q.sample(c);
    // Writes landing in the current buffer count as work: it may be consumed any moment, and the
    // buffers posted ahead of it must be topped up without an idle wait in between.
    return busy || this.backlog.length > 0 || c[I64.BLOG_WRITES] !== landed;
  }

  private forward(): void {
    while (this.backlog.length > 0) {
      const b = this.backlog[0]!;
      if (!this.ctx.send(b.to, { kind: RecordKind.SEGMENT_BATCH, segments: Int32Array.from(b.segments) })) return; // ring full: next tick
      this.backlog.shift();
    }
  }

  async close(): Promise<void> {
    const receiver = { ...this.receiver.stats(), backlog: this.backlog.length };
    const queue = await this.q.close();
    this.ctx.log.info({ ...receiver, ...queue }, 'b-log closed');
  }
}
