// The faults a seed schedules during the workload (issue 10, issue 24):
//   node crash      power loss or a torn persist, restart after a short outage (the manager keeps the
//                   node) or a long one (past its lease: the manager fails it over; it comes back
//                   evicted and stays down -- re-replication's copy is not simulated);
//   full restart    every node loses power at once and cold-starts (the manager runs on);
//   manager crash   at a time, or at a crash point inside a round (./manager.ts), restarted later as
//                   the file store's manager or as a standby taking over;
//   partitions      between two nodes (Rowan writes, peer leases) or a node and the manager;
//   moves           a shard's primary moved to one of its backups (actors/manager/moves.ts).
// On top of these random faults a seed may pick one targeted scenario: a sequence of faults and a shape
// of the workload that random faults almost never line up (see `scheduleScenario`).
// Nothing is scheduled once the simulation settles (`calm()`).
import type { Finding } from './checks.js';
import type { WorkloadShape } from './clients.js';
import type { EventLoop } from './loop.js';
import { CRASH_EVENTS, describePoint, type CrashPoint, type SimManager } from './manager.js';
import type { SimNet, SimNetOptions } from './net.js';
import type { SimNode } from './node.js';
import type { Rng } from './rng.js';
import { MANAGER_ID } from './wire.js';

export interface FaultOptions {
  crashesMax: number;
  partitionsMax: number;
  /** Chance of a full-cluster power loss, of a manager crash (at a time or a crash point), of moves. */
  fullRestartP: number;
  managerCrashP: number;
  movesMax: number;
  /** Chance that the seed adds one targeted scenario (`scheduleScenario`). */
  scenarioP: number;
}

export interface FaultEnv {
  loop: EventLoop;
  net: SimNet;
  nodes: SimNode[];
  manager: SimManager;
  faults: string[];
  findings: Finding[];
  /** True once the workload ended: faults scheduled for later do nothing. */
  calm: () => boolean;
  /** The shards the clients' keys live in (moves pick among them). */
  keyShards: number[];
}

/** Start node `n` again (cold start), unless it was evicted or is no member (a spare not added, a
 *  node decommissioned); a failed cold start is a finding. */
export function bootNode(n: SimNode, findings: Finding[]): boolean {
  if (n.evicted || !n.member()) return false;
  try {
    n.boot();
    for (const detail of n.countersBelowFloors()) findings.push({ check: 'versions', node: n.id, detail });
    return true;
  } catch (err) {
    findings.push({ check: 'run', node: n.id, detail: `cold start failed: ${(err as Error).stack ?? String(err)}` });
    return false;
  }
}

export function scheduleFaults(o: FaultOptions, span: number, rng: Rng, e: FaultEnv): void {
  for (let i = rng.int(o.crashesMax + 1); i > 0; i--) nodeCrash(rng, e, rng.float() * span);
  if (rng.chance(o.fullRestartP)) {
    // Half the time a failover follows the restart: what the restarted primaries wrote is then read
    // on a backup promoted (issue 24, hazard 1's triggers).
    const at = (rng.float() * span) / 2;
    fullRestart(rng, e, at);
    if (rng.chance(0.5)) nodeCrash(rng, e, at + rng.range(130, 250), rng.range(150, 300));
  }
  if (rng.chance(o.managerCrashP) && e.manager.up) managerCrash(rng, e, span); // none in a manager-less run
  for (let i = rng.int(o.partitionsMax + 1); i > 0; i--) partition(rng, e, rng.float() * span);
  for (let i = rng.int(o.movesMax + 1); i > 0; i--) move(rng, e, rng.float() * span);
}

function nodeCrash(rng: Rng, e: FaultEnv, at: number, down?: number): void {
  const { loop, nodes, faults, findings } = e;
  const n = nodes[rng.int(nodes.length)]!;
  const torn = rng.chance(0.5);
  const chunk = rng.chance(0.5) ? 8 : 64;
  const downMs = down ?? (rng.chance(0.6) ? rng.range(3, 40) : rng.range(60, 300));
  faults.push(`${torn ? `torn-${chunk}` : 'power'} crash of node ${n.id} at ${at.toFixed(1)} ms for ${downMs} ms`);
  loop.at(at, ['crash', n.id, torn ? chunk : 0], () => {
    if (!n.up || e.calm()) return;
    const restart = () => loop.at(downMs, ['restart', n.id], () => {
      if (!n.up) bootNode(n, findings);
    });
    if (!torn) {
      n.crash();
      return restart();
    }
    n.region.arm(rng.fork(), chunk as 8 | 64, () => {
      n.markDown();
      restart();
    });
    // No persist within 5 ms: the power goes out all the same.
    loop.at(5, ['crash-fallback', n.id], () => {
      if (n.up && n.region.isArmed) {
        n.crash();
        restart();
      }
    });
  }, true);
}

