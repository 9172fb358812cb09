// The control actor's b-log under `--fabric verbs` (paper §3.2.2, §5.2): the node's PM pool registered
// with the RNIC, one SRQ every remote sender's RC QP lands its SENDs in (fixed-size receive buffers
// posted in increasing address order, runtime/fabric/verbs-receiver.ts), the ring CQ, and the side
// channel at fabric.host:fabric.port where senders exchange QP endpoints (runtime/fabric/
// verbs-connect.ts). The device is whatever this thread's verbs binding was given at start
// (runtime/fabric/verbs-devices.ts): libibverbs, or the loopback RNIC in tests.
//
// Nothing here is on the data path: the RNIC lands writes. Once per tick the control actor drains the
// ring CQ (not per write), which counts landed SENDs for the metrics and, on a provider without
// IGNORE_OVERRUN, keeps the CQ from overrunning.
import { blogOwner } from '../../config/base/ids.js';
import type { ActorContext } from '../../runtime/actor.js';
import { listenVerbs, openVerbsFabric, VerbsReceiverQueue, type VerbsFabric, type VerbsListener } from '../../runtime/fabric/verbs-sender.js';
import { I64 } from '../../shm/counters.js';
import type { BlogQueue } from './blog-queue.js';

export async function verbsBlogQueue(ctx: ActorContext): Promise<BlogQueue> {
  const c = ctx.config;
  const fabric: VerbsFabric = openVerbsFabric();
  let queue: VerbsReceiverQueue | null = null;
  let listener: VerbsListener | null = null;
  try {
    queue = VerbsReceiverQueue.create(fabric, ctx.pool);
    listener = await listenVerbs({ fabric, queue, pool: ctx.pool, host: c.fabric.host, port: c.fabric.port, ownerId: blogOwner(ctx.id) });
  } catch (err) {
    queue?.close();
    fabric.close();
    throw err;
  }
  const q = queue;
  const l = listener;
  let receives = 0;
  return {
    queue: q,
    sample: (counters) => {
      const before = q.stats().receiveErrors;
      const n = q.drain();
      receives += n - (q.stats().receiveErrors - before);
      counters[I64.BLOG_WRITES] = receives;
      counters[I64.VERBS_RECEIVES] = receives;
      counters[I64.VERBS_SENDERS] = l.connections();
    },
    describe: () => ({ device: fabric.ctx.deviceName, sideChannel: `${l.host}:${l.port}`, ...q.stats() }),
    close: async () => {
      // The QPs first (closing the side channels destroys them), then the SRQ, CQ and MR, then the device.
      await l.close();
      const last = { ...q.stats(), senders: l.connections() };
      q.close();
      fabric.close();
      return last;
    },
  };
}
