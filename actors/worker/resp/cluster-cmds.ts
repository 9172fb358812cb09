// CLUSTER SLOTS / SHARDS / NODES / INFO / MYID / KEYSLOT from the cluster configuration (./node-view.ts).
// The configuration term is Redis's config epoch: a restart with another shard layout (a new term)
// shows up here and in -MOVED, so cluster clients re-route.
import { keySlot, SLOT_COUNT } from '../../../config/slots.js';
import { RMap, Verbatim, err, type Reply } from '../../../runtime/resp/reply.js';
import type { RespContext } from './context.js';
import type { RedisEndpoint } from './node-view.js';

function nodeEntry(e: RedisEndpoint): Reply {
  return [e.host, e.port, e.id, new RMap([])];
}

export function clusterSlots(ctx: RespContext): Reply {
  const out: [number, number, RedisEndpoint][] = [];
  for (const e of ctx.view.slots().endpoints) for (const [a, b] of e.ranges) out.push([a, b, e]);
  out.sort((x, y) => x[0] - y[0]);
  return out.map(([a, b, e]) => [a, b, nodeEntry(e)]);
}

export function clusterShards(ctx: RespContext): Reply {
  return ctx.view.slots().endpoints.map(
    (e) =>
      new RMap([
        ['slots', e.ranges.flatMap(([a, b]) => [a, b])],
        [
          'nodes',
          [
            new RMap([
              ['id', e.id],
              ['port', e.port],
              ['ip', e.host],
              ['endpoint', e.host],
              ['role', 'master'],
              ['replication-offset', 0],
              ['health', 'online'],
            ]),
          ],
        ],
      ]),
  );
}

export function clusterNodesText(ctx: RespContext): string {
  const m = ctx.view.slots();
  const me = ctx.view.me();
  const now = ctx.clock.now();
  return m.endpoints
    .map((e) => {
      const flags = e === me ? 'myself,master' : 'master';
      const slots = e.ranges.map(([a, b]) => (a === b ? `${a}` : `${a}-${b}`)).join(' ');
      return `${e.id} ${e.host}:${e.port}@${e.port} ${flags} - 0 ${now} ${m.term} connected${slots ? ' ' + slots : ''}\n`;
    })
    .join('');
}

export function clusterInfoText(ctx: RespContext): string {
  const m = ctx.view.slots();
  const assigned = m.endpoints.reduce((n, e) => n + e.ranges.reduce((k, [a, b]) => k + b - a + 1, 0), 0);
  const lines = [
    `cluster_state:${assigned === SLOT_COUNT ? 'ok' : 'fail'}`,
    `cluster_slots_assigned:${assigned}`,
    `cluster_slots_ok:${assigned}`,
    'cluster_slots_pfail:0',
    'cluster_slots_fail:0',
    `cluster_known_nodes:${m.endpoints.length}`,
    `cluster_size:${m.endpoints.filter((e) => e.ranges.length > 0).length}`,
    `cluster_current_epoch:${m.term}`,
    `cluster_my_epoch:${m.term}`,
    'cluster_stats_messages_sent:0',
    'cluster_stats_messages_received:0',
    'total_cluster_links_buffer_limit_exceeded:0',
  ];
  return lines.join('\r\n') + '\r\n';
}

export function cluster(ctx: RespContext, args: Buffer[]): Reply {
  const sub = args[1]!.toString('latin1').toLowerCase();
  const arity = (n: number) => args.length === n || err(`ERR wrong number of arguments for 'cluster|${sub}' command`);
  let a: true | Reply;
  switch (sub) {
    case 'slots':
      return (a = arity(2)) === true ? clusterSlots(ctx) : a;
    case 'shards':
      return (a = arity(2)) === true ? clusterShards(ctx) : a;
    case 'nodes':
      return (a = arity(2)) === true ? new Verbatim(clusterNodesText(ctx)) : a;
    case 'info':
      return (a = arity(2)) === true ? new Verbatim(clusterInfoText(ctx)) : a;
    case 'myid':
      return (a = arity(2)) === true ? (ctx.view.me()?.id ?? err('ERR this node has no RESP cluster port')) : a;
    case 'keyslot':
      return (a = arity(3)) === true ? keySlot(args[2]!) : a;
    case 'countkeysinslot':
    case 'getkeysinslot':
      return err(`ERR rowan does not index keys by slot (CLUSTER ${sub.toUpperCase()}); use SCAN`);
    default:
      return err(`ERR unknown subcommand '${args[1]!.toString('latin1').slice(0, 128)}'. Try CLUSTER HELP.`);
  }
}
