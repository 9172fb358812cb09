// Control actor (§3.2, §4.3): the node's Rowan receiver. It posts free segments to the b-log's receive
// queue in increasing address order, polls for consumed segments (non-zero first 64 bits), waits the
// used-segment grace, and hands batches of Used segments to the digest actors over its rings. It is
// never on the data path: senders land writes through the queue themselves (shm), through the NIC
// actor (tcp) or the RNIC lands them (verbs). Leases with the CM come with failover.
import { defineActor, runActor } from '../../runtime/actor.js';
import { invariant } from '../../config/base/errors.js';
import { ControlBlog } from './blog.js';
import type { ControlInbound } from './protocol.js';

let blog: ControlBlog | null = null;

export const controlActor = defineActor<ControlInbound>({
  role: 'control',
  accepts: [],
  handlers: {},
  init: async (ctx) => {
    blog = await ControlBlog.open(ctx);
  },
  tickMs: (c) => c.blog.usedGraceMs / 2,
  // Senders land writes without telling this thread (they write the queue's memory, §3.2): while
  // passes find nothing, look less often; the first consumed buffer brings the period back.
  idleTickMs: (c) => c.runtime.idleTickMs,
  tick: () => {
    invariant(blog !== null, 'control ticked before init');
    return blog.tick() ? undefined : 'idle';
  },
  drain: async () => {
    const b = blog;
    blog = null;
    await b?.close();
  },
});

runActor(controlActor);
