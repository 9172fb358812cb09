// `rowan status --cluster FILE` (or --zookeeper): the whole cluster at a glance. Every node is asked over its control
// socket (runtime/endpoint.ts); the shard distribution comes from the configuration store.
import { findSecret } from '../config/base/secret.js';
import type { ClusterConfig } from '../config/cluster.js';
import { FileConfigStore } from '../config/store.js';
import { requestControl, socketPath } from '../runtime/endpoint.js';
import { FAILOVER_MODES, modeLimitation } from '../actors/manager/plan.js';
import { ERDA_NOT_BUILT } from '../actors/baselines/erda.js';
import { ASYMNVM_CANNOT, ASYMNVM_MODE } from '../config/asymnvm.js';
import type { KvNodeStatus as NodeStatus } from '../actors/shared/gc-status.js';
import { listManagers, type ElectionEntry } from '../actors/manager/election.js';
import type { StoreSpec } from '../config/store-spec.js';
import type { CounterName } from '../shm/counters.js';
import type { MembershipStep } from '../actors/manager/membership.js';
import type { CopyRecord } from '../actors/manager/copies.js';
import type { MoveRecord } from '../actors/manager/moves.js';
import { askManager, managerFor } from './manager-admin.js';

/** The stored configuration and, with ZooKeeper, the managers in the election (the active one marked). */
export async function readClusterAndManagers(spec: StoreSpec): Promise<{ cluster: ClusterConfig; managers: ElectionEntry[] | null }> {
  if ('file' in spec) return { cluster: new FileConfigStore(spec.file).readSync(), managers: null };
  const { ZooKeeperConfigStore } = await import('../config/zk-store.js'); // only with ZooKeeper
  const zk = await ZooKeeperConfigStore.open({ connect: spec.zookeeper, path: spec.path });
  try {
    return { cluster: await zk.read(), managers: await listManagers(zk, spec.path) };
  } finally {
    zk.close();
  }
}

export interface ClusterStatus {
  term: number;
  replication: string;
  /** Nodes the configuration manager removed (their lease expired); they hold no shard. */
  dead: number[];
  replicationFactor: number;
  shardCount: number;
  nodes: { id: number; dataDir: string; clientPorts: number[]; primaryOf: number; backupOf: number; status: NodeStatus | null; error?: string }[];
  shards: ClusterConfig['shards'];
  /** With ZooKeeper: the configuration managers in the election, lowest first; `active` marks the one
   *  that published its address. Null with the embedded file store (one manager, no election). */
  managers?: ElectionEntry[] | null;
  /** Resharding tasks in progress (§4.6): the stored migration list. */
  migrations: ClusterConfig['migrations'];
  /** Copy moves in progress (a target that held no replica copies the shard first). */
  copies?: ClusterConfig['copies'];
  /** Membership changes (actors/manager/membership.ts): spreading onto added nodes, nodes leaving. */
  balancing?: boolean;
  leaving?: number[];
  /** The manager's view of the load and its recent moves; null when it did not answer. */
  manager: ManagerLoads | null;
}

export interface ManagerLoads {
  term: number;
  loads: Record<string, number>;
  shards: Record<string, { reqs: number; writes: number }>;
  moves: MoveRecord[];
  /** Recent copy moves (actors/manager/copies.ts); absent from a manager before them. */
  copyMoves?: CopyRecord[];
  /** Membership changes: the next step the manager would take (absent from a manager before them). */
  membership?: { balancing: boolean; leaving: number[]; retired: number[]; next: MembershipStep | null };
  resharding: { auto: boolean; periodMs: number; overloadPercent: number; targetPercent: number; copyMoves?: boolean };
}

/** Every node of the stored configuration (or the cluster file's), asked for its status. */
/** `clusterFile`: where the cluster secret lies beside (the manager asks operator tools for it). */
export async function collectClusterStatus(cluster: ClusterConfig | string, managers: ElectionEntry[] | null = null, clusterFile?: string): Promise<ClusterStatus> {
  const c = typeof cluster === 'string' ? new FileConfigStore(cluster).readSync() : cluster;
  const nodes = await Promise.all(
    c.nodes.map(async (n) => {
      const base = {
        id: n.id,
        dataDir: n.dataDir,
        clientPorts: n.workerPorts,
        primaryOf: c.shards.filter((s) => s.primary === n.id).length,
        backupOf: c.shards.filter((s) => s.backups.includes(n.id)).length,
      };
      try {
        return { ...base, status: (await requestControl(socketPath(n.dataDir), { op: 'status' }, 3000)) as NodeStatus };
      } catch (err) {
        return { ...base, status: null, error: (err as Error).message };
      }
    }),
  );
  // With ZooKeeper the active manager's published address (a standby listens on nothing); none active
  // (one is taking over): no manager section.
  const to = managerFor(undefined, c, managers);
  const manager = to === null ? null : ((await askManager(to, { op: 'loads' }, 1500, findSecret(undefined, clusterFile ?? (typeof cluster === 'string' ? cluster : undefined))).catch(() => null)) as ManagerLoads | null);
  return { term: c.term, replication: c.replication, dead: c.dead ?? [], replicationFactor: c.replicationFactor, shardCount: c.shardCount, nodes, shards: c.shards, migrations: c.migrations, copies: c.copies ?? [], balancing: c.balancing === true, leaving: c.leaving ?? [], manager, managers };
}

