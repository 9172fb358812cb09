// An operator's requests to the configuration manager (`rowan reshard`, `rowan status --cluster`),
// on the manager's port, one JSON line each (actors/shared/manager-protocol.ts AdminRequest/AdminReply).
import { ErrorCodes, RowanError } from '../../config/base/errors.js';
import type { AdminReply, AdminRequest } from '../shared/manager-protocol.js';
import { nodeLoads } from './load.js';
import type { ConfigManager } from './manager.js';

export function answerAdmin(cm: ConfigManager, m: AdminRequest, reply: (r: AdminReply) => void): void {
  const id = typeof m.id === 'number' ? m.id : 0;
  const fail = (err: unknown) => {
    const e = err instanceof RowanError ? err : new RowanError(ErrorCodes.INTERNAL, (err as Error).message);
    reply({ t: 'adminReply', id, ok: false, error: { code: e.code, message: e.message } });
  };
  try {
    switch (m.op) {
      case 'move': {
        const c = cm.config();
        const shard = m.shard;
        const s = Number.isInteger(shard) ? c.shards[shard] : undefined;
        if (!s) throw new RowanError(ErrorCodes.MOVE_REFUSED, `there is no shard ${String(shard)} (the cluster has ${c.shardCount})`);
        // `from`: which replica moves (a backup's moves only to a node without a replica: a copy).
        const from = Number.isInteger(m.from) ? m.from! : s.primary;
        cm.requestMove([{ shard, from, to: m.to }], 'operator', (err, rec) => (err ? fail(err) : reply({ t: 'adminReply', id, ok: true, result: rec })));
        return;
      }
      case 'addNode':
      case 'decommission': {
        const req = m.op === 'addNode' ? { kind: 'add' as const, node: m.node } : { kind: 'leave' as const, node: m.node };
        if (m.op === 'decommission' && !Number.isInteger(m.node)) throw new RowanError(ErrorCodes.BAD_ARGUMENT, `decommission: node ${JSON.stringify(m.node)} is not a node id`);
        cm.requestMembership(req, (err, result) => (err ? fail(err) : reply({ t: 'adminReply', id, ok: true, result })));
        return;
      }
      case 'plan': {
        reply({ t: 'adminReply', id, ok: true, result: { ...cm.balancePlan(), resharding: cm.resharding } });
        return;
      }
      case 'loads': {
        const c = cm.config();
        const rates = cm.loads.shardRates();
        const members = cm.members();
        reply({
          t: 'adminReply',
          id,
          ok: true,
          result: {
            term: c.term,
            loads: Object.fromEntries([...nodeLoads(c, rates, members)].map(([n, l]) => [String(n), Math.round(l)])),
            shards: Object.fromEntries([...rates].map(([s, r]) => [String(s), { reqs: Math.round(r.reqs), writes: Math.round(r.writes) }])),
            migrations: c.migrations,
            copies: c.copies ?? [],
            moves: cm.moves.history.slice(-10),
            copyMoves: cm.copies.history.slice(-10),
            membership: { balancing: c.balancing === true, leaving: c.leaving ?? [], retired: c.retired ?? [], next: cm.membership.step(), steps: cm.membership.history.slice(-10) },
            resharding: cm.resharding,
          },
        });
        return;
      }
      default:
        throw new RowanError(ErrorCodes.BAD_ARGUMENT, `unknown admin op ${JSON.stringify((m as { op?: unknown }).op)}`);
    }
  } catch (err) {
    fail(err);
  }
}
