// INFO: Redis's sections (server, clients, memory, persistence, stats, replication, cpu, cluster,
// keyspace) filled with what rowan has, and a rowan section (pool segments, GC, Rowan counters). The
// single-endpoint port presents itself as a standalone Redis (redis_mode, cluster_enabled:0) and its
// keyspace counts the whole cluster; the cluster port is a Redis Cluster node counting its own slots.
// Field names follow Redis where the meaning matches; rowan-only facts are prefixed rowan_.
import { arch, platform, release } from 'node:os';
import { RespErr, Verbatim, type Reply } from '../../../runtime/resp/reply.js';
import { REDIS_COMPAT_VERSION, redisMode } from './admin.js';
import type { RespContext } from './context.js';
import { rowanErrorReply } from './outcome.js';
import type { KeyTally } from './keyspace.js';
import { keyspaceTally } from './scan.js';

type Section = [string, Record<string, string | number>];

function sections(ctx: RespContext, wanted: Set<string>): Section[] {
  const c = ctx.view.config();
  const mem = process.memoryUsage();
  const cpu = process.cpuUsage();
  const upS = Math.floor((ctx.clock.now() - ctx.startedMs) / 1000);
  const all = wanted.has('all') || wanted.has('everything') || wanted.size === 0 || wanted.has('default');
  const want = (s: string) => all || wanted.has(s);
  const out: Section[] = [];
  const conns = ctx.servers.reduce((n, s) => n + s.stats.connected, 0);
  if (want('server'))
    out.push(['Server', {
      redis_version: REDIS_COMPAT_VERSION, redis_mode: redisMode(ctx), os: `${platform()} ${release()} ${arch()}`, arch_bits: 64,
      process_id: process.pid, tcp_port: ctx.port, uptime_in_seconds: upS, uptime_in_days: Math.floor(upS / 86400),
      executable: process.execPath, rowan_node: ctx.view.nodeId, rowan_worker: ctx.view.workerId, rowan_port_mode: ctx.mode, rowan_term: c.term,
    }]);
  if (want('clients'))
    out.push(['Clients', { connected_clients: conns, maxclients: 10000, blocked_clients: 0, rowan_key_locks: ctx.locks.size }]);
  if (want('memory'))
    out.push(['Memory', { used_memory: mem.heapUsed + mem.external, used_memory_rss: mem.rss, used_memory_peak: mem.rss, maxmemory: 0, maxmemory_policy: 'noeviction', mem_allocator: 'v8' }]);
  if (want('persistence'))
    out.push(['Persistence', {
      loading: 0, async_loading: 0, rdb_changes_since_last_save: 0, rdb_bgsave_in_progress: 0, aof_enabled: 0, aof_rewrite_in_progress: 0,
      rowan_persistence: ctx.info.persistence, rowan_data_dir: ctx.info.dataDir, rowan_ack: 'persistent on every replica',
    }]);
  if (want('stats')) {
    const w = ctx.worker.stats;
    out.push(['Stats', {
      total_connections_received: ctx.servers.reduce((n, s) => n + s.stats.accepted, 0),
      total_commands_processed: ctx.servers.reduce((n, s) => n + s.stats.commands, 0),
      rejected_connections: 0, keyspace_hits: ctx.stats.hits, keyspace_misses: ctx.stats.misses, expired_keys: ctx.expired?.() ?? 0, evicted_keys: 0,
      total_error_replies: ctx.stats.errors, protocol_errors: ctx.servers.reduce((n, s) => n + s.stats.protocolErrors, 0),
      rowan_moved_replies: ctx.stats.moved, rowan_forwarded: ctx.stats.forwarded, rowan_crossslot_replies: ctx.stats.crossSlot, rowan_rerouted: ctx.stats.rerouted,
      rowan_puts: w.puts, rowan_gets: w.gets, rowan_dels: w.dels, rowan_replication_writes: w.replicationWrites, rowan_pm_full_refusals: w.pmFull,
    }]);
  }
  if (want('replication')) {
    const mine = ctx.view.ownShards(false).length;
    const backups = c.shards.filter((s) => s.backups.includes(ctx.view.nodeId)).length;
    out.push(['Replication', {
      role: 'master', connected_slaves: c.replicationFactor - 1, master_repl_offset: 0,
      rowan_replication_factor: c.replicationFactor, rowan_replication_mode: c.replication, rowan_primary_shards: mine, rowan_backup_shards: backups,
    }]);
  }
  if (want('cpu'))
    out.push(['CPU', { used_cpu_sys: (cpu.system / 1e6).toFixed(6), used_cpu_user: (cpu.user / 1e6).toFixed(6) }]);
  if (want('cluster')) out.push(['Cluster', { cluster_enabled: ctx.mode === 'cluster' ? 1 : 0 }]);
  if (want('keyspace')) out.push(['Keyspace', {}]); // filled by info(): it may ask the other nodes
  if (want('rowan')) out.push(['Rowan', ctx.info.rowan()]);
  return out;
}

function render(out: Section[]): Reply {
  return new Verbatim(out.map(([name, kv]) => `# ${name}\r\n` + Object.entries(kv).map(([k, v]) => `${k}:${v}\r\n`).join('')).join('\r\n'));
}

/**
 * INFO [section ...]. Its keyspace counts what DBSIZE on this port counts (./scan.ts), with the keys that
 * have a deadline and their mean TTL in ms (Redis estimates avg_ttl from samples; this is exact). INFO itself
 * never fails -- clients call it to decide whether a server is ready (ioredis's ready check) -- so when
 * another node cannot be counted the keyspace section says so (rowan_keyspace_incomplete) instead of
 * giving a count that leaves its keys out.
 */
export function info(ctx: RespContext, args: Buffer[]): Reply | Promise<Reply> {
  const wanted = new Set(args.slice(1).map((a) => a.toString('latin1').toLowerCase()));
  const out = sections(ctx, wanted);
  const ks = out.find(([name]) => name === 'Keyspace');
  if (!ks) return render(out);
  const fill = (t: KeyTally | RespErr): Reply => {
    if (!(t instanceof RespErr)) {
      if (t.keys > 0) ks[1].db0 = `keys=${t.keys},expires=${t.expires},avg_ttl=${t.avgTtlMs}`;
    } else ks[1].rowan_keyspace_incomplete = t.s;
    return render(out);
  };
  const t = keyspaceTally(ctx);
  return t instanceof Promise ? t.then(fill, (e: unknown) => fill(rowanErrorReply(e))) : fill(t);
}
