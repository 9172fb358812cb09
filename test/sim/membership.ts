// Membership changes in the simulator (actors/manager/membership.ts, issue 28), under the clients' load:
//   grow          a node outside the configuration (the spare) is added: the manager stores it as a
//                 member, the spare boots from that configuration and says hello, and the balancing's
//                 first copy to it starts. The simulator does not copy (./control.ts): the copy stays
//                 mid-copy until the spare is killed for long enough to be failed over, which ends it
//                 (the balancing then judges the members left spread, and ends).
//   decommission  a member is made to leave: its primary roles are handed to full backups (moves,
//                 simulated whole), then its first backup copy starts; it or that copy's target is then
//                 killed for long enough to be failed over -- a leaving node failed over holds nothing
//                 and is removed from the membership (its id retired).
// The manager crashes (restarted, or a standby takes over) at a step of the round half the time: the
// membership state is in the stored configuration, so the next manager goes on from there.
import type { ClusterNode } from '../../config/cluster.js';
import { bootNode, type ScenarioEnv } from './faults.js';
import type { CrashPoint } from './manager.js';
import { describePoint } from './manager.js';
import type { Rng } from './rng.js';

export type MembershipScenario = 'grow' | 'decommission';

/** The events of a membership round a manager crash is armed at. */
const GROW_POINTS = ['member-added', 'member-step', 'copy-stored'] as const;
const LEAVE_POINTS = ['member-leaving', 'member-step', 'move-stored', 'move-committed', 'copy-stored'] as const;

/** Node `id`'s entry, shaped like the simulated cluster's (./simulation.ts planSimCluster). */
export function simNodeEntry(id: number): ClusterNode {
  return { id, host: 'sim', dataDir: `/sim/node-${id}`, workerPorts: [1000 + id], fabric: { kind: 'shm', host: 'sim', port: 0 } };
}

export function scheduleMembership(rng: Rng, span: number, e: ScenarioEnv, kind: MembershipScenario): void {
  const at = 20 + rng.float() * span * 0.3;
  const killAfter = rng.range(40, 200);
  const downMs = rng.range(150, 300);
  const points = kind === 'grow' ? GROW_POINTS : LEAVE_POINTS;
  if (rng.chance(0.5)) {
    const takeover = rng.chance(0.5);
    const p: CrashPoint = { kind: 'event', event: rng.pick(points), nth: 1 };
    e.faults.push(`manager crash at ${describePoint(p)} (${takeover ? 'standby takes over' : 'restart'})`);
    e.manager.arm(p, () => e.loop.at(rng.range(2, 40), ['manager-restart'], () => !e.manager.up && e.manager.boot(takeover)));
  }
  if (kind === 'grow') return scheduleGrow(at, killAfter, downMs, e);
  const leaving = rng.pick(e.nodes.filter((n) => e.manager.store.cfg.nodes.some((x) => x.id === n.id)).map((n) => n.id));
  const victim = rng.chance(0.5) ? 'leaving' : 'target';
  e.faults.push(`decommission of node ${leaving} at ${at.toFixed(1)} ms, its ${victim === 'leaving' ? 'process' : "first copy's target"} killed ${killAfter} ms later for ${downMs} ms`);
  e.loop.at(at, ['decommission', leaving], () => {
    if (e.calm() || !e.manager.up) return;
    e.manager.requestMembership({ kind: 'leave', node: leaving });
  }, true);
  e.loop.at(at + killAfter, ['decommission-kill', leaving], () => {
    const t = (e.manager.store.cfg.copies ?? [])[0];
    const id = victim === 'leaving' ? leaving : t?.target;
    const n = e.nodes.find((x) => x.id === id);
    if (!n?.up || e.calm()) return;
    e.faults.push(`decommission: node ${n.id} (${victim}) killed`);
    n.crash();
    e.loop.at(downMs, ['restart', n.id], () => !n.up && bootNode(n, e.findings));
  }, true);
}

/** The spare (the last node, outside the configuration) added, booted once stored, killed mid-copy. */
function scheduleGrow(at: number, killAfter: number, downMs: number, e: ScenarioEnv): void {
  const spare = e.nodes[e.nodes.length - 1]!;
  e.faults.push(`add-node ${spare.id} at ${at.toFixed(1)} ms, killed mid-copy ${killAfter} ms after it boots, for ${downMs} ms`);
  e.loop.at(at, ['add-node', spare.id], () => {
    if (e.calm() || !e.manager.up) return;
    e.manager.requestMembership({ kind: 'add', node: simNodeEntry(spare.id) });
  }, true);
  // The launcher starts the node once the stored configuration names it.
  const boot = (): void => {
    if (spare.up || e.calm()) return;
    if (!e.manager.store.cfg.nodes.some((n) => n.id === spare.id)) return void e.loop.at(5, ['add-node-wait', spare.id], boot, true);
    e.faults.push(`add-node: node ${spare.id} boots at term ${e.manager.store.cfg.term}`);
    if (!bootNode(spare, e.findings)) return;
    // Killed once its first copy runs (looked for every 10 ms, for at most 400 ms more).
    const bootedAt = e.loop.now();
    const kill = (): void => {
      if (!spare.up || e.calm()) return;
      const copying = (e.manager.store.cfg.copies ?? []).some((t) => t.target === spare.id);
      if (!copying && e.loop.now() - bootedAt < killAfter + 400) return void e.loop.at(10, ['add-node-kill', spare.id], kill, true);
      e.faults.push(`add-node: node ${spare.id} killed ${copying ? 'mid-copy' : 'before its first copy'}`);
      spare.crash();
      e.loop.at(downMs, ['restart', spare.id], () => !spare.up && bootNode(spare, e.findings));
    };
    e.loop.at(killAfter, ['add-node-kill', spare.id], kill, true);
  };
  e.loop.at(at + 1, ['add-node-boot', spare.id], boot, true);
}
