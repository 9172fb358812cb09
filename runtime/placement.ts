// Where each actor runs and which rings connect them.
//
// Placement: the paper gives every thread its own core (§5.1). Actors without an explicit `@cpus` get
// one core each, round-robin in the order the roles are listed over the node's cores that no role names
// with `@cpus` (over all of them when every one is named: `rowan cluster` pins node N's worker to core
// N mod cores, so the background thread takes another and the nodes' workers spread); with fewer cores
// than actors (this 2-core machine) several actors share a core, which works because idle actors sleep
// on their doorbell instead of polling.
//
// Threads (runtime.threads): `dedicated` runs every actor on a worker_thread of its own. `shared` runs
// the background roles of the node (control, digest, clean, migration, nic: none of them on a client's
// request path) together on one thread, `background`, pinned to one core; each worker (and a manager)
// keeps its own thread. They are still separate actors -- their own rings, doorbells, counters and
// ticks -- so nothing changes but the number of threads: fewer isolates, heaps and event loops, and
// fewer context switches between them. `auto` (the default) shares when the node has fewer cores than
// actors, and keeps the paper's layout otherwise. An actor given explicit `@cpus` keeps its own thread,
// and so does every actor of a role past the first (digest.1, clean.1): a role module holds one actor.
//
// Wiring (one SPSC ring per directed pair):
//   main -> every actor, every actor -> main   (supervisor: PING/PONG liveness, later admin records)
//   control -> each digest                      (batches of used b-log segments, §4.3)
//   each digest -> each clean                   (committed segments to garbage-collect, §4.4)
import type { Role, RoleSpec, RowanConfig, ThreadPolicy } from '../config/model.js';
import { Doorbell } from '../shm/mailbox.js';
import { Ring } from '../shm/ring.js';
import type { InboundSpec, OutboundSpec } from './lifecycle.js';

export const MAIN = 'main';

export interface ActorPlan {
  role: Role;
  id: number;
  name: string;
  cores: number[];
  /** The thread that runs it: its own name, or BACKGROUND_THREAD for co-hosted background actors. */
  thread: string;
}

/** The roles that may share the background thread: none of them serves a client's request. */
export const BACKGROUND_ROLES: readonly Role[] = ['control', 'digest', 'clean', 'migration', 'nic'];
export const BACKGROUND_THREAD = 'background';

/** The roles a node runs: the configured ones, plus the nic (the soft RNIC) when the fabric is tcp. */
export function nodeRoles(cfg: Pick<RowanConfig, 'roles' | 'fabric'>): RoleSpec[] {
  if (cfg.fabric.kind !== 'tcp' || cfg.roles.some((r) => r.role === 'nic')) return cfg.roles;
  return [...cfg.roles, { role: 'nic', count: 1 }];
}

/** Does `policy` co-host the background actors of `roles` on `cores`? */
export function sharesThreads(roles: readonly RoleSpec[], cores: readonly number[], policy: ThreadPolicy): boolean {
  if (policy !== 'auto') return policy === 'shared';
  return roles.reduce((n, r) => n + r.count, 0) > cores.length;
}

export function placeActors(roles: readonly RoleSpec[], nodeCores: readonly number[], policy: ThreadPolicy = 'dedicated'): ActorPlan[] {
  const share = sharesThreads(roles, nodeCores, policy);
  // Round-robin over the cores no role names with @cpus (over all of them if every one is named).
  const named = new Set(roles.flatMap((r) => r.cores ?? []));
  const free = nodeCores.filter((c) => !named.has(c));
  const cores = free.length > 0 ? free : nodeCores;
  const plans: ActorPlan[] = [];
  let next = 0;
  let background: number[] | null = null;
  for (const spec of roles) {
    for (let id = 0; id < spec.count; id++) {
      const name = `${spec.role}.${id}`;
      // One actor of a role per thread: a role's thread.ts keeps its actor's state in module variables.
      if (share && !spec.cores && id === 0 && BACKGROUND_ROLES.includes(spec.role)) {
        background ??= [cores[next++ % cores.length]!]; // the thread's core: where its first actor falls
        plans.push({ role: spec.role, id, name, cores: [...background], thread: BACKGROUND_THREAD });
        continue;
      }
      const pinned = spec.cores ?? [cores[next++ % cores.length]!];
      plans.push({ role: spec.role, id, name, cores: [...pinned], thread: name });
    }
  }
  return plans;
}

/** The actors of each thread, threads in the order of their first actor. */
export function threadsOf(plans: readonly ActorPlan[]): Map<string, ActorPlan[]> {
  const out = new Map<string, ActorPlan[]>();
  for (const p of plans) out.set(p.thread, [...(out.get(p.thread) ?? []), p]);
  return out;
}

export interface Link {
  from: string;
  to: string;
  toRole: string;
  ring: Ring;
}

export interface Wiring {
  links: Link[];
  /** Doorbell of every receiver, the main thread included. */
  bells: Map<string, Doorbell>;
  inbound(name: string): InboundSpec[];
  outbound(name: string): OutboundSpec[];
}

export function wireActors(plans: readonly ActorPlan[], ringWords: number): Wiring {
  const links: Link[] = [];
  const bells = new Map<string, Doorbell>([[MAIN, new Doorbell()]]);
  const link = (from: string, to: string, toRole: string) => links.push({ from, to, toRole, ring: Ring.create(ringWords) });
  const named = (role: Role) => plans.filter((p) => p.role === role);
  for (const p of plans) {
    bells.set(p.name, new Doorbell());
    link(MAIN, p.name, p.role);
    link(p.name, MAIN, MAIN);
  }
  for (const c of named('control')) for (const d of named('digest')) link(c.name, d.name, 'digest');
  for (const d of named('digest')) for (const k of named('clean')) link(d.name, k.name, 'clean');
  return {
    links,
    bells,
    inbound: (name) => links.filter((l) => l.to === name).map((l) => ({ from: l.from, ring: l.ring.handle })),
    outbound: (name) =>
      links
        .filter((l) => l.from === name)
        .map((l) => ({ to: l.to, toRole: l.toRole, ring: l.ring.handle, doorbell: bells.get(l.to)!.sab })),
  };
}
