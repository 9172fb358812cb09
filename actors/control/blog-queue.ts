// The receive queue the control actor's b-log posts into, by fabric (DESIGN §4): under `shm` and `tcp`
// the emulated shared receive queue in the data dir (senders, or the nic actor, land writes through
// it); under `verbs` the RNIC's SRQ (./verbs-blog-queue.ts). RowanReceiver sees only ReceiveQueue.
import type { ActorContext } from '../../runtime/actor.js';
import type { ReceiveQueue } from '../../runtime/rowan/srq.js';
import { SharedReceiveQueue } from '../../runtime/rowan/srq.js';
import { shmPaths } from '../../runtime/fabric/shm.js';
import { I64 } from '../../shm/counters.js';

/** Ring CQ slots: it only wraps, nobody polls it per write (§3.2.2). */
export const CQ_SLOTS = 4096;

export interface BlogQueue {
  readonly queue: ReceiveQueue;
  /** Publish what the fabric knows into this tick's counters (BLOG_WRITES and fabric-specific ones). */
  sample(counters: number[]): void;
  /** What the start log line says about the queue. */
  describe(): Record<string, unknown>;
  /** Stop taking writes and release the queue; returns its last statistics. */
  close(): Promise<Record<string, unknown>>;
}

/** The emulated queue of the shm and tcp fabrics: a file in the data dir that senders map. */
export function shmBlogQueue(ctx: ActorContext): BlogQueue {
  const c = ctx.config;
  const path = shmPaths(c.dataDir).srq;
  const srq = SharedReceiveQueue.create(path, {
    postCap: c.blog.preallocSegments * 2 + 2,
    cqCap: CQ_SLOTS,
    bufferBytesMax: ctx.pool.segmentBytes,
  });
  return {
    queue: srq,
    sample: (counters) => {
      counters[I64.BLOG_WRITES] = srq.stats().completions;
    },
    describe: () => ({ srq: path, incarnation: srq.incarnation }),
    close: async () => {
      const last = srq.stats(); // read before unmapping
      srq.shutdown();
      srq.close();
      return last;
    },
  };
}