function pad(rows: string[][]): string[] {
  const w = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => r.map((c, i) => c.padEnd(w[i]!)).join('  ').trimEnd());
}

export function formatClusterStatus(s: ClusterStatus): string {
  const out = [`cluster term ${s.term}: ${s.nodes.length} nodes (${s.dead.length ? `dead: ${s.dead.join(',')}` : 'none dead'}), ${s.shardCount} shards, replication ${s.replicationFactor} (${s.replication})`];
  const limitation = modeLimitation(s.replication);
  if (limitation !== null) out.push(limitation);
  if (s.replication === 'erda') out.push(ERDA_NOT_BUILT);
  if (!FAILOVER_MODES.includes(s.replication)) out.push(`failover: NOT SUPPORTED for replication mode ${s.replication} (backups index one-sided writes only at a cold start): a dead node's shards stay unserved`);
  if (s.replication === ASYMNVM_MODE) out.push(ASYMNVM_CANNOT);
  if (s.managers) {
    const active = s.managers.find((m) => m.active);
    out.push(active ? `configuration manager: ${active.host}:${active.port} (pid ${active.pid}) active, ${s.managers.length - 1} standby` : `configuration manager: NONE ACTIVE (${s.managers.length} in the election${s.managers.length ? ': one is taking over' : ''})`);
    out.push('', ...pad([['MANAGER', 'ROLE', 'ADDRESS', 'PID'], ...s.managers.map((m) => [m.name, m.active ? 'active' : 'standby', `${m.host}:${m.port}`, String(m.pid)])]));
  }
  out.push('');
  const head = ['NODE', 'STATE', 'TERM', 'LEASE', 'PID', 'CLIENT_PORTS', 'PRIMARY', 'BACKUP', 'SEG_FREE', 'SEG_USING', 'SEG_USED', 'SEG_COMMITTED', 'LIVE', 'GC_SEGS', 'GC_MB/S', 'BLOG_WRITES', 'DIGESTED_BLOCKS'];
  const rows = s.nodes.map((n) => {
    const st = n.status;
    const counts = st?.pool?.counts as Record<string, number> | undefined;
    const sum = (role: string, k: 'BLOG_WRITES' | 'DIGESTED_BLOCKS') =>
      String(st ? st.actors.filter((a) => a.role === role).reduce((acc, a) => acc + Number(a.counters[k] ?? 0), 0) : '-');
    return [
      String(n.id), s.dead.includes(n.id) ? (st ? 'dead(fenced)' : 'dead') : st ? 'up' : 'down', st?.storage?.config ? String(st.storage.config.term) : '-', st?.storage?.config?.lease ?? '-', st ? String(st.pid) : '-', n.clientPorts.join(','), String(n.primaryOf), String(n.backupOf),
      String(counts?.free ?? '-'), String(counts?.using ?? '-'), String(counts?.used ?? '-'), String(counts?.committed ?? '-'),
      st?.storage?.liveRatio == null ? '-' : `${(st.storage.liveRatio * 100).toFixed(0)}%`,
      st?.storage ? String(st.storage.gc.segmentsReclaimed) : '-',
      st?.storage ? st.storage.gc.mbPerBusySecond.toFixed(1) : '-',
      sum('control', 'BLOG_WRITES'), sum('digest', 'DIGESTED_BLOCKS'),
    ];
  });
  out.push(...pad([head, ...rows]), '', ...formatMigration(s), '');
  out.push(...pad([['SHARD', 'PRIMARY', 'BACKUPS', 'REQ/S', 'WRITES/S'], ...s.shards.map((sh) => [String(sh.id), String(sh.primary), sh.backups.join(','), String(s.manager?.shards[sh.id]?.reqs ?? '-'), String(s.manager?.shards[sh.id]?.writes ?? '-')])]));
  out.push('', ...formatResharding(s));
  for (const n of s.nodes) if (n.error) out.push('', `node ${n.id}: ${n.error}`);
  return out.join('\n');
}

