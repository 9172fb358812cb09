// `rowan reshard`: move a shard's primary role by hand, or print what the manager would move now
// (§4.6). The manager does the move (actors/manager/moves.ts); this only asks and prints.
import { findSecret } from '../config/base/secret.js';
import type { Command } from 'commander';
import { ErrorCodes, RowanError } from '../config/base/errors.js';
import { readStoreOnce } from '../config/store-spec.js';
import type { MoveRecord } from '../actors/manager/moves.js';
import type { CopyRecord } from '../actors/manager/copies.js';
import type { BalancePlan } from '../actors/manager/reshard.js';
import { addZooKeeperFlags, storeSpecOf, type StoreFlags } from './store-flags.js';
import { askManager, managerFor } from './manager-admin.js';
import { readClusterAndManagers } from './cluster-status.js';

interface ReshardOpts extends StoreFlags {
  shard?: string;
  to?: string;
  from?: string;
  plan?: boolean;
  manager?: string;
  json?: boolean;
  timeout: string;
  secretFile?: string;
}

function int(name: string, v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new RowanError(ErrorCodes.BAD_ARGUMENT, `--${name}: '${v}' is not a non-negative integer`);
  return n;
}

async function reshard(o: ReshardOpts): Promise<number> {
  const spec = storeSpecOf(o);
  if (!spec) throw new RowanError(ErrorCodes.BAD_ARGUMENT, 'reshard needs --cluster <file> or --zookeeper <host:port> (to find the cluster and its manager)');
  // With ZooKeeper and no --manager: the active manager, from the address it published in the election.
  const { cluster, managers } = o.manager === undefined ? await readClusterAndManagers(spec) : { cluster: await readStoreOnce(spec), managers: null };
  const to = managerFor(o.manager, cluster, managers);
  if (to === null) throw new RowanError(ErrorCodes.NODE_NOT_RUNNING, 'no configuration manager is active in the ZooKeeper election (a standby may be taking over); try again, or give --manager host:port');
  const timeoutMs = int('timeout', o.timeout);
  const secret = findSecret(o.secretFile, 'file' in spec ? spec.file : undefined);
  if (o.plan) {
    if (o.shard !== undefined || o.to !== undefined) throw new RowanError(ErrorCodes.BAD_ARGUMENT, '--plan prints a plan; it takes no --shard/--to');
    const p = (await askManager(to, { op: 'plan' }, timeoutMs, secret)) as BalancePlan & { resharding: { auto: boolean; overloadPercent: number } };
    if (o.json) return (process.stdout.write(JSON.stringify(p, null, 2) + '\n'), 0);
    const lines = [`load (requests/s, backups' replicated writes weighted): ${Object.entries(p.loads).map(([n, l]) => `node ${n} ${l}`).join(', ')}; average ${p.average}`];
    // Above the line but nothing to move (too little load, say): not called overloaded; the next line says why.
    const above = `(> ${p.resharding.overloadPercent} % above the average): node ${p.overloaded.join(', node ')}`;
    lines.push(p.overloaded.length === 0 ? 'no node is overloaded' : p.moves.length > 0 ? `overloaded ${above}` : `above the overload line ${above}, but not acted on`);
    lines.push(p.moves.length ? `would move: ${p.moves.map((m) => `shard ${m.shard} from node ${m.from} to node ${m.to}`).join('; ')}` : `would move nothing: ${p.none ?? 'no move helps'}`);
    lines.push(`automatic resharding: ${p.resharding.auto ? 'on' : 'off (rowan manager --no-auto-reshard)'}`);
    process.stdout.write(lines.join('\n') + '\n');
    return 0;
  }
  if (o.shard === undefined || o.to === undefined) throw new RowanError(ErrorCodes.BAD_ARGUMENT, 'reshard needs --shard S --to NODE (or --plan)');
  const rec = (await askManager(to, { op: 'move', shard: int('shard', o.shard), to: int('to', o.to), ...(o.from !== undefined ? { from: int('from', o.from) } : {}) }, timeoutMs, secret)) as MoveRecord | CopyRecord;
  if (o.json) return (process.stdout.write(JSON.stringify(rec, null, 2) + '\n'), 0);
  if (!('promotedAt' in rec) && 'copyMs' in rec) return printCopy(rec);
  const ms = rec.doneAt !== undefined ? (rec.doneAt - rec.startedAt).toFixed(0) : '?';
  const m = rec.moves[0]!;
  process.stdout.write(
    rec.doneAt !== undefined
      ? `shard ${m.shard} moved from node ${m.from} to node ${m.to} in ${ms} ms (term ${rec.term}; ${rec.entries ?? 0} b-log entries applied by the target)\n`
      : `shard ${m.shard} is served by node ${m.to} from term ${rec.term}, but the move is not finished: ${rec.error ?? 'unknown'}\n`,
  );
  return rec.doneAt !== undefined ? 0 : 1;
}

function printCopy(rec: CopyRecord): number {
  const m = rec.moves[0]!;
  const mb = ((rec.bytes ?? 0) / 1e6).toFixed(1);
  process.stdout.write(
    rec.doneAt !== undefined
      ? `shard ${m.shard}'s replica moved from node ${m.from} to node ${m.to} in ${(rec.doneAt - rec.startedAt).toFixed(0)} ms: ${rec.entries ?? 0} objects (${mb} MB) copied in ${(rec.copyMs ?? 0).toFixed(0)} ms\n`
      : `shard ${m.shard}'s copy to node ${m.to} did not finish: ${rec.error ?? 'unknown'}\n`,
  );
  return rec.doneAt !== undefined ? 0 : 1;
}

export function registerReshardCommand(p: Command, run: (f: () => Promise<number>) => () => Promise<void>): void {
  const cmd = p.command('reshard')
    .description("move a shard's primary role to another node that holds a full replica of it, while the cluster serves (§4.6); --plan prints what the configuration manager would move now from the nodes' load reports")
    .option('--cluster <file>', 'the cluster configuration (rowan cluster writes DIR/cluster.json); or --zookeeper');
  addZooKeeperFlags(cmd)
    .option('--shard <s>', 'the shard to move')
    .option('--to <node>', 'the node to serve it: one of its backups (a handover), or a node holding no replica of it (a copy first)')
    .option('--from <node>', "which replica moves, to a node holding none (default: the shard's primary; a backup's node moves that backup)")
    .option('--plan', "print the manager's view of the load and the moves it would make now")
    .option('--manager <host:port>', 'the configuration manager (default: with --zookeeper the active one, from the address it published in the election; else 127.0.0.1 and the port rowan cluster gives it)')
    .option('--secret-file <file>', 'the cluster secret the manager asks for (default: $ROWAN_SECRET_FILE, else the file secret beside --cluster\'s file)')
    .option('--json', 'print the result as JSON')
    .option('--timeout <ms>', 'how long to wait for the manager', '30000')
    .action(function (this: Command) {
      return run(() => reshard(this.opts<ReshardOpts>()))();
    });
}