/** A power crash of whichever node is `shard`'s primary at `at` (the stored configuration's). */
function primaryCrash(e: FaultEnv, at: number, shard: number, downMs: number): void {
  e.faults.push(`power crash of shard ${shard}'s primary at ${at.toFixed(1)} ms for ${downMs} ms`);
  e.loop.at(at, ['crash-primary', shard], () => {
    const n = e.nodes.find((x) => x.id === e.manager.store.cfg.shards[shard]!.primary);
    if (!n?.up || e.calm()) return;
    n.crash();
    e.loop.at(downMs, ['restart', n.id], () => !n.up && bootNode(n, e.findings));
  }, true);
}

function fullRestart(rng: Rng, e: FaultEnv, at: number, down?: number): void {
  const downMs = down ?? rng.range(5, 120);
  e.faults.push(`full-cluster power loss at ${at.toFixed(1)} ms for ${downMs} ms`);
  e.loop.at(at, ['full-restart'], () => {
    if (e.calm()) return;
    powerLoss(rng, e, e.nodes, downMs);
  }, true);
}

/** `nodes` lose power now and boot again `downMs` (plus up to 10 ms each) later. */
function powerLoss(rng: Rng, e: FaultEnv, nodes: SimNode[], downMs: number): void {
  for (const n of nodes) n.crash(); // a node already down: a no-op once its region has crashed
  for (const n of nodes) e.loop.at(downMs + rng.float() * 10, ['restart', n.id], () => !n.up && bootNode(n, e.findings));
}

/** The crash points a seed may pick: every round step's event, and mid-round sends and stores. */
function pickPoint(rng: Rng): CrashPoint {
  const r = rng.float();
  if (r < 0.6) return { kind: 'event', event: rng.pick(CRASH_EVENTS), nth: rng.range(1, 2) };
  if (r < 0.85) return { kind: 'send', msg: rng.pick(['prepare', 'commit'] as const), nth: rng.range(1, 6) };
  return { kind: 'store', nth: rng.range(1, 3) };
}

function managerCrash(rng: Rng, e: FaultEnv, span: number): void {
  const downMs = rng.range(2, 150);
  const takeover = rng.chance(0.5);
  const restart = () => e.loop.at(downMs, ['manager-restart'], () => !e.manager.up && e.manager.boot(takeover));
  if (rng.chance(0.7)) {
    const p = pickPoint(rng);
    e.faults.push(`manager crash at ${describePoint(p)} for ${downMs} ms (${takeover ? 'standby takes over' : 'restart'})`);
    e.manager.arm(p, restart);
    return;
  }
  const at = rng.float() * span;
  e.faults.push(`manager crash at ${at.toFixed(1)} ms for ${downMs} ms (${takeover ? 'standby takes over' : 'restart'})`);
  e.loop.at(at, ['manager-crash'], () => {
    if (e.calm() || !e.manager.up) return;
    e.manager.crash('scheduled');
    restart();
  });
}

function crashAfterMoveStored(rng: Rng, e: FaultEnv): void {
  const downMs = rng.range(2, 40);
  const takeover = rng.chance(0.5);
  const p: CrashPoint = { kind: 'event', event: 'move-stored', nth: 1 };
  e.faults.push(`manager crash at ${describePoint(p)} for ${downMs} ms (${takeover ? 'standby takes over' : 'restart'})`);
  e.manager.arm(p, () => e.loop.at(downMs, ['manager-restart'], () => !e.manager.up && e.manager.boot(takeover)));
}

function partition(rng: Rng, e: FaultEnv, at: number): void {
  const nodes = e.nodes.length;
  const a = rng.int(nodes);
  const b = rng.chance(0.35) ? MANAGER_ID : (a + 1 + rng.int(nodes - 1)) % nodes;
  const ms = rng.chance(0.7) ? rng.range(2, 60) : rng.range(60, 250);
  e.faults.push(`partition ${a}|${b === MANAGER_ID ? 'manager' : b} at ${at.toFixed(1)} ms for ${ms} ms`);
  e.loop.at(at, ['partition', a, b, ms], () => !e.calm() && e.net.partition(a, b, ms));
}

