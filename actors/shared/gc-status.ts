// The storage part of `rowan status` (§4.4): the node's segments by state and by owner, how much of
// them is live, what garbage collection has reclaimed and how fast, and how far commit tracking got.
// Read by the node's main thread from the pool's meta table, the shared live-byte counters and the
// actors' counters.
import { OwnerRole, SegmentState, type Pool } from '../../shm/pool.js';
import type { NodeStatus } from '../../runtime/status.js';
import type { GcSharedBuffers } from './gc-state.js';
import { ShardIndex } from '../../shm/index.js';

const STATES = ['free', 'using', 'used', 'committed', 'claiming'] as const;
const ROLES: Record<number, string> = Object.fromEntries(Object.entries(OwnerRole).map(([k, v]) => [v, k.toLowerCase()]));

export interface SegmentGroup {
  owner: string;
  state: string;
  segments: number;
  /** Live bytes in them (null when the node keeps no GC state). */
  liveBytes: number | null;
}

export interface GcStatus {
  segmentBytes: number;
  segmentCount: number;
  /** Non-free segments by owner role and state. */
  groups: SegmentGroup[];
  /** Live bytes / capacity of the Used + Committed segments (what GC works on), null without GC state. */
  liveRatio: number | null;
  gc: {
    segmentsReclaimed: number;
    reclaimedBytes: number;
    copiedBytes: number;
    busyMs: number;
    /** MB reclaimed per CPU-second the clean actors spent cleaning (thread CPU time), and per second of uptime. */
    mbPerBusySecond: number;
    mbPerSecond: number;
  };
  commit: { committedSegments: number; commitVersSent: number; pmFullRefusals: number };
  /** Items in the node's shard indexes (keys, tombstones included; null when not given the indexes),
   *  and tombstones the sweep removed from them (actors/clean/tombstones.ts). */
  index: { items: number | null; tombstonesDropped: number; tombstonesDroppedOnBackup: number; lateBlocks: number; lateDelBlocks: number };
}

type Counts = Record<string, number | undefined>;

export function collectGcStatus(
  pool: Pool,
  gc: GcSharedBuffers | undefined,
  actors: { role: string; counters: Counts }[],
  uptimeMs: number,
  indexes?: readonly (SharedArrayBuffer | null)[],
): GcStatus {
  const live = gc ? new Int32Array(gc.live) : null;
  const groups = new Map<string, SegmentGroup>();
  let cap = 0;
  let liveSum = 0;
  for (let i = 0; i < pool.segmentCount; i++) {
    const m = pool.meta(i);
    if (m.state === SegmentState.Free) continue;
    const owner = ROLES[m.role] ?? `role ${m.role}`;
    const state = STATES[m.state] ?? `state ${m.state}`;
    const k = `${owner}/${state}`;
    const g = groups.get(k) ?? { owner, state, segments: 0, liveBytes: live ? 0 : null };
    g.segments++;
    const l = live ? Atomics.load(live, i) : 0; // some recent value of segment i's live bytes
    if (g.liveBytes !== null) g.liveBytes += l;
    if (m.state === SegmentState.Used || m.state === SegmentState.Committed) {
      cap += pool.segmentBytes;
      liveSum += l;
    }
    groups.set(k, g);
  }
  const sum = (role: string, k: string) => actors.filter((a) => a.role === role).reduce((acc, a) => acc + Number(a.counters[k] ?? 0), 0);
  const reclaimed = sum('clean', 'CLEAN_RECLAIMED_BYTES');
  const busyMs = sum('clean', 'CLEAN_BUSY_US') / 1000;
  return {
    segmentBytes: pool.segmentBytes,
    segmentCount: pool.segmentCount,
    groups: [...groups.values()].sort((a, b) => a.owner.localeCompare(b.owner) || a.state.localeCompare(b.state)),
    liveRatio: live && cap > 0 ? liveSum / cap : null,
    gc: {
      segmentsReclaimed: sum('clean', 'CLEAN_SEGMENTS'),
      reclaimedBytes: reclaimed,
      copiedBytes: sum('clean', 'CLEAN_COPIED_BYTES'),
      busyMs,
      mbPerBusySecond: busyMs > 0 ? reclaimed / 1e6 / (busyMs / 1000) : 0,
      mbPerSecond: uptimeMs > 0 ? reclaimed / 1e6 / (uptimeMs / 1000) : 0,
    },
    commit: {
      committedSegments: sum('digest', 'COMMITTED_SEGMENTS'),
      commitVersSent: sum('worker', 'COMMITVERS_SENT'),
      pmFullRefusals: sum('worker', 'PM_FULL_REFUSALS'),
    },
    index: {
      items: indexes ? indexes.reduce((a, sab) => a + (sab ? ShardIndex.itemsIn(sab) : 0), 0) : null,
      tombstonesDropped: sum('clean', 'CLEAN_TOMBSTONES_DROPPED'),
      tombstonesDroppedOnBackup: sum('clean', 'CLEAN_TOMBSTONES_DROPPED_BACKUP'),
      lateBlocks: sum('digest', 'DIGEST_LATE_BLOCKS'),
      lateDelBlocks: sum('digest', 'DIGEST_LATE_DEL_BLOCKS'),
    },
  };
}

/** The human form, appended to `rowan status`. */
export function formatGcStatus(s: GcStatus, table: (head: string[], rows: string[][]) => string[]): string[] {
  const pct = (x: number | null) => (x === null ? '-' : `${(x * 100).toFixed(1)}%`);
  const lines = table(
    ['SEGMENTS_OWNER', 'STATE', 'COUNT', 'LIVE_BYTES', 'LIVE_SHARE'],
    s.groups.map((g) => [g.owner, g.state, String(g.segments), g.liveBytes === null ? '-' : String(g.liveBytes), g.liveBytes === null ? '-' : pct(g.liveBytes / (g.segments * s.segmentBytes))]),
  );
  const g = s.gc;
  lines.push(
    `live share of used+committed segments: ${pct(s.liveRatio)}   segment ${s.segmentBytes} B x ${s.segmentCount}`,
    `gc: ${g.segmentsReclaimed} segments reclaimed (${(g.reclaimedBytes / 1e6).toFixed(1)} MB), ${(g.copiedBytes / 1e6).toFixed(1)} MB of live entries copied, ` +
      `${g.mbPerBusySecond.toFixed(1)} MB per clean CPU-second (${g.busyMs.toFixed(0)} ms CPU), ${g.mbPerSecond.toFixed(2)} MB/s over uptime`,
    `commit: ${s.commit.committedSegments} b-log segment votes committed, ${s.commit.commitVersSent} CommitVer rounds sent, ${s.commit.pmFullRefusals} writes refused PM_FULL`,
    `index: ${s.index?.items ?? '-'} items in the shard indexes, ${s.index?.tombstonesDropped ?? '-'} tombstones dropped (${s.index?.tombstonesDroppedOnBackup ?? '-'} as a backup), ${s.index?.lateBlocks ?? '-'} late b-log blocks refused`,
  );
  return lines;
}

/** A ROWAN-KV node's status: the runtime's, with this file's storage section. */
/** The node's configuration cell as `status` reports it (actors/node/node-application.ts). */
export interface ConfigStatus {
  term: number;
  /** A prepared, uncommitted term (requests wait); 0 = none. */
  pendingTerm: number;
  /** 'none' (no manager), 'valid N ms', 'expired' or 'evicted'. */
  lease: string;
}

export type KvNodeStatus = NodeStatus<GcStatus & { config?: ConfigStatus }>;
