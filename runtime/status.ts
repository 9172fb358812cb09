// What `rowan status` shows: read from the actors' shared counters and the rings' pointers by the main
// thread, plus one ping round trip per actor through its rings (proof the actor's loop is alive now).
import { readCounters, type CounterSnapshot } from '../shm/counters.js';
import type { ActorHandle } from './spawn.js';
import type { NodePool } from './pool-hook.js';
import type { ActorPlan, Wiring } from './placement.js';
import type { RowanConfig } from '../config/model.js';
import type { Clock } from '../config/base/clock.js';
import { readPoolMedia } from './optane/media-file.js';
import type { MediaSnapshot } from './optane/media.js';

export interface ActorStatus {
  name: string;
  role: string;
  state: CounterSnapshot['state'];
  /** The thread that runs it (runtime/placement.ts): its own name, or `background` when shared. */
  thread: string;
  tid: number;
  /** CPUs asked for. */
  pinned: number[];
  /** CPUs read back with sched_getaffinity inside the thread at READY. */
  cores: number[];
  /** CPU the thread last ran on (sched_getcpu at its last tick or READY). */
  cpu: number;
  counters: CounterSnapshot['counts'];
  /** Ring round trip main -> actor -> main, microseconds; null = no answer within 500 ms. */
  pingUs: number | null;
  /** The TCP endpoint the actor reported at READY (the nic), or null. */
  endpoint: { host: string; port: number } | null;
}

export interface RingStatus {
  from: string;
  to: string;
  depthWords: number;
  capacityWords: number;
}

export interface NodeStatus<Storage = unknown> {
  pid: number;
  dataDir: string;
  persistence: string;
  startedAt: string;
  uptimeMs: number;
  pool: { path: string; poolId: string; mode: string; backend: string; counts: unknown } | null;
  /** The PM media model (pm.media): none, or optane with its modelled DLWA and media bytes so far. */
  pm: { media: string; model: MediaSnapshot | null };
  actors: ActorStatus[];
  rings: RingStatus[];
  /** The application's section (ROWAN-KV: segments by owner and state, live bytes, GC and commit
   *  progress); null without a pool or an application that reports one. */
  storage: Storage | null;
}

/** What the status needs of a running node (runtime/node.ts passes itself). */
export interface StatusSource {
  readonly config: RowanConfig;
  readonly startedAt: number;
  readonly plans: ActorPlan[];
  readonly wiring: Wiring;
  readonly clock: Clock;
}

export function collectStatus(
  node: StatusSource,
  actors: Map<string, ActorHandle>,
  pings: Map<string, number | null>,
  pool: { pool: NodePool; path: string } | null,
  appStatus?: (pool: NodePool, actors: ActorStatus[], uptimeMs: number) => unknown,
): NodeStatus {
  const s: Omit<NodeStatus, 'storage'> = {
    pid: process.pid,
    dataDir: node.config.dataDir,
    persistence: node.config.persistence,
    startedAt: new Date(Date.now() - (node.clock.now() - node.startedAt)).toISOString(),
    uptimeMs: node.clock.now() - node.startedAt,
    pool: pool ? { path: pool.path, poolId: pool.pool.poolId, mode: pool.pool.mode, backend: pool.pool.backend, counts: pool.pool.counts() } : null,
    pm: { media: node.config.pm.media, model: pool && node.config.pm.media === 'optane' ? readPoolMedia(pool.path) : null },
    actors: node.plans.flatMap((p) => actors.get(p.name) ?? []).map((h) => {
      const c = readCounters(h.spec.start.counters);
      return {
        name: h.name,
        role: h.role,
        state: c.state,
        thread: h.thread,
        tid: c.tid,
        pinned: h.cores,
        cores: h.ready?.cpus ?? [],
        cpu: c.cpu,
        counters: c.counts,
        pingUs: pings.get(h.name) ?? null,
        endpoint: h.ready?.endpoint ?? null,
      };
    }),
    rings: node.wiring.links.map((l) => ({
      from: l.from,
      to: l.to,
      depthWords: l.ring.depth(),
      capacityWords: l.ring.capacityWords,
    })),
  };
  const storage = pool && appStatus ? appStatus(pool.pool, s.actors, s.uptimeMs) : null;
  return { ...s, storage };
}

