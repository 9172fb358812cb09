// Running membership changes (./membership.ts) on the configuration manager, from its drain loop
// between failovers. Their state lives in the stored configuration (`nodes`, `balancing`, `leaving`,
// `retired`) and in the copy and move tasks of each step, so a manager that restarts or a standby that
// takes over goes on from there: it finds the next step from the stored configuration alone. Steps,
// each a log line with `event` and `at`:
//   member-added     term t+1: the new node listed, holding no shard, balancing on
//   member-leaving   term t+1: the node listed leaving
//   member-step      a copy or move of one replica started (balance or decommission)
//   member-removed   term t+1: the leaving node out of the membership (its id retired), balancing on
//   balanced         term t+1: replicas and primaries fairly spread, balancing off
import type { ClusterConfig, ClusterNode } from '../../config/cluster.js';
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import type { CopyHost, CopyRunner } from './copies.js';
import { nextMembershipStep, planAddNode, planBalanced, planLeave, planRemove, type MembershipStep } from './membership.js';
import type { ShardStats } from './shard-weights.js';

/** What the copy runner needs, and the copy runner itself (a membership step is a copy or a move). */
export interface MembershipHost extends CopyHost {
  readonly copies: CopyRunner;
  /** A node is about to be stored as a member: its join grace (a cold start's time to say hello
   *  before it is suspected) counts from now (./leases.ts LeaseTable.added). */
  added?(node: number): void;
  /** The shards' live bytes and load from the nodes' reports (./load.ts): the balancing weighs them
   *  (./shard-weights.ts). Absent: replicas are counted. */
  shardStats?(): ShardStats;
}

type Request = { kind: 'add'; node: ClusterNode } | { kind: 'leave'; node: number };
type Reply = (err: Error | null, result?: { term: number }) => void;

/** One step taken: what, when, and how it ended (for `rowan status`). */
export interface MembershipRecord {
  step: MembershipStep;
  at: number;
  term: number;
  error?: string;
}

/** A step that failed is not tried again before this long (ms). */
const RETRY_MS = 1000;

export class MembershipRunner {
  private readonly requests: { req: Request; reply: Reply }[] = [];
  readonly history: MembershipRecord[] = [];
  private retryAt = 0;

  constructor(private readonly h: MembershipHost) {}

  /** An operator's add-node or decommission; the reply comes once its term is stored. */
  request(req: Request, reply: Reply): void {
    this.requests.push({ req, reply });
  }

  /** The step the stored configuration asks for now (null: no membership change going on). */
  step(): MembershipStep | null {
    return nextMembershipStep(this.h.config(), this.h.reachable(), this.h.shardStats?.());
  }

  wanted(): boolean {
    if (this.requests.length > 0) return true;
    const s = this.step();
    return s !== null && s.kind !== 'wait' && this.due(s);
  }

  /** A step is taken once the pause after a failed one is over; the removal of a leaving node that
   *  holds nothing (drained, or failed over) at once: the step that failed was likely its own. */
  private due(s: MembershipStep): boolean {
    return s.kind === 'remove' || this.h.clock.now() >= this.retryAt;
  }

  /** The operators' requests, then one step. */
  async advance(): Promise<void> {
    for (let r = this.requests.shift(); r; r = this.requests.shift()) await this.answer(r.req, r.reply);
    const step = this.step();
    if (step === null || step.kind === 'wait' || !this.due(step)) return;
    const rec: MembershipRecord = { step, at: this.h.clock.now(), term: this.h.config().term };
    this.history.push(rec);
    if (this.history.length > 100) this.history.shift();
    try {
      await this.take(step);
    } catch (err) {
      rec.error = (err as Error).message;
      this.retryAt = this.h.clock.now() + RETRY_MS;
      this.h.log.warn({ event: 'member-step-failed', step, err: rec.error }, `membership step not made (${rec.error}); trying again in ${RETRY_MS} ms`);
      if (!(err instanceof RowanError && err.code === ErrorCodes.MOVE_REFUSED)) throw err;
    }
  }

  private async answer(req: Request, reply: Reply): Promise<void> {
    const c = this.h.config();
    let next: ClusterConfig;
    try {
      next = req.kind === 'add' ? planAddNode(c, req.node) : planLeave(c, req.node);
    } catch (err) {
      return reply(err as Error);
    }
    if (req.kind === 'add') this.h.added?.(req.node.id);
    try {
      await this.h.push(next);
    } catch (err) {
      reply(err as Error);
      throw err;
    }
    const node = req.kind === 'add' ? req.node.id : req.node;
    const event = req.kind === 'add' ? 'member-added' : 'member-leaving';
    this.h.log.warn({ event, at: this.h.clock.now(), node, term: next.term }, req.kind === 'add' ? `node ${node} added to the membership (term ${next.term}), holding no shard; spreading replicas onto it` : `node ${node} is being decommissioned (term ${next.term}): moving every replica off it`);
    reply(null, { term: next.term });
  }

  private async take(step: MembershipStep): Promise<void> {
    const h = this.h;
    switch (step.kind) {
      case 'copy':
      case 'move': {
        const m = step.move;
        h.log.info({ event: 'member-step', at: h.clock.now(), step }, `${step.why}: ${step.kind === 'copy' ? 'copying' : 'handing over'} shard ${m.shard}'s ${h.config().shards[m.shard]!.primary === m.from ? 'primary' : 'backup'} replica from node ${m.from} to node ${m.to}`);
        if (step.kind === 'move') {
          await h.moves.run([m], step.why);
          return;
        }
        let refused: Error | null = null;
        await h.copies.start([m], step.why, (err) => {
          if (err) refused = err;
        });
        if (refused) throw refused;
        return;
      }
      case 'remove': {
        // The drain handed each primary role to the member primary of fewest among its full backups,
        // which leaves the others as they were (48 primaries 17/17/14 after one of 4 left): the
        // members left are balanced as after an add, in the same term.
        const next = { ...planRemove(h.config(), step.node), balancing: true };
        await h.push(next);
        h.log.warn({ event: 'member-removed', at: h.clock.now(), node: step.node, term: next.term }, `node ${step.node} decommissioned: out of the membership (term ${next.term}); it stops at its next renewal; balancing the members left`);
        return;
      }
      case 'balanced': {
        const next = planBalanced(h.config());
        await h.push(next);
        h.log.warn({ event: 'balanced', at: h.clock.now(), term: next.term }, `replicas and primaries spread over the members (term ${next.term})`);
        return;
      }
      case 'wait':
        return;
    }
  }
}