function move(rng: Rng, e: FaultEnv, at: number, which?: number): void {
  const shard = which ?? rng.pick(e.keyShards);
  const pick = rng.u32();
  e.faults.push(`move of shard ${shard} at ${at.toFixed(1)} ms`);
  e.loop.at(at, ['move', shard], () => {
    if (e.calm() || !e.manager.up) return;
    const s = e.manager.store.cfg.shards[shard]!;
    if (s.backups.length === 0) return;
    const to = s.backups[pick % s.backups.length]!;
    e.manager.requestMove([{ shard, from: s.primary, to }]);
  }, true);
}

/** What a scenario shapes besides faults: the clients' workload and the network's options. */
export interface ScenarioEnv extends FaultEnv {
  shape: WorkloadShape;
  netO: SimNetOptions;
  /** The clients' key numbers whose keys live in `shard`, and how many keys there are. */
  keysOf: (shard: number) => number[];
  keyCount: number;
}

export const SCENARIOS = ['quiet-shard-restart', 'move-under-load', 'long-stalls', 'lossy-stalls-restart'] as const;
export type Scenario = (typeof SCENARIOS)[number];

/**
 * The targeted scenarios, each a sequence the random faults almost never produce:
 *   quiet-shard-restart  for a while the clients write every key but those of one shard (the churn
 *                   client goes on): the shard's last versions are churn PUT+DELs, whose tombstones the
 *                   sweep drops and whose segments clean frees, after CommitVer told the backups (their
 *                   floors rise). Sometimes a node crashes meanwhile. Then every node loses power and
 *                   the shard is written again: the first writes after the cold start must come above
 *                   what the backups were told, though nothing on PM shows those versions; half the
 *                   time a primary is failed over after that (its backups must hold them);
 *   move-under-load the clients write only the keys of one shard while it is moved to a backup and
 *                   moved again (the source must drain its writes in flight before the target serves);
 *                   half the time the manager dies right after storing the first move's term; half
                   the time replication stalls now and then; half the time the shard's primary loses
                   power after the first move (a failover must find what it served on every replica);
 *   long-stalls     many landers stall between reserve and copy, for up to 900 ms (a buffer declared
 *                   Used must wait for their copies or fence them: digest and clean may reuse it);
 *   lossy-stalls-restart  stalls, lost connections and duplicates (writes that fail at the primary
 *                   still land late on a backup, after a later DEL of their key; acknowledged writes
 *                   land a second time, late), then a full restart near the workload's end (the cold
 *                   start must refuse the late blocks under its floors).
 */
