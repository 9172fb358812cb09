// The entry of every actor thread (./spawn.ts spawnThread): imports the role modules named in its
// workerData -- each one's runActor() registers its definition (./actor.ts) -- and starts one actor per
// HostStart the main thread posts, each on the MessagePort that came with it. One actor, or the
// background actors of a node sharing this thread (./placement.ts). Start messages that arrive while
// the modules still load are kept and handled in order once they have.
//
// The thread ends by itself: parentPort is unref'd once every actor it was told about has started,
// so only the actors' own ports (closed when each has stopped) keep its event loop alive.
import { parentPort, workerData } from 'node:worker_threads';
import { importActor, startActor, type ActorDefinition } from './actor.js';
import type { HostData, HostStart } from './lifecycle.js';
import { invariant } from '../config/base/errors.js';

async function host(data: HostData): Promise<void> {
  const port = parentPort!;
  const queued: HostStart[] = [];
  let defs: Map<string, ActorDefinition> | null = null;
  let started = 0;
  const begin = (m: HostStart) => {
    startActor(defs!.get(m.entry)!, m.start, m.port);
    if (++started === data.actors) port.unref();
  };
  port.on('message', (m: HostStart) => {
    invariant(m.type === 'host-start' && data.entries.includes(m.entry), `actor host: unexpected message ${String(m.type)} for ${String(m.entry)}`);
    if (defs) begin(m);
    else queued.push(m);
  });
  const loaded = new Map<string, ActorDefinition>();
  for (const e of data.entries) loaded.set(e, await importActor(e));
  defs = loaded;
  for (const m of queued.splice(0)) begin(m);
}

void host(workerData as HostData);
