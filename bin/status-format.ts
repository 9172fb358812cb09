// The human form of a node's status, printed by `rowan status`: the runtime's facts (actors, rings)
// and ROWAN-KV's storage section (actors/shared/gc-status.ts).
import { formatCpuList } from '../config/parse.js';
import { formatGcStatus, type GcStatus } from '../actors/shared/gc-status.js';
import type { NodeStatus } from '../runtime/status.js';

/** The human form printed by `rowan status`. */
export function formatStatus(s: NodeStatus): string {
  const lines = [
    `node pid ${s.pid}  data-dir ${s.dataDir}  persistence ${s.persistence}  up ${(s.uptimeMs / 1000).toFixed(1)} s`,
    s.pool
      ? `pool ${s.pool.path}  id ${s.pool.poolId}  mode ${s.pool.mode} (${s.pool.backend})  segments ${JSON.stringify(s.pool.counts)}`
      : 'pool: none (shm/pool.ts not built)',
    ...(s.pm?.model
      ? [`pm media ${s.pm.media} (model)  request ${s.pm.model.requestBytes} B  media ${s.pm.model.mediaBytes} B  DLWA ${s.pm.model.dlwa.toFixed(3)}  read-modify-writes ${s.pm.model.partialEvictions}  zeroed (not in DLWA) ${s.pm.model.bulkBytes} B  media wait ${s.pm.model.waitMs.toFixed(1)} ms`]
      : []),
    '',
  ];
  const head = ['ACTOR', 'ROLE', 'STATE', 'THREAD', 'TID', 'CORES', 'CPU', 'MSGS_IN', 'MSGS_OUT', 'PINGS', 'TICKS', 'WAKEUPS', 'BATCHES', 'PING_US'];
  const rows = s.actors.map((a) => [
    a.name, a.role, a.state, a.thread, String(a.tid), formatCpuList(a.cores), String(a.cpu), String(a.counters.MESSAGES_IN),
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
  if (s.storage) lines.push(...formatGcStatus(s.storage as GcStatus, table), '');
  lines.push(...table(['RING', 'DEPTH_WORDS', 'CAPACITY_WORDS'], s.rings.map((r) => [`${r.from} -> ${r.to}`, String(r.depthWords), String(r.capacityWords)])));
  return lines.join('\n');
}

function table(head: string[], rows: string[][]): string[] {
  const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const fmt = (r: string[]) => r.map((c, i) => c.padEnd(w[i]!)).join('  ').trimEnd();
  return [fmt(head), ...rows.map(fmt)];
}