export function scheduleScenario(o: FaultOptions, span: number, rng: Rng, e: ScenarioEnv): Scenario | null {
  if (!rng.chance(o.scenarioP)) return null;
  const kind = rng.pick(SCENARIOS);
  switch (kind) {
    case 'quiet-shard-restart': {
      // One shard of the clients' keys gets no writes but the churn client's: its last versions come
      // from churn PUT+DELs, whose tombstones the sweep drops and whose segments clean frees, while
      // the other keys' writes fill b-log buffers, so the backups digest the shard's CommitVer (their
      // floors rise) -- the versions the backups were told are on no PM. Then every node loses power.
      const shard = rng.pick(e.keyShards);
      const others = Array.from({ length: e.keyCount }, (_, i) => i).filter((i) => !e.keysOf(shard).includes(i));
      const from = rng.float() * 40;
      const quietMs = rng.range(350, 600);
      const downMs = rng.range(5, 60);
      e.shape.focus.push({ from, to: from + quietMs + downMs + 20, keys: others });
      if (rng.chance(0.3)) nodeCrash(rng, e, from + rng.range(10, 100), rng.range(3, 300));
      fullRestart(rng, e, from + quietMs, downMs);
      if (rng.chance(0.5)) nodeCrash(rng, e, from + quietMs + downMs + rng.range(120, 250), rng.range(150, 300));
      break;
    }
    case 'move-under-load': {
      const shard = rng.pick(e.keyShards);
      const at = 30 + rng.float() * span * 0.6;
      const back = rng.range(30, 120);
      e.shape.focus.push({ from: at - 30, to: at + back + 80, keys: e.keysOf(shard) });
      move(rng, e, at, shard);
      move(rng, e, at + back, shard);
      // Half the time the manager dies right after storing a move's term, before any prepare (issue
      // 24, hazard 2): restarted, or a standby taking over, it must roll the move back or finish it
      // through a prepare -- never commit the stored term to members that reconnect. Drawn last: the
      // scenario's other draws are as they were.
      if (rng.chance(0.5)) crashAfterMoveStored(rng, e);
      // Half the time replication stalls now and then: a move then meets writes still in flight at
      // its source (replicated to some members, not yet to the target), which the prepare gathers and
      // scatters before the target serves. Drawn last: the scenario's other draws are as they were.
      // And half the time the shard's primary at some instant after the first move loses power, long
      // enough to be failed over: a backup promoted then must hold what the moved shard's primary served.
      if (rng.chance(0.5)) {
        e.netO.stallP = rng.pick([0.05, 0.1]);
        e.netO.stallMaxMs = rng.range(50, 300);
      }
      if (rng.chance(0.5)) primaryCrash(e, at + rng.range(10, back + 60), shard, rng.range(150, 300));
      break;
    }
    case 'long-stalls':
      e.netO.stallP = rng.pick([0.03, 0.06]);
      e.netO.stallMaxMs = rng.range(400, 900);
      break;
    case 'lossy-stalls-restart':
      e.netO.stallP = rng.pick([0.03, 0.06]);
      e.netO.lossP = rng.pick([0.01, 0.02]);
      fullRestart(rng, e, span * (0.6 + 0.4 * rng.float()));
      // Duplicates (./net.ts): an acknowledged write lands again, late -- after a DEL of its key may
      // have been applied and its tombstone dropped; the floors must refuse it, at run time and at the
      // cold start. Drawn last: the scenario's other draws are as they were.
      e.netO.dupP = rng.pick([0.05, 0.1]);
      e.netO.dupMaxMs = rng.range(100, 400);
      break;
  }
  e.faults.push(`scenario ${kind}`);
  return kind;
}

/**
 * A copy move (actors/manager/copies.ts) under load: one of the clients' shards moves its primary or
 * a backup replica to the node holding none (4 nodes, replication 3: there is one), the clients
 * write its keys meanwhile, and its target or its source loses power mid-copy, long enough to be failed
 * over. The simulator does not copy (./control.ts): the target stays catching up, so the copy is
 * mid-copy until the kill, and the failover must end it with every acknowledged write on the replicas
 * left. Half the time the manager also dies right after storing the copy's term (restarted or a
 * standby taking over: the task is in the stored configuration).
 */
export function scheduleCopyKill(rng: Rng, span: number, e: ScenarioEnv, victim: 'target' | 'source'): void {
  const shard = rng.pick(e.keyShards);
  const at = 30 + rng.float() * span * 0.4;
  const killAfter = rng.range(5, 80);
  const downMs = rng.range(150, 300);
  const ofBackup = rng.chance(0.5);
  e.shape.focus.push({ from: at - 20, to: at + killAfter + 100, keys: e.keysOf(shard) });
  e.faults.push(`copy move of shard ${shard}'s ${ofBackup ? 'backup' : 'primary'} at ${at.toFixed(1)} ms, its ${victim} killed ${killAfter} ms later for ${downMs} ms`);
  if (rng.chance(0.5)) {
    const takeover = rng.chance(0.5);
    const p: CrashPoint = { kind: 'event', event: 'copy-stored', nth: 1 };
    e.faults.push(`manager crash at ${describePoint(p)} (${takeover ? 'standby takes over' : 'restart'})`);
    e.manager.arm(p, () => e.loop.at(rng.range(2, 40), ['manager-restart'], () => !e.manager.up && e.manager.boot(takeover)));
  }
  e.loop.at(at, ['copy', shard], () => {
    if (e.calm() || !e.manager.up) return;
    const c = e.manager.store.cfg;
    const s = c.shards[shard]!;
    const to = e.nodes.map((n) => n.id).find((n) => n !== s.primary && !s.backups.includes(n) && !(c.dead ?? []).includes(n));
    if (to === undefined || s.backups.length === 0) return;
    e.manager.requestMove([{ shard, from: ofBackup ? s.backups[0]! : s.primary, to }]);
  }, true);
  e.loop.at(at + killAfter, ['copy-kill', shard], () => {
    const t = (e.manager.store.cfg.copies ?? []).find((x) => x.shard === shard);
    const n = t && e.nodes.find((x) => x.id === (victim === 'target' ? t.target : t.source));
    if (!n?.up || e.calm()) return;
    e.faults.push(`copy of shard ${shard}: ${victim} node ${n.id} killed mid-copy`);
    n.crash();
    e.loop.at(downMs, ['restart', n.id], () => !n.up && bootNode(n, e.findings));
  }, true);
}

