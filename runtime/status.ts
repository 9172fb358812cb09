// What `rowan status` shows: read from the actors' shared counters and the rings' pointers by the main
// thread, plus one ping round trip per actor through its rings (proof the actor's loop is alive now).
import { formatCpuList } from '../config/parse.js';
import { readCounters, type CounterSnapshot } from '../shm/counters.js';
import type { ActorHandle } from './spawn.js';
import type { NodePool } from './pool-hook.js';
import type { RowanNode } from './node.js';
import { collectGcStatus, formatGcStatus, type GcStatus } from './gc-status.js';
import type { GcSharedBuffers } from './kv/gc-state.js';

export interface ActorStatus {
  name: string;
  role: string;
  state: CounterSnapshot['state'];
  tid: number;
  /** CPUs asked for. */
  pinned: number[];
  /** CPUs read back with sched_getaffinity inside the thread at READY. */
  cores: number[];
  /** CPU the thread last ran on (sched_getcpu at its last tick or READY). */
  cpu: number;
  counters: CounterSnapshot['counts'];
  /** Ring round trip main -> actor -> main, microseconds; null = no answer within 500 ms. */
  pingUs: number | null;
  /** The TCP endpoint the actor reported at READY (the nic), or null. */
  endpoint: { host: string; port: number } | null;
}

export interface RingStatus {
  from: string;
  to: string;
  depthWords: number;
  capacityWords: number;
}

export interface NodeStatus {
  pid: number;
  dataDir: string;
  persistence: string;
  startedAt: string;
  uptimeMs: number;
  pool: { path: string; poolId: string; mode: string; counts: unknown } | null;
  actors: ActorStatus[];
  rings: RingStatus[];
  /** Segments by owner and state, live bytes, GC and commit progress (null without a pool). */
  storage: GcStatus | null;
}

export function collectStatus(
  node: RowanNode,
  actors: Map<string, ActorHandle>,
  pings: Map<string, number | null>,
  pool: { pool: NodePool; path: string } | null,
  gc?: GcSharedBuffers,
): NodeStatus {
  const s: Omit<NodeStatus, 'storage'> = {
    pid: process.pid,
    dataDir: node.config.dataDir,
    persistence: node.config.persistence,
    startedAt: new Date(node.startedAt).toISOString(),
    uptimeMs: Date.now() - node.startedAt,
    pool: pool ? { path: pool.path, poolId: pool.pool.poolId, mode: pool.pool.mode, counts: pool.pool.counts() } : null,
    actors: node.plans.flatMap((p) => actors.get(p.name) ?? []).map((h) => {
      const c = readCounters(h.spec.start.counters);
      return {
        name: h.name,
        role: h.role,
        state: c.state,
        tid: c.tid,
        pinned: h.cores,
        cores: h.ready?.cpus ?? [],
        cpu: c.cpu,
        counters: c.counts,
        pingUs: pings.get(h.name) ?? null,
        endpoint: h.ready?.endpoint ?? null,
      };
    }),
    rings: node.wiring.links.map((l) => ({
      from: l.from,
      to: l.to,
      depthWords: l.ring.depth(),
      capacityWords: l.ring.capacityWords,
    })),
  };
  const storage = pool ? collectGcStatus(pool.pool, gc, s.actors, s.uptimeMs) : null;
  return { ...s, storage };
}

/** The human form printed by `rowan status`. */
export function formatStatus(s: NodeStatus): string {
  const lines = [
    `node pid ${s.pid}  data-dir ${s.dataDir}  persistence ${s.persistence}  up ${(s.uptimeMs / 1000).toFixed(1)} s`,
    s.pool
      ? `pool ${s.pool.path}  id ${s.pool.poolId}  mode ${s.pool.mode}  segments ${JSON.stringify(s.pool.counts)}`
      : 'pool: none (shm/pool.ts not built)',
    '',
  ];
  const head = ['ACTOR', 'ROLE', 'STATE', 'TID', 'CORES', 'CPU', 'MSGS_IN', 'MSGS_OUT', 'PINGS', 'TICKS', 'WAKEUPS', 'BATCHES', 'PING_US'];
  const rows = s.actors.map((a) => [
    a.name, a.role, a.state, String(a.tid), formatCpuList(a.cores), String(a.cpu), String(a.counters.MESSAGES_IN),
    String(a.counters.MESSAGES_OUT), String(a.counters.PINGS), String(a.counters.TICKS), String(a.counters.WAKEUPS),
    String(a.counters.SEGMENT_BATCHES), a.pingUs === null ? '-' : String(a.pingUs),
  ]);
  lines.push(...table(head, rows), '');
  for (const a of s.actors) if (a.endpoint) lines.push(`${a.name} listens on ${a.endpoint.host}:${a.endpoint.port}`);
  if (s.actors.some((a) => a.endpoint)) lines.push('');
  const blog = s.actors.filter((a) => a.role === 'control' || a.role === 'digest');
  if (blog.length > 0) {
    // The Rowan b-log: what the control actor posted and retired, what digest parsed (§4.3, §4.4).
    lines.push(
      ...table(
        ['B-LOG', 'POSTED', 'USED', 'WRITES_LANDED', 'DIGESTED_SEGS', 'DIGESTED_BLOCKS'],
        blog.map((a) =>
          a.role === 'control'
            ? [a.name, String(a.counters.BLOG_POSTED), String(a.counters.BLOG_USED), String(a.counters.BLOG_WRITES), '-', '-']
            : [a.name, '-', '-', '-', String(a.counters.DIGESTED_SEGMENTS), String(a.counters.DIGESTED_BLOCKS)],
        ),
      ),
      '',
    );
  }
  if (s.storage) lines.push(...formatGcStatus(s.storage, table), '');
  lines.push(...table(['RING', 'DEPTH_WORDS', 'CAPACITY_WORDS'], s.rings.map((r) => [`${r.from} -> ${r.to}`, String(r.depthWords), String(r.capacityWords)])));
  return lines.join('\n');
}

function table(head: string[], rows: string[][]): string[] {
  const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const fmt = (r: string[]) => r.map((c, i) => c.padEnd(w[i]!)).join('  ').trimEnd();
  return [fmt(head), ...rows.map(fmt)];
}