/** Each node's migration actor (actors/migration/copy.ts): copies running and done, objects and bytes
 *  copied, and the rate of its finished copies. */
function formatMigration(s: ClusterStatus): string[] {
  const rows = s.nodes.map((n) => {
    const a = n.status?.actors.filter((x) => x.role === 'migration') ?? [];
    const k = (name: CounterName) => a.reduce((acc, x) => acc + Number(x.counters[name] ?? 0), 0);
    const ms = k('MIGRATION_COPY_MS');
    const rate = (v: number, unit: number) => (ms > 0 ? (v / unit / (ms / 1000)).toFixed(1) : '-');
    return a.length === 0
      ? [String(n.id), n.status ? 'none' : '-', '-', '-', '-', '-', '-']
      : [String(n.id), String(k('MIGRATION_COPIES')), String(k('MIGRATION_COPIED')), String(k('MIGRATION_ENTRIES')), (k('MIGRATION_BYTES') / 1e6).toFixed(1), rate(k('MIGRATION_BYTES'), 1e6), rate(k('MIGRATION_ENTRIES'), 1e3)];
  });
  return pad([['MIGRATION', 'COPYING', 'COPIED', 'OBJECTS', 'MB', 'MB/S', 'KOBJ/S'], ...rows]);
}

/** Nodes being added (balancing) or decommissioned, and the manager's next step. */
function formatMembership(s: ClusterStatus): string[] {
  if (!s.balancing && !s.leaving?.length) return [];
  const what = [s.balancing ? 'spreading replicas and primaries over the members (a node was added)' : '', s.leaving?.length ? `decommissioning node(s) ${s.leaving.join(',')}` : ''].filter((x) => x).join('; ');
  const next = s.manager?.membership?.next;
  const step = !next ? '' : next.kind === 'copy' || next.kind === 'move' ? `; next: ${next.kind} shard ${next.move.shard} ${next.move.from}->${next.move.to}` : next.kind === 'remove' ? `; next: remove node ${next.node}` : next.kind === 'wait' ? '; waiting for the copy or move in progress' : '';
  return [`membership: ${what}${step}`];
}

/** Resharding (§4.6): per-node load, the migration list, the manager's recent moves. */
function formatResharding(s: ClusterStatus): string[] {
  const m = s.manager;
  const out: string[] = [];
  if (!m) out.push('resharding: the configuration manager did not answer (load unknown)');
  else {
    out.push(`resharding: ${m.resharding.auto ? `automatic (a node ${m.resharding.overloadPercent} % above the average is overloaded; reports every ${m.resharding.periodMs} ms; ${m.resharding.copyMoves ? 'a hot shard no full backup can take is copied to a node holding none' : 'hot primaries go to full backups only'})` : 'by hand only (rowan reshard)'}`);
    out.push(`load (requests/s as primary + weighted replicated writes as backup): ${Object.entries(m.loads).map(([n, l]) => `node ${n} ${l}`).join(', ') || 'no reports yet'}`);
  }
  out.push(s.migrations.length ? `migrations in progress: ${s.migrations.map((t) => `shard ${t.shard} node ${t.source} -> node ${t.target}`).join('; ')}` : 'migrations in progress: none');
  out.push(...formatMembership(s));
  if (s.copies?.length) out.push(`copies in progress: ${s.copies.map((t) => `shard ${t.shard} node ${t.source} -> node ${t.target}`).join('; ')}`);
  for (const r of m?.copyMoves?.slice(-5) ?? []) {
    const end = r.doneAt !== undefined ? `done in ${(r.doneAt - r.startedAt).toFixed(0)} ms` : r.rolledBackAt !== undefined ? `rolled back (${r.error ?? ''})` : 'copying';
    const copied = r.entries !== undefined ? `, ${r.entries} objects, ${((r.bytes ?? 0) / 1e6).toFixed(1)} MB copied in ${(r.copyMs ?? 0).toFixed(0)} ms` : '';
    out.push(`  copy term ${r.term} (${r.why}): ${r.moves.map((x) => `shard ${x.shard} ${x.from}->${x.to}`).join(', ')}: ${end}${copied}`);
  }
  for (const r of m?.moves.slice(-5) ?? []) {
    const ms = r.doneAt !== undefined ? `${(r.doneAt - r.startedAt).toFixed(0)} ms` : r.rolledBackAt !== undefined ? 'rolled back' : (r.error ?? 'in progress');
    out.push(`  move term ${r.term} (${r.why}): ${r.moves.map((x) => `shard ${x.shard} ${x.from}->${x.to}`).join(', ')}: ${ms}${r.entries !== undefined ? `, ${r.entries} b-log entries applied by the target` : ''}`);
  }
  return out;
}