/**
 * A promotion cut short by a full restart (nemesis seed 345667674): one of the clients' shards moves
 * from its primary A to a backup B (B records its promotion) and back to A (B is a backup again, and A
 * writes above the version B's promotion continued after), under the clients' writes of its keys;
 * then A loses power long enough to be failed over, and the moment the failover's prepare is
 * acknowledged (B may be the backup it promotes) every node loses power, before any promotion runs --
 * or, half the time, only the new primary does, for less than a lease. The restarted new primary finds
 * itself primary of the shard in the stored configuration with no promotion of this tenure behind it:
 * its cold start must keep every write it received as a backup.
 */
export function schedulePromotionCut(rng: Rng, span: number, e: ScenarioEnv): void {
  const shard = rng.pick(e.keyShards);
  const at = 30 + rng.float() * span * 0.4;
  const back = rng.range(30, 80);
  const crashAfter = back + rng.range(30, 80);
  const aDownMs = rng.range(150, 300);
  const allDownMs = rng.range(5, 60);
  const onlyPromoted = rng.chance(0.5); // drawn last: the other draws are as they were
  e.shape.focus.push({ from: at - 20, to: at + crashAfter + aDownMs + 150, keys: e.keysOf(shard) });
  e.faults.push(`shard ${shard} moved to a backup at ${at.toFixed(1)} ms and back ${back} ms later; its primary loses power ${crashAfter} ms after the first move for ${aDownMs} ms, and ${onlyPromoted ? 'the new primary' : 'every node'} ${allDownMs} ms the moment the failover's prepare is acknowledged`);
  let from = -1;
  let to = -1;
  e.loop.at(at, ['move', shard], () => {
    if (e.calm() || !e.manager.up) return;
    const s = e.manager.store.cfg.shards[shard]!;
    if (s.backups.length === 0) return;
    from = s.primary;
    to = s.backups[0]!;
    e.manager.requestMove([{ shard, from, to }]);
  }, true);
  e.loop.at(at + back, ['move-back', shard], () => {
    if (e.calm() || !e.manager.up || from < 0) return;
    const s = e.manager.store.cfg.shards[shard]!;
    if (s.primary === from || !s.backups.includes(from)) return;
    e.manager.requestMove([{ shard, from: s.primary, to: from }]);
  }, true);
  e.loop.at(at + crashAfter, ['crash-primary', shard], () => {
    const a = e.nodes.find((x) => x.id === e.manager.store.cfg.shards[shard]!.primary);
    if (!a?.up || e.calm()) return;
    e.faults.push(`shard ${shard}'s primary, node ${a.id}, lost power at ${e.loop.now().toFixed(1)} ms`);
    a.crash();
    e.loop.at(aDownMs, ['restart', a.id], () => !a.up && bootNode(a, e.findings));
    e.manager.watch('prepared', () => {
      if (e.calm()) return;
      // The failover's term is stored before its prepare: the shard's new primary is known.
      const promoted = e.manager.store.cfg.shards[shard]!.primary;
      const again = promoted === to && to !== from ? ' (the hazard: it was promoted for the shard before, by the first move)' : '';
      // Every node (a full restart), or only the new primary, for less than a lease: back before the
      // manager could fail it over, it finds its promotion never ran all the same.
      const victims = onlyPromoted ? e.nodes.filter((n) => n.id === promoted) : e.nodes;
      e.faults.push(`${onlyPromoted ? 'the new primary' : 'every node'} lost power at the failover's prepare, ${e.loop.now().toFixed(1)} ms; shard ${shard}'s new primary: node ${promoted}${again}`);
      powerLoss(rng, e, victims, allDownMs);
    });
  }, true);
}
