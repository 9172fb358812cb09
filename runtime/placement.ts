// Where each actor runs and which rings connect them.
//
// Placement: the paper gives every thread its own core (§5.1). Actors without an explicit `@cpus` get
// one core each, round-robin over the node's cores in the order the roles are listed; with fewer cores
// than actors (this 2-core machine) several actors share a core, which works because idle actors sleep
// on their doorbell instead of polling.
//
// Wiring (one SPSC ring per directed pair):
//   main -> every actor, every actor -> main   (supervisor: PING/PONG liveness, later admin records)
//   control -> each digest                      (batches of used b-log segments, §4.3)
//   each digest -> each clean                   (committed segments to garbage-collect, §4.4)
import type { Role, RoleSpec, RowanConfig } from '../config/model.js';
import { Doorbell } from '../shm/mailbox.js';
import { Ring } from '../shm/ring.js';
import type { InboundSpec, OutboundSpec } from './lifecycle.js';

export const MAIN = 'main';

export interface ActorPlan {
  role: Role;
  id: number;
  name: string;
  cores: number[];
}

/** The roles a node runs: the configured ones, plus the nic (the soft RNIC) when the fabric is tcp. */
export function nodeRoles(cfg: Pick<RowanConfig, 'roles' | 'fabric'>): RoleSpec[] {
  if (cfg.fabric.kind !== 'tcp' || cfg.roles.some((r) => r.role === 'nic')) return cfg.roles;
  return [...cfg.roles, { role: 'nic', count: 1 }];
}

export function placeActors(roles: readonly RoleSpec[], cores: readonly number[]): ActorPlan[] {
  const plans: ActorPlan[] = [];
  let next = 0;
  for (const spec of roles) {
    for (let id = 0; id < spec.count; id++) {
      const pinned = spec.cores ?? [cores[next++ % cores.length]!];
      plans.push({ role: spec.role, id, name: `${spec.role}.${id}`, cores: [...pinned] });
    }
  }
  return plans;
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
